"""Benchmark: the matrix page at the size of the real docs, in headless Chromium.

Builds the site for 2,000 commands x 6 builds (benchmarks/publish.py's synthetic results: real
commands, recorded real outcomes dealt round-robin; CPU, CUDA and container-image builds) with
one earlier publish in the history (older versions, so cells get version ranges), serves it over
HTTP and measures what a visitor gets: the bytes the matrix page transfers (each response
gzipped, as GitHub Pages serves it), the search index fetched up front, the time until the
matrix is rendered and its filters respond, and how long a filter takes.

    .venv/bin/python benchmarks/matrix_page.py [--snippets 2000] [--targets 6]
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "tests" / "publisher"))

from publish import synthetic_results  # noqa: E402
from sitehttp import serve_dir  # noqa: E402

from driftmatrix.publisher import matrix_json  # noqa: E402
from driftmatrix.publisher.command_view import views_of  # noqa: E402
from driftmatrix.publisher.site import build_site  # noqa: E402

OLDER = {"0.20.1": "0.19.1", "0.21.0": "0.20.0", "0.32.0": "0.31.0", "0.33.0": "0.32.0"}

TIMED = """async (action) => {
  const t0 = performance.now();
  action === "search" ? (() => { const s = document.getElementById("dm-search"); s.value = "qwen"; s.dispatchEvent(new Event("input")); })()
  : action === "verdict" ? (() => { const s = document.getElementById("dm-verdict"); s.value = "PASS"; s.dispatchEvent(new Event("change")); })()
  : action === "mine" ? (() => { const s = document.getElementById("dm-mine"); s.value = "0.18.0"; s.dispatchEvent(new Event("change")); })()
  : action === "all" ? document.getElementById("dm-expand").click()
  : action === "clear" ? (() => { for (const id of ["dm-search", "dm-verdict", "dm-mine"]) { const s = document.getElementById(id); s.value = ""; s.dispatchEvent(new Event(s.tagName === "SELECT" ? "change" : "input")); } })()
  : null;
  await new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
  return {ms: Math.round(performance.now() - t0), rows: document.querySelectorAll("tr.dm-row").length};
}"""


def earlier_snapshot(results, history: Path) -> None:
    """One earlier publish: the same commands on older versions of each build, outcomes shifted."""
    import copy
    import dataclasses

    from driftmatrix.publisher.results import merge

    outcomes = []
    for _key, o in list(results.cells.items())[7:] + list(results.cells.items())[:7]:
        o = copy.deepcopy(o)
        o.target = dataclasses.replace(o.target, version=OLDER.get(o.target.version, o.target.version))
        outcomes.append(o)
    ids = [k[0] for k in results.cells]
    for o, sid in zip(outcomes, ids):
        o.snippet_id = sid
    old = merge(results.catalog, outcomes)
    doc = matrix_json.build(views_of(old), generated="2026-11-01T00:00:00Z")
    history.mkdir(parents=True, exist_ok=True)
    (history / "matrix-20261101T000000Z.json").write_text(json.dumps(doc))


def measure(base: str, chromium: str) -> dict:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        out = {}
        for visit in ("first", "second"):
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            sizes: dict[str, tuple[int, int]] = {}

            def got(response, sizes=sizes):  # this visit's sizes, not the next one's
                try:
                    body = response.body()
                except Exception:  # noqa: BLE001 — a redirect or an aborted request has no body
                    return
                sizes[response.url.replace(base, "")] = (len(body), len(gzip.compress(body, 6)))

            page.on("response", got)
            t0 = time.monotonic()
            page.goto(f"{base}/matrix.html")
            page.wait_for_selector("body[data-dm-ready]")
            wall = time.monotonic() - t0
            page.wait_for_load_state("networkidle")
            ready_ms = page.evaluate("window.DM_READY_MS")
            timed = {
                a: page.evaluate(TIMED, a) for a in ("search", "clear", "verdict", "clear", "mine", "clear", "all")
            }
            out[visit] = {
                "ready_ms": round(ready_ms),
                "goto_to_ready_s": round(wall, 2),
                "transferred_gz_kb": round(sum(g for _, g in sizes.values()) / 1e3),
                "transferred_raw_kb": round(sum(r for r, _ in sizes.values()) / 1e3),
                "biggest": sorted(((round(g / 1e3), u) for u, (_, g) in sizes.items()), reverse=True)[:5],
                "filters_ms": timed,
            }
            page.close()
        browser.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--snippets", type=int, default=2000)
    ap.add_argument("--targets", type=int, default=6)
    ap.add_argument("--corpus", default=str(REPO.parent / "shared" / "corpus"))
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--keep", help="build the site here and keep it (to look at it)")
    args = ap.parse_args()
    results = synthetic_results(args.snippets, args.targets, Path(args.corpus))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.keep) if args.keep else Path(tmp)
        site, history = root / "site", root / "history"
        shutil.rmtree(history, ignore_errors=True)
        earlier_snapshot(results, history)
        t0 = time.monotonic()
        build_site(results, site, history_dir=history)
        built = time.monotonic() - t0
        index = site / "search" / "search_index.json"
        data = (site / "matrix-data.js").read_bytes()
        httpd, base = serve_dir(site)
        try:
            browser = measure(base, args.chromium)
        finally:
            httpd.shutdown()
        report = {
            "snippets": len(results.snippets),
            "builds": len(results.columns),
            "publish_s": round(built, 1),
            "site_mb": round(sum(p.stat().st_size for p in site.rglob("*") if p.is_file()) / 1e6, 1),
            "matrix_html_kb": round((site / "matrix.html").stat().st_size / 1e3),
            "matrix_data_kb": round(len(data) / 1e3),
            "matrix_data_gz_kb": round(len(gzip.compress(data, 6)) / 1e3),
            "search_index_kb": round(index.stat().st_size / 1e3),
            "search_index_gz_kb": round(len(gzip.compress(index.read_bytes(), 6)) / 1e3),
            **browser,
        }
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
