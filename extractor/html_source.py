"""A saved, rendered docs page (`.html`) as a source: its versions from its address, its commands
read by extractor/html_pages.py (beautifulsoup4, imported only for such pages)."""

from __future__ import annotations

import html
import re
from pathlib import Path

from driftmatrix.extractor import markdown_sources, written_for
from driftmatrix.extractor.corpus import Result, snippet_problems
from driftmatrix.extractor.file_text import read_text
from driftmatrix.extractor.snippet_record import CorpusInfo, Diagnostic, WrittenFor


def html_versions(version: str, override: WrittenFor | None, stable: str) -> WrittenFor | None:
    """A rendered docs page's versions from its URL: `/en/v0.20.1/` its release line, `/en/latest/`
    (built from main) the nightly builds; `/en/stable/` or none: the page's own statements."""
    if override is not None:
        return override
    if version == "latest":
        return written_for.nightly(stable, "a rendered page of docs.vllm.ai/en/latest (built from main)")
    return written_for.of_docs(version, f"a rendered page of the vLLM {version} docs", stable) if version else None


def extract_html(
    path: Path,
    stable: str = "",
    override: WrittenFor | None = None,
    url_base: str = "",
    placeholder_models: frozenset[str] | None = None,
) -> Result:
    info = CorpusInfo("html", "", str(path), "html-page", files=1)
    text, diags = read_text(path, "html", "", path.name, lines=False)
    result = Result(info, diagnostics=diags)
    if text is None:
        return result
    from driftmatrix.extractor.html_pages import from_html  # bs4 is only needed for saved pages

    try:
        found, diags, version, _url = from_html(
            path, text, markdown_sources.page_link(url_base, path.name), placeholder_models
        )
    except Exception as err:  # noqa: BLE001
        result.diagnostics.append(
            Diagnostic("error", "internal-error", f"{type(err).__name__}: {err}", "html", "", path.name)
        )
        return result
    info.version = version
    # statements are read from the page's text lines (highlighting splits them into spans)
    plain = "\n".join(html.unescape(re.sub(r"<[^<>]*>", "", ln)) for ln in text.split("\n"))  # linear: no `<` inside
    written_for.assign(
        found, written_for.PageFacts(stable, html_versions(version, override, stable), text=plain, file=path.name)
    )
    result.snippets, result.diagnostics = found, result.diagnostics + diags + snippet_problems(found)
    info.snippets = len(found)
    return result
