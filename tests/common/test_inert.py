"""common/inert.py, rule by rule, read back with markdown-it-py (CommonMark + GFM tables): a code
span, a table cell and a code block hold any text exactly and end where they were built to end;
prose is escaped and defused; a capped summary is cut at a row, says what it left out, and fits;
none of them carries a control character. For a terminal or a CI log, read back as GitHub's
runner reads a step's output (tests/actions_log.py): no line of any text is a workflow command,
none carries a control character, and it reads the same; driftmatrix's own commands still are
commands, with their data as given; rich markup and JSON from outside stay text and data."""

from __future__ import annotations

import io
import json
import re
import unicodedata

import actions_log
import mdcheck
from hypothesis import given, settings
from hypothesis import strategies as st

from driftmatrix.common import inert

TRICKY = st.text(
    alphabet=st.sampled_from(list("`~|\\ \n\r\t@#<>![]()*_-:/&;ab")) | st.characters(blacklist_categories=("Cs", "Cc")),
    max_size=80,
)
"""Markdown's specials and any printable text (the control characters: `CONTROLLED`)."""
ESC, BEL = "\x1b", "\x07"
CONTROLLED = st.lists(
    st.sampled_from(
        [
            ESC,
            BEL,
            "\x9b",
            "\x9d",
            "\x00",
            "\x7f",
            "\x85",
            "\r",
            "\n",
            "\t",
            "[",
            "]",
            "\\",
            ";",
            "0",
            "3",
            "1m",
            "8",
            "P",
            " ",
            "a",
        ]
    )
    | st.characters(blacklist_categories=("Cs",)),
    max_size=80,
).map("".join)
"""Escape sequences in the making (ESC, `[`, parameters, final bytes, string terminators), any
other control character, and any text."""
COMMANDS = st.lists(
    st.sampled_from(
        [
            ":",
            "::",
            "#",
            "##",
            "[",
            "]",
            " ",
            "\t",
            "\n",
            "\r",
            "\u2028",
            "\xa0",
            "\u3000",
            "error",
            "add-mask",
            "stop-commands",
            "warning",
            "x",
            "=",
            ",",
            ESC,
            "[31m",
            "\u2060",
        ]
    ),
    max_size=40,
).map("".join)
"""Workflow commands in the making: colons, hashes, brackets, names, whitespace .NET trims, line ends."""
SAMPLES = [
    mdcheck.HOSTILE,
    mdcheck.MULTILINE,
    "`",
    "``x``",
    "` a `",
    "x`",
    "````",
    "\\",
    "a\\|b",
    "|",
    "~~~",
    "\n\n<div>\n\n",
    "<!--",
    "# h",
    "- item",
    "1. item",
    "    indented",
    "\u2028x\u2029",
]


def _para(text: str) -> mdcheck.Rendered:
    return mdcheck.render(f"before {text} after")


def _seen(text: str) -> str:
    """`text` as every rule shows it: its format characters escaped (held against Unicode itself by
    `test_format_characters_are_shown_escaped`)."""
    return inert.shown_invisible(text)


@given(TRICKY)
@settings(max_examples=300, deadline=None)
def test_a_code_span_holds_any_text_exactly(text):
    r = _para(inert.code_span(text))
    shown = mdcheck.collapsed(_seen(text))
    assert r.code == ([shown] if shown else []) and not (r.links or r.images or r.html)
    assert "".join(r.prose) == "before  after"


def test_code_span_samples_and_limit():
    for text in SAMPLES:
        assert _para(inert.code_span(text)).code == [mdcheck.collapsed(_seen(text))], text
    assert _para(inert.code_span("x" * 50, limit=10)).code == ["x" * 9 + "…"]
    assert inert.code_span("") == "" and inert.code_span(None) == "`None`"


@given(TRICKY)
@settings(max_examples=300, deadline=None)
def test_a_table_cell_holds_any_text_and_stays_one_cell(text):
    table = f"| a | b |\n|---|---|\n| {inert.table_cell(text)} | z |\n"
    r = mdcheck.render(table)
    shown = mdcheck.collapsed(_seen(text))
    assert mdcheck.table_cells(table) == [2, 2]
    assert r.code == ([shown] if shown else []) and not (r.links or r.images or r.html)


@given(TRICKY)
@settings(max_examples=300, deadline=None)
def test_a_code_block_holds_any_text_and_nothing_after_it_is_inside(text):
    r = mdcheck.render(inert.code_block(text, "bash") + "\n\nafter")
    body = _seen(text.replace("\r\n", "\n").replace("\r", "\n")).rstrip()
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
    assert prose.replace(wj, "") == f"before {mdcheck.collapsed(_seen(text))} after".replace(wj, "")
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
    assert kept == rows[: len(kept)] and lines[-2] == ""
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


# -- control characters, everywhere -------------------------------------------------------------
@given(CONTROLLED)
@settings(max_examples=400, deadline=None)
def test_no_control_character_survives_in_markdown_or_a_log(text):
    stripped = inert.strip_controls(text)
    assert not actions_log.controls(stripped)
    for shown in (
        inert.code_span(text),
        inert.table_cell(text),
        inert.plain(text),
        inert.code_block(text, "bash"),
        inert.terminal(text),
        inert.console_markup(text),
    ):
        assert not actions_log.controls(shown), repr(shown)
    assert inert.code_span(text) == inert.code_span(stripped)  # stripped first: the rules above hold as they did
    assert inert.code_block(text) == inert.code_block(stripped)


def test_escape_sequences_go_whole():
    """The sequence with its parameters (no stray `[31m` shown), the text between them kept."""
    cases = {
        f"{ESC}[31mred{ESC}[0m": "red",
        f"{ESC}[1;4;38;5;196mbold{ESC}[m": "bold",
        f"a{ESC}]0;a title{BEL}b": "ab",  # OSC ended by BEL
        f"{ESC}]8;;https://evil.example{ESC}\\link{ESC}]8;;{ESC}\\": "link",  # a hyperlink, ended by ST
        f"x{ESC}]0;unterminated\nnext line": "x\nnext line",  # ends at the line: the next line stays
        f"{ESC}P1$r{ESC}\\dcs": "dcs",
        f"{ESC}(Bcharset {ESC}c": "charset ",
        "\x9b2Jc1 \x9d0;t\x9cosc": "c1 osc",
        f"bell{BEL} nul\x00 del\x7f bs\x08 nel\x85": "bell nul del bs nel",
        "a\r\nb\rc\td": "a\nb\nc\td",  # a lone CR ends a line for the runner and for Markdown
    }
    for text, shown in cases.items():
        assert inert.strip_controls(text) == shown, repr(text)


# -- workflow commands: the runner's parser (tests/actions_log.py) ---------------------------------
@given(COMMANDS)
@settings(max_examples=1000, deadline=None)
def test_no_line_is_a_workflow_command_and_it_reads_the_same(text):
    shown = inert.terminal(text)
    assert not actions_log.problems(shown), actions_log.problems(shown)
    assert shown.replace(inert.WORD_JOINER, "") == inert.strip_controls(text).replace(inert.WORD_JOINER, "")
    assert inert.terminal(shown) == shown  # idempotent: text made inert twice reads the same


def test_the_shapes_the_runner_takes():
    """Indentation, .NET's other whitespace and a legacy `##[` mid-line: each is a command before
    and none after; `::` and `##` elsewhere are left alone (`std::move`, `--host ::`, a heading)."""
    commands = [
        "::error::x",
        "  ::add-mask::secret",
        "\t::stop-commands::tok",
        "\u3000\xa0::warning file=a::w",
        "\u2028::notice::n",
        "text ##[error]legacy",
        "##[set-output name=x]1",
        "a ##[group]g",
    ]
    for line in commands:
        assert actions_log.command(line), line
        shown = inert.terminal(line)
        assert not actions_log.command(shown) and not actions_log.problems(shown), repr(shown)
    for line in ("std::move(x)", "vllm serve m --host ::", "## [heading]", "a :: b", "#[x]", ": :error::"):
        assert inert.terminal(line) == line


def test_driftmatrix_s_own_commands_stay_commands_with_their_data():
    line = inert.workflow_command("error", f"ci: bad input 'x\n::add-mask::y' 100% {ESC}[31m", file="a:b,c.md", line=3)
    assert "\n" not in line and actions_log.command(line) == "error"
    name, props, data = re.fullmatch(r"::(\S+) (.*?)::(.*)", line).groups()

    def unescape(v: str) -> str:  # ActionCommand.cs's order: `%` last
        return v.replace("%0A", "\n").replace("%0D", "\r").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")

    assert dict(p.split("=", 1) for p in props.split(",")) == {"file": "a%3Ab%2Cc.md", "line": "3"}
    assert unescape(data) == "ci: bad input 'x\n::add-mask::y' 100% " and unescape("a%3Ab%2Cc.md") == "a:b,c.md"
    assert name == "error" and inert.workflow_command("warning", "w") == "::warning::w"


def test_json_for_a_log_is_the_same_data():
    value = {"reason": f"##[error]x {ESC}[31m\n::error::y", "ids": ["##[", "#[", "##"]}
    text = inert.log_json(value, indent=1)
    assert json.loads(text) == value and text.isascii()
    assert not actions_log.problems(text)


def test_rich_markup_from_outside_is_shown_as_typed():
    from rich.console import Console

    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system="truecolor", width=200, highlight=False)
    console.print(f"[red]driftmatrix:[/] {inert.console_markup('[bold]x[/] [link=https://evil.example]y[/link] [/]')}")
    text = out.getvalue()
    assert "[bold]x[/] [link=https://evil.example]y[/link] [/]" in text
    assert "]8;" not in text and "\x1b[1m" not in text  # no hyperlink, no bold: only driftmatrix's red


# -- format characters: bidi controls, zero-width characters ----------------------------------------
FORMAT = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) in ("Cf", "Zl", "Zp")]
"""Every format character of this Python's Unicode, and the line and paragraph separators."""


def test_format_characters_are_shown_escaped():
    """Each, after a letter (where driftmatrix never puts a joiner of its own), in every rule: gone
    raw, there as Python's `ascii()` writes it; the rest of the text as it was; idempotent."""
    assert len(FORMAT) > 150 and "\u202e" in FORMAT and "\u2066" in FORMAT and "\ufeff" in FORMAT
    text = "".join(f"a{c}" for c in FORMAT)
    seen = inert.strip_controls(text)
    assert seen == "".join(f"a{ascii(c)[1:-1]}" for c in FORMAT) and seen.isascii()
    assert inert.strip_controls(seen) == seen and inert.terminal(inert.terminal(text)) == inert.terminal(text)
    for shown in (
        inert.code_span(text),
        inert.table_cell(text),
        inert.plain(text),
        inert.code_block(text),
        inert.terminal(text),
        inert.console_markup(text),
        inert.one_line(text),
        inert.workflow_command("warning", text, file=text),
        json.dumps(inert.strip_controls_in({text: [text]}), ensure_ascii=False),
    ):
        assert not [c for c in shown if c in FORMAT], repr(shown)
    assert (
        inert.strip_controls("admin\u202e\u2066 // \u2069\u2066nimda") == "admin\\u202e\\u2066 // \\u2069\\u2066nimda"
    )


def test_driftmatrix_s_own_word_joiners_stay():
    """The joiners `defuse` and `defuse_commands` put in stay when the text is made inert again (the
    stream guard, a Markdown printed to a log); a joiner anywhere else is shown."""
    wj = inert.WORD_JOINER
    for own in (
        inert.terminal("::error::x\n  ::add-mask::y ##[error]z"),
        inert.plain("@team #12 https://x www.x GH-1"),
    ):
        assert wj in own and inert.strip_controls(own) == own and inert.terminal(own) == own
    assert inert.strip_controls(f"a{wj}b {wj}::x #{wj} :{wj}") == "a\\u2060b \\u2060::x #\\u2060 :\\u2060"


def test_json_text_is_the_same_data_without_a_format_character_raw():
    value = {"title\u202e": ["a\u200bb", "\U000e0041\u2028", "plain — text"]}
    text = inert.json_text(json.dumps(value, ensure_ascii=False, indent=1))
    assert json.loads(text) == value and not [c for c in text if c in FORMAT] and "plain — text" in text
