"""Stage 2 (docs/guide/running.md): Snippet x Target -> Outcome.

Entry point: `driftmatrix.runner.run.loop.run(RunOptions)`; records in `driftmatrix.runner.outcomes.outcome_record`; targets (CPU builds,
existing environments, docker images) in `driftmatrix.runner.builds.targets`/`driftmatrix.runner.builds.envs`; one module per
tier concern (server start, probes, perf, log scanning, classification).
"""

from pathlib import Path

HOME = Path(__file__).resolve().parent
DATA = HOME / "data"
"""Files that ship with the runner: signatures, the targets files."""
INTARGET = HOME / "intarget"
"""Scripts that run inside a target's own Python (they import vLLM; driftmatrix never does)."""
