"""Which jobs a run has, and how a shard of them is chosen.

Shards balance predicted cost, not counts: a start/probe job costs a server start-up
(~a minute on CPU, more for bigger models), a parse job a few milliseconds.
"""

from __future__ import annotations

import hashlib
import re

from driftmatrix.runner.argv.parallel import ranks_of
from driftmatrix.runner.models.resolution import billions_of_parameters
from driftmatrix.runner.outcomes.vocabulary import TIERS


def predicted_cost(snippet, tier: str) -> float:
    """Seconds, roughly: what the job will cost if it runs to its last tier."""
    n = TIERS.index(tier)
    if (snippet.reason or "").startswith("placeholder") and snippet.kind != "subcommand":  # twins: no server
        return 0.05 + (2.0 if n >= 1 else 0)  # (runner/models/placeholders.py)
    if (
        not snippet.runnable or snippet.kind == "subcommand"
    ):  # subcommands: their parser (runner/outcomes/subcommands.py)
        return 0.05
    cost = 0.05 + (2.0 if n >= 1 else 0)
    if n >= 2:
        billions = billions_of_parameters(snippet.model or "") or 1.0
        cost += 60 + 4 * billions + (30 if snippet.speculative_config else 0)
        # each further rank (CPU ranks: runner/serve/ranks.py) ~9 s more to start on 2 cores: 1 rank 37 s,
        # 4 ranks 57 s, 8 ranks 104 s (benchmarks/cpu_ranks.py)
        cost += 9 * (ranks_of(snippet.argv).world - 1)
    if n >= 3:
        cost += 10
    if n >= 4:
        cost += 60
    return cost


def shard(items: list, index: int, count: int, cost) -> list:
    """Deterministic longest-processing-time split: item i goes to the lightest shard."""
    if count <= 1:
        return items
    order = sorted(items, key=lambda it: (-cost(it), hashlib.sha256(repr(_key(it)).encode()).hexdigest()))
    loads = [0.0] * count
    chosen = []
    for item in order:
        k = min(range(count), key=lambda i: (loads[i], i))
        loads[k] += cost(item)
        if k == index:
            chosen.append(item)
    return chosen


def _key(item):
    return getattr(item, "key", lambda: item)() if hasattr(item, "key") else item


def parse_shard(text: str) -> tuple[int, int]:
    """`i/n` with 1 <= i <= n (1-based, as CI matrices count) -> (0-based i, n)."""
    m = re.fullmatch(r"(\d+)/(\d+)", text.strip())
    if not m or not (1 <= int(m[1]) <= int(m[2])):
        raise ValueError(f"--shard expects i/n with 1 <= i <= n, got {text!r}")
    return int(m[1]) - 1, int(m[2])
