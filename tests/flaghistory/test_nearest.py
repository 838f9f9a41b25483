"""Did you mean (issue 46, point 2): on the shipped history, an option, a value and a config key no
release has get the release's nearest name; nonsense, names some release has, and names of the other
polarity get nothing; the history's sentences (check, the pages, the gate) end with the suggestion."""

from __future__ import annotations

import json

import pytest

from driftmatrix.flaghistory import nearest
from driftmatrix.flaghistory.command_check import check_argv
from driftmatrix.flaghistory.commands import command_options, explain, explain_use
from driftmatrix.flaghistory.history import SHIPPED, FlagHistory
from driftmatrix.flaghistory.uses import Use, uses_of

RELEASE = "0.20.1"


@pytest.fixture(scope="module")
def history() -> FlagHistory:
    return FlagHistory.load(SHIPPED)


def _rejected(history: FlagHistory, argv: list[str], version: str = RELEASE) -> Use:
    (use,) = [u for u in uses_of(history, argv) if history.accepts_use(u, version) is False]
    return use


SPEC = json.dumps({"model": "org/draft", "num_spec_tokens": 3})


@pytest.mark.parametrize(
    "argv, names",
    [
        (["m", "--tool-call-parser-plugin", "x"], ("--tool-parser-plugin",)),
        (["m", "--load-format", "safetensor"], ("safetensors",)),
        (["m", "--speculative-config", SPEC], ("num_speculative_tokens",)),
        (["m", "--speculative-config.num_spec_tokens", "3"], ("num_speculative_tokens",)),
        (["m", "--kv-cache-type", "fp8"], ("--kv-cache-dtype",)),
        (["m", "--quantization", "gptq-marlin"], ("gptq_marlin",)),  # `-` for `_`: the same name
    ],
    ids=["option", "value", "json-key", "dotted-key", "option-typo", "dash-form"],
)
def test_the_nearest_name_of_the_release(history, argv, names):
    use = _rejected(history, argv)
    assert nearest.nearest(history, use, RELEASE) == names
    assert nearest.clear(history, use, RELEASE) == names[0]


def test_nonsense_gets_nothing(history):
    for word in ("--foo-bar-baz", "--xyzzy", "--hello-world", "--load-in-8bit"):
        use = _rejected(history, ["m", word])
        assert nearest.nearest(history, use, RELEASE) == () and nearest.clear(history, use, RELEASE) is None
    value = _rejected(history, ["m", "--load-format", "banana"])
    assert nearest.nearest(history, value, RELEASE) == ()
    assert explain(history, "--foo-bar-baz", RELEASE).endswith("from 0.6.0 to " + history.releases[-1])


def test_only_the_release_s_own_names(history):
    """0.6.0 has no `--tool-parser-plugin` (from 0.6.3): it offers what it has, never a later name."""
    use = _rejected(history, ["m", "--tool-call-parser-plugin", "x"], "0.6.0")
    assert "--tool-parser-plugin" not in history.options("0.6.0")
    assert "--tool-parser-plugin" not in nearest.nearest(history, use, "0.6.0")


def test_several_near_names_and_prefixes(history):
    """No clear one: up to three, best first, and no fix. A name that leads the other by whole words
    (`--port` of `--port-number`) or that an ambiguous abbreviation starts (`--max-num`) is offered."""
    port = _rejected(history, ["m", "--port-number", "8000"])
    assert nearest.nearest(history, port, RELEASE) == ("--port",) and nearest.clear(history, port, RELEASE) is None
    abbrev = _rejected(history, ["m", "--max-num", "4"])
    offered = nearest.nearest(history, abbrev, RELEASE)
    assert len(offered) == nearest.MOST and all(n.startswith("--max-num-") for n in offered)
    assert nearest.clear(history, abbrev, RELEASE) is None


def test_never_the_other_polarity_nor_a_known_name(history):
    """`--no-x` twins and `--disable-x` for `--enable-x` invert the command; a name some release has
    (removed `--swap-space`) has its own story in vLLM's words, not a near spelling."""
    assert nearest.score("--enable-prefix-cache", "--no-enable-prefix-caching") == 0.0
    assert nearest.score("--disable-log-request", "--enable-log-requests") == 0.0
    cache = _rejected(history, ["m", "--enable-prefix-cache"])
    assert nearest.nearest(history, cache, RELEASE) == ("--enable-prefix-caching",)
    swap = Use("option", "--swap-space", "--swap-space")
    assert history.accepts_use(swap, "0.34.0") is False and nearest.nearest(history, swap, "0.34.0") == ()


def test_the_history_s_sentences_end_with_it(history):
    """explain / explain_use are the words `check`, the command pages and the gate share."""
    said = explain(history, "--tool-call-parser-plugin", RELEASE)
    assert said == (
        "--tool-call-parser-plugin is not an option of any vLLM release from 0.6.0 to "
        f"{history.releases[-1]}; did you mean --tool-parser-plugin?"
    )
    value = explain_use(history, _rejected(history, ["m", "--load-format", "safetensor"]), RELEASE)
    assert value.endswith("; did you mean `safetensors`?")
    key = explain_use(history, _rejected(history, ["m", "--speculative-config", SPEC]), RELEASE)
    assert key.endswith("; did you mean `num_speculative_tokens`?")


def test_the_check_answer_and_the_command_s_options_carry_them(history):
    check = check_argv(history, ["m", "--tool-call-parser-plugin", "x"], [RELEASE, "0.32.0"])
    answer = next(a for a in check.uses if a.use.kind == "option")
    assert answer.nearest == {RELEASE: ["--tool-parser-plugin"], "0.32.0": ["--tool-parser-plugin"]}
    assert check.as_json()["uses"][check.uses.index(answer)]["nearest"] == answer.nearest
    assert all(a.nearest == {} for a in check.uses if a is not answer)  # what follows it: no name to offer
    found = command_options(history, ["m", "--tool-call-parser-plugin", "x", "--load-format", "safetensor"])
    assert found.nearest == {
        "--tool-call-parser-plugin": ["--tool-parser-plugin"],
        "--load-format safetensor": ["safetensors"],
    }
    assert found.as_json()["nearest"] == found.nearest
