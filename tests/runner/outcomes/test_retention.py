"""Issue 60 point 4: the state stays small. runner/outcomes/retention.py's one rule on synthetic
records — the newest N nightly builds of each build line (target, release line) kept, every release
kept, the newest verdict of every job on each line surviving whatever build it was reached on — and
`driftmatrix merge` applying it; a leg's outcomes file holds only what it wrote (`run --previous`)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from driftmatrix.runner.outcomes import retention, store
from driftmatrix.runner.outcomes.outcome_record import Outcome, TargetRef

SITE = Path(__file__).parents[2] / "fixtures" / "site"


def outcome(sid: str, name: str, version: str, day: int, tier: str = "config", verdict: str = "PASS") -> Outcome:
    commit = version.rsplit("+g", 1)[1] if "+g" in version else None
    return Outcome(
        snippet_id=sid,
        target=TargetRef(name, version, commit, "vllm"),
        tier=tier,
        stage=tier,
        verdict=verdict,
        started=f"2026-{1 + day // 28:02d}-{1 + day % 28:02d}T04:17:00Z",
    )


def nightly(minor: int, n: int) -> str:
    return f"0.{minor}.0.dev{n}+g{n:07x}"


def test_nightly_and_release_line():
    assert retention.is_nightly("0.35.0.dev12+g1a2b3c4") and retention.is_nightly("0.35.0+g1a2b3c4")
    assert not retention.is_nightly("0.34.0") and not retention.is_nightly("0.34.0rc1")
    assert not retention.is_nightly("0.34.0.post1") and not retention.is_nightly("not-a-version")
    assert retention.release_line("0.35.0.dev12+g1a2b3c4") == "0.35" and retention.release_line("1") == "1.0"


def _days() -> list[Outcome]:
    """Ten nightlies of the 0.35 line, then three of 0.36; releases 0.33.0 and 0.34.0 on `stable`. Each
    nightly checks s1..s3 at config; `rot` is probed on dev2 only (the rotation), `gone` ran on dev1 only
    (its page went), s1's probe on dev3 and again on dev9."""
    out = []
    for day, version in enumerate(["0.33.0", "0.34.0"]):
        out += [outcome(s, "stable", version, day) for s in ("s1", "s2", "s3")]
    for n in range(1, 11):
        out += [outcome(s, "nightly", nightly(35, n), n) for s in ("s1", "s2", "s3")]
    for n in range(1, 4):
        out += [outcome(s, "nightly", nightly(36, n), 10 + n) for s in ("s1", "s2", "s3")]
    out.append(outcome("rot", "nightly", nightly(35, 2), 2, tier="probe", verdict="FAIL"))
    out.append(outcome("gone", "nightly", nightly(35, 1), 1))
    out.append(outcome("s1", "nightly", nightly(35, 3), 3, tier="probe"))
    out.append(outcome("s1", "nightly", nightly(35, 9), 9, tier="probe"))
    return out


def test_the_newest_nightlies_of_each_line_and_every_release_are_kept():
    everything = _days()
    done = retention.compact(everything, keep_nightlies=3)
    builds = {(o.target.name, o.target.version) for o in done.kept if o.snippet_id in ("s1", "s2", "s3")}
    assert {v for name, v in builds if name == "stable"} == {"0.33.0", "0.34.0"}  # every release
    kept_nightlies = {v for name, v in builds if name == "nightly"}
    # per line the 3 newest, plus the builds where some job's newest verdict on the line lies
    assert {nightly(35, n) for n in (8, 9, 10)} <= kept_nightlies
    assert {nightly(36, n) for n in (1, 2, 3)} <= kept_nightlies  # the 0.36 line has its own 3
    full = {v for v in kept_nightlies if sum(o.target.version == v for o in done.kept) >= 3}
    assert full == {nightly(35, n) for n in (8, 9, 10)} | {nightly(36, n) for n in (1, 2, 3)}
    assert {k[1] for k in done.dropped_builds} == {nightly(35, n) for n in range(1, 8)}
    # the newest verdict of each job on a line survives: the rotation's probe, a page gone since
    kept = {(o.snippet_id, o.tier, o.target.version) for o in done.kept}
    assert ("rot", "probe", nightly(35, 2)) in kept and ("gone", "config", nightly(35, 1)) in kept
    assert ("s1", "probe", nightly(35, 9)) in kept and ("s1", "probe", nightly(35, 3)) not in kept
    assert done.dropped_records == len(everything) - len(done.kept) == 7 * 3 + 1  # dev1..7's config, dev3's probe
    assert retention.compact(everything, keep_nightlies=None).kept == everything


@pytest.mark.parametrize("seed", range(5))
def test_the_newest_verdict_of_every_job_on_every_line_survives(seed):
    """Random days: whatever N, for every (snippet, variant, tier, target, release line) the outcome on
    the newest build that has one is kept; no release is dropped; at most N nightlies per line beyond those."""
    rng = random.Random(seed)
    everything = []
    for day in range(60):
        minor = 35 + day // 25
        for sid in rng.sample([f"s{i}" for i in range(12)], rng.randint(1, 12)):
            everything.append(outcome(sid, "nightly", nightly(minor, day + 1), day, rng.choice(["config", "probe"])))
            if rng.random() < 0.1:
                everything.append(outcome(sid, "stable", f"0.{minor - 1}.{day % 3}", day))
    keep = rng.randint(1, 5)
    kept = retention.compact(everything, keep_nightlies=keep).kept
    newest = {}
    for o in everything:
        job = (o.snippet_id, o.variant, o.tier, o.target.name, retention.release_line(o.target.version))
        if job not in newest or retention.version_order(o.target.version) > retention.version_order(newest[job]):
            newest[job] = o.target.version
    have = {
        (o.snippet_id, o.variant, o.tier, o.target.name, retention.release_line(o.target.version), o.target.version)
        for o in kept
    }
    assert all((*job, version) in have for job, version in newest.items())
    assert [o for o in everything if o.target.name == "stable"] == [o for o in kept if o.target.name == "stable"]
    lines: dict = {}
    for o in kept:
        if retention.is_nightly(o.target.version):
            lines.setdefault(retention.release_line(o.target.version), set()).add(o.target.version)
    for line, versions in lines.items():
        by_line = {
            o.target.version
            for o in everything
            if retention.is_nightly(o.target.version) and retention.release_line(o.target.version) == line
        }
        newest_n = set(sorted(by_line, key=retention.version_order)[-keep:])
        assert newest_n <= versions
        needed = {v for job, v in newest.items() if job[4] == line and job[3] == "nightly"}
        assert versions == newest_n | needed


def _write(path: Path, outcomes: list[Outcome]) -> Path:
    path.write_text("".join(json.dumps(o.to_dict()) + "\n" for o in outcomes))
    return path


def test_merge_compacts_and_copies_cost_nothing(tmp_path):
    """`driftmatrix merge` as save-state runs it: the state (twice: the run's start and the branch) and
    the legs' new records, into one record per job, compacted with --keep-nightlies."""
    everything = _days()
    state = _write(tmp_path / "state.jsonl", everything[:-10])
    leg = _write(tmp_path / "leg.jsonl", everything[-10:])
    out = tmp_path / "merged.jsonl"
    cli = [sys.executable, "-m", "driftmatrix.cli", "merge", str(state), str(state), str(leg), "-o", str(out)]
    done = subprocess.run([*cli, "--keep-nightlies", "3"], capture_output=True, text=True, check=True)
    merged = [Outcome.from_dict(json.loads(line)) for line in out.read_text().splitlines()]
    assert [o.to_dict() for o in merged] == [o.to_dict() for o in retention.compact(everything, 3).kept]
    assert "22 record(s) of 7 superseded nightly build(s) compacted" in done.stdout
    subprocess.run([*cli, "--keep-nightlies", "all"], capture_output=True, check=True)
    assert len(out.read_text().splitlines()) == len(everything)
    refused = subprocess.run([*cli, "--keep-nightlies", "0"], capture_output=True, text=True)
    assert refused.returncode == 2 and "at least 1" in refused.stderr
    # each record as it was read (a later version's key too), into a file that was one of the inputs
    lines = state.read_text().splitlines()
    lines[0] = lines[0][:-1] + ', "a_later_key": 1}'
    state.write_text("\n".join(lines) + "\n" + '{"record": "target-diagnostic"}\n' + "{torn")
    said = subprocess.run(
        [*cli[:4], str(state), str(leg), "-o", str(state)], capture_output=True, text=True, check=True
    )
    assert "unreadable outcome line ignored" in said.stderr
    back = state.read_text().splitlines()
    assert lines[0] in back and not any("target-diagnostic" in line for line in back)
    assert len(back) == len(retention.compact(everything).kept) and not list(tmp_path.glob(".*merging"))


def test_a_leg_writes_only_its_own_records(tmp_path):
    """`run --previous STATE -o LEG`: the state's finished jobs count as done (not re-run, not listed),
    and the leg's file, what it uploads, starts empty instead of as a copy of the state."""
    state = SITE / "outcomes-cpu-parse.jsonl"
    leg = tmp_path / "outcomes-stable-1.jsonl"
    s = store.Store(leg, [state])
    s.close()
    assert leg.read_text() == ""
    assert s.done == {o.key() for o in store.read(state)[0] if o.verdict != "ERROR"} and s.done
    run = [sys.executable, "-m", "driftmatrix.cli", "run", str(SITE / "snippets.json"), "--tier", "parse", "--list"]
    run += ["--targets", str(Path(retention.__file__).parents[1] / "data" / "targets-seed-cpu.toml")]
    todo = subprocess.run([*run, "-o", str(tmp_path / "fresh.jsonl")], capture_output=True, text=True, check=True)
    again = subprocess.run([*run, "--previous", str(state), "-o", str(leg)], capture_output=True, text=True, check=True)
    assert todo.stdout.count("\n") > 0 and again.stdout == "" and leg.read_text() == ""
