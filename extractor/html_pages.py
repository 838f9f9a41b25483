"""Saved HTML pages of the rendered docs (mkdocs-material): `<pre><code>` blocks, with
the page URL (canonical link) and the id of the nearest heading as the source."""

from __future__ import annotations

import re
from pathlib import Path

from bs4 import BeautifulSoup, Tag

from extractor.code_blocks import snippets_from_block
from extractor.records import Diagnostic, Snippet
from extractor.snippet_builder import Place

_VERSION_IN_URL = re.compile(r"/en/(v?\d+\.\d+(?:\.\d+)?[^/]*|latest|stable)/")
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
    for tag in (pre.find("code"), pre, pre.parent):
        for cls in (tag.get("class") or []) if isinstance(tag, Tag) else []:
            if cls.startswith("language-"):
                return cls.removeprefix("language-").lower()
    return ""


def from_html(path: Path, text: str) -> tuple[list[Snippet], list[Diagnostic], str, str | None]:
    """(snippets, diagnostics, version, url) of one saved page."""
    soup = BeautifulSoup(text, "html.parser")
    url = page_url(soup)
    m = _VERSION_IN_URL.search(url or "")
    version = m.group(1).removeprefix("v") if m else ""
    main = soup.find("article") or soup.body or soup
    anchor: str | None = None
    snippets: list[Snippet] = []
    diagnostics: list[Diagnostic] = []
    for tag in main.find_all([*_HEADINGS, "pre"]):
        if tag.name in _HEADINGS:
            anchor = str(tag.get("id")) if tag.get("id") else anchor
            continue
        code = tag.find("code") or tag
        block = code.get_text()
        page = url.split("#")[0] if url else None
        place = Place("html", version, path.name, tag.sourceline or 1, anchor, page, "html:pre")
        found, diags = snippets_from_block(_lang(tag), block, place)
        snippets += found
        diagnostics += diags
    return snippets, diagnostics, version, url
