"""Why a verdict, in one line a reader sees: the FAIL's exception and where it was raised, the WARN's
warning, the SKIP's or ERROR's reason; what the option history says of a parse FAIL; what stood in for
the docs' models and placeholders. Host paths are taken out here too (publisher/public.py)."""

from __future__ import annotations

from driftmatrix.extractor.snippet_record import Snippet
from driftmatrix.flaghistory.commands import explain_failure, shipped
from driftmatrix.publisher.public import public_text
from driftmatrix.runner.outcomes.evidence_record import RaisedException
from driftmatrix.runner.outcomes.outcome_record import Outcome


def location(exc: RaisedException | None) -> str:
    """Where the exception was raised, `file:line` with no host path ("" when not known)."""
    loc = exc.location if exc else None
    if isinstance(loc, str):
        return public_text(loc)
    return f"{public_text(str(loc.file))}:{loc.line}" if loc and loc.file else ""


def clip_public(text: str, limit: int | None) -> str:
    """`text` with its host paths taken out, clipped to `limit` characters (None: whole)."""
    text = public_text(str(text))
    return text if limit is None or len(text) <= limit else text[:limit] + "…"


def cause(o: Outcome, limit: int | None = None) -> str:
    """One line: why this verdict (the FAIL's exception and where it was raised, the WARN's
    warning, the SKIP's or ERROR's reason); `limit` clips the message, never the location."""
    exc = o.evidence.exception
    if o.verdict == "FAIL" and exc:
        where = location(exc)
        return f"{exc.type}: {clip_public(exc.message, limit)}" + (f" ({where})" if where else "")
    if o.verdict == "WARN":
        feature = [w for w in o.evidence.warnings if w.feature]
        if feature:
            w = feature[0]
            return f"vLLM warns: {clip_public(w.message, limit)} ({public_text(str(w.file))}:{w.line})"
    return clip_public(o.reason or "", limit)


def option_notes(o: Outcome, snippet: Snippet | None = None) -> list[str]:
    """For a parse FAIL on options the build does not have: why, from the option history of every
    release ("--swap-space was removed in vLLM 0.18.0; …"). Empty for anything else, and for a
    subcommand snippet (`snippet` given): the history is of `vllm serve`'s options, not its."""
    if o.verdict != "FAIL" or o.stage != "parse" or (snippet is not None and snippet.kind == "subcommand"):
        return []
    return explain_failure(shipped(), o.evidence.exception and o.evidence.exception.message, o.target.version)


def placeholders_replaced(o: Outcome) -> list[str]:
    """What the run put in place of the docs' placeholders (runner/models/placeholders.py), one line each:
    `model: placeholder `{your model directory}`, replaced by a stand-in` — the rest was checked as written."""
    return [
        f"{p.role}: placeholder `{p.placeholder}`, replaced by a stand-in"
        + (" (a random-weight twin of a small model, not the reader's)" if p.twin else "")
        for p in o.evidence.placeholders
    ]


def documented_twin(o: Outcome) -> bool:
    """A random-weight twin of the documented model ran (not only a placeholder's replacement)."""
    return o.stand_in and (bool(o.evidence.twins) or not any(p.twin for p in o.evidence.placeholders))
