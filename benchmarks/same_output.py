"""Issue 48's check that a reorganisation changed no output: the same inputs through an older
checkout and this one give the same records and the same judgements.

    python benchmarks/same_output.py BEFORE_CHECKOUT OUT [--corpus DIR]

BEFORE_CHECKOUT is a worktree of the older commit; its driftmatrix is imported through PYTHONPATH
(the older layout's bare stage names included), this checkout's through the installed one. Compared:

- `extract` of the embedded sample docs (the README's main job) and of the docs corpus's 0.20.1 and
  0.33.0 docs: snippets.json byte for byte, less `generated_at`;
- `publish --snapshot-only` of the held records (tests/fixtures/site, and the README job's recorded
  snippets and outcomes in tests/fixtures/run): matrix.json byte for byte less its times, and the
  judgement counts (doc-drift / ok / unknown …) from it.

Writes OUT/same-output.json and prints one line per comparison; exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"
FIXTURES = REPO / "tests" / "fixtures"
TIMES = {"generated", "generated_at", "started_at", "finished_at", "published_at", "date"}


def _cli(checkout: Path | None, *args: str, cwd: Path) -> float:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if checkout is not None:
        env["PYTHONPATH"] = str(checkout)
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "driftmatrix.cli", *args],
        cwd=cwd,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.monotonic() - started


def _timeless(value):
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if k not in TIMES}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


def _judgement_counts(matrix: dict) -> dict[str, int]:
    """A command's judgement (doc-drift, ok, unknown …) as the site counts it: one per command."""
    counts = collections.Counter(row.get("judgement") or "none" for row in matrix.get("snippets", {}).values())
    return dict(sorted(counts.items()))


def _checkout_of(side: Path | None) -> str:
    """Where a side's embedded sample docs live: its own checkout (the catalog names their root)."""
    if side is not None:
        return str(side)
    import driftmatrix  # the installed one: this checkout's, through the editable install

    return str(Path(driftmatrix.__file__).resolve().parents[1])


def _extract(side: Path | None, sources: list[Path], out: Path) -> dict:
    out.parent.mkdir(parents=True, exist_ok=True)
    seconds = _cli(side, "extract", "-q", "-o", str(out), *map(str, sources), cwd=out.parent)
    text = out.read_text().replace(_checkout_of(side), "<checkout>")
    return {"seconds": round(seconds, 1), "catalog": _timeless(json.loads(text))}


def _publish(side: Path | None, snippets: Path, outcomes: list[Path], work: Path) -> dict:
    history = work / "history"
    shutil.rmtree(history, ignore_errors=True)
    history.mkdir(parents=True)
    seconds = _cli(
        side,
        "publish",
        "--snippets",
        str(snippets),
        "--outcomes",
        *map(str, outcomes),
        "--snapshot-only",
        "--run-history",
        str(history),
        cwd=work,
    )
    [matrix_file] = sorted(history.rglob("*.json"))
    matrix = _timeless(json.loads(matrix_file.read_text()))
    return {"seconds": round(seconds, 1), "matrix": matrix, "judgements": _judgement_counts(matrix)}


def _held_records(out: Path) -> dict[str, tuple[Path, list[Path]]]:
    run = out / "held-run"
    run.mkdir(parents=True, exist_ok=True)
    for name in ("snippets.json", "outcomes.jsonl"):
        (run / name).write_bytes(gzip.decompress((FIXTURES / "run" / f"readme-job-{name}.gz").read_bytes()))
    site = FIXTURES / "site"
    return {
        "README job (recorded)": (run / "snippets.json", [run / "outcomes.jsonl"]),
        "site fixture": (site / "snippets.json", sorted(site.glob("outcomes-*.jsonl"))),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    args = ap.parse_args()
    sides = {"before": args.before.resolve(), "after": None}
    extracts = {
        "sample docs (README main job)": [],
        "0.20.1 docs": [args.corpus / "vllm-docs" / "0.20.1"],
        "0.33.0 docs": [args.corpus / "vllm-docs" / "0.33.0"],
    }
    report, same = {}, True
    for name, sources in extracts.items():
        got = {
            side: _extract(path, sources, args.out / side / name.replace(" ", "-") / "snippets.json")
            for side, path in sides.items()
        }
        equal = got["before"]["catalog"] == got["after"]["catalog"]
        same &= equal
        n = len(got["after"]["catalog"].get("snippets", []))
        report[f"extract: {name}"] = {
            "same": equal,
            "snippets": n,
            "seconds": {s: g["seconds"] for s, g in got.items()},
        }
        print(f"extract {name}: {'same' if equal else 'DIFFERENT'} ({n} snippets)")
    for name, (snippets, outcomes) in _held_records(args.out).items():
        got = {
            side: _publish(path, snippets, outcomes, args.out / side / name.replace(" ", "-"))
            for side, path in sides.items()
        }
        equal = got["before"]["matrix"] == got["after"]["matrix"]
        same &= equal
        report[f"publish: {name}"] = {
            "same": equal,
            "judgements": {s: g["judgements"] for s, g in got.items()},
            "seconds": {s: g["seconds"] for s, g in got.items()},
        }
        print(f"publish {name}: {'same' if equal else 'DIFFERENT'} judgements {got['after']['judgements']}")
    (args.out / "same-output.json").write_text(json.dumps(report, indent=1) + "\n")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
