"""Which fix candidates a day verifies (`driftmatrix fixes --max-candidates N`).

The fix check runs on the day's builds after the legs, under one deadline: a day with more
candidates than that time holds would run out of it at random. So at most N candidates that still
have to run are written, ranked: the command shown in the most places first (its fix corrects the
most pages), then the cheapest to verify (the shallowest tier the fix runs to: more fixes verified
per hour), then the snippets file's order. They come first in the catalog, in that order, so the
run reaches the best-ranked before its deadline.

A candidate whose fix already has an outcome on every build it must run on (driftmatrix.publisher.fixes
`must_run_on`) costs nothing — `driftmatrix run` reuses those outcomes — and is kept beyond N:
a verified fix never drops out of the site and the PRs because of the cap, and the candidates
checked yesterday make room for the ones left out, which the next run ranks again.
"""

from __future__ import annotations

from dataclasses import dataclass

from driftmatrix.extractor.snippet_record import Snippet
from driftmatrix.publisher.fixes import must_run_on
from driftmatrix.publisher.judgement import Judge
from driftmatrix.publisher.results import Results
from driftmatrix.runner.argv.edit import FIX
from driftmatrix.runner.outcomes.vocabulary import stage_rank


@dataclass
class Choice:
    fixes: list[Snippet]
    """What the catalog holds: those to run, best-ranked first, then those checked before."""
    to_run: list[Snippet]
    checked: list[Snippet]
    """Candidates with an outcome wherever they must run: reused, not run again."""
    left_out: list[Snippet]
    """Candidates to run beyond the cap, best-ranked first."""


def choose(fixes: list[Snippet], results: Results, limit: int | None) -> Choice:
    """At most `limit` candidates to run (None: all, in their own order) and every checked one."""
    judge, originals = Judge(results), {s.id: s for s in results.snippets}
    done = {f.id for f in fixes if _checked(f, originals[f.id], results, judge)}
    checked, to_run = [f for f in fixes if f.id in done], [f for f in fixes if f.id not in done]
    if limit is None:
        return Choice(fixes, to_run, checked, [])
    order = {f.id: i for i, f in enumerate(fixes)}
    ranked = sorted(to_run, key=lambda f: (-len(f.sources), stage_rank(f.fix["tier"]), order[f.id]))
    return Choice(ranked[:limit] + checked, ranked[:limit], checked, ranked[limit:])


def _checked(fix: Snippet, original: Snippet, results: Results, judge: Judge) -> bool:
    must = must_run_on(judge.of(original))
    return bool(must) and all(results.cell(fix.id, k.column, FIX) is not None for k in must)
