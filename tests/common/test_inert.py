"""common/inert.py, rule by rule, read back with markdown-it-py (CommonMark + GFM tables): a code
span, a table cell and a code block hold any text exactly and end where they were built to end;
prose is escaped and defused; a capped summary is cut at a row, says what it left out, and fits."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

import mdcheck
from common import inert

TRICKY = st.text(alphabet=st.sampled_from(list("`~|\\ \n\r\t@#<>![]()*_-:/&;ab")) | st.characters(
    blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=80)
SAMPLES = [mdcheck.HOSTILE, mdcheck.MULTILINE, "`", "``x``", "` a `", "x`", "````", "\\", "a\\|b", "|", "~~~",
           "\n\n<div>\n\n", "<!--", "# h", "- item", "1. item", "    indented", "\u2028x\u2029"]


def _para(text: str) -> mdcheck.Rendered:
    return mdcheck.render(f"before {text} after")


@given(TRICKY)
@settings(max_examples=300, deadline=None)
def test_a_code_span_holds_any_text_exactly(text):
    r = _para(inert.code_span(text))
    shown = mdcheck.one_line(text)
    assert r.code == ([shown] if shown else []) and not (r.links or r.images or r.html)
    assert "".join(r.prose) == "before  after"


def test_code_span_samples_and_limit():
    for text in SAMPLES:
        assert _para(inert.code_span(text)).code == [mdcheck.one_line(text)], text
    assert _para(inert.code_span("x" * 50, limit=10)).code == ["x" * 9 + "…"]
    assert inert.code_span("") == "" and inert.code_span(None) == "`None`"


@given(TRICKY)
@settings(max_examples=300, deadline=None)
def test_a_table_cell_holds_any_text_and_stays_one_cell(text):
    table = f"| a | b |\n|---|---|\n| {inert.table_cell(text)} | z |\n"
    r = mdcheck.render(table)
    shown = mdcheck.one_line(text)
    assert mdcheck.table_cells(table) == [2, 2]
    assert r.code == ([shown] if shown else []) and not (r.links or r.images or r.html)


@given(TRICKY)
@settings(max_examples=300, deadline=None)
def test_a_code_block_holds_any_text_and_nothing_after_it_is_inside(text):
    r = mdcheck.render(inert.code_block(text, "bash") + "\n\nafter")
    body = text.replace("\r\n", "\n").replace("\r", "\n").rstrip()
    assert r.code == [body + "\n"] and r.prose == ["after"] and not r.html


def test_code_block_samples_and_fence_length():
    for text in SAMPLES:
        r = mdcheck.render(inert.code_block(text) + "\n\n**after**")
        assert len(r.code) == 1 and r.prose[-1] == "after" and not r.html, text
    assert inert.code_block("a `b` c").startswith("```\n") and inert.code_block("a\n```\nb").startswith("~~~\n")
    assert inert.code_block("```\n~~~~~").startswith("````\n")
    assert inert.code_block("`" * 500 + "\n" + "~" * 4).startswith("~~~~~\n")  # the shorter fence
    assert inert.code_block("x", "{ .bash .dm-command }") == "```{ .bash .dm-command }\nx\n```"


@given(TRICKY)
@settings(max_examples=300, deadline=None)
def test_prose_is_escaped_and_defused(text):
    shown = inert.plain(text)
    r = _para(shown)
    assert not (r.links or r.images or r.html or r.code)
    prose = "".join(r.prose)
    wj = inert.WORD_JOINER
    assert prose.replace(wj, "") == f"before {mdcheck.one_line(text)} after".replace(wj, "")
    assert "\n" not in shown and "|" not in shown.replace("\\|", "")


def test_prose_breaks_mentions_references_and_bare_urls():
    shown = inert.plain("@vllm-project/team #123 GH-9 https://evil.example www.evil.example a@evil.example")
    for linked in ("@v", "#1", "GH-9", "://", "www.", "@e"):
        assert linked not in shown, linked
    assert inert.plain("unrecognized arguments: '--foo' \"x\"") == "unrecognized arguments: '--foo' \"x\""


def test_unclosed_counts_only_what_driftmatrix_opened():
    lines = ["| `<details>` | x |", "<details><summary>Log excerpt</summary>", "", "````", "<details>", "```"]
    assert inert.unclosed(lines) == ["````", "</details>"]
    assert inert.unclosed(["- `</details>` in a message", "<details>"]) == ["</details>"]


def test_cap_cuts_at_a_row_and_says_what_is_left_out():
    rows = [f"| {inert.table_cell(mdcheck.HOSTILE)} | {i} |" for i in range(5000)]
    text = "\n".join(["# head", "", "| a | b |", "|---|---|", *rows])
    assert len(text.encode()) > 1024 * 1024
    out = inert.cap(text, "`outcomes.jsonl`")
    assert len(out.encode()) <= inert.STEP_SUMMARY_CAP
    lines = out.split("\n")
    kept = [ln for ln in lines if ln.startswith("| `")]
    assert kept == rows[:len(kept)] and lines[-2] == ""
    assert lines[-1].startswith(f"{5000 - len(kept):,} more row(s) left out: a step summary stops at 900 KiB")
    assert lines[-1].endswith("The full list: `outcomes.jsonl`.")
    assert set(mdcheck.table_cells(out)) == {2}
    mdcheck.assert_inert(out)
    assert inert.cap("small", "x") == "small" and inert.cap(text, "x", budget=10) == ""


def test_cap_closes_a_fence_it_cuts():
    text = inert.code_block("\n".join(["x" * 100] * 20000)) + "\n\nafter"
    out = inert.cap(text, "the log", budget=50_000)
    assert len(out.encode()) <= 50_000
    r = mdcheck.render(out)
    assert len(r.code) == 1 and re.match(r"[\d,]+ more row\(s\) left out", r.prose[-1])
