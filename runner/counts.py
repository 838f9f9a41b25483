"""Which outcome of a job counts: the one rule used by `run` (what is done), `plan`, `merge`,
`publish`, `annotate` and `pr`.

- An ERROR (ours or the machine's) never counts as done: it is retried, and any other outcome
  of the same job or cell beats it.
- Among the outcomes of one job (or one cell: one command on one build), a real verdict
  (PASS, WARN, FAIL) beats a SKIP, a SKIP beats an ERROR; then the deeper stage; then the
  later run. A later SKIP (model not available today) never hides an earlier FAIL.
- A build superseded by a newer build of the same target (yesterday's nightly, the stable
  before the pin moved) is retired: its outcomes stay in the state and the history, but no
  judgement, warning or PR row rests on them.
"""

from __future__ import annotations

from collections.abc import Iterable

from packaging.version import InvalidVersion, Version

from runner.records import TIERS, Outcome, TargetRef

REAL = ("PASS", "WARN", "FAIL")
"""Verdicts about the command (SKIP: not checked; ERROR: the check broke)."""
GOOD = ("PASS", "WARN")
"""It runs (a WARN runs: a warning is a warning, not a failure)."""


def depth(stage: str) -> int:
    """How far a stage goes: parse 0 … perf 4 (-1 for anything else)."""
    return TIERS.index(stage) if stage in TIERS else -1


def is_done(o: Outcome) -> bool:
    """The job need not run again (an ERROR is retried)."""
    return o.verdict != "ERROR"


def rank(o: Outcome) -> tuple:
    """Higher counts: a real verdict over a SKIP over an ERROR, then depth, then recency."""
    kind = 2 if o.verdict in REAL else 1 if o.verdict == "SKIP" else 0
    return (kind, depth(o.stage), o.started or "")


def best(outcomes: Iterable[Outcome]) -> Outcome | None:
    """The outcome that counts among several of one job or cell (None for none)."""
    chosen = None
    for o in outcomes:
        if chosen is None or rank(o) >= rank(chosen):
            chosen = o
    return chosen


def build_key(target: TargetRef) -> tuple[str, str, str | None]:
    return (target.name, target.version, target.commit)


def version_order(version: str) -> tuple:
    """PEP 440 order where the version parses (0.9 < 0.10, 0.21.0.dev3 < 0.21.0), after every
    unparsable one."""
    try:
        return (1, Version(version))
    except InvalidVersion:
        return (0, version)


def retired(outcomes: Iterable[Outcome]) -> set[tuple[str, str, str | None]]:
    """Build keys superseded by a newer build of the same target name: for each name only the
    newest version counts (the same version at another commit: the one run last)."""
    latest: dict[tuple, str] = {}
    for o in outcomes:
        key = build_key(o.target)
        latest[key] = max(latest.get(key, ""), o.started or "")
    newest: dict[str, tuple] = {}
    for key, when in latest.items():
        order = (version_order(key[1]), when)
        if key[0] not in newest or order > newest[key[0]][0]:
            newest[key[0]] = (order, key)
    return {key for key in latest if newest[key[0]][1] != key}
