"""compare_values on a small history and made-up build answers (no build needed): agreement is the
same True/False; a history None is listed apart with why, never counted; the full sets compared."""

from __future__ import annotations

from driftmatrix.flaghistory.history import FlagHistory
from driftmatrix.flaghistory.uses import Use
from driftmatrix.runner.builds.value_agreement import DocUse, compare_values, query_of

SPAN = {"added": "0.1.0", "removed": None}
HISTORY = FlagHistory(
    {
        "schema": 1,
        "releases": ["0.1.0", "0.2.0"],
        "flags": {
            "--tool-call-parser": SPAN,
            "--tool-parser-plugin": SPAN,
            "--speculative-config": SPAN,
            "--kv-transfer-config": SPAN,
        },
        "values": {
            "--tool-call-parser": {
                "read": SPAN,
                "open_with": ["--tool-parser-plugin"],
                "model_dependent": "the chat template",
                "values": {"hermes": SPAN, "old": {"added": "0.1.0", "removed": "0.2.0"}},
            }
        },
        "keys": {
            "--speculative-config": {
                "class": "SpeculativeConfig",
                "read": SPAN,
                "closed": SPAN,
                "keys": {"method": SPAN},
            },
            "--kv-transfer-config": {
                "class": "KVTransferConfig",
                "read": SPAN,
                "closed": None,
                "keys": {"kv_role": SPAN},
            },
        },
    }
)


def value(name):
    return Use("value", "--tool-call-parser", "--tool-call-parser", value=name)


def key(option, name):
    return Use("key", option, option, key=name)


def test_agreement_counts_only_true_false_and_says_why_for_none():
    uses = [
        DocUse(value("hermes")),
        DocUse(value("old")),
        DocUse(value("<parser>")),
        DocUse(value("mine"), frozenset({"--tool-parser-plugin"})),
        DocUse(key("--speculative-config", "method")),
        DocUse(key("--speculative-config", "nope")),
        DocUse(key("--kv-transfer-config", "nope")),
    ]
    build = {
        ("value", "--tool-call-parser", None, "hermes"): True,
        ("value", "--tool-call-parser", None, "old"): True,
        ("value", "--tool-call-parser", None, "<parser>"): False,
        ("value", "--tool-call-parser", None, "mine"): False,
        ("key", "--speculative-config", "method", None): True,
        ("key", "--speculative-config", "nope", None): False,
        ("key", "--kv-transfer-config", "nope", None): True,
    }
    answers = {
        "answers": [
            {"kind": k, "option": o, "key": kk, "value": v, "build": b, "why": "made up"}
            for (k, o, kk, v), b in build.items()
        ],
        "domains": {"--tool-call-parser": {"names": ["hermes", "old", "extra"], "from": "registry"}},
        "keys": {"--speculative-config": {"class": "SpeculativeConfig", "keys": ["method", "model"], "closed": True}},
        "unknown": [],
    }
    result = compare_values(HISTORY, "0.2.0", answers, uses)
    assert result.figures()["uses"] == 7 and result.agree == 3  # hermes, method, nope (both refuse it)
    assert [(d["use"], d["history"], d["build"]) for d in result.disagreements] == [
        ("--tool-call-parser old", False, True)
    ]
    whys = {d["use"]: d["why"] for d in result.history_cannot_say}
    assert whys["--tool-call-parser <parser>"] == "a placeholder"
    assert "plugins can add names" in whys["--tool-call-parser mine"]
    assert "ignores keys" in whys["--kv-transfer-config key `nope`"]
    assert result.model_dependent == ["--tool-call-parser hermes"]
    assert result.domains["--tool-call-parser"]["only_in_build"] == ["extra", "old"]
    assert result.keys["--speculative-config"]["only_in_build"] == ["model"]


def test_the_query_sends_each_use_once_as_data():
    uses = [
        DocUse(value("hermes")),
        DocUse(value("hermes"), frozenset({"--tool-parser-plugin"})),
        DocUse(value("$(rm -rf /)")),
    ]
    assert query_of(uses) == {
        "uses": [
            {"kind": "value", "option": "--tool-call-parser", "key": None, "value": "hermes"},
            {"kind": "value", "option": "--tool-call-parser", "key": None, "value": "$(rm -rf /)"},
        ]
    }
