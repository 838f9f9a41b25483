"""Issue 30, item 8: a run's step summary (runner/run/run_summary.py, written through common/step_summary.py) shows the docs' and vLLM's text
only as code, and no step writes more than GitHub takes (1 MiB: the summary is refused whole)."""

from __future__ import annotations

import mdcheck

from driftmatrix.common import step_summary
from driftmatrix.common.inert import STEP_SUMMARY_CAP, table_cell
from driftmatrix.runner.outcomes.outcome_record import Evidence, Outcome, TargetRef
from driftmatrix.runner.run import run_summary


def _outcome(verdict: str, reason: str, n: int = 0, name: str = "stable") -> Outcome:
    return Outcome(
        f"s-{n:012x}",
        TargetRef(name, "0.20.1", "132765e35", "vllm"),
        "parse",
        "parse",
        verdict,
        reason=reason,
        evidence=Evidence(),
        started="2026-12-02T16:00:00+00:00",
    )


def test_run_summary_shows_messages_only_as_code():
    messages = [mdcheck.HOSTILE, mdcheck.MULTILINE, "`" * 30, "|" * 8, "@vllm-project/x " * 20]
    outcomes = [_outcome(v, m, i) for i, m in enumerate(messages) for v in ("FAIL", "ERROR")]
    text = run_summary.run_markdown(outcomes, "config", reused=3, shard="2/4")
    r = mdcheck.assert_inert(text)
    assert any("@vllm-project/some-team ![](https://evil.example/p.png)" in c for c in r.code)  # shown, as code
    assert sum(c.startswith("@vllm-project/x") for c in r.code) == 2
    assert mdcheck.table_cells(text) == [6, 6]  # build + the five verdicts, header and one row


def test_a_target_name_in_prose_is_escaped_and_defused():
    """Target names are the config's, shown as prose: escaped anyway, and no mention or URL links."""
    name = "stable @vllm-project/team https://evil.example/x [a](https://evil.example) <b>|"
    text = run_summary.run_markdown([_outcome("FAIL", "bad", name=name)], "parse", 0, None)
    r = mdcheck.assert_inert(text, markers=mdcheck.LINKABLE)
    assert any("stable @\u2060vllm-project/team https:\u2060//evil.example/x [a]" in p for p in r.prose)  # as typed
    assert mdcheck.table_cells(text) == [6, 6]


def test_write_keeps_a_step_under_githubs_limit(tmp_path):
    """Two writes in one step (runner/run/loop.py's, then another): together under the cap, cut at a row
    with a line saying how many rows were left out and where they all are."""
    summary = tmp_path / "summary.md"
    rows = [f"| `s-{i:012x}` | {table_cell(mdcheck.HOSTILE)} |" for i in range(6000)]
    big = "\n".join(["### big", "", "| id | cause |", "|---|---|", *rows])
    assert len(big.encode()) > 1024 * 1024
    assert step_summary.write("### first\n\nsmall", summary)
    assert step_summary.write(big, summary, full="`outcomes.jsonl` (this leg's artifact)")
    text = summary.read_text(encoding="utf-8")
    assert len(text.encode()) <= STEP_SUMMARY_CAP
    assert text.startswith("### first\n\nsmall\n\n### big")
    last = text.rstrip("\n").splitlines()[-1]
    kept = [ln for ln in text.splitlines() if ln.startswith("| `s-")]
    assert kept and kept == rows[: len(kept)]  # whole rows, in order
    assert last.startswith(f"{len(rows) - len(kept):,} more row(s) left out") and "outcomes.jsonl" in last
    mdcheck.assert_inert(text)
    assert set(mdcheck.table_cells(text)) == {2}  # the left-out line is not a row
    assert not step_summary.write("more", summary) or len(summary.read_bytes()) <= STEP_SUMMARY_CAP
