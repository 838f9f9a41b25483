"""How vLLM's parser reads an option token (common/option_tokens.py): argparse's abbreviations and
FlexibleArgumentParser's `_` for `-`, with a release's options known and unknown."""

from __future__ import annotations

from driftmatrix.common.option_tokens import canonical, may_ask_for, resolve

OPTIONS = {
    "--trust-remote-code",
    "--trust-request-chat-template",
    "--tensor-parallel-size",
    "-tp",
    "--max-model-len",
    "--speculative-config",
    "--host",
    "--port",
    "--no-enable-prefix-caching",
    "--enable-prefix-caching",
}


def test_a_unique_prefix_is_the_option_an_ambiguous_one_nothing():
    assert resolve("--trust-remote", OPTIONS) == "--trust-remote-code"
    assert resolve("--trust_remote_c", OPTIONS) == "--trust-remote-code"
    assert resolve("--trust", OPTIONS) is None  # argparse: ambiguous option
    assert resolve("--max-model-len=8", OPTIONS) == "--max-model-len"
    assert resolve("-tp", OPTIONS) == "-tp" and resolve("8", OPTIONS) is None


def test_with_options_unknown_every_prefix_may_be_the_option():
    assert may_ask_for("--trust", "--trust-remote-code") and may_ask_for("--trust_rem", "--trust-remote-code")
    assert not may_ask_for("--no-trust-remote-code", "--trust-remote-code")
    assert not may_ask_for("--trust", "--trust-remote-code", OPTIONS)  # the release says: ambiguous
    assert not may_ask_for("--", "--trust-remote-code") and not may_ask_for("trust", "--trust-remote-code")


def test_canonical_spells_what_the_parser_reads_and_leaves_the_rest():
    argv = [
        "org/m",
        "--tensor_parallel",
        "2",
        "--hos=0.0.0.0",
        "--speculative_config.method",
        "mtp",
        "--trust",
        "--unknown-x",
        "1",
        "--max-model-len",
        "8",
    ]
    assert canonical(argv, OPTIONS) == [
        "org/m",
        "--tensor-parallel-size",
        "2",
        "--host=0.0.0.0",
        "--speculative-config.method",
        "mtp",
        "--trust",
        "--unknown-x",
        "1",
        "--max-model-len",
        "8",
    ]
    assert canonical(["--trust-rem"], OPTIONS, allow_abbrev=False) == ["--trust-rem"]
