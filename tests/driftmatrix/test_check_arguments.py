"""`driftmatrix check` as strict as vLLM's parser about what follows an option (issue 46, point 1): a
word of the wrong type, JSON as the shell hands it over, a flag given a value, an option given none —
per release, from the types the history read out of each release's sources, in argparse's and vLLM's
words; and "cannot say" beside the ✓ where the history did not read a type."""

from __future__ import annotations

import pytest

from driftmatrix.flaghistory.history import SHIPPED, FlagHistory
from tests.driftmatrix.test_check import check


@pytest.fixture(scope="module")
def history() -> FlagHistory:
    return FlagHistory.load(SHIPPED)


def _argument(entry: dict, text: str) -> dict:
    return next(u for u in entry["uses"] if u["kind"] == "argument" and u["text"] == text)


def test_a_word_for_an_int_is_refused_on_every_release_with_argparse_s_words():
    code, body, _ = check("--json", "vllm serve Qwen/Qwen3-0.6B --tensor-parallel-size two")
    assert code == 1
    [entry] = body
    use = _argument(entry, "--tensor-parallel-size two")
    assert use["accepted"] == [] and set(use["on"].values()) == {False}
    why = next(iter(use["why"].values()))
    assert "argument --tensor-parallel-size/-tp: invalid int value: 'two'" in why
    code, _, _ = check("vllm serve Qwen/Qwen3-0.6B --tensor-parallel-size 2")
    assert code == 0


def test_json_the_shell_stripped_of_its_quotes_is_refused(history):
    code, body, _ = check("--json", 'vllm serve Qwen/Qwen3-0.6B --compilation-config {"level":3}')
    assert code == 1
    [entry] = body
    assert entry["argv"][-1] == "{level:3}"  # what bash hands vLLM
    why = next(iter(_argument(entry, "--compilation-config {level:3}")["why"].values()))
    assert "removed its unquoted double quotes" in why and "single quotes" in why
    code, _, _ = check("vllm serve Qwen/Qwen3-0.6B --compilation-config '{\"mode\": 3}'")
    assert code == 0


def test_a_trailing_comma_and_a_backslash_newline_inside_quotes_are_refused():
    code, body, _ = check("--json", "-", stdin='vllm serve m --speculative-config \'{"method": "ngram",}\'\n')
    assert code == 1 and "a trailing comma" in str(body[0]["uses"])
    text = 'vllm serve m --speculative-config \'{"method": "ngram", \\\n  "num_speculative_tokens": 2}\'\n'
    code, body, _ = check("--json", "-", stdin=text)
    assert code == 1, body
    assert "backslash-newline" in str(body[0]["uses"])


def test_human_readable_numbers_where_the_release_reads_them_and_not_before(history):
    typed = history.args["--max-model-len"]
    plain = next(span["removed"] for spec, span in typed.items() if spec == "one:int")  # the first release with 32k
    before = history.releases[history.releases.index(plain) - 1]
    assert check("vllm serve m --max-model-len 32k", "--version", plain)[0] == 0
    assert check("vllm serve m --max-model-len 32k", "--version", "0.34.0")[0] == 0
    code, body, _ = check("--json", "vllm serve m --max-model-len 32k", "--version", before)
    assert code == 1
    assert "invalid int value: '32k'" in str(body[0]["uses"])
    # a binary suffix with decimals: vLLM's own words
    code, body, _ = check("--json", "vllm serve m --max-num-batched-tokens 1.5K", "--version", "0.34.0")
    assert code == 1 and "Decimals are not allowed with binary suffixes like K" in str(body[0]["uses"])


def test_a_flag_given_a_value_and_an_option_given_none():
    code, body, _ = check("--json", "vllm serve m --trust-remote-code True")
    assert code == 1 and "unrecognized arguments: True" in str(body[0]["uses"])
    code, body, _ = check("--json", "vllm serve m --enforce-eager=true")
    assert code == 1 and "ignored explicit argument 'true'" in str(body[0]["uses"])
    code, body, _ = check("--json", "vllm serve m --max-num-seqs --enforce-eager")
    assert code == 1 and "expected one argument" in str(body[0]["uses"])
    # the model after a flag is the positional, not an extra word
    assert check("vllm serve --trust-remote-code Qwen/Qwen3-0.6B")[0] == 0


def test_what_the_history_cannot_type_is_said_beside_the_tick(history):
    unread = next(
        o
        for o, specs in history.args.items()
        if o.startswith("--")
        and history.record(o)
        and history.within(history.record(o), "0.34.0")
        and not any(history.within(span, "0.34.0") for span in specs.values())
    )
    code, out, _ = check(f"vllm serve m {unread} x", "--version", "0.34.0")
    assert code == 0
    assert "✓ parses on" in out and f"cannot say for {unread} x" in out
