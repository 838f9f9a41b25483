"""The save-state job's own scripts (read with GitHub's parser, tests/workflow/steps.mjs), run in real
bash with the real CLI against a real git remote standing in for github.com: the day's outcomes
and this run's matrix.json reach the state branch before any site is built, so a failing publish
loses nothing; a job re-run after its `state` artifact expired loads the branch instead; a re-run
("Re-run failed jobs") saves onto the run's own first save; and a save refused (another run moved the
branch) fails the job, says why in its summary, and the site publish builds from the job's `merged` says so
on its front page.

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


def _steps(job_id: str = "save-state") -> list[dict]:
    job = next(j for j in workflow(SCHEDULED)["jobs"] if j["id"] == job_id)
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


def _artifacts(job: Path, state: Path | None, legs: tuple[str, ...] = ("outcomes-cpu-parse.jsonl",)) -> None:
    """What the job downloads: inputs (the previous outcomes: none), the legs' outcomes, maybe `state`."""
    inputs = job / "artifacts" / "inputs"
    (inputs / "state").mkdir(parents=True)
    shutil.copy(SITE / "snippets.json", inputs / "snippets.json")
    shutil.copy(REPO / "flaghistory" / "data" / "flag-history.json", inputs / "flag-history.json")
    (inputs / "state" / "outcomes.jsonl").write_text("")
    (job / "artifacts" / "legs").mkdir(parents=True)
    for n, leg in enumerate(legs, 1):
        shutil.copy(SITE / leg, job / "artifacts" / "legs" / f"outcomes-stable-{n}.jsonl")
    if state is not None:
        shutil.copytree(state, job / "artifacts" / "state")


def _run_job(job: Path, env: dict, publish: str = "true", refused: bool = False) -> list[str]:
    """The job's scripts in order; `refused`: the state save fails (and the job with it), nothing after it runs."""
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
        ran.append(step["name"])
        if refused and "state save" in step["run"]:
            assert out.returncode == 1, (step["name"], out.stdout, out.stderr)
            assert "the state was not saved" in out.stdout
            return ran
        assert out.returncode == 0, (step["name"], out.stdout, out.stderr)
    assert not refused, "the state save was expected to fail"
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


def _load(tmp_path: Path, env: dict, name: str) -> Path:
    """What the extract job hands save-state as the `state` artifact: the branch as the run started."""
    dest = tmp_path / name
    subprocess.run(
        [*CLI, "state", "load", "--remote", "https://github.com/o/r", "-d", str(dest)],
        check=True,
        env=env,
        capture_output=True,
    )
    return dest


def _keys(path: Path) -> set:
    return {
        (o["snippet_id"], o.get("variant"), o["target"]["name"], o["tier"])
        for o in map(json.loads, path.read_text().splitlines())
    }


def _head(remote: Path) -> tuple[str, str]:
    """The state branch's head commit and its message."""
    out = subprocess.run(
        ["git", "--git-dir", str(remote), "log", "-1", "--format=%H%n%B", "driftmatrix-state"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    sha, _, message = out.partition("\n")
    return sha, message


def test_a_rerun_saves_onto_its_own_first_save(tmp_path):
    """ "Re-run failed jobs": attempt 2 of run 101 gets attempt 1's `state` artifact (the commit the run
    started from), which attempt 1 has already saved on top of. The save is merged onto that save of the
    same run, not refused: both attempts' outcomes and snapshots reach the branch."""
    remote, env = _remote(tmp_path)
    started = _load(tmp_path, env, "extract-state")  # a first run: no branch yet
    run = {**env, "GITHUB_RUN_ID": "101", "GITHUB_RUN_ATTEMPT": "1"}
    attempt1 = tmp_path / "attempt-1"
    attempt1.mkdir()
    _artifacts(attempt1, started, legs=("outcomes-cpu-parse.jsonl",))  # the config leg failed
    _run_job(attempt1, run)
    first, message = _head(remote)
    assert "Driftmatrix-Run: 101" in message  # the commit names its run
    summary = Path(env["GITHUB_STEP_SUMMARY"]).read_text()
    assert "State saved" in summary and "not saved" not in summary

    attempt2 = tmp_path / "attempt-2"  # only the re-run leg's outcomes: the merge keeps attempt 1's
    attempt2.mkdir()
    _artifacts(attempt2, started, legs=("outcomes-cpu-config.jsonl",))
    _run_job(attempt2, {**run, "GITHUB_RUN_ATTEMPT": "2"})
    second, message = _head(remote)
    assert second != first and "Driftmatrix-Run: 101" in message
    parent = subprocess.run(
        ["git", "--git-dir", str(remote), "rev-parse", f"{second}^"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert parent == first  # on top of attempt 1's save: a fast-forward, nothing overwritten
    state = _next_morning(tmp_path, env)
    saved = _keys(state / "outcomes.jsonl")
    assert _keys(SITE / "outcomes-cpu-parse.jsonl") <= saved and _keys(SITE / "outcomes-cpu-config.jsonl") <= saved
    # both attempts' snapshots (named by the second they were made in: one name, attempt 2's)
    snapshots = {
        a: {p.name: p.read_text() for p in (a / "state" / "history").glob("matrix-*.json")}
        for a in (attempt1, attempt2)
    }
    kept = {p.name: p.read_text() for p in (state / "history").glob("matrix-*.json")}
    assert set(kept) == set(snapshots[attempt1]) | set(snapshots[attempt2]) and len(kept) >= 1
    assert all(kept[name] == text for name, text in snapshots[attempt2].items())
    assert not (attempt2 / "merged" / "state-unsaved.json").exists()


def test_a_refused_save_fails_the_job_and_the_site_says_so(tmp_path):
    """Another run (202) saves onto a branch that moved since it loaded it: refused (runs are not ordered
    by the merge, so an older run's outcomes could replace a newer one's), the step and so the job fail,
    the summary says why, and the site publish builds from this job's `merged` says on its front page
    that the state was not saved that day."""
    from bs4 import BeautifulSoup

    remote, env = _remote(tmp_path)
    started = _load(tmp_path, env, "extract-state")
    other = tmp_path / "other-run"
    other.mkdir()
    _artifacts(other, started)
    _run_job(other, {**env, "GITHUB_RUN_ID": "101"})  # run 101 saves first
    head, _ = _head(remote)

    job = tmp_path / "save-state"
    job.mkdir()
    _artifacts(job, started, legs=("outcomes-cpu-config.jsonl",))
    Path(env["GITHUB_STEP_SUMMARY"]).write_text("")
    ran = _run_job(job, {**env, "GITHUB_RUN_ID": "202"}, refused=True)
    assert "state save" in _steps()[len(ran) - 1]["run"]
    assert _head(remote)[0] == head  # nothing of run 101's overwritten
    summary = Path(env["GITHUB_STEP_SUMMARY"]).read_text()
    assert "The state was not saved" in summary and "moved since this run loaded it" in summary
    assert "saved by run 101" in summary
    note = json.loads((job / "merged" / "state-unsaved.json").read_text())
    assert note["run"] == "202" and "moved since this run loaded it" in note["why"] and note["date"]
    assert (job / "merged" / "merged.jsonl").is_file()  # what publish builds from is uploaded all the same

    # the publish job's own script on that `merged` (a real mkdocs build)
    site_job = tmp_path / "publish"
    shutil.copytree(job / "merged", site_job / "merged")
    build = next(s for s in _steps("publish") if "driftmatrix publish" in s["run"])
    (site_job / "step.sh").write_text(build["run"])
    out = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(site_job / "step.sh")],
        cwd=site_job,
        env={**env, **{k: v for k, v in build["env"].items() if "${{" not in str(v)}},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    front = BeautifulSoup((site_job / "site" / "index.html").read_text(encoding="utf-8"), "html.parser")
    line = front.select_one(".dm-unsaved")
    assert line is not None
    text = " ".join(line.get_text().split())
    assert f"The state was not saved on {note['date']} (run 202)" in text and "moved since this run loaded it" in text


def test_state_save_twice_from_one_run(tmp_path):
    """`driftmatrix state save` itself: a second save of run 7 from the state the run started from is merged
    onto its first (both saves' outcomes kept); run 8, a save naming no run, or a head that names none, is
    refused with the branch untouched."""
    remote, env = _remote(tmp_path)
    env = {k: v for k, v in env.items() if k != "GITHUB_RUN_ID"}
    started = _load(tmp_path, env, "started")

    def save(name: str, leg: str, *run: str) -> subprocess.CompletedProcess:
        src = tmp_path / name
        shutil.copytree(started, src)
        shutil.copy(SITE / leg, src / "outcomes.jsonl")
        (src / "history" / f"matrix-{name}.json").write_text("{}")
        return subprocess.run(
            [*CLI, "state", "save", "--remote", "https://github.com/o/r", "-d", str(src), *run],
            capture_output=True,
            text=True,
            env=env,
        )

    first = save("first", "outcomes-cpu-parse.jsonl", "--run-id", "7")
    assert first.returncode == 0 and "saved" in first.stdout, first.stderr
    second = save("second", "outcomes-cpu-config.jsonl", "--run-id", "7")
    assert second.returncode == 0 and "merged onto this run's earlier save" in second.stdout, second.stderr
    state = _next_morning(tmp_path, env)
    saved = _keys(state / "outcomes.jsonl")
    assert _keys(SITE / "outcomes-cpu-parse.jsonl") | _keys(SITE / "outcomes-cpu-config.jsonl") == saved
    assert {p.name for p in (state / "history").iterdir()} == {"matrix-first.json", "matrix-second.json"}
    head, message = _head(remote)
    for name, run in (("other", ("--run-id", "8")), ("anonymous", ())):
        out = save(name, "outcomes-cpu-config.jsonl", *run)
        assert out.returncode == 1 and "moved since this run loaded it" in out.stderr and "saved by run 7" in out.stderr
        assert _head(remote)[0] == head
    # a head no run names (a save by hand, or one from before runs were named) is never merged onto
    manual = tmp_path / "manual"
    subprocess.run(["git", "clone", "-q", "-b", "driftmatrix-state", str(remote), str(manual)], check=True, env=env)
    (manual / "README.md").write_text("edited by hand\n")
    subprocess.run(["git", "-C", str(manual), "commit", "-qam", "by hand"], check=True, env=env)
    subprocess.run(["git", "-C", str(manual), "push", "-q"], check=True, env=env)
    out = save("after-manual", "outcomes-cpu-config.jsonl", "--run-id", "7")
    assert out.returncode == 1 and "saved by no workflow run" in out.stderr
