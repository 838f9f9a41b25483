"""Issue 31, point 6 (hosted-runner details), on the scheduled workflow and the docs-gate template:
which Python a job uses (a self-hosted runner's own when it meets pyproject.toml's requires-python, else
setup-python), artifact retention
and the state travelling once, the PR job's summary when `driftmatrix pr` fails, and the docs gate
as a required check (every PR and merge-queue entry, green at once when no docs changed).

The workflows are read with GitHub's own parser (steps.mjs), which steps run is decided with its
expression evaluator (steprun.mjs), and the steps' scripts run in real bash (as GitHub runs a
`shell: bash` step: `bash --noprofile --norc -eo pipefail`) on real git repositories, with fakes
only for what the runner machine provides (its python3, `git clone`, a failing `driftmatrix pr`)."""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import mdcheck
import pytest
from test_sandbox_steps import GATE, REPO, SCHEDULED, WORKFLOWS, workflow

from driftmatrix.common.inert import STEP_SUMMARY_CAP

STEPRUN = REPO / "tests" / "workflow" / "steprun.mjs"
BASH = shutil.which("bash")
UPLOADS = ("actions/upload-artifact@", "actions/upload-pages-artifact@")


def bash_step(script: str, cwd: Path, env: dict, tmp_path: Path) -> subprocess.CompletedProcess:
    (tmp_path / "step.sh").write_text(script)
    return subprocess.run(
        [BASH, "--noprofile", "--norc", "-eo", "pipefail", str(tmp_path / "step.sh")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )


def steps_run(path: Path, scenario: dict, tmp_path: Path) -> dict:
    (tmp_path / "scenario.json").write_text(json.dumps(scenario))
    out = subprocess.run(
        ["node", str(STEPRUN), str(path), str(tmp_path / "scenario.json")], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def uses(step: dict, prefix: str | tuple) -> bool:
    return str(step.get("uses") or "").startswith(prefix)


def tools(bin_dir: Path, *names: str) -> None:
    """Links to the host's own programs, so that PATH can hold only these and the fakes."""
    bin_dir.mkdir(exist_ok=True)
    for name in names:
        (bin_dir / name).symlink_to(shutil.which(name))


# ---- 1. Python: a self-hosted runner's own when it meets requires-python, else setup-python ----

_PYTHONISH = re.compile(r"(?<![\w/.-])(pip|python3?|driftmatrix)(?![\w-])|\.venv/bin/")


def test_every_job_that_runs_python_picks_it_first():
    """In every job that runs Python, first the choice (one script everywhere), then setup-python only
    when the choice is not the runner's own, and pip only inside a venv (PEP 668 refuses it outside)."""
    scripts = set()
    for path in WORKFLOWS:
        for job in workflow(path)["jobs"]:
            steps = job["steps"]
            pythonic = [
                i
                for i, s in enumerate(steps)
                if s.get("run") and s.get("id") != "python" and _PYTHONISH.search(s["run"])
            ]
            if not pythonic:
                continue
            choice = [i for i, s in enumerate(steps) if s.get("id") == "python"]
            setup = [i for i, s in enumerate(steps) if uses(s, "actions/setup-python@")]
            assert len(choice) == 1 and len(setup) == 1, (path.name, job["id"])
            assert choice[0] < setup[0] < pythonic[0], (path.name, job["id"])
            assert "steps.python.outputs.own != 'true'" in steps[setup[0]]["if"], (path.name, job["id"])
            assert steps[setup[0]]["with"]["python-version"] in ("${{ env.PYTHON_VERSION }}",)
            scripts.add(steps[choice[0]]["run"])
            for s in steps:
                for m in re.finditer(r"(\S*)pip install", s.get("run") or ""):
                    assert m.group(1) == ".venv/bin/", (path.name, job["id"], s.get("name"))
    assert len(scripts) == 1  # a fix to one is a fix to all


def _choose_python(
    tmp_path: Path,
    runner: str | None,
    version: tuple | None,
    venv: bool = True,
    pyproject: str | None = "repo",
    path: Path = SCHEDULED,
) -> tuple[str, str]:
    """Run the choice on a machine whose python3 is `version` (None: none) and can (`venv`) or cannot
    (Debian without python3-venv) make a venv, in a workspace holding `pyproject` (this repository's
    pyproject.toml, a given text, or None: none, as in the docs gate). The fake python3 is the real
    interpreter reporting that version; PATH holds only it and mktemp/rm. PYTHON_VERSION is the
    workflow's own `env`, as GitHub gives it to every step."""
    script = next(s["run"] for s in workflow(path)["jobs"][0]["steps"] if s.get("id") == "python")
    bin_dir = tmp_path / "bin"
    tools(bin_dir, "mktemp", "rm")
    if version is not None:
        real = getattr(sys, "_base_executable", sys.executable)
        (bin_dir / "python3").write_text(f"""#!{real}
import os, sys
VERSION = {version!r}
args = sys.argv[1:]
if args == ["--version"]:
    print("Python " + ".".join(map(str, VERSION)))
elif args[:1] == ["-c"]:
    sys.version_info = VERSION
    exec(args[1])
elif args[:2] == ["-m", "venv"] and not {venv!r}:
    sys.exit("The virtual environment was not created successfully because ensurepip is not available.")
else:
    os.execv({real!r}, [{real!r}, *args])
""")
        (bin_dir / "python3").chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    if pyproject == "repo":
        shutil.copy(REPO / "pyproject.toml", work / "pyproject.toml")
    elif pyproject is not None:
        (work / "pyproject.toml").write_text(pyproject)
    env = {
        "PATH": str(bin_dir),
        "GITHUB_OUTPUT": str(tmp_path / "output"),
        "HOME": str(tmp_path),
        "TMPDIR": str(tmp_path),
        "PYTHON_VERSION": str(workflow(path)["env"]["PYTHON_VERSION"]),
    }
    if runner is not None:
        env["RUNNER_ENVIRONMENT"] = runner
    out = bash_step(script, work, env, tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    return (tmp_path / "output").read_text().strip(), out.stdout


@pytest.mark.parametrize(
    "runner,version,venv,own",
    [
        ("self-hosted", (3, 11, 2), True, True),  # Debian 12's own Python
        (None, (3, 11, 0), True, True),  # a runner too old to say what it is: its Python when it meets requires-python
        ("self-hosted", (3, 10, 12), True, False),  # Ubuntu 22.04's: below requires-python (pip would refuse it)
        (None, (3, 10, 0), True, False),
        ("self-hosted", (3, 9, 2), True, False),  # too old: setup-python
        ("self-hosted", (3, 11, 2), False, False),  # no python3-venv: setup-python
        ("self-hosted", None, True, False),  # none at all
        ("github-hosted", (3, 12, 3), True, False),  # GitHub's image: the pinned version, not the image's
    ],
    ids=[
        "debian-3.11",
        "unknown-runner-3.11",
        "ubuntu-3.10",
        "unknown-runner-3.10",
        "3.9",
        "no-venv",
        "no-python",
        "github-hosted",
    ],
)
def test_which_python(tmp_path, runner, version, venv, own):
    output, log = _choose_python(tmp_path, runner, version, venv)
    assert output == f"own={'true' if own else 'false'}", log
    if own:
        assert "the runner's own Python " + ".".join(map(str, version)) in log
    elif version is not None and version < (3, 11):
        assert f"does not meet requires-python {_requires_python()} (pyproject.toml)" in log, log
    assert not list(tmp_path.glob("tmp.*"))  # the probe venv is gone


def _requires_python() -> str:
    import tomllib

    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"]


def test_requires_python_is_what_the_probe_holds_a_runner_to():
    """The floor is pyproject.toml's (the one place), and setup-python's pinned version meets it."""
    spec = _requires_python()
    assert spec == ">=3.11"  # a 3.10 runner gets setup-python (test_which_python), not a refused `pip install`
    floor = tuple(int(x) for x in spec.removeprefix(">=").split("."))
    for path in WORKFLOWS:
        assert tuple(int(x) for x in str(workflow(path)["env"]["PYTHON_VERSION"]).split(".")) >= floor, path.name


@pytest.mark.parametrize(
    "pyproject,version,own,said",
    [
        ('[project]\nname = "x"\nrequires-python = ">=3.11, <3.13"\n', (3, 12, 1), True, "meets"),
        ('[project]\nname = "x"\nrequires-python = ">=3.11, <3.13"\n', (3, 13, 0), False, "does not meet"),
        ("[project]\nrequires-python = '>=3.10.4'\n", (3, 10, 4), True, "meets"),
        ('[project]\nrequires-python = "~=3.11"\n', (3, 11, 2), False, "cannot read requires-python"),
        # another table's key is not the project's: the floor is then PYTHON_VERSION (3.11)
        ('[tool.x]\nrequires-python = ">=3.8"\n[project]\nname = "x"\n', (3, 10, 0), False, "(PYTHON_VERSION)"),
        (None, (3, 10, 0), False, "does not meet requires-python >=3.11 (PYTHON_VERSION)"),  # the docs gate
        (None, (3, 11, 4), True, "meets requires-python >=3.11 (PYTHON_VERSION)"),
    ],
    ids=["upper-bound-in", "upper-bound-out", "single-quotes", "unreadable", "other-table", "gate-3.10", "gate-3.11"],
)
def test_the_probe_reads_requires_python(tmp_path, pyproject, version, own, said):
    """requires-python read and compared by the runner's own python3 (no tomllib, no packaging: it runs
    before anything is installed); anything it cannot read means setup-python. Without a pyproject.toml
    (the docs gate installs a pinned commit) it holds the runner to the workflow's PYTHON_VERSION."""
    path = GATE if pyproject is None else SCHEDULED
    output, log = _choose_python(tmp_path, "self-hosted", version, pyproject=pyproject, path=path)
    assert output == f"own={'true' if own else 'false'}" and said in log, log


@pytest.mark.parametrize("version,setup", [((3, 10, 12), True), ((3, 11, 2), False)], ids=["3.10", "3.11"])
def test_a_310_runner_gets_setup_python(tmp_path, version, setup):
    """The probe run for real on a self-hosted runner whose python3 is `version`, then GitHub's evaluator
    on the job's steps with that output: setup-python runs for 3.10 (below requires-python), not for 3.11;
    the same in the docs gate."""
    output, _ = _choose_python(tmp_path, "self-hosted", version)
    own = output.removeprefix("own=")
    for path, job, before in (
        (SCHEDULED, "extract", {}),
        (GATE, "gate", {"changes": {"docs": "true", "mode": "head"}}),
    ):
        ran = steps_run(path, {"job": job, "outputs": {**before, "python": {"own": own}}}, tmp_path)
        step = next(
            s for s, raw in zip(ran["steps"], workflow(path)["jobs"][0]["steps"]) if uses(raw, "actions/setup-python@")
        )
        assert step["ran"] is setup, (path.name, ran["steps"])


# ---- 4. retention, and the state travelling once ----


def _uploads() -> list[tuple[Path, str, dict]]:
    return [
        (p, job["id"], s) for p in WORKFLOWS for job in workflow(p)["jobs"] for s in job["steps"] if uses(s, UPLOADS)
    ]


def test_every_upload_has_a_short_retention():
    found = _uploads()
    assert len(found) == 7  # inputs, state, each leg, fixes, Pages, merged; the gate's work folder
    for path, job, step in found:
        days = step["with"].get("retention-days")
        assert days is not None and 1 <= int(days) <= 7, (path.name, job, step["with"].get("name"), days)
    legs = {
        s["with"]["name"]: int(s["with"]["retention-days"]) for _, job, s in found if job in ("run", "verify-fixes")
    }
    assert legs == {"${{ format('outcomes-{0}', matrix.entry) }}": 7, "fixes": 7}


def _downloaded(step: dict, names: set[str]) -> set[str]:
    """The artifacts a download-artifact step gets: its `name`, what its `pattern` matches (simple
    globs: fnmatch and minimatch agree on them), or all of them."""
    given = step["with"]
    if given.get("name"):
        return {given["name"]}
    if given.get("pattern"):
        return {n for n in names if fnmatch.fnmatchcase(n, given["pattern"])}
    return set(names)


def test_the_state_travels_once():
    """The state branch's history goes from extract to save-state only, in its own artifact kept a week
    (a re-run within it finds it; after it save-state loads the branch); the legs and the fix check get
    the previous outcomes alone; save-state puts the state back together and hands publish and the PRs
    what it merged, and nothing else."""
    doc = workflow(SCHEDULED)
    uploads = {
        s["with"]["name"]: (job, s)
        for path, job, s in _uploads()
        if path == SCHEDULED and uses(s, "actions/upload-artifact@")
    }
    state_paths = {
        n: [p for p in s["with"]["path"].split("\n") if p.strip().lstrip("!").startswith("state")]
        for n, (_, s) in uploads.items()
    }
    assert state_paths["state"] == ["state/", "!state/outcomes.jsonl"]
    assert state_paths["inputs"] == ["state/outcomes.jsonl"]
    assert all(not paths for n, paths in state_paths.items() if n not in ("state", "inputs")), state_paths
    state_job, state = uploads["state"]
    assert state_job == "extract" and int(state["with"]["retention-days"]) >= 7
    assert state["with"]["include-hidden-files"] == "true"  # .state-commit, which `state save` needs
    names = {n.replace("${{ format('outcomes-{0}', matrix.entry) }}", "outcomes-stable-1") for n in uploads}
    takers = {
        job["id"]
        for job in doc["jobs"]
        for s in job["steps"]
        if uses(s, "actions/download-artifact@") and "state" in _downloaded(s, names)
    }
    assert takers == {"save-state"}
    merged_takers = {
        job["id"]
        for job in doc["jobs"]
        for s in job["steps"]
        if uses(s, "actions/download-artifact@") and "merged" in _downloaded(s, names)
    }
    assert merged_takers == {"publish", "pull-requests"} and uploads["merged"][0] == "save-state"
    save = next(j for j in doc["jobs"] if j["id"] == "save-state")
    script = "\n".join(s.get("run") or "" for s in save["steps"])
    assert "cp -r artifacts/state/. state/" in script and "driftmatrix state load" in script
    assert (
        "merge artifacts/inputs/state/outcomes.jsonl" in script
        and "cp merged/merged.jsonl state/outcomes.jsonl" in script
    )


# ---- 5. the PR job's summary, also when `driftmatrix pr` fails ----


def _pr_steps() -> tuple[dict, dict]:
    job = next(j for j in workflow(SCHEDULED)["jobs"] if j["id"] == "pull-requests")
    pr = next(s for s in job["steps"] if s.get("id") == "pr")
    summary = job["steps"][job["steps"].index(pr) + 1]
    return pr, summary


def test_the_pr_summary_step_runs_after_a_failure(tmp_path):
    ran = steps_run(
        SCHEDULED,
        {
            "job": "pull-requests",
            "outputs": {"target": {"open": "true"}, "python": {"own": "false"}},
            "outcomes": {"pr": "failure"},
        },
        tmp_path,
    )
    outcome = {s["id"]: s["outcome"] for s in ran["steps"]}
    _, summary = _pr_steps()
    assert outcome["pr"] == "failure" and outcome[summary["id"]] == "success" and ran["result"] == "failure"
    ran = steps_run(
        SCHEDULED,
        {
            "job": "pull-requests",
            "outputs": {"target": {"open": "true"}},
            "outcomes": {"__actions_download-artifact": "failure"},
        },
        tmp_path,
    )
    assert {s["id"]: s["outcome"] for s in ran["steps"]}[summary["id"]] == "skipped"  # no PR step, no summary


def _target_step() -> dict:
    job = next(j for j in workflow(SCHEDULED)["jobs"] if j["id"] == "pull-requests")
    assert job["steps"][0]["id"] == "target"  # first: nothing is checked out or installed before it
    return job["steps"][0]


@pytest.mark.parametrize(
    "repo,apply,token,rc,open_,said",
    [
        ("", "true", "true", 0, None, "opt-in"),  # no DRIFTMATRIX_PR_REPOS: the job says so and succeeds
        ("", "false", "false", 0, None, "opt-in"),
        ("vllm-project/vllm", "true", "false", 1, None, "::error::DRIFTMATRIX_PR_REPOS names vllm-project/vllm"),
        ("vllm-project/vllm", "false", "false", 0, "true", "::warning::"),  # a dry run needs no token
        ("vllm-project/vllm", "true", "true", 0, "true", ""),
    ],
    ids=["unset", "unset-dry-run", "no-token", "no-token-dry-run", "opted-in"],
)
def test_pull_requests_are_opt_in(tmp_path, repo, apply, token, rc, open_, said):
    """Issue 60: opening PRs upstream is opt-in. The PR job's first step run for real (its script in bash)
    and then GitHub's evaluator on the job's steps with its outcome: without vars.DRIFTMATRIX_PR_REPOS
    (one matrix entry, no repository) the summary says so, nothing else runs and the job succeeds;
    with it and no PR token, a run that pushes fails with one message and nothing else runs."""
    step = _target_step()
    summary = tmp_path / "summary.md"
    env = {
        "PATH": os.environ["PATH"],
        "REPO": repo,
        "APPLY": apply,
        "HAS_TOKEN": token,
        "GITHUB_OUTPUT": str(tmp_path / "output"),
        "GITHUB_STEP_SUMMARY": str(summary),
    }
    out = bash_step(step["run"], tmp_path, env, tmp_path)
    assert out.returncode == rc, out.stdout + out.stderr
    assert said in out.stdout + (summary.read_text() if summary.exists() else "")
    errors = [line for line in out.stdout.splitlines() if line.startswith("::error::")]
    assert len(errors) == (1 if rc else 0)  # one clear message
    if rc:
        assert "DRIFTMATRIX_PR_TOKEN" in errors[0] and "driftmatrix-prs" in errors[0]
    if not repo:
        assert "DRIFTMATRIX_PR_REPOS" in summary.read_text()
    written = dict(x.split("=", 1) for x in (tmp_path / "output").read_text().split()) if rc == 0 else {}
    assert written.get("open") == (open_ or ("false" if rc == 0 else None))
    ran = steps_run(
        SCHEDULED,
        {
            "job": "pull-requests",
            "outputs": {"target": written, "python": {"own": "false"}},
            "outcomes": {"target": "failure" if rc else "success"},
        },
        tmp_path,
    )
    later = ran["steps"][1:]
    assert ran["result"] == ("failure" if rc else "success")
    assert all(s["ran"] for s in later if s["id"] != "__actions_setup-python") == (open_ == "true")
    assert any(s["ran"] for s in later) == (open_ == "true")


def test_the_pr_token_is_only_asked_about(tmp_path):
    """HAS_TOKEN as GitHub's evaluator computes it: whether the environment's secret is set, never its value."""
    expression = re.fullmatch(r"\$\{\{(.*)\}\}", _target_step()["env"]["HAS_TOKEN"].strip()).group(1)
    assert _evaluate(expression, {"secrets": {}}, tmp_path) == "false"
    assert _evaluate(expression, {"secrets": {"DRIFTMATRIX_PR_TOKEN": "ghp_x"}}, tmp_path) == "true"
    assert "ghp_x" not in _evaluate(expression, {"secrets": {"DRIFTMATRIX_PR_TOKEN": "ghp_x"}}, tmp_path)


def test_a_failing_pr_keeps_its_failure_and_gets_its_summary(tmp_path):
    """The PR step's own script with a `driftmatrix pr` that fails (the last lines of its output say
    why, with docs text in them), then the summary step's script with the real driftmatrix Python."""
    pr, summary = _pr_steps()
    bin_dir = tmp_path / "bin"
    tools(bin_dir, "tee", "mkdir", "cat")
    (bin_dir / "git").write_text('#!/bin/bash\n[ "$1" = clone ] && mkdir -p "${@: -1}"\n')
    (bin_dir / "driftmatrix").write_text(
        "#!/bin/bash\necho 'rebuilding driftmatrix/doc-warnings'\n"
        f"echo {mdcheck.HOSTILE!r}\n"
        "echo 'driftmatrix pr: GitHub refused the push (403): the token may not push to vllm-project/vllm' >&2\nexit 1\n"
    )
    for name in ("git", "driftmatrix"):
        (bin_dir / name).chmod(0o755)
    (bin_dir / "python").symlink_to(sys.executable)
    summary_file = tmp_path / "summary.md"
    env = {
        "PATH": str(bin_dir),
        "HOME": str(tmp_path),
        "GITHUB_STEP_SUMMARY": str(summary_file),
        "REPO": "vllm-project/vllm",
        "APPLY": "true",
        "PYTHONPATH": str(REPO),
    }
    out = bash_step(pr["run"], tmp_path, env, tmp_path)
    assert out.returncode == 1, out.stdout + out.stderr  # the step fails (pipefail), as before
    assert not summary_file.exists()
    out = bash_step(summary["run"], tmp_path, {**env, "OUTCOME": "failure"}, tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    text = summary_file.read_text()
    assert text.startswith("### Doc-fix PR for vllm-project/vllm (applied): failure")
    assert "GitHub refused the push (403)" in text  # stderr too: the reason is what a failed PR's summary is for
    r = mdcheck.assert_inert(text)
    assert any("GitHub refused the push" in c for c in r.code)


def test_the_pr_summary_is_capped(tmp_path):
    """An oversized log: one 3 MB line among the last ones, and a tail longer than the cap."""
    log = tmp_path / "pr.log"
    log.write_text("\n".join(["x" * 3_000_000, *[f"line {i} " + "y" * 60 for i in range(30_000)], "the last line"]))
    summary = tmp_path / "summary.md"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    base = [
        sys.executable,
        "-m",
        "driftmatrix.common.step_summary",
        "--title",
        "PR",
        "--log",
        str(log),
        "--summary",
        str(summary),
    ]
    subprocess.run([*base, "--lines", "25"], check=True, env=env, cwd=tmp_path)
    first = summary.read_text()
    assert "the last line" in first and len(first.encode()) < 60_000  # long lines cut, the end kept
    subprocess.run([*base, "--lines", "40000", "--full", "this job's log"], check=True, env=env, cwd=tmp_path)
    text = summary.read_text()
    assert len(text.encode()) <= STEP_SUMMARY_CAP
    assert text.rstrip().splitlines()[-1].endswith("The full list: this job's log.")
    mdcheck.assert_inert(text)


# ---- 6. the docs gate: a required check on every PR and merge-queue entry ----


def test_the_gate_runs_on_every_pr_and_the_merge_queue():
    on = workflow(GATE)["on"]
    assert on == {"pull_request": {}, "merge_group": {}}  # no paths filter; never pull_request_target
    doc = workflow(GATE)
    assert "merge_group.base_sha" in doc["env"]["BASE_SHA"] and "merge_group.head_sha" in doc["env"]["HEAD_SHA"]


def _docs_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "docs-repo"
    repo.mkdir()

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(repo), *args],
            check=True,
            capture_output=True,
            text=True,
            env={
                **os.environ,
                "GIT_AUTHOR_NAME": "t",
                "GIT_AUTHOR_EMAIL": "t@t",
                "GIT_COMMITTER_NAME": "t",
                "GIT_COMMITTER_EMAIL": "t@t",
            },
        ).stdout.strip()

    git("init", "-q", "-b", "main")
    for rel in ("docs/serving.md", "vllm/engine.py", "mkdocs.yaml"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text("v1\n")
    git("add", "-A")
    git("commit", "-qm", "base")
    shas = {"base": git("rev-parse", "HEAD")}
    for branch, rel in (("code", "vllm/engine.py"), ("docs", "docs/serving.md"), ("config", "mkdocs.yaml")):
        git("checkout", "-qb", branch, shas["base"])
        (repo / rel).write_text(f"{branch}\n")
        git("commit", "-qam", branch)
        shas[branch] = git("rev-parse", "HEAD")
    git("checkout", "-q", "main")  # the base moves on with a docs change the PR `code` does not bring
    (repo / "docs" / "serving.md").write_text("main moved\n")
    git("commit", "-qam", "main moved")
    shas["main"] = git("rev-parse", "HEAD")
    return repo, shas


@pytest.mark.parametrize(
    "base,head,docs",
    [
        ("base", "code", False),
        ("main", "code", False),
        ("base", "docs", True),
        ("base", "config", True),
    ],
    ids=["code-only", "code-only-base-moved", "docs", "mkdocs.yaml"],
)
def test_the_gate_decides_whether_docs_changed(tmp_path, base, head, docs):
    repo, shas = _docs_repo(tmp_path)
    step = next(s for s in workflow(GATE)["jobs"][0]["steps"] if s.get("id") == "changes")
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "BASE_SHA": shas[base],
        "HEAD_SHA": shas[head],
        "GITHUB_OUTPUT": str(tmp_path / "output"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "GATE_MODE": workflow(GATE)["env"]["GATE_MODE"],
    }
    out = bash_step(step["run"], repo.parent, env, tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    # no vLLM source tree here (vllm/engine.py is not where the option reader starts): the builds
    assert (tmp_path / "output").read_text() == ("docs=true\nmode=builds\n" if docs else "docs=false\n")
    assert ((tmp_path / "summary.md").exists() and "no docs changed" in (tmp_path / "summary.md").read_text()) != docs


@pytest.mark.parametrize(
    "gate_mode,entry,mode",
    [
        ("auto", "vllm/engine/arg_utils.py", "head"),
        ("auto", "vllm/scripts.py", "head"),
        ("auto", "vllm/other.py", "builds"),
        ("builds", "vllm/engine/arg_utils.py", "builds"),
        ("head", "vllm/other.py", "head"),
        ("bogus", "vllm/scripts.py", None),
    ],
)
def test_the_gate_judges_a_vllm_tree_against_its_own_sources(tmp_path, gate_mode, entry, mode):
    """Issue 46: a head that holds the file vLLM's option reader starts from is judged against its own
    sources (no build, no sandbox); GATE_MODE overrides; anything else is refused."""
    repo, shas = _docs_repo(tmp_path)
    (repo / entry).parent.mkdir(parents=True, exist_ok=True)
    (repo / entry).write_text("x = 1\n")
    (repo / "docs" / "serving.md").write_text("a docs change\n")
    subprocess.run(
        ["git", "-C", str(repo), "commit", "-qam", "x"],
        check=True,
        capture_output=True,
        env={
            **os.environ,
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
        },
    )
    subprocess.run(["git", "-C", str(repo), "add", entry], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "commit", "-qm", "entry"],
        check=True,
        capture_output=True,
        env={
            **os.environ,
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
        },
    )
    head = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    step = next(s for s in workflow(GATE)["jobs"][0]["steps"] if s.get("id") == "changes")
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "BASE_SHA": shas["base"],
        "HEAD_SHA": head,
        "GITHUB_OUTPUT": str(tmp_path / "output"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "GATE_MODE": gate_mode,
    }
    out = bash_step(step["run"], repo.parent, env, tmp_path)
    if mode is None:
        assert out.returncode != 0 and "GATE_MODE must be" in out.stdout
        return
    assert out.returncode == 0, out.stdout + out.stderr
    assert (tmp_path / "output").read_text() == f"docs=true\nmode={mode}\n"


def test_the_gate_fails_when_it_cannot_tell(tmp_path):
    repo, shas = _docs_repo(tmp_path)
    step = next(s for s in workflow(GATE)["jobs"][0]["steps"] if s.get("id") == "changes")
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "BASE_SHA": "0" * 40,
        "HEAD_SHA": shas["docs"],
        "GITHUB_OUTPUT": str(tmp_path / "output"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
    }
    assert bash_step(step["run"], repo.parent, env, tmp_path).returncode != 0  # never green by not knowing
    assert not (tmp_path / "output").exists()


@pytest.mark.parametrize("docs,mode", [(False, ""), (True, "builds"), (True, "head")])
def test_without_docs_the_gate_is_green_at_once(tmp_path, docs, mode):
    """GitHub's evaluator on the gate job's steps: no docs changed, nothing after the decision runs and
    the job succeeds; docs changed, every step of the mode runs — builds: the sandbox before the check
    on the builds; head (a vLLM source tree): no sandbox, the check against the change's own sources."""
    outputs = {"changes": {"docs": str(docs).lower(), "mode": mode}, "python": {"own": "true"}}
    ran = steps_run(GATE, {"job": "gate", "outputs": outputs}, tmp_path)
    after = ran["steps"][[s["id"] for s in ran["steps"]].index("changes") + 1 :]
    assert ran["result"] == "success"
    if mode == "builds":  # sandbox, python, setup-python (own Python), install, head check, builds check, upload
        assert [s["ran"] for s in after] == [True, True, False, True, False, True, True]
    elif mode == "head":
        assert [s["ran"] for s in after] == [False, True, False, True, True, False, True]
    else:
        assert not any(s["ran"] for s in after)


def test_the_disk_is_kept_for_the_builds():
    """No pip cache anywhere, the gate's clone without old blobs, the cache folder on the larger disk,
    and the fix check holding one build's environment at a time on GitHub's runners."""
    import yaml

    for path in WORKFLOWS:
        assert yaml.safe_load(path.read_text())["env"].get("PIP_NO_CACHE_DIR") == "1", path.name
    checkouts = [s for job in workflow(GATE)["jobs"] for s in job["steps"] if uses(s, "actions/checkout")]
    assert any(s["with"].get("filter") == "blob:none" for s in checkouts)
    fixes = next(job for job in workflow(SCHEDULED)["jobs"] if job["id"] == "verify-fixes")
    script = next(
        s["run"]
        for s in fixes["steps"]
        if "driftmatrix run fixes.json" in (s.get("run") or "") and "--fetch-only" not in s["run"]
    )
    assert '--target "$target"' in script and 'rm -rf "$CACHE_DIR/envs"' in script
    for job in workflow(SCHEDULED)["jobs"]:  # every step that fetches or runs takes the disk step's folder
        for step in job["steps"]:
            if "driftmatrix run" in (step.get("run") or ""):
                assert step["env"]["CACHE_DIR"] == "${{ steps.disk.outputs.dir }}", (job["id"], step["name"])


def _disk_script() -> str:
    scripts = {s["run"] for job in workflow(SCHEDULED)["jobs"] for s in job["steps"] if s.get("id") == "disk"}
    assert len(scripts) == 1  # one script in both jobs that hold builds
    return scripts.pop()


@pytest.mark.parametrize(
    "runner, given, sudo, expect",
    [
        ("github-hosted", "", True, "mnt"),  # GitHub's runners: /mnt (~66 GB) instead of / (~19 GB)
        ("self-hosted", "", True, "home"),  # a self-hosted runner keeps its own folder from run to run
        ("github-hosted", "~/big", True, "given"),  # vars.DRIFTMATRIX_CACHE_DIR wins
        ("github-hosted", "", False, "home"),  # no passwordless sudo to make /mnt/driftmatrix: the home folder
    ],
)
def test_the_cache_goes_on_the_larger_disk(tmp_path, runner, given, sudo, expect):
    bin_dir, mnt, home = tmp_path / "bin", tmp_path / "mnt", tmp_path / "home"
    tools(bin_dir, "mkdir", "df", "id", "chown")
    mnt.mkdir(mode=0o755)
    home.mkdir()
    (bin_dir / "sudo").write_text("#!/bin/bash\n" + ('[ "$1" = -n ] && shift\n"$@"\n' if sudo else "exit 1\n"))
    (bin_dir / "sudo").chmod(0o755)
    out_file = tmp_path / "out"
    script = _disk_script().replace("/mnt", str(mnt))
    done = bash_step(
        script,
        tmp_path,
        {
            "PATH": str(bin_dir),
            "HOME": str(home),
            "RUNNER_ENVIRONMENT": runner,
            "CACHE_DIR": given,
            "GITHUB_OUTPUT": str(out_file),
        },
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    chosen = dict(line.split("=", 1) for line in out_file.read_text().splitlines())["dir"]
    assert (
        chosen
        == {"mnt": f"{mnt}/driftmatrix-cache", "home": f"{home}/.cache/driftmatrix", "given": f"{home}/big"}[expect]
    )
    assert Path(chosen).is_dir()


EXPR = REPO / "tests" / "workflow" / "expr.mjs"


def _evaluate(expression: str, contexts: dict, tmp_path: Path) -> str:
    """`${{ expression }}` as GitHub's own evaluator computes it (tests/workflow/expr.mjs)."""
    (tmp_path / "contexts.json").write_text(json.dumps(contexts))
    out = subprocess.run(
        ["node", str(EXPR), expression, str(tmp_path / "contexts.json")], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("job", ["run", "verify-fixes"])
def test_twins_are_kept_under_a_size_on_githubs_runners(job, tmp_path):
    """Twins filled a leg's disk in the rehearsal (6.7 GB beside a 6.9 GB env): every step that
    builds twins on GitHub's runners keeps them under what leaves room on its disk; a self-hosted GPU runner keeps all
    (an empty value: no limit, runner/settings.py) unless the repository variable says otherwise."""
    steps = next(j for j in workflow(SCHEDULED)["jobs"] if j["id"] == job)["steps"]
    runs = [s for s in steps if "driftmatrix run" in (s.get("run") or "") and "--fetch-only" not in s["run"]]
    assert runs
    for step in runs:
        raw = str(step["env"]["DRIFTMATRIX_TWIN_CACHE_GB"])
        expression = re.fullmatch(r"\$\{\{(.*)\}\}", raw.strip()).group(1)
        on = {
            mode: _evaluate(expression, {"needs": {"extract": {"outputs": {"mode": mode}}}}, tmp_path)
            for mode in ("cpu", "gpu")
        }
        assert on == {"cpu": "free", "gpu": ""}  # as many as leave the next build room (runner/settings.py)
        chosen = _evaluate(
            expression,
            {"vars": {"DRIFTMATRIX_TWIN_CACHE_GB": "5"}, "needs": {"extract": {"outputs": {"mode": "cpu"}}}},
            tmp_path,
        )
        assert chosen == "5"
