"""Titles from the doc page and the nearest heading, escaped exactly once: a docs tree whose headings
hold `<target-model>` (in a code span, as the vLLM docs write placeholders) and hostile HTML goes
through the real extractor and a real site build (driftmatrix.publisher.site.build_site, `mkdocs build
--strict`); in a real headless Chromium over real HTTP the browser tab's title, the h1, the header's
title and the search (index and results) read as the docs wrote it — `<target-model>`, never
`&lt;target-model&gt;` — and nothing runs."""

from __future__ import annotations

import json
import time

import pytest
from bs4 import BeautifulSoup
from sitehttp import serve_dir

from driftmatrix.extractor.catalog import extract
from driftmatrix.publisher.results import load
from driftmatrix.publisher.site import build_site
from driftmatrix.publisher.titles import snippet_title
from driftmatrix.runner.builds.resolve import stable_pin
from driftmatrix.runner.builds.targets import SEED_CPU

SITE_NAME = "driftmatrix — the vLLM docs, run"
PAGE = """# Speculative `<target-model>` decoding & more

How to serve `<target-model>` with a draft.

## EAGLE Draft Models

```bash
vllm serve <target-model> \\
  --speculative-config '{"method": "eagle", "model": "<draft-model>", "num_speculative_tokens": 3}'
```

## Serve `<target-model>`

```bash
vllm serve Qwen/Qwen3-8B --max-model-len 4096
```

## Hostile <img src=x onerror=window.__pwned=1> `<script>window.__pwned=2</script>` &lt;b&gt;

```bash
vllm serve Qwen/Qwen3-0.6B --max-model-len 2048
```
"""
HOSTILE_PAGE = """# `</title><script>window.__pwned=3</script>` and <i>italic</i> `<svg onload=window.__pwned=4>`

```bash
vllm serve Qwen/Qwen3-4B
```
"""
TITLE = "Speculative <target-model> decoding & more"
WANT = {  # snippet title -> what each place shows
    f"{TITLE} › EAGLE Draft Models",
    f"{TITLE} › Serve <target-model>",
    f"{TITLE} › Hostile <img src=x onerror=window.__pwned=1> <script>window.__pwned=2</script> <b>",
    "</title><script>window.__pwned=3</script> and italic <svg onload=window.__pwned=4>",
}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("titles")
    tree = root / "vllm-0.33.0"
    (tree / "docs" / "features").mkdir(parents=True)
    (tree / "mkdocs.yaml").write_text("site_name: vLLM\n")
    (tree / "docs" / "features" / "spec.md").write_text(PAGE)
    (tree / "docs" / "features" / "hostile.md").write_text(HOSTILE_PAGE)
    catalog, _ = extract(stable=stable_pin(SEED_CPU), sources=[tree])
    catalog.write(root / "snippets.json")
    results = load(root / "snippets.json", [])
    assert {snippet_title(s) for s in results.snippets} == WANT
    build_site(results, root / "site")
    httpd, base = serve_dir(root / "site")
    yield root / "site", base, {snippet_title(s): s for s in results.snippets}
    httpd.shutdown()


def test_titles_read_as_written_in_the_browser(site, browser, artifacts):
    root, base, by_title = site
    expected = {f"snippets/{s.id}.html": title for title, s in by_title.items()}
    doc_pages = sorted(
        p.relative_to(root).as_posix() for p in (root / "pages").glob("*.html") if p.name != "index.html"
    )
    assert len(doc_pages) == 2
    for rel in doc_pages:  # a doc page is called by its title (the command pages' first part)
        h1 = BeautifulSoup((root / rel).read_text(encoding="utf-8"), "html.parser").find("h1").get_text().rstrip("¶")
        assert h1 in (TITLE, "</title><script>window.__pwned=3</script> and italic <svg onload=window.__pwned=4>")
        expected[rel] = h1
    context = browser.new_context()
    fired: list[str] = []
    context.on("dialog", lambda d: (fired.append(d.message), d.dismiss()))
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda e: errors.append(str(e)))
    for rel, want in expected.items():
        tab.goto(f"{base}/{rel}")
        assert tab.title() == f"{want} - {SITE_NAME}", rel  # the browser tab (`<title>`)
        assert tab.locator("article h1").first.inner_text().rstrip("¶") == want, rel
        header = tab.locator(".md-header__topic[data-md-component=header-topic] .md-ellipsis").inner_text()
        assert header.strip() == want, rel
        assert "&lt;" not in tab.locator("body").inner_text(), rel  # no entity text shown anywhere
        assert tab.evaluate("typeof window.__pwned") == "undefined", (rel, tab.evaluate("window.__pwned"))
    tab.goto(f"{base}/snippets/{by_title[f'{TITLE} › Serve <target-model>'].id}.html")
    tab.screenshot(path=str(artifacts / "titles.png"), full_page=False)
    assert not fired and not errors, (fired, errors)


def test_search_index_and_results_show_the_titles_once_escaped(site, browser):
    root, base, by_title = site
    index = json.loads((root / "search" / "search_index.json").read_text(encoding="utf-8"))
    titles = {d["location"]: d["title"] for d in index["docs"]}
    for title, s in by_title.items():
        shown = titles[f"snippets/{s.id}.html"]  # HTML the theme's search inserts: its text is the title
        assert BeautifulSoup(shown, "html.parser").get_text() == title, shown
        assert "&amp;lt;" not in shown and "<script" not in shown and "<img" not in shown, shown
    tab = browser.new_context().new_page()
    fired: list[str] = []
    tab.on("dialog", lambda d: (fired.append(d.message), d.dismiss()))
    tab.goto(f"{base}/index.html")
    tab.keyboard.press("/")
    for query, want in (
        ("EAGLE", f"{TITLE} › EAGLE Draft Models"),
        ("Hostile", f"{TITLE} › Hostile"),
        ("italic", "</title><script>window.__pwned=3</script> and italic"),
    ):
        tab.fill("input.md-search__input", "")
        tab.keyboard.type(query)
        shown = _search_results_once_settled(tab, want)
        assert any(t.startswith(want) for t in shown), (query, shown)
        assert not any("&lt;" in t or "&amp;" in t for t in shown), shown
    assert tab.evaluate("typeof window.__pwned") == "undefined"
    assert not fired, fired


def _search_results_once_settled(tab, want: str, timeout_s: float = 10.0) -> list[str]:
    """The result titles once the theme's search (a web worker) has answered this query: the previous
    query's results stay on screen until it does, so waiting for any result is not enough."""
    deadline = time.monotonic() + timeout_s
    while True:
        shown = tab.locator(".md-search-result__item h1, .md-search-result__item h2").all_inner_texts()
        if any(t.startswith(want) for t in shown) or time.monotonic() > deadline:
            return shown
        tab.wait_for_timeout(100)
