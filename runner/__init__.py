"""Stage 2 (docs/guide/running.md): Snippet x Target -> Outcome.

Entry point: `runner.run.loop.run(RunOptions)`; records in `runner.outcomes.outcome_record`; targets (CPU builds,
existing environments, docker images) in `runner.builds.targets`/`runner.builds.envs`; one module per
tier concern (server start, probes, perf, log scanning, classification).
"""

from pathlib import Path

HOME = Path(__file__).resolve().parent
DATA = HOME / "data"
"""Files that ship with the runner: signatures, the targets files."""
INTARGET = HOME / "intarget"
"""Scripts that run inside a target's own Python (they import vLLM; driftmatrix never does)."""
