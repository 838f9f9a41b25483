"""Which outcome of a job counts: the one rule used by `run` (what is done), `plan`, `merge`,
`publish`, `annotate` and `pr`.

- An ERROR (ours or the machine's) never counts as done: it is retried, and any other outcome
  of the same job or cell beats it.
- Among the outcomes of one job (or one cell: one command on one build), a real verdict
  (PASS, WARN, FAIL) beats a SKIP, a SKIP beats an ERROR; then the deeper stage; then the
  later run. A later SKIP (model not available today) never hides an earlier FAIL.
- A deeper tier never erases a shallower verdict: the runner reaches a tier only after every tier
  before it passed, so a SKIP at a stage after parse (no model config offline, not a server, no
  device) counts as the PASS (or WARN) of the stage before it, saying what was not checked and why
  (`as_counted`). `--tier config` alone then publishes what the two-pass pipeline (parse, then
  config) does. The recorded outcome stays as it was (the state, the history of runs).
- A build superseded by a newer build of the same target (yesterday's nightly, the stable
  before the pin moved) is retired: its outcomes stay in the state and the history, but no
  judgement, warning or PR row rests on them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from driftmatrix.common.versions import version_order
from driftmatrix.runner.outcomes.evidence_record import LoggedWarning
from driftmatrix.runner.outcomes.outcome_record import Outcome, TargetRef
from driftmatrix.runner.outcomes.vocabulary import REAL, TIERS, VerdictName, stage_rank


def is_done(o: Outcome) -> bool:
    """The job need not run again (an ERROR is retried)."""
    return o.verdict != "ERROR"


def passed(warnings: list[LoggedWarning]) -> tuple[VerdictName, str | None]:
    """(verdict, reason) of a command that ran as far as it was checked: PASS, or WARN when vLLM
    logged a warning about a documented feature."""
    feature = [w for w in warnings if w.feature]
    if feature:
        w = feature[0]
        return "WARN", f"vLLM warns: {w.message[:300]} [{w.file}:{w.line}]"
    return "PASS", None


def as_counted(o: Outcome) -> Outcome:
    """The outcome as it counts: a SKIP reached at a stage after parse is the PASS/WARN of the stage
    before it, with "<stage> not checked: <why>" (a copy; any other outcome as it is)."""
    if o.verdict != "SKIP" or stage_rank(o.stage) <= 0:
        return o
    verdict, warned = passed(o.evidence.warnings)
    why = f"{o.stage} not checked: {o.reason or 'no reason recorded'}"
    return replace(
        o, verdict=verdict, stage=TIERS[stage_rank(o.stage) - 1], reason=f"{warned}; {why}" if warned else why
    )


def rank(o: Outcome) -> tuple:
    """Higher counts: a real verdict over a SKIP over an ERROR, then depth, then recency (each
    outcome as it counts: `as_counted`)."""
    o = as_counted(o)
    kind = 2 if o.verdict in REAL else 1 if o.verdict == "SKIP" else 0
    return (kind, stage_rank(o.stage), o.started or "")


def best(outcomes: Iterable[Outcome]) -> Outcome | None:
    """The outcome that counts among several of one job or cell (None for none), as recorded
    (what is judged is `as_counted` of it)."""
    chosen = None
    for o in outcomes:
        if chosen is None or rank(o) >= rank(chosen):
            chosen = o
    return chosen


def build_key(target: TargetRef) -> tuple[str, str, str | None]:
    return (target.name, target.version, target.commit)


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
