"""Find the code blocks of a Markdown page (mkdocs-material flavour) with their lines,
the anchor and text of the nearest heading, and the page's title.

markdown-it-py does the parsing. mkdocs-material puts code inside `!!! note` /
`??? tip` admonitions and `=== "Tab"` blocks (one small block rule below, with
Python-Markdown's notion of where such a block ends) and `<details>` HTML blocks; an indented code block is parsed
again as Markdown, because in these docs indentation almost always means "inside a
container" rather than "indented code".
"""

from __future__ import annotations

import bisect
import html
import re
from collections.abc import Iterator
from dataclasses import dataclass

from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock

from driftmatrix.extractor.bounds import MAX_HEADING_CHARS

_CONTAINER = re.compile(r"^(===[+!]*|!!!|\?\?\?\+?)[ \t]+\S")
_QUOTE_MARKERS = re.compile(r"^[ \t]*(>[ \t]?)*")
_ID_IN_ATTRS = re.compile(r"#([\w-]+)")
_INLINE_MARKUP = re.compile(r"!?\[([^\]]*)\]\([^)]*\)|<[^>]+>|[`*_]")
_MAX_DEPTH = 6
_FRONT_MATTER = re.compile(r"\A-{3}[ \t]*\n(.*?\n)(?:\.{3}|-{3})[ \t]*\n", re.S)
"""YAML front matter as mkdocs reads it (`mkdocs.utils.meta.YAML_RE`): `---` on the first line, up to `---` or `...`."""
_TAG = re.compile(r"<!--.*?-->|</?[A-Za-z][^>]*>", re.S)
_ATTR_LIST = re.compile(r"\s*\{(?::[^}]*|\s*[#.][^}]*)\}\s*$")
_BACKTICKS = re.compile(r"`+")
_STASHED = re.compile("\0(\\d+)\0")
_PLAIN = re.compile(
    r"""
    !\[[^\]]*\](?:\([^)]*\)|\[[^\]]*\])                 # an image: a picture, no text
  | \[(?P<label>[^\]]*)\](?:\([^)]*\)|\[[^\]]*\])?      # a link: its text
  | <(?P<auto>(?:https?|ftp|mailto):[^>\s]*)>              # an autolink: the address
  | <!--.*?-->|</[A-Za-z][A-Za-z0-9-]*\s*>                # raw HTML (CommonMark's tag grammar, which
  | <[A-Za-z][A-Za-z0-9-]*(?:\s+[A-Za-z_:][\w.:-]*         #   Python-Markdown follows): markup, not text;
      (?:\s*=\s*(?:[^\s"'=<>`]+|'[^']*'|"[^"]*"))?)*\s*/?>  #   `<a onerror=x=1>` is no tag: text
  | \\(?P<escaped>[!-/:-@\[-`{-~])                        # a backslash escape: the character
  | (?P<star>\*{1,3})(?=\S)(?P<starred>.+?)(?<=\S)(?P=star)  # emphasis: its text (an unpaired `*` is text)
  | (?<!\w)(?P<low>_{1,3})(?=\S)(?P<lowered>.+?)(?<=\S)(?P=low)(?!\w)  # `_x_`, `__x__`, not snake_case
""",
    re.X | re.S,
)


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
    heading: str = ""
    """Plain text of the nearest heading above the block (`plain_text`)."""
    closed_on_text_line: int = 0
    """1-based file line whose text ends with the closing fence (`vllm serve x  ````): Markdown does
    not close a fence there, the page shows the rest as code; the block is read up to that line."""


def _container_rule(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    """`=== "Tab"` (pymdownx.tabbed), `!!! note` / `??? tip` / `???+` (admonition,
    pymdownx.details): a marker line, then content indented by 4. As in Python-Markdown,
    blank lines do not end the body (code in these blocks has them); a non-blank line
    indented less does."""
    if state.sCount[start] - state.blkIndent >= 4:
        return False
    pos = state.bMarks[start] + state.tShift[start]
    m = _CONTAINER.match(state.src[pos : state.eMarks[start]])
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
    md.block.ruler.before(
        "fence", "containers", _container_rule, {"alt": ["paragraph", "reference", "blockquote", "list"]}
    )
    # Only block structure matters here; inline parsing is most of markdown-it's cost.
    md.core.ruler.disable(["inline", "text_join"], ignoreInvalid=True)
    return md


_PARSER = make_parser()


def heading_text(raw: str) -> tuple[str, str | None]:
    """(plain text, explicit `{#id}` if any) of a heading's inline source."""
    explicit = _explicit_id(raw)
    if explicit:
        raw = raw[: explicit[0]]
    return _INLINE_MARKUP.sub(lambda m: m.group(1) or "", raw).strip(), explicit[1] if explicit else None


def _explicit_id(raw: str) -> tuple[int, str] | None:
    """(where it starts, the id) of a trailing attribute list holding `#id` (`## Title {#id .cls}`),
    as `\\s*\\{[^}]*#([\\w-]+)[^}]*\\}\\s*$` searched, in linear time (that regex is cubic)."""
    end = len(raw.rstrip())
    if not end or raw[end - 1] != "}":
        return None
    opening = raw.find("{", raw.rfind("}", 0, end - 1) + 1, end - 1)
    ids = list(_ID_IN_ATTRS.finditer(raw, opening + 1, end - 1)) if opening >= 0 else []
    if not ids:
        return None
    return len(raw[:opening].rstrip()), ids[-1].group(1)


def _code_spans(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, content) of each code span, as `(`+)(.+?)(?<!`)\\1(?!`)` (re.S) finds them, in
    O(n log n) (that regex is cubic): an opening run of backticks, as long as possible, closes at the
    next run of exactly its length."""
    runs = [(m.start(), m.end() - m.start()) for m in _BACKTICKS.finditer(text)]
    by_length: dict[int, list[int]] = {}
    for i, (_, length) in enumerate(runs):
        by_length.setdefault(length, []).append(i)
    i = 0
    while i < len(runs):
        start, length = runs[i]
        i += 1
        for k in range(length, 0, -1):
            later = by_length.get(k, [])
            j = bisect.bisect_left(later, i)
            if j < len(later):
                close = runs[later[j]][0]
                yield start, close + k, text[start + k : close]
                i = later[j] + 1
                break


def plain_text(raw: str) -> str:
    """A heading's inline Markdown as the reader sees it, as plain text (not HTML): code spans
    literally, a link's text without its target, images and raw HTML tags dropped, backslash
    escapes and emphasis markers removed (an unpaired `*` or `_` is text), entities (`&lt;`,
    `&amp;`) decoded, a trailing `{#id}`/`{: …}` attribute list dropped, whitespace collapsed."""
    codes: list[str] = []

    text, pieces, pos = _ATTR_LIST.sub("", raw.replace("\0", "\ufffd")), [], 0
    for start, end, code in _code_spans(text):  # code spans first: nothing inside them is markup
        codes.append(code[1:-1] if len(code) > 2 and code[0] == code[-1] == " " and code.strip() else code)
        pieces += [text[pos:start], f"\0{len(codes) - 1}\0"]
        pos = end
    text = _inline("".join(pieces) + text[pos:])
    return " ".join(_STASHED.sub(lambda m: codes[int(m.group(1))], text).split())


def _inline(raw: str) -> str:
    out: list[str] = []
    pos = 0
    for m in _PLAIN.finditer(raw):
        out.append(html.unescape(raw[pos : m.start()]))
        inner = m.group("label") or m.group("starred") or m.group("lowered")
        if inner is not None:
            out.append(_inline(inner))
        elif m.group("auto") is not None:
            out.append(m.group("auto"))
        elif m.group("escaped") is not None:
            out.append(m.group("escaped"))
        pos = m.end()
    out.append(html.unescape(raw[pos:]))
    return "".join(out)


def front_matter(text: str) -> tuple[str | None, str]:
    """(the `title:` of the page's YAML front matter or None, the text with the front matter's lines
    blanked: mkdocs reads a front matter that is a YAML mapping as metadata, not Markdown; the line
    numbers stay)."""
    m = _FRONT_MATTER.match(text) if text.startswith("---") else None
    if not m:
        return None, text
    import yaml  # only for the few pages with front matter

    from driftmatrix.extractor.yaml_nodes import load  # noqa: PLC0415

    try:
        meta = load(m.group(1))
    except yaml.YAMLError:  # an alias bomb too (YAMLTooLarge): no front matter then
        return None, text
    if not isinstance(meta, dict):
        return None, text
    value = meta.get("title")
    # the theme inserts it as HTML (not Markdown): its text is what a reader sees
    title = " ".join(html.unescape(_TAG.sub("", str(value))).split()) if isinstance(value, (str, int, float)) else ""
    title = title or None
    return title, "\n" * m.group(0).count("\n") + text[m.end() :]


def title_from_file(file: str) -> str:
    """The title of a page that has none (no front matter `title:`, no `# ` heading — typically a
    `.inc.md` part included into other pages): its file name (`cpu.arm.inc.md`; a `README.md` or
    `index.md` with its folder: `quantization/README.md`)."""
    parts = [p for p in file.split("/") if p]
    if not parts:
        return file
    keep = 2 if parts[-1].rsplit(".", 1)[0] in ("README", "index") and len(parts) > 1 else 1
    return "/".join(parts[-keep:])


class Ids:
    """The heading ids given so far, and Python-Markdown's toc `unique` over them (a repeated id gets
    `_1`, `_2`, …: the first suffix not taken) in near-constant time. `unique` scans `base_1`,
    `base_2`, … from the start for every repeat, so N equal headings cost N²/2 look-ups (10,000 took
    12 s); here the runs of taken suffixes are skipped, as in a union-find with path compression."""

    def __init__(self) -> None:
        self.taken: set[str] = set()
        self._skip: dict[tuple[str, int], int] = {}
        """(base, n) -> m > n: `base_n` … `base_{m-1}` are all taken (ids are never given back)."""

    def __contains__(self, anchor: str) -> bool:
        return anchor in self.taken

    def unique(self, anchor: str) -> str:
        """`markdown.extensions.toc.unique(anchor, taken)`, the same id."""
        if anchor in self.taken or not anchor:
            from markdown.extensions.toc import (
                IDCOUNT_RE,  # imported when a page has headings: `check` of a command has none
            )

            m = IDCOUNT_RE.match(anchor)
            base, count = (m.group(1), int(m.group(2))) if m else (anchor, 0)
            anchor = f"{base}_{self._free(base, count + 1)}"
        self.taken.add(anchor)
        return anchor

    def _free(self, base: str, n: int) -> int:
        """The first suffix from `n` on whose id is not taken; the suffixes passed now skip to it."""
        passed = []
        while f"{base}_{n}" in self.taken:
            passed.append(n)
            n = self._skip.get((base, n), n + 1)
        for k in passed:
            self._skip[(base, k)] = n
        return n


class Headings:
    """The headings seen so far: mkdocs' toc ids (Python-Markdown's `slugify` + `unique`, …`_1`,
    `_2` on repeats), the nearest heading's text, and the page's first `# ` heading."""

    def __init__(self) -> None:
        self.used = Ids()
        self.current: str | None = None
        """The nearest heading's anchor."""
        self._raw: str | None = None
        self._text: str | None = None
        self._first_h1: str | None = None
        self.front_matter_title: str | None = None
        """The page's front matter `title:` (set by `code_blocks`)."""

    def heading(self, raw: str, tag: str = "") -> None:
        raw = raw[:MAX_HEADING_CHARS]
        text, explicit = heading_text(raw)
        from markdown.extensions.toc import slugify  # see Ids.unique

        anchor = explicit or slugify(text, "-") or "_"
        self.current = self.used.unique(anchor)
        self._raw, self._text = raw, None
        if tag == "h1" and self._first_h1 is None:
            self._first_h1 = raw

    @property
    def text(self) -> str:
        """The nearest heading's plain text (made when a block asks: most headings have none)."""
        if self._text is None:
            self._text = plain_text(self._raw) if self._raw else ""
        return self._text

    @property
    def title(self) -> str:
        """The page's title as far as read: front matter `title:`, else its first `# ` heading."""
        return self.front_matter_title or (plain_text(self._first_h1) if self._first_h1 else "")


def code_blocks(text: str, headings: Headings | None = None) -> Iterator[CodeBlock]:
    """All code blocks of a Markdown page, in order. Pass `headings` to read the page's title
    from it once the blocks are read (a page's `# ` heading may come after a block)."""
    headings = headings if headings is not None else Headings()
    headings.front_matter_title, text = front_matter(text)
    yield from _walk(text, 0, headings, "", 0)


def _fence_at_line_end(content: list[str], marker: str, closed: bool) -> int | None:
    """Index of the first content line that ends with the block's closing marker after some text
    (`vllm serve x  ````): where the author meant the block to end. In a block that Markdown does close
    later, only when that later fence was meant to close a block the author opened after it (an
    opening fence with an info string follows): else the line is the block's own text."""
    for i, line in enumerate(content):
        text = line.rstrip()
        if text.endswith(marker) and text[: -len(marker)].strip() and not text[: -len(marker)].endswith(marker[0]):
            opens_another = any(
                later.strip().startswith(marker) and later.strip().strip(marker[0]) for later in content[i + 1 :]
            )
            return i if not closed or opens_another else None
    return None


_MYST_CODE = frozenset({"code-block", "code", "sourcecode"})
"""MyST directives that show code (a Sphinx site's Markdown): their argument is the language."""
_MYST_OPTIONS = re.compile(r"\A(?:[ \t]*:[\w-]+:[^\n]*\n)+")
# their `:substitutions:` / `:caption:` option lines, blanked (not dropped: the lines below keep their numbers)


def _walk(text: str, offset: int, anchors: Headings, container: str, depth: int) -> Iterator[CodeBlock]:
    tokens = _PARSER.parse(text)
    inner = container
    lines: list[str] | None = None
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and i + 1 < len(tokens):
            anchors.heading(tokens[i + 1].content, tok.tag)
        elif tok.type in ("tab_open", "admonition_open"):
            inner = "tab" if tok.type == "tab_open" else "admonition"
        elif tok.type in ("tab_close", "admonition_close"):
            inner = container
        elif tok.type == "fence" and tok.map:
            info = tok.info.strip().lstrip("{").lstrip(".")
            lang = re.split(r"[\s{}]", info, maxsplit=1)[0].lower() if info else ""
            body = tok.content
            if lang in _MYST_CODE:  # MyST's ```{code-block} bash: the language after the directive
                lang = (re.split(r"[\s{}]+", info.strip(), maxsplit=2)[1:2] or [""])[0].lower()
                body = _MYST_OPTIONS.sub(lambda m: "\n" * m.group(0).count("\n"), body)
            lines = lines or text.split("\n")
            indent = 0
            if tok.level == 0 and depth == 0:
                indent = len(lines[tok.map[0]]) - len(lines[tok.map[0]].lstrip(" "))
            last = _QUOTE_MARKERS.sub("", lines[tok.map[1] - 1]).strip() if tok.map[1] - 1 > tok.map[0] else ""
            closed = bool(last) and last.startswith(tok.markup) and set(last) == {tok.markup[0]}
            first = offset + tok.map[0] + 2
            content = body.removesuffix("\n").split("\n")
            cut = _fence_at_line_end(content, tok.markup, closed)
            if cut is None:
                yield CodeBlock(lang, body, first, anchors.current, inner, indent, not closed, anchors.text)
                continue
            meant = "\n".join(content[:cut] + [content[cut].rstrip()[: -len(tok.markup)].rstrip()]) + "\n"
            yield CodeBlock(lang, meant, first, anchors.current, inner, indent, False, anchors.text, first + cut)
            if depth < _MAX_DEPTH:  # what follows, read as the author meant it: Markdown again
                rest = content[cut + 1 :] + ([tok.markup] if closed else [])
                yield from _walk("\n".join(rest), first + cut, anchors, container, depth + 1)
        elif tok.type == "code_block" and tok.map and depth < _MAX_DEPTH:
            # Indented content: a container markdown-it did not know, or a tab/admonition
            # body after a blank line. Parse it again; keep it as a block if no fence.
            nested = list(_walk(tok.content, offset + tok.map[0], anchors, inner or "indented", depth + 1))
            yield from nested or [
                CodeBlock("", tok.content, offset + tok.map[0] + 1, anchors.current, inner, heading=anchors.text)
            ]
        elif tok.type == "html_block" and tok.map and "```" in tok.content and depth < _MAX_DEPTH:
            # A fence inside <details> with no blank line after the tag: blank out the
            # tag lines (keeps line numbers) and parse the rest as Markdown.
            body = "\n".join("" if line.lstrip().startswith("<") else line for line in tok.content.split("\n"))
            yield from _walk(body, offset + tok.map[0], anchors, "html", depth + 1)
