"""Extraction speed: the vLLM 0.33.0 docs tree plus the recipes snapshot.

Reports, best of N runs (wall clock):
  extract   - driftmatrix's extraction of both trees, in process (reading, parsing, merging),
              with its default worker processes (one per core, max 4)
  serial    - the same on one core (DRIFTMATRIX_WORKERS=1)
  baseline  - markdown-it-py merely parsing the same files (MarkdownIt("commonmark").parse)
  cli       - `driftmatrix extract` as a fresh process, imports and JSON writing included
Targets from the issue: extract < 2 s on the 2-core machine, extract <= 1.5 x baseline.

    python benchmarks/extract.py [CORPUS_DIR] [--runs N]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from markdown_it import MarkdownIt

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import best

from driftmatrix.extractor.catalog import extract
from driftmatrix.extractor.corpus import detect, files_of
from driftmatrix.runner.builds.resolve import stable_pin


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("corpus", nargs="?", default=str(Path(__file__).resolve().parents[2] / "shared" / "corpus"))
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    trees = [Path(args.corpus) / "vllm-docs" / "0.33.0", Path(args.corpus) / "recipes" / "8959cf6"]
    files = [path for tree in trees for path in files_of(detect(tree))]
    size = sum(p.stat().st_size for p in files)

    def baseline() -> None:
        md = MarkdownIt("commonmark")
        for path in files:
            md.parse(path.read_text(encoding="utf-8", errors="replace"))

    def ours() -> None:
        catalog, _ = extract(trees, stable=stable_pin())
        assert catalog.snippets

    def serial() -> None:
        extract(trees, workers=1, stable=stable_pin())

    t_base = best(baseline, args.runs)
    t_ours = best(ours, args.runs)
    t_serial = best(serial, args.runs)
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "driftmatrix.cli", "extract", *map(str, trees), "-q", "-o", f"{tmp}/s.json"]
        t_cli = best(lambda: subprocess.run(cmd, check=True, capture_output=True), max(1, args.runs // 2))
    catalog, _ = extract(trees, stable=stable_pin())
    print(f"files: {len(files)} ({size / 1e6:.1f} MB), snippets: {len(catalog.snippets)}")
    print(f"extract  (in process): {t_ours:.3f} s")
    print(f"baseline (markdown-it-py parse only): {t_base:.3f} s")
    print(f"serial   (one core): {t_serial:.3f} s")
    print(f"ratio extract/baseline: {t_ours / t_base:.2f} (serial: {t_serial / t_base:.2f})")
    print(f"cli      (fresh process, writes JSON): {t_cli:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
