"""The deepest tier a job runs to: the one rule every place that makes, plans, lists or prefetches
jobs asks (runner/run/loop.py, planning.py, prefetch.py)."""

from __future__ import annotations

from driftmatrix.extractor.snippet_record import Snippet
from driftmatrix.runner.outcomes.vocabulary import TIERS


def deepest_tier(snippet: Snippet, target, asked: str) -> str:
    """The last tier a job of SNIPPET on TARGET (runner/builds/targets.py Target) runs when ASKED is
    asked for: no deeper than the target's `max_tier` (the CUDA wheel on a runner without a GPU
    stops at `config`: it cannot start a server there), and, for a fix candidate, no deeper than the
    tier its original was run with (`fix["tier"]`: a fix stops where its original failed; one that
    does not name a tier this runner knows caps nothing)."""
    fix_tier = (snippet.fix or {}).get("tier")
    caps = [target.max_tier, fix_tier if fix_tier in TIERS else None]
    return min([asked, *filter(None, caps)], key=TIERS.index)
