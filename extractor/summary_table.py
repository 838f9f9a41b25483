"""The rich tables `driftmatrix extract` prints."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from driftmatrix.common.inert import console_markup
from driftmatrix.extractor.catalog import Summary
from driftmatrix.extractor.snippet_record import KINDS


def render(summary: Summary, console: Console) -> None:
    table = Table(title=f"driftmatrix catalog: {summary.total} snippets")
    table.add_column("corpus")
    for col in ("snippets", *KINDS, "with spec config", "runnable"):
        table.add_column(col, justify="right")
    for corpus, counts in summary.per_corpus.items():
        table.add_row(console_markup(corpus), *(str(counts[k]) for k in ("snippets", *KINDS, "spec", "runnable")))
    console.print(table)
    if summary.not_runnable:
        reasons = Table(title="not runnable, by reason")
        reasons.add_column("reason")
        reasons.add_column("snippets", justify="right")
        for reason, n in summary.not_runnable.most_common():
            reasons.add_row(console_markup(reason), str(n))  # a reason may quote the docs: shown as typed
        console.print(reasons)
    if summary.lints or summary.diagnostics:
        issues = Table(title="lints and diagnostics")
        issues.add_column("kind")
        issues.add_column("code")
        issues.add_column("count", justify="right")
        for code, n in summary.lints.most_common():
            issues.add_row("lint", code, str(n))
        for code, n in summary.diagnostics.most_common():
            issues.add_row("diagnostic", code, str(n))
        console.print(issues)
