"""The fix texts on their own (no vLLM): edits land on whole tokens of the right line, bash
quoting is respected, and key=value becomes JSON only where it has one reading."""

from __future__ import annotations

from driftmatrix.publisher.fix_edits import apply, backslash_edits
from driftmatrix.publisher.fixes import json_form


def test_an_edit_takes_the_whole_option_not_a_prefix():
    lines = ["vllm serve m \\", "    --max-model-len 4096 \\", "    --max-model 1"]
    assert apply(lines, [["--max-model", "--x"]]) == ["vllm serve m \\", "    --max-model-len 4096 \\", "    --x 1"]
    assert apply(lines, [["--not-there", "--x"]]) is None


def test_a_dropped_last_line_leaves_no_dangling_continuation():
    lines = ["    vllm serve m \\", "        --a 1 \\", "        --gone"]
    assert apply(lines, [["--gone", ""]]) == ["    vllm serve m \\", "        --a 1"]


def test_a_dropped_option_takes_its_blank_not_its_neighbour():
    """vLLM 0.8.5's docs/source/features/reasoning_outputs.md:26: `--enable-reasoning` dropped, the
    `--reasoning-parser` beside it kept at the line's indentation."""
    lines = [
        "vllm serve deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B \\",
        "    --enable-reasoning --reasoning-parser deepseek_r1",
    ]
    assert apply(lines, [["--enable-reasoning", ""]]) == [lines[0], "    --reasoning-parser deepseek_r1"]
    assert apply(["vllm serve m --x 1 --enable-reasoning"], [["--enable-reasoning", ""]]) == ["vllm serve m --x 1"]


def test_backslash_edits_only_where_the_lexer_saw_one():
    text = "vllm serve m \\   \n  --a 1 \\  # why\n  --b 2 \\ "
    edits, why = backslash_edits(text, {0, 1, 2})
    fixed = apply(text.split("\n"), edits)
    assert fixed == ["# why", "vllm serve m \\", "  --a 1 \\", "  --b 2 "]  # the last `\` goes
    quoted = 'vllm serve m --chat-template-kwargs \'{"sep": "a\\\\ #b"}\' --x 1'
    assert backslash_edits(quoted, set()) == ([], [])  # inside quotes: the lexer raised nothing


def test_an_edit_of_one_line_does_not_land_on_another():
    text = "vllm serve m \\   \n  --a 1 \\ "  # a 3-space and a 1-space tail
    edits, _ = backslash_edits(text, {0, 1})
    assert apply(text.split("\n"), edits) == ["vllm serve m \\", "  --a 1 "]


def test_key_value_has_a_json_form_only_when_unambiguous():
    assert json_form("image=4,video=1") == '{"image": 4, "video": 1}'
    assert json_form("max_pixels=1003520") == '{"max_pixels": 1003520}'
    assert json_form("rope_type=null,factor=2.5,on=true") == '{"rope_type": null, "factor": 2.5, "on": true}'
    for value in ("text_config.max_position_embeddings=4096", "stop=a,b", "sizes=[1,2,4]", "x=nan", "x='a'"):
        assert json_form(value) is None, value
