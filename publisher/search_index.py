"""The site search's index, trimmed: mkdocs-material's search downloads `search/search_index.json`
on a visitor's first page, and a full index of 2,000 command pages is over 10 MB. A command page
or a doc page keeps its title and the opening of its first section (the command itself, the
page's file and versions), enough to find it by model, option or file name; the hand-written
and overview pages stay whole. The matrix's own filter searches every command in full."""

from __future__ import annotations

import json
import re
from pathlib import Path

from driftmatrix.common.inert import json_text

TRIMMED = ("snippets/", "pages/", "annotated/")
"""Generated pages, one per command or doc page: one entry each, title + opening only."""
TEXT_CHARS = 200


def _clip(text: str) -> str:
    if len(text) <= TEXT_CHARS:
        return text
    cut = text[:TEXT_CHARS]
    return re.sub(r"<[^>]*$|&[#\w]*$", "", cut) + "…"  # never half a tag or entity: the theme renders it as HTML


def trim(site_dir: Path) -> dict[str, int]:
    """Rewrite the index in place; returns the sizes before and after (bytes)."""
    path = site_dir / "search" / "search_index.json"
    if not path.is_file():
        return {}
    raw = path.read_text(encoding="utf-8")
    index = json.loads(raw)
    kept, pages = [], {}
    for entry in index.get("docs", []):
        location = entry.get("location", "")
        if not location.startswith(TRIMMED):
            kept.append(entry)
            continue
        page = location.split("#", 1)[0]
        if page not in pages:  # the page's own entry comes first
            pages[page] = {**entry, "location": page, "text": entry.get("text", "")}
            kept.append(pages[page])
            pages[page]["_sections"] = 0
        elif pages[page]["_sections"] == 0:  # its first section: a command page's command
            pages[page]["text"] = (pages[page]["text"] + " " + entry.get("text", "")).strip()
            pages[page]["_sections"] = 1
    for entry in pages.values():
        entry.pop("_sections")
        entry["text"] = _clip(entry["text"])
    index["docs"] = kept
    text = json_text(json.dumps(index, ensure_ascii=False, separators=(",", ":")))  # no format character raw
    path.write_text(text, encoding="utf-8")
    return {"before": len(raw.encode()), "after": len(text.encode())}
