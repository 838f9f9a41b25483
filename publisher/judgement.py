"""Drift, not just failure: a judgement per command and per set of versions its pages are
written for. Computed here only; the site, matrix.json, `annotate` and `pr` all read it.

A verdict belongs to a (command, build) pair; a judgement compares the verdicts of the current
builds (runner/outcomes/counts.py retires superseded ones) with the page's `written_for` specifier:

- `doc-drift`: it fails on a build the page is written for — the docs are wrong for their
  readers (a warning in the docs, a PR row);
- `vllm-regression`: every such failure comes after an earlier build the page is written for
  where it passed at least as deep — a vLLM bug to report upstream, never a doc warning. A later
  build that no longer has an option, a config key or a choice (`unrecognized arguments`,
  `Unexpected keyword argument`, `invalid choice`) removed it on purpose: that is doc-drift (the
  docs must change), not a regression;
- `needs-newer`: it fails only on builds older than the page's versions — not a doc bug;
- `ok`: it runs on every build the page is written for that was checked (the depth says how far);
- `unknown`: no build the page is written for was checked (or they were only skipped).

Two kinds of evidence judge besides the builds (`Judgement.decided_by`):
- what a reader runs (`shell`, `python`, `tree`): a page whose command carries a breaking lint
  (extractor/snippet_record.py BREAKING_LINTS, matched to the page by publisher/defects.py) is doc-drift
  on every build, whatever the builds say of the argv the author meant — they checked a command
  the reader does not run;
- a page written for a fork or a vendor's own build of vLLM (basis `fork`) is `unknown`: stock builds
  and stock vLLM's history cannot speak for what its reader runs (no alarm);
- the option history (`history`), only where no build of the page's versions was checked
  (publisher/option_verdict.py): an option removed before every version of the page is doc-drift,
  one added after every checked build needs-newer.
"""

from __future__ import annotations

from packaging.specifiers import SpecifierSet

from driftmatrix.common.versions import parse_version, version_order
from driftmatrix.extractor.snippet_record import Lint, Snippet, Source, WrittenFor
from driftmatrix.extractor.written_for import WrittenForError, of_docs, specifier
from driftmatrix.flaghistory.commands import explain_use, record_of, shipped
from driftmatrix.flaghistory.uses import uses_of
from driftmatrix.publisher import causes, defects, option_verdict, verdict_words
from driftmatrix.publisher.judgement_record import Check, Scope, versions_text
from driftmatrix.publisher.judgement_record import Judgement as Judgement  # the record, read where judged
from driftmatrix.publisher.results import Results
from driftmatrix.runner.diagnosis import classify
from driftmatrix.runner.outcomes.outcome_record import Outcome
from driftmatrix.runner.outcomes.vocabulary import GOOD, JUDGEMENTS, REAL, stage_rank

REMOVED = ("unrecognized-arguments", "unknown-config-key", "invalid-choice")
"""Failure signatures (runner/data/signatures.yaml) that mean the build does not have the option
or value at all: on a later build, a deliberate removal, never a regression."""
NOT_VLLM = (*REMOVED, classify.MODEL_NOT_FOUND)
"""Failure signatures that are never a vLLM regression: a removal, or a model no reader can load (the
hub's answer, the same for every build)."""
UNRECORDED = WrittenFor(
    "", "not recorded (a snippets.json from an older driftmatrix): every build counts", "unrecorded"
)


def written_for(source: Source) -> WrittenFor:
    """The source's recorded versions; for a schema-1 snippets.json (none recorded) a release's
    docs are still read as that release line, anything else as written for every build."""
    if source.written_for is not None:
        return source.written_for
    if source.corpus in ("vllm-docs", "html"):
        inferred = of_docs(
            source.version, f"docs of vLLM {source.version} (inferred: not recorded in this snippets.json)", ""
        )
        if inferred is not None and inferred.basis == "release":
            return inferred
    return UNRECORDED


def scope(spec: SpecifierSet, version: str) -> Scope:
    v = parse_version(version)
    if v is None:
        return "unknown"
    if spec.contains(v, prereleases=True):
        return "in"
    low = option_verdict.lower_bound(spec)
    return "older" if low is not None and v <= low else "newer"


def judge(results: Results, snippet: Snippet, wf: WrittenFor, source: Source | None = None) -> Judgement:
    """The judgement of one command at one place (`source`: its breaking lints count) for one set of
    versions (variants are not the docs')."""
    found = defects.of_source(snippet, source) if source is not None else []
    try:
        spec = specifier(wf.spec)
    except WrittenForError as err:
        j = Judgement("unknown", wf, summary=f"The page's versions cannot be read: {err}.")
        return _with_defects(j, found, source) if found else j
    checks = [Check(c, o, scope(spec, c.version)) for c in results.columns if (o := results.cell(snippet.id, c))]
    if wf.basis == "fork":
        j = _fork(wf, checks)
        return _with_defects(j, found, source) if found else j
    real = [k for k in checks if k.outcome.verdict in REAL]
    inside = [k for k in real if k.scope == "in"]
    fails = [k for k in real if k.outcome.verdict == "FAIL"]
    goods = [k for k in inside if k.outcome.verdict in GOOD]
    drift, regressed = [], []
    for f in (k for k in inside if k.outcome.verdict == "FAIL"):
        earlier = (
            [
                g
                for g in goods
                if version_order(g.version) < version_order(f.version)
                and stage_rank(g.outcome.stage) >= stage_rank(f.outcome.stage)
            ]
            if not _not_vllm(f.outcome)
            else []
        )
        if earlier:
            regressed.append((earlier[-1], f))
        else:
            drift.append(f)
    newest_fail = max(fails, key=lambda k: version_order(k.version), default=None)
    later_good = [
        k
        for k in real
        if k.outcome.verdict in GOOD
        and newest_fail is not None
        and version_order(k.version) > version_order(newest_fail.version)
    ]
    works_from = later_good[0].version if later_good else None
    j = Judgement("unknown", wf, checks, drift, regressed[0] if regressed and not drift else None, works_from)
    older = [k for k in fails if k.scope == "older"]
    if drift:
        j.kind = "doc-drift"
    elif regressed:
        j.kind = "vllm-regression"
    elif goods:
        j.kind = "needs-newer" if older else "ok"
    elif older and not [k for k in fails if k.scope == "newer"]:
        j.kind = "needs-newer"
    _option_history(j, snippet, newest_fail)
    if not inside:
        _history_verdict(j, snippet, spec, checks)
    elif j.kind in ("ok", "needs-newer"):
        _history_past_the_builds(j, snippet, spec, checks)
    if j.kind == "needs-newer" and not goods and not (j.works_from or j.options_from or j.decided_by == "history"):
        _unshown(j, older)  # older builds fail, and nothing shows it working on the page's versions
    j.summary = j.summary or _summary(j, spec, older)
    return _with_defects(j, found, source) if found else j


def _fork(wf: WrittenFor, checks: list[Check]) -> Judgement:
    """A page written for a fork or a vendor's own build: stock builds ran another vLLM than its reader's,
    and stock vLLM's history is not the fork's, so neither says anything of the page (no alarm)."""
    checked = versions_text([k for k in checks if k.outcome.verdict in REAL])
    return Judgement(
        "unknown",
        wf,
        checks,
        summary=f"The page is written for a non-stock build of vLLM ({wf.origin}); no build of it was checked"
        + (f" (stock {checked} ran, but cannot speak for it)." if checked else "."),
    )


def _with_defects(j: Judgement, found: list[Lint], source: Source) -> Judgement:
    """A page whose command the shell (or Python) does not run as written: doc-drift on every build;
    the builds' own reading (of the command the author meant) follows in the summary."""
    builds = j.summary
    j.kind, j.decided_by, j.defects = "doc-drift", defects.decider(found), found
    meant = j.decided_by != "python"  # a block Python cannot read holds no command as meant: never run
    j.summary = defects.sentence(found, source.file) + (
        f" The command as meant, on the builds: {builds[:1].lower()}{builds[1:]}" if builds and meant else ""
    )
    return j


def _history_verdict(j: Judgement, snippet: Snippet, spec: SpecifierSet, checks: list[Check]) -> None:
    """No build of the page's versions was checked: what the option history says, if anything."""
    said = option_verdict.verdict(shipped(), snippet, spec, option_verdict.lower_bound(spec), checks)
    if said is None or (said.kind == "needs-newer" and j.kind == "needs-newer"):
        return  # an older build's real failure already says it (and the history's "needs vLLM ≥ X")
    j.kind, j.decided_by, j.history_release = said.kind, "history", said.release
    wf = f"{j.written_for.spec or 'any version'} — {j.written_for.origin}"
    if said.kind == "doc-drift":
        j.option_notes, j.history_why = said.notes, said.why
        j.summary = (
            f"No build the page is written for ({wf}) was checked; per the option history, the versions "
            f"it is written for do not have {', '.join(said.options)} ({said.why}): " + "; ".join(said.notes) + "."
        )
    else:
        checked = versions_text([k for k in j.checks if k.outcome.verdict in REAL])
        j.summary = (
            f"No build the page is written for ({wf}) was checked; per the option history "
            f"{', '.join(said.options)} came with vLLM {said.release}, after every checked build "
            f"({checked}): needs vLLM ≥ {said.release}."
        )


def _history_past_the_builds(j: Judgement, snippet: Snippet, spec: SpecifierSet, checks: list[Check]) -> None:
    """Builds of the page's versions ran, but none as far as the tier where vLLM checks something the
    history says every one of those versions lacks (a tool-call parser's name: at the server's start):
    the history's doc-drift stands — the builds never contradicted it."""
    said = option_verdict.verdict(shipped(), snippet, spec, option_verdict.lower_bound(spec), checks)
    if said is None or said.kind != "doc-drift":
        return
    ran = versions_text([k for k in j.checks if k.scope == "in" and k.outcome.verdict in REAL])
    j.kind, j.decided_by, j.history_release, j.option_notes = "doc-drift", "history", said.release, said.notes
    j.history_why = said.why
    j.summary = (
        f"The builds of the page's versions that ran ({ran}) stopped before vLLM checks "
        f"{', '.join(said.options)}; per the option history the versions it is written for do not have it "
        f"({said.why}): " + "; ".join(said.notes) + "."
    )


def _unshown(j: Judgement, older: list[Check]) -> None:
    """needs-newer needs its evidence (issue 58): a build of the page's versions or a newer one that
    runs it, or the option history's first release with all it gives. Older builds failing alone show
    only that those builds lack something — maybe something no release has: unknown, said so."""
    wf = f"{j.written_for.spec or 'any version'} — {j.written_for.origin}"
    j.kind = "unknown"
    j.summary = (
        f"Fails on {versions_text(older)}, older than the page's versions ({wf}); no build of those versions "
        "or newer ran it, and the option history does not show what it needs there: not judged."
    )


def _option_history(j: Judgement, snippet: Snippet, newest_fail: Check | None) -> None:
    """What the per-release option history adds: the failing option's story, the first release
    with all of the command's options."""
    history = shipped()
    if history is None or newest_fail is None or snippet.kind == "subcommand":
        return  # the history is of `vllm serve`'s options, not of `vllm bench …`'s
    j.option_notes = list(dict.fromkeys(note for k in j.failing for note in causes.option_notes(k.outcome)))
    uses = uses_of(history, snippet.argv or [])
    given = frozenset(u.option for u in uses)
    lacking = [u for u in uses if history.accepts_use(u, newest_fail.version, given) is False]
    if lacking and j.works_from is None:  # only when the failing build lacks one of its options or values
        j.options_from = history.first_accepting(uses, newest_fail.version, given)
        j.newer_notes = [
            why
            for u in lacking
            if (why := explain_use(history, u, newest_fail.version)) and _added_later(history, u, newest_fail.version)
        ]


def _added_later(history, use, version: str) -> bool:
    """The history has it from a release after `version` (not: removed before it, or never had it)."""
    added = parse_version((record_of(history, use) or {}).get("added") or "")
    built = parse_version(version)
    return added is not None and built is not None and added > built


def _signature(o: Outcome) -> str | None:
    """The failure's signature id: the recorded one, or the exception matched now (records written
    before a signature existed)."""
    exc, recorded = o.evidence.exception, o.evidence.signature
    return (recorded and recorded.id) or getattr(
        classify.match_signature(exc.type_and_message() if exc else None), "id", None
    )


def _not_vllm(o: Outcome) -> bool:
    """The failure is never vLLM's regression: the build does not have what the command names, or no
    reader can load its model."""
    return _signature(o) in NOT_VLLM


def _model_sentence(failing: list[Check]) -> str:
    """When the hub's answer is why it fails: "The model cannot be loaded as written (<model>: <why>,
    asked of <hub>). " (each model once), else nothing."""
    unloadable = [k.outcome for k in failing if _signature(k.outcome) == classify.MODEL_NOT_FOUND]
    if not unloadable:
        return ""
    answers = {a.model: f"{a.model}: {a.why}, asked of {a.endpoint}" for o in unloadable for a in o.evidence.hub}
    return "The model cannot be loaded as written" + (f" ({'; '.join(answers.values())})" if answers else "") + ". "


def _summary(j: Judgement, spec: SpecifierSet, older: list[Check]) -> str:
    wf = f"{j.written_for.spec or 'any version'} — {j.written_for.origin}"
    if j.kind == "doc-drift":
        where = ", ".join(f"at {k.outcome.stage} on vLLM {k.version}" for k in j.failing)
        later = next((k for k in j.checks if k.version == j.works_from and k.outcome.verdict in GOOD), None)
        return (
            f"{_model_sentence(j.failing)}Fails {where}, which the page is written for ({wf})."
            + (f" From vLLM {later.version}: {verdict_words.depth_text(later.outcome)}." if later else "")
            + "".join(f" {note}" + ("" if note.endswith("?") else ".") for note in j.option_notes)
        )  # "did you mean …?"
    if j.kind == "vllm-regression":
        good, bad = j.regression
        return (
            f"Passed on vLLM {good.version} (commit {good.column.commit or 'unknown'}; "
            f"{verdict_words.depth_text(good.outcome)}) and fails at {bad.outcome.stage} on vLLM {bad.version} (commit "
            f"{bad.column.commit or 'unknown'}), both builds the page is written for ({wf}): a vLLM regression, "
            "not a doc bug."
        )
    if j.kind == "needs-newer":
        return (
            f"Fails only on {versions_text(older)}, older than the page's versions ({wf})"
            + (
                f"; needs vLLM ≥ {j.works_from}."
                if j.works_from
                else f"; needs vLLM ≥ {j.options_from} (the first release with all its options and the values "
                "it gives them, per the option history)."
                if j.options_from
                else "."
            )
            + "".join(f" {note}." for note in j.newer_notes)
        )
    if j.kind == "ok":
        inside = [k for k in j.checks if k.scope == "in" and k.outcome.verdict in GOOD]
        return (
            "Runs on "
            + ", ".join(f"vLLM {k.version} ({verdict_words.depth_text(k.outcome)})" for k in inside)
            + f", which the page is written for ({wf})."
        )
    checked = versions_text([k for k in j.checks if k.outcome.verdict in REAL])
    skipped = [k for k in j.checks if k.scope == "in"]
    return (
        f"No build the page is written for ({wf}) was checked"
        + (" beyond a SKIP or ERROR" if skipped else "")
        + (f"; checked on {checked}." if checked else ".")
    )


class Judge:
    """The judgements of one publish, computed once per (command, versions)."""

    def __init__(self, results: Results):
        self.results = results
        self._cache: dict[tuple[str, str, str, tuple], Judgement] = {}

    def of_source(self, snippet: Snippet, source: Source) -> Judgement:
        wf = written_for(source)
        key = (snippet.id, wf.spec, wf.origin, defects.key(defects.of_source(snippet, source)))
        if key not in self._cache:
            self._cache[key] = judge(self.results, snippet, wf, source)
        return self._cache[key]

    def all(self, snippet: Snippet) -> list[Judgement]:
        """One per distinct set of versions among the command's pages (and per page whose command
        the shell does not run as written: its defects), in source order."""
        seen: dict[tuple, Judgement] = {}
        for src in snippet.sources or [None]:
            j = self.of_source(snippet, src) if src else judge(self.results, snippet, UNRECORDED)
            seen.setdefault((j.written_for.spec, j.written_for.origin, defects.key(j.defects)), j)
        return list(seen.values())

    def of(self, snippet: Snippet) -> Judgement:
        """The command's most severe judgement over its pages."""
        return min(self.all(snippet), key=lambda j: JUDGEMENTS.index(j.kind))
