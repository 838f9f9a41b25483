"""Merge per-file findings into one catalog: identical invocations become one snippet
with several sources; counts for the summary table."""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from extractor.corpus import SourceError, extract_source
from extractor.records import Catalog, CorpusInfo, Diagnostic, Snippet


def merge(snippets: list[Snippet]) -> list[Snippet]:
    """One record per id, sources and lints united, in first-seen order."""
    by_id: dict[str, Snippet] = {}
    for snippet in snippets:
        known = by_id.get(snippet.id)
        if known is None:
            by_id[snippet.id] = snippet
            continue
        known.sources += [s for s in snippet.sources if s not in known.sources]
        known.lints += [lint for lint in snippet.lints if lint not in known.lints]
        known.placeholders = list(dict.fromkeys(known.placeholders + snippet.placeholders))
        if known.runnable and not snippet.runnable:
            known.runnable, known.reason = False, snippet.reason
    return list(by_id.values())


def extract(sources: list[Path], on_diagnostic=None) -> tuple[Catalog, list[str]]:
    """Extract every SOURCE; returns the catalog and the SOURCEs that could not be read."""
    found: list[Snippet] = []
    diagnostics: list[Diagnostic] = []
    corpora: list[CorpusInfo] = []
    unusable: list[str] = []
    for path in sources:
        try:
            result = extract_source(path)
        except SourceError as err:
            unusable.append(str(path))
            diag = Diagnostic("error", "bad-source", str(err), file=str(path))
            diagnostics.append(diag)
            if on_diagnostic:
                on_diagnostic(diag)
            continue
        corpora.append(result.info)
        found += result.snippets
        diagnostics += result.diagnostics
        for diag in result.diagnostics:
            if on_diagnostic:
                on_diagnostic(diag)
    catalog = Catalog(
        snippets=merge(found),
        diagnostics=diagnostics,
        corpora=corpora,
        generated_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )
    return catalog, unusable


def print_diagnostic(diag: Diagnostic) -> None:
    where = ":".join(str(x) for x in (diag.file, diag.line) if x not in (None, ""))
    corpus = f"{diag.corpus} {diag.version}: " if diag.corpus else ""
    print(f"driftmatrix: {diag.severity}: {corpus}{where}: {diag.message} [{diag.code}]", file=sys.stderr)


@dataclass
class Summary:
    """Counts shown after an extraction."""

    per_corpus: dict[str, Counter] = field(default_factory=dict)
    not_runnable: Counter = field(default_factory=Counter)
    lints: Counter = field(default_factory=Counter)
    diagnostics: Counter = field(default_factory=Counter)
    total: int = 0


def summarize(catalog: Catalog) -> Summary:
    summary = Summary(total=len(catalog.snippets))
    for snippet in catalog.snippets:
        for corpus in dict.fromkeys(f"{s.corpus} {s.version}".strip() for s in snippet.sources):
            counts = summary.per_corpus.setdefault(corpus, Counter())
            counts["snippets"] += 1
            counts[snippet.kind] += 1
            counts["spec"] += snippet.speculative_config is not None
            counts["runnable"] += snippet.runnable
        if not snippet.runnable:
            summary.not_runnable[(snippet.reason or "").split(":", 1)[0]] += 1
        for lint in snippet.lints:
            summary.lints[lint.code] += 1
    for diag in catalog.diagnostics:
        summary.diagnostics[f"{diag.severity}:{diag.code}"] += 1
    return summary
