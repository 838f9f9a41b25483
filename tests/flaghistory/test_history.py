"""The shipped option history, read the way vLLM's own parser reads options."""

from __future__ import annotations

import json

import pytest

from driftmatrix.flaghistory.commands import command_options, explain, rejected_options
from driftmatrix.flaghistory.history import SHIPPED, FlagHistory, HistoryError, token


@pytest.fixture(scope="module")
def history() -> FlagHistory:
    return FlagHistory.load(SHIPPED)


def test_the_shipped_file(history):
    assert SHIPPED.stat().st_size < 1 << 20  # under 1 MB
    data = json.loads(SHIPPED.read_text())
    assert data["schema"] == 1 and {"releases", "flags", "syntax", "diagnostics"} <= set(data)
    assert history.releases[0] == "0.6.0" and {"0.20.1", "0.32.0"} <= set(history.releases)
    for name, record in history.flags.items():
        assert set(record) >= {"added", "removed", "deprecated", "deprecation", "replacement"}, name
        assert record["added"] in history.releases and record["removed"] in (None, *history.releases)


def test_a_removed_option(history):
    assert history.accepts("--swap-space", "0.17.1") is True
    assert history.accepts("--swap-space", "0.18.0") is False
    assert history.flags["--swap-space"]["removed"] == "0.18.0"
    record = history.flags["--cuda-graph-sizes"]
    assert (record["deprecated"], record["removed"], record["replacement"]) == (
        "0.11.1",
        "0.13.0",
        "--cudagraph-capture-sizes",
    )
    assert "is deprecated" in record["deprecation"]
    said = explain(history, "--cuda-graph-sizes", "0.20.1")
    assert said.startswith("--cuda-graph-sizes was removed in vLLM 0.13.0; vLLM 0.11.1 deprecated it: “")


def test_options_read_as_the_parser_reads_them(history):
    assert token("--max_model_len=4096").name == "--max-model-len"
    assert history.accepts("--max_model_len", "0.20.1") is True
    assert history.accepts("--max-model", "0.20.1") is True  # argparse's unique-prefix match
    assert history.accepts("--enable", "0.20.1") is False  # ambiguous prefix
    assert history.accepts("--speculative-config.method", "0.8.5") is False  # no dotted keys before 0.9.0
    assert history.accepts("--speculative-config.method", "0.20.1") is True
    assert history.accepts("-O3", "0.20.1") is True and history.accepts("--help", "0.6.0") is True
    assert history.accepts("--no-enable-prefix-caching", "0.32.0") is True


def test_versions_that_were_not_read(history):
    assert history.accepts("--model", "0.15.0") is None  # wheels only: no sdist to read
    assert history.accepts("--model", "0.5.0") is None  # before the first release read
    assert history.release_for("99.0.0.dev3") == history.releases[-1]  # a nightly: the newest release
    assert history.release_for("0.20.1+cpu") == "0.20.1"


def test_a_command_range(history):
    found = command_options(history, ["Qwen/Qwen3-8B", "--swap-space", "4", "--max-model-len", "8192"])
    assert (found.first, found.last) == ("0.6.0", "0.17.1") and found.text() == "options valid from 0.6.0 to 0.17.1"
    found = command_options(history, ["m", "--not-a-vllm-option"])
    assert found.first is None and found.unknown == ["--not-a-vllm-option"]
    assert command_options(history, ["m"]) is None
    assert rejected_options("vllm: error: unrecognized arguments: --swap-space 4 --foo=1") == [
        "--swap-space",
        "--foo=1",
    ]


def test_an_unreadable_file_is_refused(tmp_path):
    bad = tmp_path / "h.json"
    bad.write_text(json.dumps({"schema": 7, "releases": [], "flags": {}}))
    with pytest.raises(HistoryError, match="schema 7"):
        FlagHistory.load(bad)
    bad.write_text("{")
    with pytest.raises(HistoryError):
        FlagHistory.load(bad)


def test_build_versions_and_short_forms(history):
    assert history.release_for("0.10.1+cpu") == "0.10.1"  # the release it was built from, not 0.10.1.1
    assert history.release_for("0.6.1+cpu") == "0.6.1"
    assert history.accepts("--h11-max-header-count", "0.10.1+cpu") is False
    assert history.accepts("-qawq", "0.20.1") is True  # argparse reads `-q awq`
    assert token("-.5") is None and token("-1") is None  # values, not options
    assert history.accepts("-O.level=3", "0.8.0") is False  # dotted keys only from 0.9.0


def test_no_claim_about_releases_that_were_not_read(history):
    said = explain(history, "--kernel-config", "0.14.1")
    assert said.startswith("--kernel-config first appears in vLLM 0.16.0 of the releases read")
    assert "0.15.0, 0.15.1 could not be read" in said
