"""Issue 16's check: the history against the real parser of the pinned CPU builds, for every
option the docs corpora use and every option any release ever had."""

from __future__ import annotations

from pathlib import Path

import pytest

from driftmatrix.extractor.catalog import extract
from driftmatrix.flaghistory.history import SHIPPED, FlagHistory
from driftmatrix.runner.builds.envs import ensure
from driftmatrix.runner.builds.history_agreement import (
    PROBES,
    ask_parser,
    compare,
    compare_arguments,
    docs_tokens,
)
from driftmatrix.runner.builds.resolve import stable_pin
from driftmatrix.runner.builds.targets import SEED_CPU, load
from driftmatrix.runner.builds.value_agreement import ask_build, compare_values, docs_uses
from driftmatrix.runner.settings import cache_dir


@pytest.fixture(scope="module")
def tokens(corpus: Path) -> list[str]:
    catalog, _ = extract(
        stable=stable_pin(SEED_CPU),
        sources=[corpus / "vllm-docs" / "0.20.1", corpus / "vllm-docs" / "0.33.0", corpus / "recipes" / "8959cf6"],
    )
    found = docs_tokens(catalog)
    assert len(found) > 200 and "--speculative-config" in found
    return found


def _asked(tokens: list[str]) -> list[str]:
    """The docs' tokens and, beyond the docs, every option of every release and its underscore spelling."""
    extra = [f for f in FlagHistory.load(SHIPPED).flags if f.startswith("--")]
    return sorted({*tokens, *extra, *(f.replace("-", "_").replace("__", "--", 1) for f in extra)})


@pytest.fixture(scope="module")
def parser_answers(tokens):
    """Each build's serve parser asked once for both checks below: serve_options.py answers the tokens
    and the probe words in one query (one vLLM import per build, not two)."""
    answered: dict[str, dict] = {}

    def ask(target: str) -> dict:
        if target not in answered:
            env = ensure(next(t for t in load(SEED_CPU).targets if t.name == target), cache_dir())
            answered[target] = ask_parser(env.python, _asked(tokens), probes=PROBES)
        return answered[target]

    return ask


@pytest.mark.parametrize("target", [t.name for t in load(SEED_CPU).targets])
def test_the_history_answers_like_the_builds_own_parser(target, tokens, parser_answers):
    history = FlagHistory.load(SHIPPED)
    env = ensure(next(t for t in load(SEED_CPU).targets if t.name == target), cache_dir())
    asked = _asked(tokens)
    result = compare(history, env.version, parser_answers(target))
    assert result.tokens == len(asked)
    assert result.disagreements == [], result.disagreements
    assert (result.only_in_parser, result.only_in_history) == ([], [])
    accepted = sum(1 for t in tokens if history.accepts(t, env.version))
    assert 0 < accepted < len(tokens)  # the docs use options this build rejects, and the two agree on them


# -- issue 34: the values and JSON keys ------------------------------------------------------------

KNOWN_DISAGREEMENTS: dict[str, list[str]] = {
    "stable": [],
    # none since issue 34's round 2: --tokenizer-mode reads vllm/tokenizers/registry.py's _VLLM_TOKENIZERS
    # (deepseek_v41) beside the TokenizerMode Literal, and --weight-transfer-config.backend the
    # WeightTransferEngineFactory.register_engine calls (modelexpress) beside its Literal
    "nightly": [],
}
"""Per target: the uses where the history is wrong and its reader cannot fix it (each with why)."""


@pytest.fixture(scope="module")
def value_catalog(corpus: Path):
    catalog, _ = extract(
        stable=stable_pin(SEED_CPU),
        sources=[corpus / "vllm-docs" / "0.20.1", corpus / "vllm-docs" / "0.33.0", corpus / "recipes" / "8959cf6"],
    )
    return catalog


@pytest.mark.parametrize("target", [t.name for t in load(SEED_CPU).targets])
def test_the_history_names_values_and_keys_like_the_build(target, value_catalog):
    """Every value and JSON key the docs use (`--tool-call-parser qwen3_xml`, `--speculative-config`'s
    `method: eagle3`): the history's True/False is the build's own (one sandboxed query per target,
    runner/intarget/serve_values.py); where the history cannot say, it says why."""
    history = FlagHistory.load()  # the shipped file, or the fresher one DRIFTMATRIX_FLAG_HISTORY names
    uses = docs_uses(value_catalog, history)
    env = ensure(next(t for t in load(SEED_CPU).targets if t.name == target), cache_dir())
    answers = ask_build(env.python, uses)
    result = compare_values(history, env.version, answers, uses)
    assert [d["use"] for d in result.disagreements] == KNOWN_DISAGREEMENTS[target], result.disagreements
    # non-trivial: the docs use many values and keys, most answered by both sides, some refused by both
    assert result.by_kind["value"]["uses"] > 150 and result.by_kind["key"]["uses"] > 100, result.by_kind
    assert result.agree > 250, result.figures()
    refused = [d for d in uses if history.accepts_use(d.use, env.version, d.opened) is False]
    assert refused, "the docs use values or keys this build refuses, and the two agree on them"
    assert all(n["why"] != "unknown" for n in result.history_cannot_say), result.history_cannot_say
    # what the build itself could not be asked: only the free-form JSON options
    assert {u["domain"] for u in result.build_unknown} <= {
        "--config",
        "--generation-config",
        "--override-generation-config",
        "--model-loader-extra-config",
        "--additional-config",
    }
    # the registries were read from the build, not only its parser
    assert {"--tool-call-parser", "--reasoning-parser", "--quantization", "--speculative-config.method"} <= set(
        answers["domains"]
    )
    assert answers["keys"]["--speculative-config"]["closed"] is True


# -- issue 46: what an option takes after it, and its type -------------------------------------------


@pytest.mark.parametrize("target", [t.name for t in load(SEED_CPU).targets])
def test_the_history_types_options_like_the_builds_parser(target, parser_answers):
    """Every long option of the build's serve parser: what the history says it takes after it (none, one,
    an optional word, several) is its action's nargs, and for every probe word (`two`, `32k`, `1.5K`,
    `{level:3}`, `None` …) the history's yes/no is the build's own type function's (argparse's
    `_get_value`); where the history cannot say it is counted apart, never as agreement."""
    history = FlagHistory.load()
    env = ensure(next(t for t in load(SEED_CPU).targets if t.name == target), cache_dir())
    result = compare_arguments(history, env.version, parser_answers(target))
    assert result.disagreements == [], result.disagreements
    assert result.options > 300 and result.takes_agree > 0.9 * result.options, result
    assert result.types_judged > 1000, result  # int, float, human_readable_int, JSON: most options are typed
    # the ones the issue names, on this build
    spec = history.arg_spec("--tensor-parallel-size", history.release_for(env.version))
    assert spec == "one:int"
    assert history.arg_spec("--max-model-len", history.release_for(env.version)).startswith("one:hint[")
