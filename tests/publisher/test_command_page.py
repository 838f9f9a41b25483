"""A command's page (snippets/<id>.html) in a real headless Chromium, at a desktop size and a
phone size, built by `driftmatrix publish` from real recorded runs: the H200 runs of the Gemma 4
commands (a FAIL at start on 0.20.1, a WARN with perf figures, spec-decode counters, warnings and
the no-spec / self-spec variants on 0.21.0) and the CPU parse + config runs. The whole command is
visible and copies as the same command, the cause is said once, the command's own warnings are
open and the host's folded, the speed sits beside no-spec's with the ratio, nothing is wider
than a phone. Screenshots go to test-artifacts/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sitehttp import serve_dir

from driftmatrix.publisher import causes, command_text, public
from driftmatrix.publisher.results import load

REPO = Path(__file__).resolve().parents[2]
GPU = REPO / "tests" / "fixtures" / "gpu"
GPU_SNIPPETS = REPO / "benchmarks" / "gpu" / "snippets.json"
GPU_OUTCOMES = [GPU / "outcomes-h200.jsonl", GPU / "outcomes-h200-perf.jsonl"]
SPEC = "s-7dda23655a43"
"""Gemma 4 E2B with its assistant draft: FAIL at start on 0.20.1, WARN + perf + variants on 0.21.0."""
SIZES = {"desktop": (1400, 1000), "phone": (390, 844)}


def publish(snippets: Path, outcomes: list[Path], out: Path) -> Path:
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "driftmatrix.cli",
            "publish",
            "--snippets",
            str(snippets),
            "--outcomes",
            *map(str, outcomes),
            "--site-dir",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="module")
def gpu_site(tmp_path_factory):
    root = publish(GPU_SNIPPETS, GPU_OUTCOMES, tmp_path_factory.mktemp("command-page") / "site")
    httpd, base = serve_dir(root)
    yield base, public.public_results(load(GPU_SNIPPETS, GPU_OUTCOMES))
    httpd.shutdown()


@pytest.fixture(scope="module")
def cpu_site(site_inputs, tmp_path_factory):
    files = [site_inputs["parse"], site_inputs["config"]]
    root = publish(site_inputs["snippets"], files, tmp_path_factory.mktemp("command-page-cpu") / "site")
    httpd, base = serve_dir(root)
    yield base, load(site_inputs["snippets"], files)
    httpd.shutdown()


@pytest.fixture(params=list(SIZES))
def tab(request, browser):
    width, height = SIZES[request.param]
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    yield page, errors, request.param, context
    context.close()


def bash_words(command: str) -> list[str]:
    """The words bash reads from a `vllm …` / `docker …` command (each program a function that prints
    its arguments): two texts that give the same words are the same command."""
    prelude = "vllm() { printf '%s\\0' \"$@\"; }; docker() { printf '%s\\0' docker \"$@\"; }\n"
    r = subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", prelude + command], capture_output=True, env={"PATH": "/usr/bin:/bin"}
    )
    assert r.returncode == 0, r.stderr
    return r.stdout.decode().split("\0")[:-1]


def overflow(page) -> list[str]:
    """Elements of the article that reach past the right edge of the window (what widens the page)."""
    return page.evaluate("""() => [...document.querySelectorAll('article *')]
        .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1
                     && !e.closest('thead') && getComputedStyle(e).position !== 'absolute')
        .slice(0, 5).map(e => `${e.tagName}.${e.className} ${Math.round(e.getBoundingClientRect().right)}`)""")


def clipped_command(page) -> list[str]:
    """Parts of the command blocks whose content is wider than their box (scrolled or cut off)."""
    return page.evaluate("""() => [...document.querySelectorAll('.dm-command, .dm-command pre, .dm-command code')]
        .filter(e => e.scrollWidth > e.clientWidth).map(e => `${e.tagName} ${e.scrollWidth} > ${e.clientWidth}`)""")


def flat(text: str) -> str:
    """Text on one line, every run of white space (a no-break space between a figure and its unit
    too) one space."""
    return " ".join(text.split())


def section(page, results, version: str):
    col = next(c for c in results.columns if c.version == version)
    return page.locator(f"[id='{col.key}']"), results.cell(SPEC, col)


def test_the_whole_command_is_visible_and_copies_as_written(gpu_site, tab, artifacts):
    base, results = gpu_site
    page, errors, size, context = tab
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base)
    page.goto(f"{base}/snippets/{SPEC}.html")
    snippet = next(s for s in results.snippets if s.id == SPEC)
    written = command_text.command(snippet)
    assert len(written) > 120 and "\n" not in written  # a long one-liner in the docs
    code = page.locator(".dm-command pre > code").first
    assert code.is_visible()
    assert not clipped_command(page), clipped_command(page)
    shown = code.inner_text()
    assert "--speculative-config" in shown and '"num_speculative_tokens": 4}' in shown
    assert shown.count("\\\n") == 2  # one option per line
    box, window = code.bounding_box(), page.viewport_size
    assert box["x"] >= 0 and box["x"] + box["width"] <= window["width"]
    page.locator(".dm-command button[data-md-type=copy]").first.click()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert bash_words(copied) == bash_words(written) == ["serve", *snippet.argv]
    page.screenshot(path=str(artifacts / f"command-page-{size}.png"), full_page=True)
    assert not errors, errors


def test_the_cause_is_said_once(gpu_site, tab):
    base, results = gpu_site
    page, errors, _, _ = tab
    page.goto(f"{base}/snippets/{SPEC}.html")
    text = page.locator("article").inner_text()  # a folded <details> (the log excerpt) is not rendered text
    heading, fail = section(page, results, "0.20.1")
    exc = fail.evidence.exception
    assert fail.verdict == "FAIL" and exc.message in fail.reason  # the record says it twice; the page once
    assert text.count(exc.message) == 1
    facts = heading.locator("xpath=following::table[contains(@class,'dm-facts')][1]").inner_text()
    assert exc.message in facts and exc.type in facts
    assert "raised at " + causes.location(exc) in flat(facts)
    _, warn = section(page, results, "0.21.0")
    feature = next(w for w in warn.evidence.warnings if w.feature)
    assert warn.verdict == "WARN" and feature.message in warn.reason
    assert text.count(feature.message) == 1
    assert not errors, errors


def test_the_commands_own_warnings_are_open_and_the_hosts_folded(gpu_site, tab, artifacts):
    base, results = gpu_site
    page, errors, size, _ = tab
    page.goto(f"{base}/snippets/{SPEC}.html")
    heading, o = section(page, results, "0.21.0")
    feature = [w for w in o.evidence.warnings if w.feature]
    noise = [w for w in o.evidence.warnings if not w.feature]
    assert len(feature) == 1 and len(noise) >= 10
    own = heading.locator("xpath=following::div[contains(@class,'dm-feature-warnings')][1]")
    assert own.is_visible() and own.locator("li").count() == 1
    assert feature[0].message in own.inner_text() and f"{feature[0].file}:{feature[0].line}" in own.inner_text()
    folded = heading.locator("xpath=following::details[contains(@class,'dm-noise')][1]")
    assert folded.get_attribute("open") is None
    assert folded.locator("summary").inner_text().startswith(f"{len(noise)} other warning")
    ulimit = folded.locator("li", has_text="ulimit")
    assert ulimit.count() == 1 and not ulimit.is_visible()
    assert "ulimit" not in own.inner_text()
    folded.locator("summary").click()
    assert ulimit.is_visible()
    # a path is never broken inside a name: each one is one line (too long, it scrolls in its own box)
    tall = page.evaluate("""() => [...document.querySelectorAll('code.dm-path')].filter(e => e.offsetParent)
        .filter(e => e.getBoundingClientRect().height > 1.9 * parseFloat(getComputedStyle(e).fontSize))
        .map(e => e.textContent)""")
    assert not tall, tall
    folded.screenshot(path=str(artifacts / f"command-page-warnings-{size}.png"))
    assert not errors, errors


def test_plain_words_and_units(gpu_site, tab):
    base, results = gpu_site
    page, errors, _, _ = tab
    page.goto(f"{base}/snippets/{SPEC}.html")
    heading, o = section(page, results, "0.21.0")
    facts = flat(heading.locator("xpath=following::table[contains(@class,'dm-facts')][1]").inner_text())
    gpu, driver = (p.strip() for p in o.host["gpus"][0].split(","))
    assert f"GPU: {gpu} (driver {driver})" in facts
    assert "Checked up to speed measured" in facts
    model = next(s.model for s in results.snippets if s.id == SPEC)
    assert f"a random-weight twin of {model} (same architecture, no real weights" in facts
    probe = o.evidence.spec_decode
    assert f"draft tokens proposed: {int(probe['num_draft_tokens'])}" in facts
    assert f"accepted: {int(probe['num_accepted_tokens'])} (0 %)" in facts and "num_drafts" not in facts
    fail_heading, _ = section(page, results, "0.20.1")
    fail_facts = flat(fail_heading.locator("xpath=following::table[contains(@class,'dm-facts')][1]").inner_text())
    assert "requests answered" in fail_facts and "server start" in fail_facts
    text = page.locator("article").inner_text()
    assert "Stand-in" not in text and "tiers up to" not in text and "checked up to the" not in text
    times = page.locator("table.dm-probes td[data-label='Time']").all_inner_texts()
    assert times and all(flat(t).endswith(" s") for t in times)
    page.locator("details.dm-config").last.locator("summary").click()
    memory = page.locator("details.dm-config").last.locator("tr", has_text="model_memory_gib").inner_text()
    assert memory.split()[-1] == "GiB"
    assert not errors, errors


def test_speed_beside_no_spec_with_the_ratio(gpu_site, tab, artifacts):
    base, results = gpu_site
    page, errors, size, _ = tab
    page.goto(f"{base}/snippets/{SPEC}.html")
    col = next(c for c in results.columns if c.version == "0.21.0")
    documented, nospec = results.cell(SPEC, col), results.cell(SPEC, col, "no-spec")
    ratio = documented.evidence.perf.single.decode_tok_s_median / nospec.evidence.perf.single.decode_tok_s_median
    assert ratio < 0.5  # the documented command measured slower than without its draft
    table = page.locator("table.dm-speed")
    assert table.count() == 1
    rows = table.locator("tbody tr")
    assert rows.count() == 3  # as documented, no-spec, self-spec
    first = flat(rows.nth(0).inner_text())
    assert "as documented" in first
    assert f"{documented.evidence.perf.single.decode_tok_s_median:.0f} tok/s" in first
    assert f"{ratio:.2f}×" in first
    second = flat(rows.nth(1).inner_text())
    assert "baseline" in second and "no-spec" in second
    assert f"{nospec.evidence.perf.single.decode_tok_s_median:.0f} tok/s" in second
    assert "self-spec" in rows.nth(2).inner_text() and "not measured" in rows.nth(2).inner_text()
    note = flat(page.locator("p.dm-speed-note").inner_text())
    assert "random-weight" in note and "says nothing about real models" in note
    assert "0 of 17,368 draft tokens accepted" in note and "acceptance upper bound" in note
    table.screenshot(path=str(artifacts / f"command-page-speed-{size}.png"))
    assert not errors, errors


def test_nothing_is_wider_than_the_window(gpu_site, cpu_site, tab, artifacts):
    """Every command page of the H200 site and every CPU page with a FAIL, folded parts opened."""
    page, errors, size, _ = tab
    width = SIZES[size][0]
    pages = [
        (gpu_site[0], s.id) for s in gpu_site[1].snippets if any(gpu_site[1].cell(s.id, c) for c in gpu_site[1].columns)
    ]
    cpu_base, cpu = cpu_site
    failing = [s.id for s in cpu.snippets if any((o := cpu.cell(s.id, c)) and o.verdict == "FAIL" for c in cpu.columns)]
    assert len(failing) >= 5
    pages += [(cpu_base, sid) for sid in failing]
    for base, sid in pages:
        page.goto(f"{base}/snippets/{sid}.html")
        page.locator("details").evaluate_all("els => els.forEach(e => e.open = true)")
        assert page.evaluate("document.documentElement.scrollWidth") <= width, (sid, overflow(page))
        assert not clipped_command(page), (sid, clipped_command(page))
    page.goto(f"{gpu_site[0]}/snippets/{SPEC}.html")
    page.screenshot(path=str(artifacts / f"command-page-full-{size}.png"), full_page=True)
    assert not errors, errors
