"""Where things are on the site: the generated page of a source doc page (its key, its file's slug) and
the link to a cell's evidence."""

from __future__ import annotations

import re

from driftmatrix.extractor.snippet_record import Source


def evidence_href(snippet_id: str, column_key: str) -> str:
    """Site-relative link to a cell's evidence (the snippet page, the target's section)."""
    return f"snippets/{snippet_id}.html#{column_key}"


def page_key(source: Source) -> str:
    """One generated page per source doc page (corpus, version, file)."""
    return f"{source.corpus}/{source.version}/{source.file}"


def page_slug(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", key).strip("-").lower()
