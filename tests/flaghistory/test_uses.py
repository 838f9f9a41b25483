"""What of a command the history judges (options, values, JSON keys, key values), and the answers it
gives for them from the shipped history: True, False, or None where it cannot say."""

from __future__ import annotations

import json

import pytest

from driftmatrix.flaghistory.command_check import check_argv, runs_of
from driftmatrix.flaghistory.history import SHIPPED, FlagHistory
from driftmatrix.flaghistory.uses import Use, uses_of


@pytest.fixture(scope="module")
def history() -> FlagHistory:
    return FlagHistory.load(SHIPPED)


def test_the_shipped_history_has_values_and_keys(history):
    for domain in (
        "--tool-call-parser",
        "--reasoning-parser",
        "--quantization",
        "--load-format",
        "--speculative-config.method",
        "--distributed-executor-backend",
    ):
        assert domain in history.values, domain
        assert len(history.values[domain]["values"]) >= 3, domain
    assert {"--speculative-config", "--compilation-config", "--kv-transfer-config"} <= set(history.keys)
    assert "num_speculative_tokens" in history.keys["--speculative-config"]["keys"]


def test_a_command_s_options_values_and_keys(history):
    spec = json.dumps({"method": "eagle3", "model": "org/draft", "num_speculative_tokens": 3})
    argv = [
        "org/model",
        "--tool_call_parser=hermes",
        "--enable-auto-tool-choice",
        "--speculative-config",
        spec,
        "--kv-transfer-config.kv_connector_extra_config.backends+",
        "UCX",
    ]
    uses = uses_of(history, argv)
    assert Use("option", "--tool-call-parser", "--tool_call_parser") in uses
    assert Use("value", "--tool-call-parser", "--tool_call_parser", value="hermes") in uses
    assert Use("value", "--speculative-config", "--speculative-config", value="eagle3", key="method") in uses
    keys = [u.key for u in uses if u.kind == "key"]
    assert keys[:3] == ["method", "model", "num_speculative_tokens"]
    # a free-form dict of the connector's own: judged down to the dict, never inside it; `+` is syntax
    assert "kv_connector_extra_config" in keys and not any("backends" in k for k in keys)


def test_what_the_history_cannot_say_is_never_a_rejection(history):
    newest = history.releases[-1]
    placeholder = Use("value", "--tool-call-parser", "--tool-call-parser", value="<your_parser>")
    assert history.accepts_use(placeholder, newest) is None
    made_up = Use("value", "--tool-call-parser", "--tool-call-parser", value="no_such_parser")
    assert history.accepts_use(made_up, newest) is False
    # a plugin option in the command can register that name at run time
    assert history.accepts_use(made_up, newest, frozenset({"--tool-parser-plugin"})) is None
    # a release whose names were not read (before the domain's first read)
    read = history.values["--tool-call-parser"]["read"]["added"]
    before = [r for r in history.releases if history.releases.index(r) < history.releases.index(read)]
    for release in before:
        assert history.accepts_use(made_up, release) is None
    # an unknown build version
    assert history.accepts_use(made_up, "0.1.0") is None


def test_a_made_up_value_fails_the_command_and_says_why(history):
    newest = history.releases[-1]
    check = check_argv(history, ["m", "--load-format", "no_such_format"], [newest])
    assert not check.ok and check.parses == []
    value = next(a for a in check.uses if a.use.kind == "value")
    assert value.accepted == [] and "is in none of" in value.why[newest]


def test_runs_of_releases():
    assert runs_of(["a", "b", "c", "d", "e"], [True, True, False, True, False]) == [["a", "b"], ["d", "d"]]
    assert runs_of(["a"], [False]) == []


def test_a_disable_option_beside_its_enable_twin_is_answered_per_release(history):
    """vLLM's EnableDisableAction (0.33.0 on) makes `--disable-log-requests` of `--enable-log-requests`
    again, after the option of its own went in 0.17.0: the history, read from the sources, answers no
    on 0.17.0–0.32.0 and yes on 0.33.0–0.34.0 — not "cannot say"."""
    check = check_argv(history, ["m", "--disable-log-requests"], ["0.16.0", "0.17.0", "0.32.0", "0.33.0", "0.34.0"])
    assert check.uses[0].on == {"0.16.0": True, "0.17.0": False, "0.32.0": False, "0.33.0": True, "0.34.0": True}
    assert check.uses[0].accepted == [["0.6.0", "0.16.0"], ["0.33.0", history.releases[-1]]]
    assert check.uses[0].unanswered == []
    assert "was removed in vLLM 0.17.0" in check.uses[0].why["0.32.0"]
    assert check.uses[0].why["0.32.0"].endswith("taken again from vLLM 0.33.0")
    assert history.removal(history.record("--disable-log-requests"), "0.20.1+cpu") == "0.17.0"
    assert history.removal(history.record("--disable-log-requests"), "0.34.0") is None
    # vLLM 0.10.1's deprecation belongs to the option that went; the pair's inverse is not deprecated
    newest = check_argv(history, ["m", "--disable-log-requests"], ["0.34.0"])
    assert newest.uses[0].deprecated is None
    assert check_argv(history, ["m", "--disable-log-requests"], ["0.16.0"]).uses[0].deprecated["since"] == "0.10.1"


def test_flags_valid_names_what_no_release_has(history):
    """`unknown` in flags_valid: what no release read takes and some refuse (the docs' plugin example
    parser `example`); releases whose names were not read say nothing either way."""
    from driftmatrix.flaghistory.commands import command_options

    found = command_options(history, ["m", "--reasoning-parser", "example", "--max-model-len", "8"])
    assert found.first is None and found.unknown == ["--reasoning-parser example"]
    assert "--reasoning-parser example: in none" in found.text()
