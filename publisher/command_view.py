"""Each command's view, computed once per publish: its outcomes per build, its judgements, the
version range and notes of each cell, its title, its options' releases and its verified fix.

Every output renders from these views and none recomputes them: the site's pages
(publisher/pages.py, snippet_page.py), matrix.json (matrix_json.py), matrix-data.js
(matrix_data.py), annotate's warnings (annotate.py) and the PR body (pr_body.py); the publish step
summary reads matrix.json. `views_of` is called by the command that publishes (publisher/site.py,
annotate.py, pull_request.py), never by a renderer: the data flows one way, down to the renderers.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from driftmatrix.extractor.snippet_record import Snippet, Source
from driftmatrix.flaghistory.commands import command_options, shipped
from driftmatrix.publisher import causes, command_text, fixes, ranges, run_history, titles
from driftmatrix.publisher.fixes import Verified
from driftmatrix.publisher.judgement import Judge, Judgement
from driftmatrix.publisher.results import Results
from driftmatrix.runner.outcomes.outcome_record import Outcome


@dataclass
class CommandView:
    """What every output says about one documented command."""

    snippet: Snippet
    """The command as extracted: its places, argv, model, lints."""
    command: str
    """The command as the docs show it (its first place), else rebuilt from its argv."""
    title: str
    """Its page's title (publisher/titles.py): plain text, escaped where it is shown."""
    outcomes: dict[str, Outcome]
    """Column key -> the outcome shown for the command as documented: the current builds (in the
    order of `Results.columns`), then the retired ones (kept for the history, in no judgement)."""
    judgements: list[Judgement]
    """One per distinct set of versions among its places (and per place the shell reads otherwise)."""
    worst: Judgement
    """Its most severe judgement over its places: what matrix.json and the summaries count."""
    at_sources: list[Judgement]
    """The judgement at each place, in the order of `snippet.sources`."""
    ranges: dict[str, ranges.Range | None]
    """Column key -> the versions it is known to work on, as the cell shows them (None: nothing known)."""
    notes: dict[str, list[str]]
    """Column key -> the cell's notes in matrix.json: the cause, the option history's words, the
    placeholders replaced, a twin's use."""
    flags: dict | None
    """The releases on which every one of its options exists (flaghistory); None: no options, no
    history, or a subcommand (the history is `vllm serve`'s)."""
    seen: run_history.Seen = field(default_factory=run_history.Seen)
    """The first and last vLLM version it was seen passing over every run kept (`--run-history`) and
    this one, and the version it failed from after that."""
    fix_candidate: Snippet | None = None
    """Its fix candidate (`driftmatrix fixes`), whether or not it was verified."""
    fix: Verified | None = None
    """The fix candidate, when the runner showed it running where it must (publisher/fixes.py)."""

    @property
    def id(self) -> str:
        return self.snippet.id

    def at(self, source: Source) -> Judgement:
        """The judgement at one of its places (equal places are judged alike)."""
        return self.at_sources[self.snippet.sources.index(source)]


@dataclass
class CommandViews:
    """The views of one publish, in the snippets file's order, with what they were built from."""

    results: Results
    """The merged records they were built from (the builds, dates, variants, problems)."""
    by_id: dict[str, CommandView]
    """Snippet id -> its view."""
    runs: ranges.Runs
    """Every real verdict seen per (command, kind of build) and version, earlier publishes' included."""
    snapshots: list[dict] = field(default_factory=list)
    """The earlier publishes' matrix.json, oldest first (`--run-history`)."""

    def __iter__(self) -> Iterator[CommandView]:
        return iter(self.by_id.values())

    def __getitem__(self, snippet_id: str) -> CommandView:
        return self.by_id[snippet_id]

    def __len__(self) -> int:
        return len(self.by_id)


def flags_valid(s: Snippet) -> dict | None:
    """The releases on which every option of the command exists (flaghistory); None: no options
    or no history, or a subcommand snippet (`vllm bench throughput …`: the history is `vllm serve`'s)."""
    if s.kind == "subcommand":
        return None
    history = shipped()
    found = command_options(history, s.argv or []) if history else None
    return found.as_json() if found else None


def cell_notes(o: Outcome, s: Snippet) -> list[str]:
    """A cell's notes: why this verdict, the option history's words on a parse failure, what replaced
    the docs' placeholders, a twin of the model."""
    notes = [n for n in [causes.cause(o)] if n] + causes.option_notes(o, s) + causes.placeholders_replaced(o)
    if causes.documented_twin(o):
        notes.append("run with a random-weight stand-in of the model (same architecture)")
    return notes


def _view(results: Results, judge: Judge, known: ranges.Runs, s: Snippet) -> CommandView:
    columns = [*results.columns, *results.retired]
    outcomes = {c.key: o for c in columns if (o := results.cell(s.id, c)) is not None}
    flags = flags_valid(s)
    return CommandView(
        snippet=s,
        command=command_text.command(s),
        title=titles.snippet_title(s),
        outcomes=outcomes,
        judgements=judge.all(s),
        worst=judge.of(s),
        at_sources=[judge.of_source(s, src) for src in s.sources],
        ranges={key: ranges.of_cell(known, s.id, o, flags) for key, o in outcomes.items()},
        notes={key: cell_notes(o, s) for key, o in outcomes.items()},
        flags=flags,
        fix_candidate=results.fixes.get(s.id),
        fix=fixes.verified(results, judge, s),
    )


def _seen(results: Results, by_id: dict[str, CommandView], snapshots: list[dict]) -> None:
    """Each view's `seen`, over the earlier publishes and this one's cells (retired builds' too)."""
    columns = {c.key: c for c in [*results.columns, *results.retired]}
    current = [
        (v.id, columns[key].version, results.dates.get(key, ""), o.verdict)
        for v in by_id.values()
        for key, o in v.outcomes.items()
    ]
    for sid, seen in run_history.seen(snapshots, current).items():
        if sid in by_id:
            by_id[sid].seen = seen


def views_of(results: Results, snapshots: list[dict] | None = None) -> CommandViews:
    """Every command's view, computed once. `results` as they are to be shown (the site, annotate
    and the PR body pass `public.public_results(...)`); `snapshots`: the earlier publishes'
    matrix.json, for the version ranges and the versions seen passing."""
    snapshots = list(snapshots or [])
    judge = Judge(results)
    known = ranges.runs(snapshots, results)
    by_id = {s.id: _view(results, judge, known, s) for s in results.snippets}
    _seen(results, by_id, snapshots)
    return CommandViews(results, by_id, known, snapshots)
