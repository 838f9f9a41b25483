"""How long a job takes, and how a day's jobs are packed into legs that finish inside a job limit.

GitHub ends a job after 6 hours (`timeout-minutes: 360` at most) and keeps nothing a killed step
did not upload, so a leg must be planned to finish: `plan --leg-hours H` packs each target's jobs
into legs whose predicted time is under H, adds legs as needed up to the matrix limit, and carries
what does not fit to the next run — the least recently checked command first, so every command
is checked in turn. Predictions come from what earlier runs recorded (`Outcome.duration_s`):
the same job's last duration, else the mean of like jobs (same tier, build kind, twin or not; a
mean because legs add times up, and like jobs are bimodal: most SKIP in milliseconds, a few build
a twin for half a minute), else `driftmatrix.runner.run.shards.predicted_cost`.

On self-hosted runners the legs queue for the runners there are, and GitHub cancels a job queued
24 hours: with `--runners N` a day has at most N × ⌊Q / H⌋ legs over all targets (`leg_cap`; Q =
`--queue-hours`), shared between the targets by need (`fit_day`), and the rest is deferred by the
same rotation.

With `--daily-tier` (the scheduled default: `config`), every command is checked daily at that
tier and the deeper tier (`--tier`) takes the share that still fits, oldest first: the plan says
how many days a full rotation of the deeper checks takes at this rate.
"""

from __future__ import annotations

import hashlib
import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from driftmatrix.runner.outcomes import counts
from driftmatrix.runner.outcomes.outcome_record import JobKey, Outcome
from driftmatrix.runner.outcomes.vocabulary import TIERS

GITHUB_JOB_LIMIT_H = 6.0
"""A GitHub-hosted or self-hosted job's hard limit (jobs.<id>.timeout-minutes cannot exceed 360)."""
LEG_HOURS = 5.0
"""A leg's planned time by default: an hour below the limit for set-up, the job in flight at the
leg's deadline, and uploading what it finished."""
MAX_LEGS = 256
"""GitHub's limit on the jobs one matrix may generate."""
QUEUE_HOURS = 20.0
"""Planned hours of legs that may queue on one self-hosted runner: GitHub cancels a job still queued
after 24 hours, and a leg may run past its plan (to its deadline, then uploads) before the next starts."""

Source = Literal["this job", "this command", "like jobs", "guess"]


def _distribution(name: str | None) -> str:
    return name or "env"


@dataclass(frozen=True)
class Estimate:
    seconds: float
    source: Source
    """`this job` (its own last duration), `this command` (it stopped short of this tier before: a
    FAIL or SKIP there, which a deeper job meets too), `like jobs` (mean of its class) or `guess`."""


@dataclass
class Durations:
    """What earlier runs recorded: each job's last duration and when each command was last checked."""

    by_job: dict[tuple, float] = field(default_factory=dict)
    """(snippet, variant, target name, tier) -> seconds of its latest outcome."""
    by_class: dict[tuple, float] = field(default_factory=dict)
    """(tier, distribution, twin) -> mean seconds of those outcomes."""
    checked: dict[tuple, str] = field(default_factory=dict)
    """(snippet, variant, target name, tier) -> UTC ISO time of the latest counted outcome at that
    tier or deeper."""
    stopped: dict[tuple, float] = field(default_factory=dict)
    """(snippet, variant, target name) -> seconds of its latest FAIL or SKIP (a deeper job stops there too)."""
    stand_in: set[str] = field(default_factory=set)
    """Snippets that ran on a twin before (their next run will too)."""

    @classmethod
    def from_outcomes(cls, outcomes: Iterable[Outcome]) -> Durations:
        out, latest, samples = cls(), {}, {}
        for o in outcomes:
            if not counts.is_done(o) or not o.started:
                continue
            job = (o.snippet_id, o.variant, o.target.name, o.tier)
            if job not in latest or o.started > latest[job]:
                latest[job] = o.started
                out.by_job[job] = o.duration_s
                if o.verdict in ("FAIL", "SKIP"):
                    out.stopped[job[:3]] = o.duration_s
            samples.setdefault((o.tier, _distribution(o.target.distribution), bool(o.stand_in)), []).append(
                o.duration_s
            )
            if o.stand_in:
                out.stand_in.add(o.snippet_id)
            for tier in TIERS[: TIERS.index(o.tier) + 1]:  # a probe outcome checked its config too
                k = (o.snippet_id, o.variant, o.target.name, tier)
                out.checked[k] = max(out.checked.get(k, ""), o.started)
        out.by_class = {k: statistics.fmean(v) for k, v in samples.items()}
        return out

    def estimate(
        self, snippet, variant: str | None, target: str, distribution: str | None, tier: str, guess
    ) -> Estimate:
        if (s := self.by_job.get((snippet.id, variant, target, tier))) is not None:
            return Estimate(s, "this job")
        if (s := self.stopped.get((snippet.id, variant, target))) is not None:
            return Estimate(s, "this command")
        kind = (tier, _distribution(distribution), snippet.id in self.stand_in)
        if (s := self.by_class.get(kind)) is not None:
            return Estimate(s, "like jobs")
        return Estimate(guess(snippet, tier), "guess")

    def last_checked(self, key: JobKey) -> str:
        """When this job's command was last checked this deep on this target ("" never)."""
        return self.checked.get((key.snippet_id, key.variant, key.target, key.tier), "")


@dataclass
class Candidate:
    """A job the plan may give a leg today."""

    key: JobKey
    seconds: float
    last_checked: str
    """"" when never checked this deep: those go first."""
    daily: bool
    """A check due every day (`--daily-tier`), admitted before any deeper one."""
    replaces: Candidate | None = None
    """The daily job of the same command that this deeper job makes redundant."""

    def order(self) -> tuple:
        """Least recently checked first; ties by a stable hash (the same plan on the same inputs)."""
        return (self.last_checked, hashlib.sha256(repr(tuple(self.key)).encode()).hexdigest())


@dataclass
class Packing:
    legs: list[list[Candidate]]
    deferred: list[Candidate]
    """Jobs due that did not fit today: the next run takes them first (they are the least recent)."""


def admit(daily: list[Candidate], deeper: list[Candidate], capacity: float) -> tuple[list[Candidate], list[Candidate]]:
    """(today's jobs, deferred): every daily job while the capacity lasts (oldest first), then
    deeper jobs oldest first, each costing what it adds beyond the daily job it replaces."""
    daily, deeper = sorted(daily, key=Candidate.order), sorted(deeper, key=Candidate.order)
    chosen, deferred, used = [], [], 0.0
    for job in daily:
        if used + job.seconds <= capacity or not chosen:
            chosen.append(job)
            used += job.seconds
        else:
            deferred.append(job)
    taken = {id(j) for j in chosen}
    for job in deeper:
        replacing = job.replaces is not None and id(job.replaces) in taken
        saved = job.replaces.seconds if replacing else 0.0
        if used + job.seconds - saved <= capacity:
            if replacing:
                chosen = [j for j in chosen if j is not job.replaces]
                taken.discard(id(job.replaces))
            chosen.append(job)
            taken.add(id(job))
            used += job.seconds - saved
        else:
            deferred.append(job)
    return sorted(chosen, key=Candidate.order), deferred


def pack(jobs: list[Candidate], budget_s: float, max_legs: int, min_legs: int = 1) -> Packing:
    """Today's jobs (already admitted to fit `max_legs` legs) into the fewest legs of at most
    `budget_s` each (longest first onto the lightest leg); a leg that still overflows at
    `max_legs` gives back its most recently checked jobs."""
    total = sum(j.seconds for j in jobs)
    legs_wanted = min(max(min_legs, math.ceil(total / budget_s), 1), max_legs)
    while True:
        legs = _lpt(jobs, legs_wanted)
        if all(_load(leg) <= budget_s or len(leg) == 1 for leg in legs) or legs_wanted >= max_legs:
            break
        legs_wanted += 1
    deferred: list[Candidate] = []
    for leg in legs:
        while len(leg) > 1 and _load(leg) > budget_s:
            newest = max(leg, key=Candidate.order)
            leg.remove(newest)
            deferred.append(newest)
    return Packing([sorted(leg, key=Candidate.order) for leg in legs if leg], deferred)


def fit(daily: list[Candidate], deeper: list[Candidate], budget_s: float, legs: int, min_legs: int = 1) -> Packing:
    """One target's jobs in at most `legs` legs: admitted oldest first, packed; the rest deferred."""
    if legs < 1:  # the day's cap left this target none: all of it waits for the next run
        return Packing([], sorted(daily + deeper, key=Candidate.order))
    chosen, deferred = admit(daily, deeper, legs * budget_s * 0.95)
    packing = pack(chosen, budget_s, legs, min(min_legs, len(chosen)) or 1)
    return Packing(packing.legs, deferred + packing.deferred)


def leg_cap(max_legs: int, leg_hours: float, runners: int | None, queue_hours: float = QUEUE_HOURS) -> int:
    """Legs a day may have over all targets: `max_legs` (GitHub's matrix limit), and with a known
    number of `runners` (self-hosted) only what queues on them within `queue_hours` each, at least
    one leg per runner: a leg queued past 24 hours is cancelled by GitHub and its day lost."""
    if not runners:
        return max_legs
    per_runner = max(1, math.floor(queue_hours / leg_hours + 1e-9))  # 20 / 5 is 4, not 3.999…
    return min(max_legs, runners * per_runner)


def fit_day(
    targets: list[tuple[list[Candidate], list[Candidate]]], budget_s: float, cap: int, min_legs: int = 1
) -> list[Packing]:
    """Each target's (daily, deeper) jobs in legs, at most `cap` legs over all of them: each target
    gets the legs it needs alone while the cap lasts; where it does not, one leg at a time round
    the targets that still need one, the target with the least recent check first (a cap below the
    number of targets leaves the most recently checked ones none today, not always the same one)."""
    alone = [fit(daily, deeper, budget_s, cap, min_legs) for daily, deeper in targets]
    needs = [len(p.legs) for p in alone]
    age = [min((c.last_checked for c in daily + deeper), default="") for daily, deeper in targets]
    shares, left = [0] * len(targets), cap
    turn = sorted(range(len(targets)), key=lambda i: (age[i], i))
    while left and (wanting := [i for i in turn if shares[i] < needs[i]]):
        for i in wanting[:left]:
            shares[i] += 1
        left -= len(wanting[:left])
    # a target given all it needs keeps the packing it got alone (a tighter admission would defer jobs that fit)
    return [p if s == len(p.legs) else fit(*t, budget_s, s, min_legs) for p, s, t in zip(alone, shares, targets)]


def _lpt(jobs: list[Candidate], n: int) -> list[list[Candidate]]:
    legs: list[list[Candidate]] = [[] for _ in range(n)]
    loads = [0.0] * n
    for job in sorted(jobs, key=lambda j: (-j.seconds, j.order())):
        k = min(range(n), key=lambda i: (loads[i], i))
        legs[k].append(job)
        loads[k] += job.seconds
    return legs


def _load(leg: list[Candidate]) -> float:
    return sum(j.seconds for j in leg)


def rotation_days(deeper_due: float, deeper_today: float) -> int | None:
    """Days until every deeper check due now has run at today's rate (None: none fits a day)."""
    if deeper_due <= 0:
        return 0
    if deeper_today <= 0:
        return None
    return math.ceil(deeper_due / deeper_today)
