"""Saved HTML pages of the rendered docs (mkdocs-material): `<pre><code>` blocks, with
the page URL (canonical link) and the id of the nearest heading as the source.

A page is untrusted: it is walked once, never looking inside a `<pre>` or a heading for more of
them, so that tags nested thousands deep cost linear time."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from bs4 import BeautifulSoup, Tag

from driftmatrix.extractor.code_blocks import snippets_from_block
from driftmatrix.extractor.markdown_blocks import title_from_file
from driftmatrix.extractor.snippet_builder import Place
from driftmatrix.extractor.snippet_record import Diagnostic, Snippet

_VERSION_IN_URL = re.compile(r"/en/(v?\d+\.\d+(?:\.\d+)?[^/]*|latest|stable)/")
_VLLM_DOCS = re.compile(r"^https?://(docs\.vllm\.ai|vllm\.readthedocs\.io)/")
# Code-language classes of other sites: GitHub `highlight-source-shell`, Prism/highlight.js
# `lang-bash`, Sphinx `highlight-bash`, Pandoc `sourceCode bash`; mkdocs uses `language-bash`.
_LANG_CLASS = re.compile(r"^(?:language-|lang-|highlight-source-|highlight-)([\w+-]+)$")
_LANG_NAMES = {"shell": "shell", "console": "console", "python": "python", "yaml": "yaml", "bash": "bash", "sh": "sh"}
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")


def page_url(soup: BeautifulSoup) -> str | None:
    link = soup.find("link", rel="canonical")
    if isinstance(link, Tag) and link.get("href"):
        return str(link["href"])
    meta = soup.find("meta", attrs={"property": "og:url"})
    if isinstance(meta, Tag) and meta.get("content"):
        return str(meta["content"])
    return None


def _lang(pre: Tag) -> str:
    grandparent = pre.parent.parent if isinstance(pre.parent, Tag) else None  # Sphinx: div.highlight-bash > div > pre
    for tag in (pre.find("code"), pre, pre.parent, grandparent):
        if not isinstance(tag, Tag):
            continue
        if tag.get("data-lang") or tag.get("data-language"):
            return str(tag.get("data-lang") or tag.get("data-language")).lower()
        classes = tag.get("class") or []
        for cls in classes:
            m = _LANG_CLASS.match(cls)
            if m and m.group(1).lower() not in ("", "source"):
                return m.group(1).lower()
        if "sourceCode" in classes:  # Pandoc: class="sourceCode bash"
            return next((c.lower() for c in classes if c.lower() in _LANG_NAMES), "")
    return ""


def heading_text(tag: Tag) -> str:
    """A heading's text as shown, without the permalink mkdocs appends (`<a class="headerlink">¶</a>`)."""
    parts: list[str] = []
    stack = [iter(tag.children)]
    while stack:
        child = next(stack[-1], None)
        if child is None:
            stack.pop()
        elif not isinstance(child, Tag):
            parts.append(str(child))
        elif not (child.name == "a" and "headerlink" in (child.get("class") or [])):
            stack.append(iter(child.children))
    return " ".join("".join(parts).split())


def headings_and_blocks(main: Tag) -> Iterator[Tag]:
    """The headings and `<pre>` blocks of a page in document order, in one pass that does not look
    inside either (no block or heading of a real page holds another)."""
    stack = [iter(main.children)]
    while stack:
        child = next(stack[-1], None)
        if child is None:
            stack.pop()
        elif isinstance(child, Tag):
            if child.name in _HEADINGS or child.name == "pre":
                yield child
            else:
                stack.append(iter(child.children))


def page_title(soup: BeautifulSoup, main: Tag | BeautifulSoup, name: str) -> str:
    """The page's `<h1>`, else its `<title>` without the site's name (mkdocs: `Page - Site`), else
    a name made from the file name."""
    h1 = main.find("h1") or soup.find("h1")
    text = heading_text(h1) if isinstance(h1, Tag) else ""
    if not text and isinstance(soup.title, Tag):
        text = " ".join(soup.title.get_text().split()).rsplit(" - ", 1)[0].strip()
    return text or title_from_file(name)


def from_html(
    path: Path, text: str, fallback_url: str | None = None, placeholder_models: frozenset[str] | None = None
) -> tuple[list[Snippet], list[Diagnostic], str, str | None]:
    """(snippets, diagnostics, version, url) of one saved page; `fallback_url`: its address when
    the page names none (`--url-base`)."""
    soup = BeautifulSoup(text, "html.parser")
    url = page_url(soup) or fallback_url
    # only the vLLM docs' own `/en/<version>/` is a vLLM version (vllm-ascend's `/en/latest/` is not)
    m = _VERSION_IN_URL.search(url or "") if _VLLM_DOCS.match(url or "") else None
    version = m.group(1).removeprefix("v") if m else ""
    main = soup.find("article") or soup.body or soup
    title = page_title(soup, main, path.name)
    anchor: str | None = None
    heading = ""
    snippets: list[Snippet] = []
    diagnostics: list[Diagnostic] = []
    for tag in headings_and_blocks(main):
        if tag.name in _HEADINGS:
            anchor = str(tag.get("id")) if tag.get("id") else anchor
            heading = heading_text(tag)
            continue
        code = tag.find("code") or tag
        block = code.get_text()
        page = url.split("#")[0] if url else None
        place = Place(
            "html",
            version,
            path.name,
            tag.sourceline or 1,
            anchor,
            page,
            "html:pre",
            title=title,
            heading=heading,
            placeholder_models=placeholder_models,
        )
        found, diags = snippets_from_block(_lang(tag), block, place)
        snippets += found
        diagnostics += diags
    return snippets, diagnostics, version, url
