r"""Commands written as comments in a code block (`# vllm serve intfloat/e5-small` in a Python
example, `#   vllm serve … \` over several comment lines): documented commands the reader is told
to run elsewhere (in a shell), so they are extracted and judged like any other, each marked
`in a comment` in its source context. Bash and Python skip these lines, so the block's own reader
never sees them."""

from __future__ import annotations

import re

from driftmatrix.extractor.snippet_builder import Place, from_shell_text
from driftmatrix.extractor.snippet_record import Snippet

_COMMENTED = re.compile(r"^[ \t]*#+[ \t]?(.*)$")
_COMMAND = re.compile(r"^[ \t]*(?:\$[ \t]+)?(?:[A-Z_][A-Z0-9_]*=\S*[ \t]+)*vllm[ \t]+serve\b")


def uncommented(text: str) -> str | None:
    """`text` with only its commented commands left, uncommented, each on its own lines (every other
    line blank, so lines keep their numbers); None when there are none. A command continues over
    the following comment lines while a line ends with `\\`."""
    lines = text.split("\n")
    out = [""] * len(lines)
    i, found = 0, False
    while i < len(lines):
        m = _COMMENTED.match(lines[i])
        if not (m and _COMMAND.match(m[1])):
            i += 1
            continue
        found = True
        out[i] = m[1]
        while out[i].rstrip().endswith("\\") and i + 1 < len(lines) and (m := _COMMENTED.match(lines[i + 1])):
            i += 1
            out[i] = m[1]
        i += 1
    return "\n".join(out) if found else None


def commented_commands(text: str, place: Place) -> list[Snippet]:
    """Snippets of the commands written as comments in a block starting at `place.line`."""
    if "#" not in text or "vllm" not in text:
        return []
    commands = uncommented(text)
    if commands is None:
        return []
    return from_shell_text(commands, place.at(place.line, context=f"{place.context} in a comment".strip()))
