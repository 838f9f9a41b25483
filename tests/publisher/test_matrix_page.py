"""The matrix page as people use it (issue 20), in a real headless Chromium over real HTTP, on a
site built from real recorded runs (CPU parse + config runs of two builds):
cells readable without colour or hover, their cause opened in place by click and by keyboard,
distinct colours per verdict, column headings that stay in view, no sideways scrolling on a
phone, a shared URL that restores the view, and "my version" answered from the runs and the
option history."""

from __future__ import annotations

import subprocess
import sys

import pytest
from sitehttp import serve_dir

from driftmatrix.flaghistory.commands import shipped
from driftmatrix.flaghistory.uses import uses_of
from driftmatrix.publisher.results import load

PHONE = {"width": 390, "height": 844}
WIDE = {"width": 1400, "height": 1000}


@pytest.fixture(scope="module")
def site(site_inputs, tmp_path_factory):
    root = tmp_path_factory.mktemp("matrix-page")
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
            "--site-dir",
            str(root / "site"),
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    httpd, base = serve_dir(root / "site")
    yield base
    httpd.shutdown()


@pytest.fixture(scope="module")
def results(site_inputs):
    return load(site_inputs["snippets"], [site_inputs["parse"], site_inputs["config"]])


def open_page(browser, url: str, viewport=WIDE, touch: bool = False):
    page = browser.new_page(viewport=viewport, has_touch=touch, is_mobile=touch)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    if "matrix.html" in url:
        page.wait_for_selector("body[data-dm-ready]")
    return page, errors


def show_all(page) -> None:
    """Scroll until every matching row is drawn (the page draws 30 rows, then more as the reader
    nears the end)."""
    for _ in range(100):
        if page.locator("p.dm-more").is_hidden():
            return
        page.locator("tr.dm-row").last.scroll_into_view_if_needed()
        page.mouse.wheel(0, 2000)
        page.wait_for_timeout(50)
    raise AssertionError("rows still pending after 100 scrolls")


def settled_rows(page) -> int:
    """The rows drawn once the page stops on its own: while the "Show more" button is within 1200 px
    of the screen the page draws the next chunk by itself (how fast depends on the machine's load)."""
    count = -1
    while count != (count := page.locator("tr.dm-row").count()):
        page.wait_for_timeout(400)
    return count


def test_rows_are_drawn_as_the_reader_scrolls(site, browser, results):
    page, errors = open_page(browser, f"{site}/matrix.html")
    first = settled_rows(page)
    assert 0 < first < len(results.snippets) and page.locator("p.dm-more").is_visible()
    page.locator("#dm-more").dispatch_event("click")  # the button, without scrolling to it
    assert page.locator("tr.dm-row").count() > first
    show_all(page)  # and by scrolling
    ids = page.locator("tr.dm-row").evaluate_all("rows => rows.map(r => r.dataset.id)")
    assert sorted(ids) == sorted(s.id for s in results.snippets)  # each once, none lost between chunks
    assert not errors, errors


def test_every_cell_reads_without_colour_or_hover(site, browser, results):
    page, errors = open_page(browser, f"{site}/matrix.html")
    show_all(page)
    cells = page.locator("button.dm-cell")
    assert cells.count() == sum(1 for s in results.snippets for c in results.columns if results.cell(s.id, c))
    ranged = 0
    for i in range(cells.count()):
        cell = cells.nth(i)
        text, label = cell.inner_text(), cell.get_attribute("aria-label")
        verdict = next(v for v in ("PASS", "WARN", "FAIL", "SKIP", "ERROR") if f"dm-{v}" in cell.get_attribute("class"))
        icon = {"PASS": "✔", "WARN": "⚠", "FAIL": "✘", "SKIP": "–", "ERROR": "⚙"}[verdict]
        assert icon in text and verdict in text and cell.locator(".dm-depth").inner_text()  # icon, word, depth
        assert any(c.label in label for c in results.columns) and verdict in label  # the build, for a screen reader
        ranged += cell.locator(".dm-range").count()
    # both builds are CPU builds of two versions: where one passes, the cell says from which version
    assert ranged > 0
    assert page.locator("button.dm-cell .dm-range", has_text="0.32.0+").count() > 0
    # columns grouped by kind of build, with version and date shown (not in a tooltip)
    assert page.locator("thead th.dm-kind").all_inner_texts() == ["CPU build"]
    heads = page.locator("thead th.dm-col").all_inner_texts()
    assert [h.split("\n")[:2] for h in heads] == [["stable", "vLLM 0.20.1"], ["nightly", "vLLM 0.32.0"]]
    assert all("2026-" in h for h in heads)
    assert not errors, errors


def test_the_cause_opens_in_place_by_click_and_by_keyboard(site, browser, artifacts):
    for viewport in (WIDE, PHONE):
        page, errors = open_page(browser, f"{site}/matrix.html", viewport)
        cell = page.locator("button.dm-cell.dm-FAIL").first
        row = cell.locator("xpath=ancestor::tr[1]")
        cell.click()
        detail = row.locator("xpath=following-sibling::tr[1]")
        assert "dm-detail" in detail.get_attribute("class")
        text = detail.inner_text()
        assert "Cause: " in text and ".py:" in text and "fails at " in text
        assert cell.get_attribute("aria-expanded") == "true"
        page.screenshot(path=str(artifacts / f"matrix-cause-{viewport['width']}.png"))
        cell.click()  # the same cell again closes it
        assert page.locator("tr.dm-detail").count() == 0 and cell.get_attribute("aria-expanded") == "false"

        cell.focus()
        page.keyboard.press("Enter")
        assert page.locator("tr.dm-detail").count() == 1
        page.locator("tr.dm-detail button.dm-close").focus()
        page.keyboard.press("Enter")
        assert page.locator("tr.dm-detail").count() == 0
        assert page.evaluate("document.activeElement.classList.contains('dm-cell')")  # focus back on the cell
        page.keyboard.press(" ")
        assert page.locator("tr.dm-detail").count() == 1
        page.locator("tr.dm-detail button.dm-close").click()

        judged = page.locator("button.dm-j").first
        judged.click()  # the judgement's reason opens the same way
        assert "written for" in page.locator("tr.dm-detail").first.inner_text()
        assert not errors, errors
        page.close()
    page, errors = open_page(browser, f"{site}/matrix.html", PHONE, touch=True)  # a phone: a tap opens it
    page.locator("button.dm-cell.dm-FAIL").first.tap()
    assert "Cause: " in page.locator("tr.dm-detail").inner_text()
    assert not errors, errors
    page.close()


def test_each_verdict_has_its_own_colour(site, browser):
    page, errors = open_page(browser, f"{site}/matrix.html")
    page.locator("details.dm-legend-box summary").click()
    styles = page.evaluate("""() => Array.from(document.querySelectorAll('.dm-legend .dm-cell')).map(e => {
        const s = getComputedStyle(e); return [e.className, s.backgroundColor, s.color]; })""")
    by_verdict = {cls.split()[-1]: (bg, fg) for cls, bg, fg in styles}
    assert set(by_verdict) >= {"dm-PASS", "dm-WARN", "dm-FAIL", "dm-SKIP", "dm-ERROR", "dm-none"}
    backgrounds = [by_verdict[f"dm-{v}"][0] for v in ("PASS", "WARN", "FAIL", "SKIP", "ERROR")]
    assert len(set(backgrounds)) == 5, by_verdict  # SKIP has its own tint too
    texts = [by_verdict[f"dm-{v}"][1] for v in ("PASS", "WARN", "FAIL", "SKIP", "ERROR")]
    assert len(set(texts)) == 5, by_verdict
    link = page.evaluate("getComputedStyle(document.querySelector('.md-typeset a')).color")
    in_matrix = page.evaluate("""() => ['PASS', 'FAIL'].map(v => getComputedStyle(
        document.querySelector('table.dm-matrix button.dm-cell.dm-' + v)).color)""")
    assert link not in in_matrix and in_matrix[0] != in_matrix[1]  # the theme's link colour does not win
    assert not errors, errors


def test_headings_stay_in_view_down_to_the_last_row(site, browser, artifacts):
    page, errors = open_page(browser, f"{site}/matrix.html")
    show_all(page)
    page.locator("tr.dm-row").last.scroll_into_view_if_needed()
    page.mouse.wheel(0, 400)
    assert page.evaluate("window.scrollY") > 2000
    header = page.locator("thead th.dm-col").first.bounding_box()
    assert 0 <= header["y"] < 200, header  # stuck under the site's header, not scrolled away
    # and on top: what is drawn at its centre is the heading itself
    assert page.evaluate(
        f"document.elementFromPoint({header['x'] + header['width'] / 2}, "
        f"{header['y'] + header['height'] / 2}).closest('th.dm-col') !== null"
    )
    page.screenshot(path=str(artifacts / "matrix-scrolled.png"))
    assert not errors, errors


def test_no_sideways_scrolling_on_a_phone(site, browser, artifacts):
    page, errors = open_page(browser, f"{site}/matrix.html", PHONE)
    page.locator("button.dm-cell.dm-FAIL").first.click()
    fail_page = (
        page.locator("tr.dm-row")
        .filter(has=page.locator("button.dm-FAIL"))
        .first.locator("td.dm-cmd a")
        .get_attribute("href")
    )
    widths = {"matrix": page.evaluate("document.documentElement.scrollWidth")}
    page.screenshot(path=str(artifacts / "matrix-phone.png"), full_page=False)
    for name, path in (("overview", "index.html"), ("command", fail_page), ("doc pages", "pages/index.html")):
        page.goto(f"{site}/{path}")
        widths[name] = page.evaluate("document.documentElement.scrollWidth")
    assert all(w <= PHONE["width"] for w in widths.values()), widths
    assert not errors, errors


def test_a_shared_url_restores_the_view(site, browser, results):
    page, errors = open_page(browser, f"{site}/matrix.html")
    page.fill("#dm-search", "lora")
    page.select_option("#dm-judgement", "needs-newer")
    page.select_option("#dm-verdict", "FAIL")
    page.select_option("#dm-mine", "0.20.1")
    page.locator("#dm-expand").click()
    shown = page.locator("tr.dm-row").all_inner_texts()
    url = page.url
    assert "find=lora" in url and "j=needs-newer" in url and "v=FAIL" in url and "mine=0.20.1" in url and "all=1" in url
    assert 0 < len(shown) < len(results.snippets)
    again, errors2 = open_page(browser, url)
    assert again.input_value("#dm-search") == "lora" and again.input_value("#dm-judgement") == "needs-newer"
    assert again.input_value("#dm-verdict") == "FAIL" and again.input_value("#dm-mine") == "0.20.1"
    assert again.locator("tr.dm-row").all_inner_texts() == shown
    # a folded page group is in the URL too
    again.fill("#dm-search", "")
    again.select_option("#dm-judgement", "")
    again.select_option("#dm-verdict", "")
    slug = again.locator("tbody.dm-group-start").first.get_attribute("data-page")
    again.locator(f"tbody.dm-group-start[data-page='{slug}'] button.dm-fold").click()
    third, errors3 = open_page(browser, again.url)
    assert third.locator(f"tbody[data-page='{slug}'] tr.dm-row").count() == 0
    assert third.locator("tr.dm-row").count() > 0
    assert not errors + errors2 + errors3


def test_my_version_answers_from_runs_and_the_option_history(site, browser, results):
    history = shipped()
    page, errors = open_page(browser, f"{site}/matrix.html?mine=0.20.1")
    show_all(page)
    assert page.locator("thead th.dm-mine").inner_text().startswith("vLLM 0.20.1")
    stable = next(c for c in results.columns if c.version == "0.20.1")
    for s in results.snippets[:15]:
        o = results.cell(s.id, stable)
        mine = page.locator(f"tr.dm-row[data-id='{s.id}'] td.dm-mine button")
        if o and o.verdict in ("PASS", "WARN", "FAIL"):  # a run on that version: its verdict
            assert f"dm-{o.verdict}" in mine.get_attribute("class"), (s.id, o.verdict)
    # a release with no run: the option history answers, and says so
    old = "0.8.0"
    page.select_option("#dm-mine", old)
    show_all(page)
    answered = 0
    for s in results.snippets:
        uses = uses_of(history, s.argv or [])  # options, and the values and keys the history reads
        mine = page.locator(f"tr.dm-row[data-id='{s.id}'] td.dm-mine button")
        if not uses or not mine.count():
            continue
        given = frozenset(u.option for u in uses)
        missing = [u.text() for u in uses if history.accepts_use(u, old, given) is False]
        text = mine.inner_text()
        if missing:
            assert f"no {missing[0]}" in text, (s.id, missing, text)
        else:
            assert "options exist" in text, (s.id, text)
        answered += 1
    assert answered > 10
    mine.click()
    assert "option history" in page.locator("tr.dm-detail").inner_text()
    assert not errors, errors
