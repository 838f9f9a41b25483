"""common/inert_stdio.py: the stream guard in front of stdout and stderr where they are not a
terminal. Read back as GitHub's runner reads a step's output (tests/actions_log.py): however the
text is cut into writes, and however rich wraps or folds it, no line is a workflow command and none
carries a control character; it reads the same; driftmatrix's own commands pass; a terminal is left
to rich."""

from __future__ import annotations

import io
import sys

import actions_log
from hypothesis import given, settings
from hypothesis import strategies as st

from driftmatrix.common import inert
from driftmatrix.common.inert_stdio import InertStream, emit, guard_stdio, guarded

PIECES = st.lists(
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
            "\u3000",
            "error",
            "add-mask",
            "x",
            "\x1b",
            "[31m",
            "\x07",
            "\u2060",
        ]
    ),
    max_size=40,
).map("".join)
CUTS = st.lists(st.integers(min_value=0, max_value=60), max_size=8)


def _written(text: str, cuts: list[int]) -> str:
    out = io.StringIO()
    stream = InertStream(out)
    at = 0
    for cut in sorted(cuts):
        stream.write(text[at:cut])
        stream.flush()  # nothing is held back but a trailing word joiner: what is out is out
        at = max(at, cut)
    stream.write(text[at:])
    stream.finish()  # as `guard_stdio` does on the way out
    return out.getvalue()


@given(PIECES, CUTS)
@settings(max_examples=1000, deadline=None)
def test_written_in_any_pieces_no_line_is_a_command(text, cuts):
    shown = _written(text, cuts)
    assert not actions_log.problems(shown), (text, cuts, shown)


@given(PIECES.filter(lambda t: "\x1b" not in t and "\r" not in t), CUTS)
@settings(max_examples=500, deadline=None)
def test_it_reads_the_same_as_the_rule_says(text, cuts):
    """Without an escape sequence or a CR cut in two, the pieces read as the whole text made inert."""
    assert _written(text, cuts) == inert.terminal(text)


def test_rich_wrapping_and_folding_cannot_start_a_line_with_a_command():
    """rich wraps at spaces and folds a long word: either can put a `::` at a line's start, after
    every text was made inert on its own. The guard sees the lines as they leave."""
    from rich.console import Console

    texts = ["a" * 25 + " ::error::pwned by a wrap", "x" * 30 + "::add-mask::folded", "y" * 29 + "#" * 2 + "[error]z"]
    plain, out = io.StringIO(), io.StringIO()
    for file in (plain, out):
        console = Console(file=file if file is plain else InertStream(file), width=30, highlight=False)
        for text in texts:
            console.print(inert.console_markup(text))
    assert [actions_log.command(ln) for ln in actions_log.lines(plain.getvalue()) if actions_log.command(ln)]
    assert not actions_log.problems(out.getvalue())
    assert out.getvalue().replace(inert.WORD_JOINER, "") == plain.getvalue().replace(inert.WORD_JOINER, "")


def test_driftmatrix_s_own_commands_pass_the_guard():
    out = io.StringIO()
    stream = InertStream(out)
    stream.write("a line cut short ")
    emit(inert.workflow_command("warning", "no GPU runner: CPU fallback"), stream)
    stream.write("::error::from the docs\n")
    shown = actions_log.lines(out.getvalue())
    assert shown[:2] == ["a line cut short ", "::warning::no GPU runner: CPU fallback"]
    assert [actions_log.command(ln) for ln in shown] == [None, "warning", None, None]


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_is_left_to_rich_and_the_streams_are_put_back(monkeypatch):
    tty, piped = _Tty(), io.StringIO()
    assert guarded(tty) is tty and guarded(None) is None
    assert guarded(guarded(piped)).raw is piped  # guarded once
    monkeypatch.setattr(sys, "stdout", piped)
    monkeypatch.setattr(sys, "stderr", tty)
    with guard_stdio():
        assert isinstance(sys.stdout, InertStream) and sys.stderr is tty
        print("::error::inside")
    assert (sys.stdout, sys.stderr) == (piped, tty)
    assert piped.getvalue() == f":{inert.WORD_JOINER}:error::inside\n"
