"""Find the code blocks of a Markdown page (mkdocs-material flavour) with their lines
and the anchor of the nearest heading.

markdown-it-py does the parsing. mkdocs-material puts code inside `!!! note` /
`??? tip` admonitions and `=== "Tab"` blocks (one small block rule below, with
Python-Markdown's notion of where such a block ends) and `<details>` HTML blocks; an indented code block is parsed
again as Markdown, because in these docs indentation almost always means "inside a
container" rather than "indented code".
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from markdown.extensions.toc import slugify, unique
from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock

_CONTAINER = re.compile(r"^(===[+!]*|!!!|\?\?\?\+?)[ \t]+\S")
_QUOTE_MARKERS = re.compile(r"^[ \t]*(>[ \t]?)*")
_ATTR_ID = re.compile(r"\s*\{[^}]*#([\w-]+)[^}]*\}\s*$")
_INLINE_MARKUP = re.compile(r"!?\[([^\]]*)\]\([^)]*\)|<[^>]+>|[`*_]")
_MAX_DEPTH = 6


@dataclass
class CodeBlock:
    """One fenced (or indented) code block of a page."""

    lang: str
    """First word of the info string, lower-cased, without `{.` `}` decoration."""
    text: str
    """The block's content with its container indentation removed."""
    line: int
    """1-based file line of the block's first content line."""
    anchor: str | None
    """Id of the nearest heading above the block."""
    container: str
    """`""`, `tab`, `admonition` or `html` — what the block sits in."""
    stray_indent: int = 0
    """Spaces before the opening fence of a top-level block. CommonMark accepts up to
    3; Python-Markdown (mkdocs) then renders the block as a paragraph, not as code."""
    unclosed: bool = False
    """The fence is never closed: it runs to the end of its container or page."""


def _container_rule(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    """`=== "Tab"` (pymdownx.tabbed), `!!! note` / `??? tip` / `???+` (admonition,
    pymdownx.details): a marker line, then content indented by 4. As in Python-Markdown,
    blank lines do not end the body (code in these blocks has them); a non-blank line
    indented less does."""
    if state.sCount[start] - state.blkIndent >= 4:
        return False
    pos = state.bMarks[start] + state.tShift[start]
    m = _CONTAINER.match(state.src[pos:state.eMarks[start]])
    if not m:
        return False
    if silent:
        return True
    indent = state.sCount[start] + 4
    nxt = start + 1
    while nxt < end:
        if not state.isEmpty(nxt) and state.sCount[nxt] < indent:
            break
        nxt += 1
    kind = "tab" if m.group(1).startswith("=") else "admonition"
    old = (state.parentType, state.lineMax, state.blkIndent)
    state.parentType, state.lineMax, state.blkIndent = kind, nxt, indent
    token = state.push(f"{kind}_open", "div", 1)
    token.map = [start, nxt]
    state.md.block.tokenize(state, start + 1, nxt)
    state.push(f"{kind}_close", "div", -1)
    state.parentType, state.lineMax, state.blkIndent = old
    state.line = nxt
    return True


def make_parser() -> MarkdownIt:
    md = MarkdownIt("commonmark")
    md.block.ruler.before("fence", "containers", _container_rule, {"alt": ["paragraph", "reference", "blockquote", "list"]})
    # Only block structure matters here; inline parsing is most of markdown-it's cost.
    md.core.ruler.disable(["inline", "text_join"], ignoreInvalid=True)
    return md


_PARSER = make_parser()


def heading_text(raw: str) -> tuple[str, str | None]:
    """(plain text, explicit `{#id}` if any) of a heading's inline source."""
    explicit = _ATTR_ID.search(raw)
    if explicit:
        raw = raw[:explicit.start()]
    return _INLINE_MARKUP.sub(lambda m: m.group(1) or "", raw).strip(), explicit.group(1) if explicit else None


class _Anchors:
    """mkdocs' toc ids: Python-Markdown's `slugify` + `unique` (…`_1`, `_2` on repeats)."""

    def __init__(self) -> None:
        self.used: set[str] = set()
        self.current: str | None = None

    def heading(self, raw: str) -> None:
        text, explicit = heading_text(raw)
        anchor = explicit or slugify(text, "-") or "_"
        self.current = unique(anchor, self.used)


def code_blocks(text: str) -> Iterator[CodeBlock]:
    """All code blocks of a Markdown page, in order."""
    yield from _walk(text, 0, _Anchors(), "", 0)


def _walk(text: str, offset: int, anchors: _Anchors, container: str, depth: int) -> Iterator[CodeBlock]:
    tokens = _PARSER.parse(text)
    inner = container
    lines: list[str] | None = None
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and i + 1 < len(tokens):
            anchors.heading(tokens[i + 1].content)
        elif tok.type in ("tab_open", "admonition_open"):
            inner = "tab" if tok.type == "tab_open" else "admonition"
        elif tok.type in ("tab_close", "admonition_close"):
            inner = container
        elif tok.type == "fence" and tok.map:
            info = tok.info.strip().lstrip("{").lstrip(".")
            lang = re.split(r"[\s{}]", info, maxsplit=1)[0].lower() if info else ""
            lines = lines or text.split("\n")
            indent = 0
            if tok.level == 0 and depth == 0:
                indent = len(lines[tok.map[0]]) - len(lines[tok.map[0]].lstrip(" "))
            last = _QUOTE_MARKERS.sub("", lines[tok.map[1] - 1]).strip() if tok.map[1] - 1 > tok.map[0] else ""
            closed = bool(last) and last.startswith(tok.markup) and set(last) == {tok.markup[0]}
            yield CodeBlock(lang, tok.content, offset + tok.map[0] + 2, anchors.current, inner, indent, not closed)
        elif tok.type == "code_block" and tok.map and depth < _MAX_DEPTH:
            # Indented content: a container markdown-it did not know, or a tab/admonition
            # body after a blank line. Parse it again; keep it as a block if no fence.
            nested = list(_walk(tok.content, offset + tok.map[0], anchors, inner or "indented", depth + 1))
            yield from nested or [CodeBlock("", tok.content, offset + tok.map[0] + 1, anchors.current, inner)]
        elif tok.type == "html_block" and tok.map and "```" in tok.content and depth < _MAX_DEPTH:
            # A fence inside <details> with no blank line after the tag: blank out the
            # tag lines (keeps line numbers) and parse the rest as Markdown.
            body = "\n".join("" if line.lstrip().startswith("<") else line for line in tok.content.split("\n"))
            yield from _walk(body, offset + tok.map[0], anchors, "html", depth + 1)
