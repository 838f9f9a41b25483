"""Placeholders in any script (issue 59 point 7): `<你的模型路径>` is one word the reader fills in, never two
shell redirections (which made the command's model the number after `--port`); `〈…〉`, `「…」` and the
full-width `＜…＞` are placeholders too. The shared corpus has no such page (none of its snapshots is
written in Chinese), so the commands are written here."""

from __future__ import annotations

import pytest

from driftmatrix.extractor.shell_lexer import Operator, lex
from driftmatrix.extractor.snippet_builder import Place, from_shell_text


def serve(command: str):
    [snippet] = from_shell_text(command, Place("markdown", "", "zh.md", 5))
    return snippet


@pytest.mark.parametrize(
    "word", ["<你的模型路径>", "<模型名称>", "〈模型〉", "「モデルのパス」", "＜模型路径＞", "{模型目录}"]
)
def test_a_placeholder_in_any_script_is_the_readers_model(word):
    snippet = serve(f"vllm serve {word} --port 8000 --tensor-parallel-size 2")
    assert snippet.model == word  # not "8000"
    assert snippet.argv == [word, "--port", "8000", "--tensor-parallel-size", "2"]
    assert word in snippet.placeholders
    assert not snippet.runnable and "placeholder" in snippet.reason


def test_a_chinese_placeholder_is_no_redirection():
    tokens = lex("vllm serve <你的模型路径> --port 8000\n").tokens
    assert not [t for t in tokens if isinstance(t, Operator) and t.redirection]
    assert [t.text for t in tokens if not isinstance(t, Operator)] == [
        "vllm",
        "serve",
        "<你的模型路径>",
        "--port",
        "8000",
    ]


def test_real_redirections_stay_redirections():
    snippet = serve("vllm serve Qwen/Qwen3-8B --port 8000 > 日志.txt 2>&1 < /dev/null")
    assert snippet.model == "Qwen/Qwen3-8B" and snippet.argv == ["Qwen/Qwen3-8B", "--port", "8000"]
    assert snippet.runnable, snippet.reason
