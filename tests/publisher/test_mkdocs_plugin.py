"""The `driftmatrix` mkdocs plugin in a real mkdocs build of 0.33.0 corpus pages with vLLM's own
Markdown extensions: a status line under each checked code block (checked in headless
Chromium, served over HTTP with its matrix.json); an unreachable matrix is one warning, and
the docs still build."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sitehttp import serve_dir
from test_annotate import vllm_markdown_extensions

from driftmatrix.publisher import matrix_json
from driftmatrix.publisher.command_view import views_of
from driftmatrix.publisher.results import load

PAGES = ["docs/serving/data_parallel_deployment.md", "docs/features/lora.md"]


def build(root: Path, matrix: str, corpus: Path, out: Path) -> subprocess.CompletedProcess:
    (root / "mkdocs.yml").write_text(
        f"site_name: vllm pages\ndocs_dir: docs\ntheme:\n  name: material\n  font: false\n"
        f"plugins:\n  - driftmatrix:\n      matrix: {json.dumps(matrix)}\n{vllm_markdown_extensions(corpus)}"
    )
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-f", str(root / "mkdocs.yml"), "-d", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def served(site_inputs, corpus, tmp_path_factory):
    """The fixture runs' matrix.json and the two corpus pages, built with the plugin, served."""
    work = tmp_path_factory.mktemp("plugin")
    results = load(site_inputs["snippets"], [site_inputs["parse"], site_inputs["config"]])
    (work / "www").mkdir()
    (work / "www" / "matrix.json").write_text(json.dumps(matrix_json.build(views_of(results))))
    for page in PAGES:
        target = work / "pages" / "docs" / page.removeprefix("docs/")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(corpus / "vllm-docs" / "0.33.0" / page, target)
    httpd, url = serve_dir(work / "www")
    done = build(work / "pages", f"{url}/matrix.json", corpus, work / "www" / "docs")
    yield work, url, done, results
    httpd.shutdown()


def test_status_lines_under_checked_blocks(served, browser):
    work, url, done, results = served
    assert done.returncode == 0, done.stderr
    assert "driftmatrix" not in done.stderr  # the matrix was read: no warning
    page = browser.new_page()
    page.goto(f"{url}/docs/serving/data_parallel_deployment/")
    lines = page.locator("p.driftmatrix-status")
    wanted = [s for s in results.snippets if any(src.file == PAGES[0] for src in s.sources)]
    assert lines.count() >= len({s.id for s in wanted}) > 0
    for i in range(lines.count()):
        line = lines.nth(i)
        text = line.inner_text()
        assert text.startswith("driftmatrix: ") and "vLLM 0.20.1" in text and "vLLM 0.32.0" in text, text
        assert "this page (==0.33.*): " in text
        # right under its code block (two commands in one block: two lines under it)
        block = line.evaluate(
            "e => { let p = e.previousElementSibling; while (p && p.classList.contains("
            "'driftmatrix-status')) p = p.previousElementSibling; return [p.className, p.innerText]; }"
        )
        assert "highlight" in block[0] or "language-" in block[0], block
        href = line.locator("a").get_attribute("href")
        assert href.startswith(f"{url}/snippets/") and href.endswith(".html")
        snippet = results.catalog.snippets[[s.id for s in results.snippets].index(href.rsplit("/", 1)[1][:-5])]
        first = next(ln.strip() for ln in snippet.sources[0].text.split("\n") if ln.strip())
        assert first in block[1].replace("\u00a0", " "), (first, block[1][:200])
    failing = [lines.nth(i).inner_text() for i in range(lines.count()) if "✗" in lines.nth(i).inner_text()]
    assert all("fails at" in t for t in failing)
    page.close()


def test_an_unreachable_matrix_is_a_warning_not_a_failed_build(served, corpus, tmp_path):
    work, url, _, _ = served
    shutil.copytree(work / "pages" / "docs", tmp_path / "pages" / "docs")
    done = build(tmp_path / "pages", "http://127.0.0.1:9/matrix.json", corpus, tmp_path / "site")
    assert done.returncode == 0, done.stderr
    warnings = [ln for ln in done.stderr.splitlines() if "driftmatrix" in ln]
    assert len(warnings) == 1 and "WARNING" in warnings[0] and "cannot use matrix.json" in warnings[0]
    html = (tmp_path / "site" / "serving" / "data_parallel_deployment" / "index.html").read_text()
    assert "driftmatrix-status" not in html
    (tmp_path / "bad.json").write_text("{")
    done = build(tmp_path / "pages", str(tmp_path / "bad.json"), corpus, tmp_path / "site2")
    assert done.returncode == 0 and "JSONDecodeError" in done.stderr


def test_matrix_text_is_inert_and_malformed_entries_are_skipped(served, corpus, tmp_path):
    """Text in matrix.json is untrusted: a page spec with a blank line and HTML, a newline in a
    cause, an id with markup stay text on one line; entries of the wrong shape are warnings."""
    work, _, _, results = served
    doc = matrix_json.build(views_of(results))
    sid, entry = next(
        (k, v) for k, v in doc["snippets"].items() if any(src["file"] == PAGES[0] for src in v["sources"])
    )
    for src in entry["sources"]:
        src["written_for"] = ">=0.1\n\n<img src=x onerror=alert(2)>"
    next(iter(entry["support"].values())).update(status="FAIL", notes=["boom\n\n!!! danger\n<script>x()</script>"])
    doc["snippets"]["broken"] = {"sources": ["x"], "support": []}
    doc["snippets"]["worse"] = ["not", "a", "dict"]
    (tmp_path / "m.json").write_text(json.dumps(doc))
    shutil.copytree(work / "pages" / "docs", tmp_path / "pages" / "docs")
    done = build(tmp_path / "pages", str(tmp_path / "m.json"), corpus, tmp_path / "site")
    assert done.returncode == 0, done.stderr
    assert "malformed command entr" in done.stderr
    html = (tmp_path / "site" / "serving" / "data_parallel_deployment" / "index.html").read_text()
    assert "<img src=x" not in html and "<script>x()" not in html and "&lt;img src=x" in html
    assert 'class="admonition danger"' not in html
