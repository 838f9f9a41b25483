"""Text from logs or docs made inert where it is shown: Markdown escaping, fenced code blocks (the rules
themselves are common/inert.py's, shared with the PR body and the summaries)."""

from __future__ import annotations

import html
import re

from driftmatrix.common.inert import code_block, strip_controls

_MD_SPECIAL = re.compile(r"([\\`*_\[\]{}<>#!])")


def md_escape(text: str) -> str:
    """Text from logs or docs as inert Markdown: control characters stripped (common/inert.py),
    HTML-escaped, Markdown specials backslash-escaped (a `<script>` in a log line stays text)."""
    text = strip_controls(text)
    return html.escape(_MD_SPECIAL.sub(r"\\\1", text).replace("\\<", "<").replace("\\>", ">"), quote=False)


def fence(text: str, lang: str = "") -> str:
    """A fenced code block that cannot be closed early by the text inside it (common/inert.py, the
    one rule for the site, the PR body and the summaries)."""
    return code_block(text, lang)
