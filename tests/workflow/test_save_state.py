"""The save-state job's own scripts (read with GitHub's parser, tests/workflow/steps.mjs), run in real
bash with the real CLI against a real git remote standing in for github.com: the day's outcomes
and this run's matrix.json reach the state branch before any site is built, so a failing publish
loses nothing; and a job re-run after its `state` artifact expired loads the branch instead.

`https://github.com/o/r` is pointed at a local bare repository with git's own `url.<base>.insteadOf`
(a global config file of the test's); nothing else is stood in for."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_sandbox_steps import REPO, SCHEDULED, workflow

SITE = REPO / "tests" / "fixtures" / "site"
CLI = [sys.executable, "-m", "driftmatrix.cli"]


def _steps() -> list[dict]:
    job = next(j for j in workflow(SCHEDULED)["jobs"] if j["id"] == "save-state")
    return [s for s in job["steps"] if s.get("run") and s.get("id") != "python" and "pip install" not in s["run"]]


def _remote(tmp_path: Path) -> tuple[Path, dict]:
    """A bare repository as https://github.com/o/r, and the environment every step gets."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text(
        f'[url "{remote}"]\n\tinsteadOf = https://github.com/o/r\n[user]\n\tname = t\n\temail = t@example.invalid\n'
    )
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "driftmatrix").write_text(f'#!/bin/sh\nexec {sys.executable} -m driftmatrix.cli "$@"\n')
    (bin_dir / "driftmatrix").chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "GIT_CONFIG_GLOBAL": str(gitconfig),
        "GIT_CONFIG_NOSYSTEM": "1",
        "REPO": "o/r",
        "GITHUB_TOKEN": "",
        "PYTHONPATH": str(REPO),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
    }
    return remote, env


def _artifacts(job: Path, state: Path | None) -> None:
    """What the job downloads: inputs (the previous outcomes: none), a leg's outcomes, maybe `state`."""
    inputs = job / "artifacts" / "inputs"
    (inputs / "state").mkdir(parents=True)
    shutil.copy(SITE / "snippets.json", inputs / "snippets.json")
    shutil.copy(REPO / "flaghistory" / "data" / "flag-history.json", inputs / "flag-history.json")
    (inputs / "state" / "outcomes.jsonl").write_text("")
    (job / "artifacts" / "legs").mkdir(parents=True)
    shutil.copy(SITE / "outcomes-cpu-parse.jsonl", job / "artifacts" / "legs" / "outcomes-stable-1.jsonl")
    if state is not None:
        shutil.copytree(state, job / "artifacts" / "state")


def _run_job(job: Path, env: dict, publish: str = "true") -> list[str]:
    ran = []
    for step in _steps():
        if step["if"] not in ("${{ success() }}", "${{ success() && (needs.extract.outputs.publish == 'true') }}"):
            pytest.fail(f"save-state step with an unexpected condition: {step['if']}")
        if "needs.extract.outputs.publish" in step["if"] and publish != "true":
            continue
        (job / "step.sh").write_text(step["run"])
        out = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(job / "step.sh")],
            cwd=job,
            env={**env, **{k: v for k, v in step["env"].items() if "${{" not in str(v)}},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert out.returncode == 0, (step["name"], out.stdout, out.stderr)
        ran.append(step["name"])
    return ran


def _next_morning(tmp_path: Path, env: dict) -> Path:
    """What the next run's extract job loads from the state branch."""
    dest = tmp_path / "next-morning"
    out = subprocess.run(
        [*CLI, "state", "load", "--remote", "https://github.com/o/r", "-d", str(dest)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert "state of driftmatrix-state" in out.stdout
    return dest


def test_the_days_outcomes_are_saved_before_any_site(tmp_path):
    remote, env = _remote(tmp_path)
    first = tmp_path / "extract-state"
    subprocess.run(
        [*CLI, "state", "load", "--remote", "https://github.com/o/r", "-d", str(first)],
        check=True,
        env=env,
        capture_output=True,
    )  # a first run: no branch yet
    job = tmp_path / "save-state"
    job.mkdir()
    _artifacts(job, first)
    ran = _run_job(job, env)
    assert len(ran) == 3 and "state save" in _steps()[-1]["run"]
    # the morning after, whatever publish did: the leg's outcomes and this run's matrix.json are there
    state = _next_morning(tmp_path, env)
    saved = [json.loads(line) for line in (state / "outcomes.jsonl").read_text().splitlines()]
    leg = (SITE / "outcomes-cpu-parse.jsonl").read_text().splitlines()
    assert len(saved) == len(leg) > 0
    snapshots = sorted((state / "history").glob("matrix-*.json"))
    assert len(snapshots) == 1 and json.loads(snapshots[0].read_text())["snippets"]
    # what publish and the PR jobs get: the merged outcomes, the inputs, and the history before today's
    merged = job / "merged"
    assert {p.name for p in merged.iterdir()} == {"merged.jsonl", "snippets.json", "flag-history.json", "history"}
    assert list((merged / "history").iterdir()) == []  # the site compares with the runs before this one


def test_an_expired_state_artifact_loads_the_branch(tmp_path):
    """A re-run after the `state` artifact's week: the state branch as it is now, saved on top of it."""
    remote, env = _remote(tmp_path)
    seed = tmp_path / "seed"
    (seed / "history").mkdir(parents=True)
    (seed / "history" / "matrix-20261201T041700Z.json").write_text(
        json.dumps({"generated": "2026-12-01T04:17:00Z", "snippets": {}})
    )
    (seed / "outcomes.jsonl").write_text((SITE / "outcomes-cpu-config.jsonl").read_text())
    subprocess.run(
        [*CLI, "state", "save", "--remote", "https://github.com/o/r", "-d", str(seed)],
        check=True,
        env=env,
        capture_output=True,
    )
    job = tmp_path / "save-state"
    job.mkdir()
    _artifacts(job, None)
    _run_job(job, env)
    state = _next_morning(tmp_path, env)
    assert len(list((state / "history").glob("matrix-*.json"))) == 2  # the earlier run's and this one's
    keys = {
        (o["snippet_id"], o.get("variant"), o["target"]["name"], o["tier"])
        for o in map(json.loads, (state / "outcomes.jsonl").read_text().splitlines())
    }
    for path in ("outcomes-cpu-config.jsonl", "outcomes-cpu-parse.jsonl"):  # nothing on the branch is lost
        for o in map(json.loads, (SITE / path).read_text().splitlines()):
            assert (o["snippet_id"], o.get("variant"), o["target"]["name"], o["tier"]) in keys
    assert [p.name for p in (job / "merged" / "history").iterdir()] == ["matrix-20261201T041700Z.json"]
