"""The tiers, cheapest first: each a function `(JobState) -> Verdict | None` (None: go on), run by
`driftmatrix.runner.jobs.execute` in this order up to the tier the job asks for. `prepare` always runs; the
parse tier's module also runs the config tier (one helper request)."""

from __future__ import annotations

from collections.abc import Callable

from driftmatrix.runner.jobs.tiers.parse_config import parse_config
from driftmatrix.runner.jobs.tiers.perf import perf
from driftmatrix.runner.jobs.tiers.prepare import prepare
from driftmatrix.runner.jobs.tiers.probe import probe
from driftmatrix.runner.jobs.tiers.start import start
from driftmatrix.runner.jobs.tiers.state import JobState, Verdict

Tier = Callable[[JobState], "Verdict | None"]

STEPS: tuple[tuple[str, Tier], ...] = (
    ("parse", prepare),  # before the parse tier: what will run (models, twins, files)
    ("parse", parse_config),
    ("start", start),
    ("probe", probe),
    ("perf", perf),
)
"""(the tier a step belongs to, the step): a job asking for tier T runs every step up to T."""
