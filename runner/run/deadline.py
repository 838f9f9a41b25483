"""A leg's deadline (`run --stop-after S`): no job starts after it, so the leg uploads what it
finished before the CI job's limit.

S counts from when `driftmatrix run` starts, or with `--started-at T` (Unix seconds, `date +%s` in
the CI job's first step) from T: the job's set-up (installing, the `--fetch-only` model step) is
then inside it, as it is inside GitHub's limit. A deadline already past when `run` starts starts
no job at all (runner/run/loop.py).
"""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime

FUTURE_SLACK_S = 60.0
"""How far in the future a job's start may be: clocks of one machine's steps agree within this;
more is a wrong value (milliseconds, another clock), not a start."""


def started_at_error(value: float, now: float | None = None) -> str | None:
    """Why `value` cannot be a job's start (Unix seconds), or None when it can."""
    now = time.time() if now is None else now
    if not math.isfinite(value) or value <= 0:
        return f"not a time in Unix seconds: {value!r}"
    if value > now + FUTURE_SLACK_S:
        return (
            f"{value:.0f} is {value - now:.0f} s in the future (the job's start, `date +%s` in its first step, "
            "cannot be later than now)"
        )
    return None


def monotonic_deadline(stop_after: float | None, started_at: float | None) -> float | None:
    """The deadline on the monotonic clock (None: no deadline): `stop_after` seconds from
    `started_at` (wall-clock, Unix seconds) when given, else from now."""
    if not stop_after:
        return None
    spent = max(time.time() - started_at, 0.0) if started_at is not None else 0.0
    return time.monotonic() + stop_after - spent


def passed(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() >= deadline


def _counted(stop_after: float, started_at: float | None) -> str:
    since = (
        ""
        if started_at is None
        else f" from the job's start at {datetime.fromtimestamp(started_at, UTC):%Y-%m-%d %H:%M:%S} UTC"
    )
    return f"--stop-after {stop_after:.0f} s{since}"


def stopped_text(stop_after: float, started_at: float | None, left: int) -> str:
    """What a run stopped by its deadline says (log and summary)."""
    return (
        f"stopped by its deadline ({_counted(stop_after, started_at)}): {left} job(s) not started, "
        "left for the next run; every finished outcome is kept"
    )


def passed_at_start_text(stop_after: float, started_at: float | None, left: int) -> str:
    """What a run whose deadline had passed before it began says: it started nothing."""
    return (
        f"the deadline passed before any job started ({_counted(stop_after, started_at)}): no job started, "
        f"{left} job(s) left for the next run; the outcomes file is kept as it was"
    )
