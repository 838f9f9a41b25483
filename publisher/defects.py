"""What a reader runs: the breaking lints (extractor/snippet_record.py BREAKING_LINTS) of one place where a
command appears. A command shared by several pages (its id hashes the argv the author meant) may
be written correctly on one page and broken on another: a lint belongs to the place whose file and
version it names, at or after the command's first line and before the command's next place in
that file (`orphan-arguments` sits on the lines after the command's own)."""

from __future__ import annotations

from typing import Literal

from driftmatrix.extractor.snippet_record import BREAKING_LINTS, Lint, Snippet, Source

Decider = Literal["shell", "python", "tree"]
"""How deep a defect is found: `shell` (bash, or the shell a YAML runs, does not run the command as
written), `python` (Python's parser rejects the block as pasted: extractor/python_blocks.py), `tree`
(a file the command names is not in the release's tree: it cannot start). Most telling first."""
_DECIDER: dict[str, Decider] = {"file-not-in-release": "tree", "python-syntax": "python"}
"""The depth of each breaking lint that is not the shell's (the one list of them)."""


def decider_of(lint: Lint) -> Decider:
    return _DECIDER.get(lint.code, "shell")


def of_source(snippet: Snippet, source: Source) -> list[Lint]:
    """The snippet's breaking lints at this place, in line order."""
    here = [
        x.line for x in snippet.sources if (x.corpus, x.version, x.file) == (source.corpus, source.version, source.file)
    ]
    until = min((line for line in here if line > source.line), default=None)
    return sorted(
        (
            lint
            for lint in snippet.lints
            if lint.code in BREAKING_LINTS
            and lint.line is not None
            and lint.file == source.file
            and lint.version in (None, source.version)
            and lint.corpus in (None, source.corpus)
            and source.line <= lint.line
            and (until is None or lint.line < until)
        ),
        key=lambda lint: lint.line,
    )


def decider(defects: list[Lint]) -> Decider:
    found = {decider_of(d) for d in defects}
    return next(d for d in ("shell", "python", "tree") if d in found)


def key(defects: list[Lint]) -> tuple:
    """What tells two places' defects apart (a judgement cache key part)."""
    return tuple((d.file, d.version, d.code, d.line) for d in defects)


def sentence(defects: list[Lint], source_file: str) -> str:
    """One plain sentence: where the shell ends the command (or Python stops reading the block), in the
    lint's words."""
    first = defects[0]
    what = {
        "shell": f"The shell ends this command on line {ends_on(first)}",
        "python": "Python does not run this block as written",
    }.get(decider_of(first), "This command cannot run as written")
    more = [d.line for d in defects[1:]]
    also = f"; likewise line{'s' if len(more) > 1 else ''} {', '.join(map(str, more))}" if more else ""
    return f"{what} ({source_file}:{first.line}: {first.message.rstrip('.')}{also})."


def ends_on(lint: Lint) -> int:
    """The file line where the shell ends the command: the lint's, or for arguments left on a line of
    their own (`orphan-arguments`, on that line) the line before."""
    return lint.line - 1 if lint.code == "orphan-arguments" else lint.line


def title(defects: list[Lint]) -> str:
    """An admonition title: `Does not run as written: the shell ends the command on line 78`."""
    shell = [d for d in defects if decider_of(d) == "shell"]
    python = [d for d in defects if decider_of(d) == "python"]
    if shell:
        return f"Does not run as written: the shell ends the command on line {ends_on(shell[0])}"
    if python:
        return f"Does not run as written: Python stops reading the block on line {python[0].line}"
    return "Does not run as written: a file it names is not in the release's tree"
