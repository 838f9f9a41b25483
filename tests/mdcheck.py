"""What a Markdown text does when rendered, read with markdown-it-py (CommonMark + GFM tables, as
GitHub parses PR bodies and step summaries): the text shown as code, and everything else — links,
images, raw HTML and the prose in which GitHub would link a mention or a bare URL. Shared by the
tests that feed hostile docs and vLLM text through the real renderers (tests/ is on sys.path: its
conftest.py is there).

markdown-it-py has no GFM autolinks without linkify-it-py (not installed); GitHub links bare URLs
and @mentions in prose, never in code, so `exposed` says where hostile text is *not* code."""

from __future__ import annotations

from dataclasses import dataclass, field

from markdown_it import MarkdownIt

CODE = ("code_inline", "fence", "code_block")
HOSTILE = (
    "@vllm-project/some-team ![](https://evil.example/p.png) [fix](https://evil.example) "
    "https://evil.example/bare www.evil.example user@evil.example #123 <img src=x onerror=alert(1)> "
    "<details><summary>open</summary> <!-- comment --> | a | b | ``` ~~~ ```````` `tick` \\| end\\"
)
"""One message with every way to make Markdown do something: a mention, an image, a link, bare
URLs, an email, a reference, HTML tags and a comment, table pipes, fences, a run of backticks."""
MULTILINE = "first line\n```\n<img src=x onerror=alert(2)>\n~~~\n</details>\n\n# heading @vllm-project/other\n````"
"""A message of several lines that tries to end the code around it and start blocks of its own."""
MARKERS = ("@vllm-project", "evil.example", "onerror", "<!--", "<details><summary>open", "#123")
"""Parts of the hostile texts that must never be outside code."""
LINKABLE = ("@vllm", "://", "www.", "#123", "@evil")
"""What GitHub links in prose (a mention, a bare URL, an email, a reference): escaped and defused
prose (`driftmatrix.common.inert.plain`) may show the hostile text, never these."""


@dataclass
class Rendered:
    code: list[str] = field(default_factory=list)
    """Every code span's and code block's content."""
    prose: list[str] = field(default_factory=list)
    """Every text outside code (what GitHub scans for mentions and URLs)."""
    links: list[str] = field(default_factory=list)
    images: list[str] = field(default_factory=list)
    html: list[str] = field(default_factory=list)
    """Raw HTML (blocks and inline tags), as written."""

    def exposed(self, markers=MARKERS) -> list[str]:
        """The markers found anywhere but in code."""
        outside = [*self.prose, *self.links, *self.images, *self.html]
        return [m for m in markers if any(m in text for text in outside)]


def _walk(tokens):
    for t in tokens:
        yield t
        if t.children:
            yield from _walk(t.children)


def render(markdown: str) -> Rendered:
    out = Rendered()
    for t in _walk(MarkdownIt("commonmark").enable("table").parse(markdown)):
        if t.type in CODE:
            out.code.append(t.content)
        elif t.type == "text" and t.content:
            out.prose.append(t.content)
        elif t.type == "link_open":
            out.links.append(str(t.attrs.get("href")))
        elif t.type == "image":
            out.images.append(str(t.attrs.get("src")))
            out.prose.append(t.content)
        elif t.type in ("html_inline", "html_block"):
            out.html.append(t.content)
    return out


def collapsed(text: str) -> str:
    return " ".join(text.split())


def table_cells(markdown: str) -> list[int]:
    """How many cells each row of the tables in `markdown` has (header rows included)."""
    rows: list[int] = []
    for t in MarkdownIt("commonmark").enable("table").parse(markdown):
        if t.type == "tr_open":
            rows.append(0)
        elif t.type in ("td_open", "th_open"):
            rows[-1] += 1
    return rows


def assert_inert(markdown: str, allowed_links=(), allowed_html=(), markers=MARKERS) -> Rendered:
    """No image, no link but `allowed_links` prefixes, no raw HTML but `allowed_html`, none of
    `markers` outside code; returns what was rendered for more checks."""
    r = render(markdown)
    assert not r.images, r.images[:5]
    assert all(link.startswith(tuple(allowed_links)) for link in r.links) if allowed_links else not r.links, r.links[:5]
    assert all(h.strip() in allowed_html for h in r.html), [h for h in r.html if h.strip() not in allowed_html][:5]
    assert not r.exposed(markers), (r.exposed(markers), [p for p in r.prose if any(m in p for m in markers)][:5])
    return r
