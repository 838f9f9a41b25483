"""Text edits that fix a documented command, and applying them to its lines.

An edit is `[old, new]`: `old` is found on one line of the command (the first line holding it,
as a whole token), replaced by `new`; a `new` holding "\\n" adds lines above, at that line's
indentation (a comment moved out from behind a `\\`); an empty `new` drops an option `old` with the
blanks after it; a line left with nothing but `\\` is removed (a dropped option), and a command whose
last line went keeps no dangling `\\`.
Only those lines change: indentation, tabs, the fence and anything around them stay.
"""

from __future__ import annotations

import re

CONTINUATION = re.compile(r"\\[ \t]+(#.*)?$")
"""`\\` followed by blanks (and maybe a comment): bash does not continue the command there."""


def _token(old: str) -> re.Pattern:
    """`old` as a whole token: not part of a longer option (`--max-model` in `--max-model-len`)."""
    if old.startswith("\\"):  # a `\\` and what follows it: the end of its own line only
        return re.compile(re.escape(old) + "$")
    before = r"(?<![\w-])" if re.match(r"[\w-]", old) else ""
    after = r"(?![\w-])" if re.search(r"[\w-]$", old) else ""
    return re.compile(before + re.escape(old) + after)


def apply(lines: list[str], edits: list[list[str]]) -> list[str] | None:
    """The command's lines with every edit applied; None when an edit's text is not there."""
    out = list(lines)
    for old, new in edits:
        hit = next((i for i, ln in enumerate(out) if _token(old).search(ln)), None)
        if hit is None:
            return None
        line = out[hit]
        indent = line[: len(line) - len(line.lstrip())]
        if new or old.startswith("\\"):  # a `\\` at a line's end: only it goes
            replaced = _token(old).sub(lambda _: new.replace("\n", "\n" + indent), line, count=1)  # noqa: B023 — called here
        else:  # a dropped option takes the blanks after it (`--x --y v` → `--y v`), at the end those before it
            m = re.compile(_token(old).pattern + r"[ \t]*").search(line)
            replaced = line[: m.start()] + line[m.end() :]
            replaced = replaced.rstrip() if m.end() == len(line) else replaced
        emptied = replaced.strip() in ("", "\\")  # a dropped option took the whole line
        out[hit : hit + 1] = [] if emptied else replaced.split("\n")
    if out and lines and not lines[-1].rstrip().endswith("\\") and out[-1].rstrip().endswith("\\"):
        out[-1] = out[-1].rstrip()[:-1].rstrip()  # the old last line went: no dangling continuation
    return out


def backslash_edits(text: str, lint_lines: set[int]) -> tuple[list[list[str]], list[str]]:
    """`\\` + blanks → `\\`; a comment after `\\` → moved above the command (first line). Only on
    the lines (0-based in `text`) where the extractor's shell lexer, which knows bash's quoting,
    found a `\\` that does not continue the command; on the command's last line the `\\` goes."""
    edits, why, comments = [], [], []
    lines = text.split("\n")
    for i, ln in enumerate(lines):
        m = CONTINUATION.search(ln) if i in lint_lines else None
        if m:
            edits.append([ln[m.start() :], "\\" if i < len(lines) - 1 else ""])
            if m.group(1):
                comments.append(m.group(1).strip())
    if comments:
        first = lines[0].strip().split()[0]
        edits.append([first, "\n".join(comments) + "\n" + first])
    if edits:
        why.append(
            "`\\` followed by blanks"
            + (" and a comment" if comments else "")
            + " does not continue a bash command"
            + ("; the comments moved above it" if comments else "")
        )
    return edits, why
