"""A source file's text, read safely: never raising for bad bytes (invalid UTF-8 is read with U+FFFD
and said), bounded (extractor/bounds.py: a file resolving outside its tree, over the size limit or
binary is not read; an over-long line is left out), each problem a diagnostic of that file."""

from __future__ import annotations

import os
from pathlib import Path

from driftmatrix.extractor import bounds
from driftmatrix.extractor.snippet_record import Diagnostic


def read_text(
    path: Path, corpus: str, version: str, rel: str, root: Path | None = None, lines: bool = True
) -> tuple[str | None, list[Diagnostic]]:
    """The file's text, or None; never raises for bad bytes. Bounded: a file resolving outside
    `root`, or over MAX_PAGE_BYTES, is not read; a line over MAX_LINE_CHARS is left out (unless not
    `lines`: a saved HTML page may be one long line, and its parser reads no lines)."""

    def diag(severity: str, code: str, message: str, line: int | None = None) -> Diagnostic:
        return Diagnostic(severity, code, message, corpus, version, rel, line)

    if root is not None and not bounds.within(root, path):
        return None, [
            diag("error", "outside-tree", f"a symbolic link to {os.path.realpath(path)}, outside the tree; not read")
        ]
    try:
        data, size = bounds.read_capped(path)
    except OSError as err:
        return None, [diag("error", "unreadable", f"cannot read: {err.strerror or err}")]
    if data is None:
        return None, [
            diag(
                "error", "too-large", f"{size} bytes is over the {bounds.MAX_PAGE_BYTES}-byte limit for a page; skipped"
            )
        ]
    if b"\0" in data[:8192]:
        return None, [diag("error", "binary-file", "contains NUL bytes: binary, not text; skipped")]
    try:
        text, diagnostics = data.decode("utf-8"), []
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        text = data.decode("utf-8", errors="replace")
        diagnostics = [
            diag(
                "warning",
                "invalid-utf8",
                f"invalid UTF-8 at byte {err.start} "
                f"({data[err.start : err.start + 1]!r}); read with U+FFFD in its place",
                line,
            )
        ]
    text, long = bounds.cap_lines(text) if lines else (text, [])
    return text, diagnostics + [
        diag(
            "error",
            "line-too-long",
            f"{length} characters, over the "
            f"{bounds.MAX_LINE_CHARS}-character limit for a line: left out (a command "
            "on it is not extracted)",
            line,
        )
        for line, length in long
    ]
