"""Page titles: what a command's page and a doc page are called (in `<title>`, the header, the
search index and the h1)."""

from __future__ import annotations

from extractor.records import Snippet, Source


def snippet_title(s: Snippet) -> str:
    """A command page's title."""
    return s.model or s.id


def page_title(source: Source) -> str:
    """A doc page's title (the generated page listing that page's commands)."""
    return source.file
