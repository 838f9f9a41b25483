"""The H200 sample of issue 22: one documented command per architecture, for the start tier with twins.

From the vLLM 0.33.0 docs + recipes, every command that names a model gets its served model's
architecture the way the runner plans a twin offline on the GPU target (runner/models/twins.plan with
the supported-models table of that target's vLLM, here 0.21.0). Per architecture, the
representative is the plainest runnable command (fewest env settings, then arguments) among those one GPU can hold
(tensor x pipeline x data parallel = 1): what a one-H200 machine can start at all. Writes the
sample as a snippets file for `driftmatrix run` and, beside it, the per-architecture counts the
report needs (all commands of each architecture, and how many of them ask for more GPUs).

    python benchmarks/gpu/twins_sample.py [--version 0.21.0] [-o benchmarks/gpu/twins-sample.json] [--extra N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from collections import Counter
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from twins_coverage import named_models, plan_all  # noqa: E402

from driftmatrix.extractor.catalog import extract  # noqa: E402
from driftmatrix.extractor.snippet_record import Catalog  # noqa: E402
from driftmatrix.runner.argv.parallel import ranks_of  # noqa: E402
from driftmatrix.runner.builds import source_trees  # noqa: E402
from driftmatrix.runner.builds.resolve import stable_pin  # noqa: E402
from driftmatrix.runner.settings import cache_dir  # noqa: E402

RUNNABLE_KINDS = ("serve", "docker", "recipe")


def plainness(s) -> tuple[int, int]:
    """The representative of an architecture is its plainest command: fewest environment settings (an
    `VLLM_USE_FASTOKENS=1` asks for a package of its own), then fewest arguments, so that what it
    meets is the architecture's start-up path rather than one command's extra features."""
    return len(s.env or {}), len(s.argv)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus"))
    ap.add_argument("--version", default="0.21.0", help="the GPU target's vLLM (its supported-models table)")
    ap.add_argument("-o", "--output", default=str(ROOT / "benchmarks" / "gpu" / "twins-sample.json"))
    ap.add_argument("--extra", type=int, default=0, help="also write N other one-GPU commands, drawn at random")
    ap.add_argument("--seed", type=int, default=22)
    a = ap.parse_args()
    corpus = Path(a.corpus)
    catalog, _ = extract(stable=stable_pin(), sources=[corpus / "vllm-docs" / "0.33.0", corpus / "recipes" / "8959cf6"])
    docs_root = source_trees.source_tree(a.version, cache_dir())
    named = named_models(catalog.snippets)
    planned = plan_all(named, docs_root, a.version)
    per_arch: Counter = Counter()
    multi_gpu: Counter = Counter()
    best: dict[str, object] = {}
    for s in named:
        arch = planned[s.model][0]
        if not arch:
            continue
        per_arch[arch] += 1
        if ranks_of(s.argv).world > 1:
            multi_gpu[arch] += 1
        elif s.runnable and s.kind in RUNNABLE_KINDS and (arch not in best or plainness(s) < plainness(best[arch])):
            best[arch] = s
    sample = [best[k] for k, _ in per_arch.most_common() if k in best]
    out = Path(a.output)
    Catalog(snippets=sample).write(out)
    if a.extra:  # other one-GPU commands, drawn at random: do they fare as their architecture's sample?
        taken = {s.id for s in sample}
        rest = [
            s
            for s in named
            if planned[s.model][0]
            and s.id not in taken
            and ranks_of(s.argv).world == 1
            and s.runnable
            and s.kind in RUNNABLE_KINDS
        ]
        Catalog(snippets=random.Random(a.seed).sample(rest, min(a.extra, len(rest)))).write(
            out.with_name(out.stem + "-extra.json")
        )
    report = {
        "version": a.version,
        "commands": len(catalog.snippets),
        "named": len(named),
        "with_architecture": sum(per_arch.values()),
        "architectures": [
            {
                "architecture": k,
                "commands": n,
                "multi_gpu": multi_gpu[k],
                "sample": best[k].id if k in best else None,
                "model": best[k].model if k in best else None,
            }
            for k, n in per_arch.most_common()
        ],
    }
    out.with_name(out.stem + "-archs.json").write_text(json.dumps(report, indent=1))
    print(
        f"{len(named)} commands name a model; {report['with_architecture']} get an architecture from the "
        f"{a.version} table; {len(per_arch)} architectures, {len(sample)} with a one-GPU command -> {out}"
    )


if __name__ == "__main__":
    main()
