"""Issue 16's check: the history against the real parser of the pinned CPU builds, for every
option the docs corpora use and every option any release ever had."""

from __future__ import annotations

from pathlib import Path

import pytest

from extractor.catalog import extract

from runner.builds.resolve import stable_pin
from runner.builds.history_agreement import ask_parser, compare, docs_tokens
from flaghistory.history import SHIPPED, FlagHistory
from runner.builds.envs import ensure
from runner.settings import cache_dir
from runner.builds.targets import DEFAULT_CPU, load


@pytest.fixture(scope="module")
def tokens(corpus: Path) -> list[str]:
    catalog, _ = extract(stable=stable_pin(), sources=[corpus / "vllm-docs" / "0.20.1", corpus / "vllm-docs" / "0.33.0",
                          corpus / "recipes" / "8959cf6"])
    found = docs_tokens(catalog)
    assert len(found) > 200 and "--speculative-config" in found
    return found


@pytest.mark.parametrize("target", [t.name for t in load(DEFAULT_CPU).targets])
def test_the_history_answers_like_the_builds_own_parser(target, tokens):
    history = FlagHistory.load(SHIPPED)
    env = ensure(next(t for t in load(DEFAULT_CPU).targets if t.name == target), cache_dir())
    # beyond the docs: every option of every release, and its underscore spelling
    extra = [f for f in history.flags if f.startswith("--")]
    asked = sorted({*tokens, *extra, *(f.replace("-", "_").replace("__", "--", 1) for f in extra)})
    result = compare(history, env.version, ask_parser(env.python, asked, env=None))
    assert result.tokens == len(asked)
    assert result.disagreements == [], result.disagreements
    assert (result.only_in_parser, result.only_in_history) == ([], [])
    accepted = sum(1 for t in tokens if history.accepts(t, env.version))
    assert 0 < accepted < len(tokens)  # the docs use options this build rejects, and the two agree on them
