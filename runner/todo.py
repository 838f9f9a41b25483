"""What a scheduled run still has to do, decided before anything is installed or started.

The workflow's plan step reads the previous run's outcomes: a job (snippet, variant, target,
tier) is done when an outcome (not an ERROR) exists for the version the target pins
(`vllm==0.20.1`, `vllm/vllm-openai:v0.20.1`). An unpinned target (a nightly, an existing
environment) cannot be known without installing it, so its jobs count as to do; the run job
then checks exactly (version and commit, runner/store.py) and reuses what is unchanged.
Shards are chosen as `driftmatrix run --shard` chooses them, so "shard 3 has work" means
the same jobs in both places.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from extractor.records import Catalog
from runner import counts, plan
from runner.argv_edit import job_tier
from runner.records import JobKey, Outcome
from runner.targets import Target


@dataclass
class Todo:
    jobs: int = 0
    """Jobs to run over all shards and targets."""
    shards: list[int] = field(default_factory=list)
    """1-based shards with at least one job (the workflow's GPU matrix)."""
    by_target: dict[str, int] = field(default_factory=dict)
    reused: int = 0
    """Jobs whose outcome for the pinned version is already there."""


def todo(catalog: Catalog, targets: list[Target], tier: str, previous: list[Outcome], pairs: list[tuple],
         shards: int) -> Todo:
    done = {o.key()._replace(commit=None) for o in previous if counts.is_done(o)}  # by pinned version
    out = Todo(by_target={t.name: 0 for t in targets})
    cost = lambda p: plan.predicted_cost(p[0], tier)  # noqa: E731
    for index in range(max(shards, 1)):
        mine = plan.shard(pairs, index, shards, cost) if shards > 1 else pairs
        busy = False
        for target in targets:
            pin = target.pinned_version()
            for snippet, variant in mine:
                if pin and JobKey(snippet.id, variant, target.name, pin, None, job_tier(snippet, tier)) in done:
                    out.reused += 1
                    continue
                out.jobs += 1
                out.by_target[target.name] += 1
                busy = True
        if busy:
            out.shards.append(index + 1)
    return out
