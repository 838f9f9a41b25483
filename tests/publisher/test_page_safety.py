"""Pages that cannot run anything (issue 19, point 5): one real site build (driftmatrix.publisher.site.build_site,
`mkdocs build --strict`) from hostile records (hostile_site.py), every page opened in a real
headless Chromium over real HTTP; only http(s) URLs become links; no host path on any page, in
the search index or in matrix.json."""

from __future__ import annotations

import json
import re
import time

import hostile_site as hostile
import pytest
from bs4 import BeautifulSoup
from sitehttp import serve_dir

from driftmatrix.publisher.results import load
from driftmatrix.publisher.site import build_site

SITE_NAME = "driftmatrix — the vLLM docs, run"
URL_ATTRS = ("href", "src", "action", "formaction", "xlink:href", "srcdoc", "data")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("page-safety")
    snippets, outcomes = hostile.write(tmp)
    t0 = time.monotonic()
    published = build_site(load(snippets, [outcomes]), tmp / "site", annotated=hostile.annotated(tmp))
    print(f"site built in {time.monotonic() - t0:.1f} s ({published.pages} generated pages)")
    httpd, base = serve_dir(tmp / "site")
    yield tmp, tmp / "site", base
    httpd.shutdown()


def html_files(root) -> list:
    files = sorted(root.rglob("*.html"))
    assert len(files) > 15
    return files


def soup(path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def page_of(root, file: str):
    """The generated page of one doc page, found by its <h1> (its slug is not this test's business)."""
    for path in (root / "pages").glob("*.html"):
        h1 = soup(path).find("h1")
        if h1 and h1.get_text().rstrip("¶") == file:
            return path
    raise AssertionError(f"no page for {file}")


def test_no_page_runs_anything(site, browser):
    _, root, base = site
    context = browser.new_context()
    fired: list[str] = []
    context.on("dialog", lambda d: (fired.append(d.message), d.dismiss()))
    paths = html_files(root)
    tabs = [context.new_page() for _ in paths]
    for tab, path in zip(tabs, paths):  # all at once: each waits for its own `load` below
        tab.goto(f"{base}/{path.relative_to(root).as_posix()}", wait_until="commit")
    for tab in tabs:
        tab.wait_for_load_state("load")
        tab.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    tabs[0].wait_for_timeout(300)  # an <img onerror> in a just-opened <details> gets its turn
    for tab, path in zip(tabs, paths):
        assert tab.evaluate("typeof window.__pwned") == "undefined", (path, tab.evaluate("window.__pwned"))
    # the theme's search shows page titles and text from the search index: search for the payloads
    search = tabs[paths.index(root / "index.html")]
    search.keyboard.press("/")
    for query in ("onerror", "script"):
        search.fill("input.md-search__input", "")
        search.keyboard.type(query)
        search.wait_for_selector(".md-search-result__item", timeout=10_000)
        titles = search.locator(".md-search-result__item h1, .md-search-result__item h2").all_inner_texts()
        assert any(hostile.IMG in t for t in titles), titles  # shown, as text
    assert search.evaluate("typeof window.__pwned") == "undefined", search.evaluate("window.__pwned")
    assert not fired, fired
    context.close()


def test_the_matrix_shows_hostile_text_as_text(site, browser):
    """The matrix is drawn by a script from matrix-data.js: every cell, every opened cause, the page
    list and the judgement reasons of hostile records stay text."""
    _, root, base = site
    data = (root / "matrix-data.js").read_text(encoding="utf-8")
    assert "</script" not in data.lower()  # no string in the data can end its <script> element
    page = browser.new_page()
    fired: list[str] = []
    page.on("dialog", lambda d: (fired.append(d.message), d.dismiss()))
    page.goto(f"{base}/matrix.html?all=1")
    page.wait_for_selector("body[data-dm-ready]")
    buttons = page.locator("table.dm-matrix button[data-c]")
    assert buttons.count() >= 8
    for i in range(buttons.count()):
        buttons.nth(i).click()  # opens its details (a second click on another cell of the row replaces them)
        page.wait_for_timeout(20)
    page.select_option("#dm-mine", "0.20.1")
    page.locator("table.dm-matrix td.dm-mine button").first.click()
    page.wait_for_timeout(300)
    assert page.evaluate("typeof window.__pwned") == "undefined", page.evaluate("window.__pwned")
    assert hostile.IMG in page.locator("table.dm-matrix").inner_text()  # shown, as text
    assert hostile.IMG in " ".join(page.locator("#dm-page option").all_inner_texts())
    assert not page.locator("table.dm-matrix img, table.dm-matrix svg, table.dm-matrix script").count()
    assert not fired, fired
    page.close()


def test_only_web_urls_become_links(site):
    _, root, _ = site
    for path in html_files(root):
        doc = soup(path)
        for tag in doc.find_all(True):
            for attr in URL_ATTRS:
                value = re.sub(r"[\x00-\x20]", "", str(tag.get(attr) or "")).lower()
                assert not value.startswith(("javascript:", "data:", "vbscript:")), (path, tag)
            assert not [a for a in tag.attrs if a.lower().startswith("on")], (path, tag)
        assert not doc.select('img[src="x"], svg[onload]'), path
        assert not [a for a in doc.find_all("a") if a.get_text() in ("click", "i", "fix")], path  # no Markdown link
        hostile_refs = [
            t
            for t in doc.select("img, a")
            if t.get_text().strip().startswith("@vllm-project")
            or re.search(r"evil\.example|github\.com", str(t.get("src") or t.get("href")))
        ]
        assert not hostile_refs, path  # no tracking image, no link to the hostile host, no mention
    snippet = soup(root / "snippets" / "s-0000000000a1.html")
    sources = snippet.select_one("ul.dm-sources")
    assert [a["href"] for a in sources.select("a[href^=http]")] == [hostile.GOOD_URL]
    shown = sources.get_text()
    assert hostile.BAD_URLS[0] in shown and hostile.BAD_URLS[1] in shown  # shown as text
    upstream = soup(page_of(root, hostile.PAGE_FILE)).select_one("p.dm-meta")
    assert not upstream.select("a") and hostile.BAD_URLS[0] in upstream.get_text()
    doc = json.loads((root / "matrix.json").read_text(encoding="utf-8"))
    urls = [src["url"] for e in doc["snippets"].values() for src in e["sources"]]
    assert hostile.GOOD_URL in urls and set(urls) == {hostile.GOOD_URL, None}


def test_annotated_pages_show_hostile_text_as_text(site):
    """`annotate`'s admonition (Markdown, with the escaped causes) and a fix's command and reasons,
    as the site's annotated page renders them: the hostile texts are there, as text."""
    _, root, _ = site
    pages = [p for p in (root / "annotated").glob("*.html") if p.name != "index.html"]
    assert len(pages) == 1
    page = soup(pages[0])
    admonition = page.select_one("div.admonition.warning")
    assert admonition and hostile.WEB in " ".join(admonition.get_text().split())  # the cause, escaped
    reasons = " ".join(li.get_text() for li in page.select("ul li"))
    assert f"why {hostile.MD_LINK}" in reasons and f"how {hostile.WEB}" in reasons
    assert f"vllm serve {hostile.WEB}" in page.get_text()  # the fixed command, in its code block
    assert hostile.MD_LINK in soup(root / "annotated" / "index.html").select_one("ul.dm-problems").get_text()


def test_titles_and_headings_are_text(site):
    _, root, _ = site
    page = soup(page_of(root, hostile.PAGE_FILE))
    assert page.title.get_text() == f"{hostile.PAGE_FILE} - {SITE_NAME}"
    assert not page.find_all("script", string=re.compile("pwned"))
    html_page = soup(page_of(root, hostile.HTML_FILE))
    assert html_page.title.get_text() == f"{hostile.HTML_FILE} - {SITE_NAME}"
    for sid in ("s-0000000000b1", "s-0000000000b3"):
        snippet = soup(root / "snippets" / f"{sid}.html")
        model = f"{hostile.IMG} {hostile.MD_LINK} # {sid[-1]}"
        assert snippet.find("h1").get_text().rstrip("¶") == model  # escaped once: reads as written
        assert snippet.title.get_text() == f"{model} - {SITE_NAME}"
    models = soup(page_of(root, f"Models {hostile.WEB}"))
    assert models.title.get_text() == f"Models {hostile.WEB} - {SITE_NAME}"
    facts = soup(root / "snippets" / "s-0000000000a1.html")
    assert hostile.MD_LINK in facts.select_one("ul.dm-notes").get_text()
    assert "<script>window.__pwned=15</script>" in facts.select_one("details.dm-log pre").get_text()


def test_no_host_path_on_any_page_or_in_matrix_json(site):
    tmp, root, _ = site
    published = [
        *html_files(root),
        root / "matrix.json",
        root / "search" / "search_index.json",
        root / "matrix-data.js",
    ]
    forbidden = ["/root/", "/home/", "/tmp/", str(tmp), str(hostile.REPO), "/root/dmcache", "/.cache/driftmatrix"]
    for path in published:
        text = path.read_text(encoding="utf-8")
        found = [f for f in forbidden if f in text]
        assert not found, (path, found, [text[max(0, text.index(f) - 80) : text.index(f) + 80] for f in found])
    facts = soup(root / "snippets" / "s-0000000000a1.html")
    text = " ".join(facts.get_text(" ").split())
    assert "raised at vllm/engine/arg_utils.py:1907" in text
    assert 'File "vllm/engine/arg_utils.py", line 1907' in facts.select_one("details.dm-log pre").get_text()
    assert "stand-in Qwen-Qwen3-8B twin 65b193c28268" in facts.select_one("table.dm-facts").get_text()
    assert "stand-in google-gemma-4-E2B-it twin 0383a4e826fe" in text
    assert "runner/vllm_helper.py" in text and "vllm/config/speculative.py:3" in text
    doc = json.loads((root / "matrix.json").read_text(encoding="utf-8"))
    notes = doc["snippets"]["s-0000000000a1"]["support"]["stable-0-20-1-132765e35"]["notes"]
    assert notes[0].endswith("(vllm/engine/arg_utils.py:1907)")
    assert "stand-in Qwen-Qwen3-8B twin 65b193c28268/config.json" in notes[0]
