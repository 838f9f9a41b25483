"""The built site in a real headless Chromium over real HTTP: the matrix renders, its
filters work, a FAIL cell leads to its evidence, hostile text stays text, no console
errors. Screenshots go to test-artifacts/."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime

import pytest
from sitehttp import serve_dir
from test_matrix_page import show_all

from driftmatrix.publisher.results import load

XSS = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'


@pytest.fixture(scope="module")
def site(site_inputs, tmp_path_factory):
    """The parse + config runs, plus a copy of one real FAIL record whose log excerpt got a
    hostile line appended (the record is the publisher's input here; its verdict is as run)."""
    root = tmp_path_factory.mktemp("browser-site")
    records = [json.loads(ln) for ln in site_inputs["parse"].read_text().splitlines() if ln.strip()]
    fail = next(r for r in records if r["verdict"] == "FAIL")
    fail["evidence"]["log_excerpt"] = (fail["evidence"].get("log_excerpt") or "") + "\n\n" + XSS + "\n"
    fail["started"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")  # the latest of its cell: shown
    hostile = root / "hostile.jsonl"
    hostile.write_text(json.dumps(fail) + "\n")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "driftmatrix.cli",
            "publish",
            "--snippets",
            str(site_inputs["snippets"]),
            "--outcomes",
            str(site_inputs["parse"]),
            str(site_inputs["config"]),
            str(hostile),
            "--site-dir",
            str(root / "site"),
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    httpd, base = serve_dir(root / "site")
    yield base, fail
    httpd.shutdown()


@pytest.fixture
def tab(browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: (errors.append(f"dialog: {d.message}"), d.dismiss()))
    yield page, errors
    page.close()


def test_matrix_renders_and_filters(site, tab, site_inputs, artifacts):
    base, _ = site
    page, errors = tab
    page.goto(f"{base}/matrix.html")
    page.wait_for_selector("body[data-dm-ready]")
    show_all(page)
    results = load(site_inputs["snippets"], [site_inputs["parse"], site_inputs["config"]])
    rows = page.locator("tr.dm-row")
    assert rows.count() == len(results.snippets)
    assert page.locator("thead th.dm-col").count() == len(results.columns)
    assert (
        page.locator("#dm-count")
        .inner_text()
        .startswith(f"{len(results.snippets)} of {len(results.snippets)} commands")
    )
    page.screenshot(path=str(artifacts / "matrix.png"), full_page=True)

    page.select_option("#dm-verdict", "FAIL")
    show_all(page)
    n_fail = rows.count()
    assert 0 < n_fail < len(results.snippets)
    for i in range(n_fail):
        assert rows.nth(i).locator("button.dm-cell.dm-FAIL").count() >= 1
    page.screenshot(path=str(artifacts / "matrix-fail-filter.png"), full_page=True)
    page.select_option("#dm-verdict", "")
    show_all(page)

    # depth as text in every cell; the judgement column and its filter
    cells = page.locator("button.dm-cell")
    words = {cells.nth(i).locator(".dm-depth").inner_text() for i in range(cells.count())}
    assert "parser" in words and words <= {"parser", "config", "started", "probed", "perf", "skip", "error"} | {
        f"at {s}" for s in ("parse", "config", "start", "probe", "perf")
    }
    page.select_option("#dm-judgement", "needs-newer")
    show_all(page)
    assert rows.count() > 0
    for i in range(rows.count()):
        assert rows.nth(i).locator("button.dm-j").inner_text() == "needs-newer"
    page.select_option("#dm-judgement", "")

    page.check("#dm-spec")
    show_all(page)
    spec = sum(1 for s in results.snippets if s.speculative_config)
    assert rows.count() == spec
    page.uncheck("#dm-spec")

    page.fill("#dm-search", "max-lora-cls-labels")
    assert rows.count() >= 1 and all("max-lora-cls-labels" in rows.nth(i).inner_text() for i in range(rows.count()))
    page.fill("#dm-search", "")

    group = page.locator("tbody.dm-group-start").first
    slug = group.get_attribute("data-page")
    group.locator("button.dm-fold").click()
    assert page.locator(f"tbody[data-page='{slug}'] tr.dm-row").count() == 0
    page.locator(f"tbody.dm-group-start[data-page='{slug}'] button.dm-fold").click()
    assert page.locator(f"tbody[data-page='{slug}'] tr.dm-row").count() > 0
    assert not errors, errors


def test_fail_cell_leads_to_its_evidence(site, tab, artifacts):
    base, _ = site
    page, errors = tab
    page.goto(f"{base}/matrix.html")
    cell = page.locator("button.dm-cell.dm-FAIL").first
    label = cell.get_attribute("aria-label")  # a screen reader hears the build and the depth, not just "FAIL"
    assert "(vLLM " in label and "FAIL, fails at " in label
    assert " FAIL at " in cell.inner_text()  # where it stopped, as text: not only in a tooltip
    cell.click()
    detail = page.locator("tr.dm-detail")
    assert "Cause: " in detail.inner_text() and ".py:" in detail.inner_text()
    detail.locator("a", has_text="All the evidence").click()
    page.wait_for_load_state()
    assert "/snippets/" in page.url and "#" in page.url
    anchor = page.url.split("#", 1)[1]
    heading = page.locator(f"[id='{anchor}']")
    assert heading.count() == 1
    section = heading.locator("xpath=following::table[1]").inner_text()
    assert "FAIL" in section and "raised at" in section
    page.screenshot(path=str(artifacts / "evidence.png"), full_page=True)
    assert not errors, errors


def test_hostile_log_text_stays_text(site, tab):
    base, fail = site
    page, errors = tab
    page.goto(f"{base}/snippets/{fail['snippet_id']}.html")
    page.locator("details.dm-log summary").first.click()
    assert page.evaluate("window.__pwned") is None
    assert "<script>window.__pwned = 1</script>" in page.locator("details.dm-log pre").first.inner_text()
    assert not errors, errors


def test_overview_and_doc_pages_render(site, tab, artifacts):
    base, _ = site
    page, errors = tab
    for path in (
        "index.html",
        "pages/index.html",
        "annotated/index.html",
        "matrix-json.html",
        "guide/index.html",
        "guide/reading-the-matrix.html",
    ):
        page.goto(f"{base}/{path}")
        assert page.locator("h1").count() >= 1
    page.goto(f"{base}/index.html")
    assert page.locator("table.dm-counts tbody tr").count() == 2
    page.screenshot(path=str(artifacts / "overview.png"), full_page=True)
    page.goto(f"{base}/pages/index.html")
    page.locator("table.dm-pages a").first.click()
    page.wait_for_load_state()
    assert page.locator("table.dm-page tbody tr").count() >= 1
    assert not errors, errors
