"""Issue 30, item 8: the docs gate's summary (`gate.markdown`) and the publish job's
(`publish_summary`) show the docs' and vLLM's text only as code, and the gate's stays under
GitHub's 1 MiB step-summary limit however many commands a docs change breaks. No vLLM is run:
the findings are made here, as `judge_change` makes them."""

from __future__ import annotations

import types

import mdcheck

from driftmatrix.common.inert import STEP_SUMMARY_CAP
from driftmatrix.gate import Finding, GateResult, markdown
from driftmatrix.publish_cli import publish_summary

PAGE = "docs/@vllm-project |x| <img src=x onerror=alert(1)> [p](https:evil.example).md"


def _finding(n: int, message: str, new: bool = True) -> Finding:
    return Finding(
        f"s-{n:012x}",
        PAGE,
        n + 1,
        f"vllm serve m --dtype '{message}'",
        "doc-drift",
        new,
        f"fails on vLLM 0.20.1 (stable): ArgumentError: invalid choice: '{message}'",
    )


def test_gate_summary_shows_docs_text_only_as_code():
    findings = [_finding(i, m) for i, m in enumerate([mdcheck.HOSTILE, mdcheck.MULTILINE, "`" * 50, "| " * 40])]
    findings += [_finding(9, mdcheck.HOSTILE, new=False)]
    text = markdown(GateResult([PAGE], 5, findings, run_exit=3), "config")
    r = mdcheck.assert_inert(text)
    assert any("vllm serve m --dtype '@vllm-project/some-team" in c for c in r.code)
    assert any(c.startswith("docs/@vllm-project |x|") for c in r.code)  # the page, shown as typed
    assert "**4 new doc-drift**" in text and "1 doc-drift already on the base branch" in text
    assert "ended in ERROR" in text


def test_gate_summary_stays_under_the_step_limit():
    findings = [_finding(i, mdcheck.HOSTILE * 2) for i in range(4000)] + [_finding(5000, "x", new=False)]
    text = markdown(GateResult([PAGE], 4001, findings, run_exit=3), "config", full="`work/gate.json`")
    assert len(text.encode()) <= STEP_SUMMARY_CAP
    items = [ln for ln in text.splitlines() if ln.startswith("- ")]
    last = text.splitlines()[-1]
    assert 100 < len(items) < 4000
    assert last.startswith(f"{4000 - len(items):,} more row(s) left out") and "work/gate.json" in last
    assert "ended in ERROR" in text and "already on the base branch" in text  # said before the long list
    mdcheck.assert_inert(text)


def test_publish_summary_shows_page_names_only_as_code():
    entry = {"judgement": "doc-drift", "sources": [{"file": PAGE, "line": 3}]}
    done = types.SimpleNamespace(
        matrix={"snippets": {"s-000000000001": entry}}, previous=None, changes=[], judged=lambda: "1 doc-drift"
    )
    text = publish_summary(done, "https://example.test/dm")
    r = mdcheck.assert_inert(text, allowed_links=("https://example.test/dm/snippets/s-000000000001.html",))
    assert r.links and any(c.startswith("docs/@vllm-project |x|") for c in r.code)
