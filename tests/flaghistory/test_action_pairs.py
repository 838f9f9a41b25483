"""The option strings vLLM's own argparse action makes (flaghistory/action_pairs.py): read from each
release's sources — the class FlexibleArgumentParser registers for BooleanOptionalAction and its
prefix table — never assumed; real releases from PyPI, and small source trees that change the table."""

from __future__ import annotations

import pytest

from driftmatrix.flaghistory.build import build, read_sources
from driftmatrix.flaghistory.history import SHIPPED, FlagHistory
from driftmatrix.runner.settings import cache_dir

SERVE = """
import argparse
from vllm.utils.argparse_utils import FlexibleArgumentParser

class ServeSubcommand:
    def subparser_init(self, subparsers):
        serve_parser = subparsers.add_parser("serve")
        serve_parser.add_argument("--enable-log-requests", action=argparse.BooleanOptionalAction)
        serve_parser.add_argument("--use-tqdm", action=argparse.BooleanOptionalAction)
        serve_parser.add_argument("--disable-frontend", action="store_true")
        return serve_parser
"""

PARSER = """
from argparse import ArgumentParser, BooleanOptionalAction

class PairedAction(BooleanOptionalAction):
{table}

class FlexibleArgumentParser(ArgumentParser):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.register("action", BooleanOptionalAction, PairedAction)
"""


def _read(table: str):
    return read_sources(
        "9.9.9",
        {
            "vllm/entrypoints/cli/serve.py": SERVE,
            "vllm/utils/argparse_utils.py": PARSER.format(table=table),
        },
    )


def test_the_pairs_are_the_release_s_own_table():
    vllm_s = _read('    _inverse_prefixes = {"--enable-": "--disable-", "--disable-": "--enable-"}')
    assert {"--disable-log-requests", "--no-enable-log-requests", "--enable-log-requests"} <= set(vllm_s.options)
    assert vllm_s.args["--disable-log-requests"] == "none" and not vllm_s.diagnostics
    # a store_true flag is no BooleanOptionalAction: nothing is paired with it
    assert "--enable-frontend" not in vllm_s.options and "--no-disable-frontend" not in vllm_s.options
    other = _read('    _inverse_prefixes = {"--use-": "--skip-"}')
    assert "--skip-tqdm" in other.options and "--disable-log-requests" not in other.options


def test_an_action_whose_table_cannot_be_read_is_a_diagnostic_not_a_guess():
    unread = _read("    _inverse_prefixes = make_table()")
    assert "--disable-log-requests" not in unread.options and "--no-enable-log-requests" in unread.options
    assert any("registers PairedAction for BooleanOptionalAction" in d for d in unread.diagnostics), unread.diagnostics


@pytest.mark.network
def test_vllm_0_33_pairs_every_boolean_pair_and_the_shipped_history_has_them():
    """vLLM 0.33.0's FlexibleArgumentParser registers EnableDisableAction (0.32.0's does not): its
    `--enable-x`/`--disable-x` pairs are read from the sdists and the shipped history holds the same."""
    releases = ["0.16.0", "0.17.0", "0.32.0", "0.33.0", "0.34.0"]
    fresh = FlagHistory(build(cache_dir() / "flag-history", only=releases))
    shipped = FlagHistory.load(SHIPPED)
    said = {r: fresh.accepts("--disable-log-requests", r) for r in releases}
    assert said == {"0.16.0": True, "0.17.0": False, "0.32.0": False, "0.33.0": True, "0.34.0": True}
    for release in releases:
        assert fresh.options(release) == shipped.options(release), release
    # every BooleanOptionalAction named `--enable-x` or `--disable-x` adds its inverse: 50 strings on
    # 0.33.0 (433 → 483), 51 on 0.34.0 (443 → 494); none on 0.32.0, whose parser registers no action
    inverses = {r: {o for o in fresh.options(r) if o.startswith(("--enable-", "--disable-"))} for r in releases}
    assert "--disable-prefix-caching" in inverses["0.34.0"] and "--enable-prefix-caching" in inverses["0.34.0"]
    assert "--disable-prefix-caching" not in inverses["0.32.0"] and "--enable-prefix-caching" in inverses["0.32.0"]
    paired = {
        r: {
            o
            for o in inverses[r]
            if o.replace("--enable-", "--disable-", 1) in inverses[r] and o != o.replace("--enable-", "--disable-", 1)
        }
        for r in releases
    }
    assert len(paired["0.33.0"]) >= 50 and len(paired["0.34.0"]) >= 51
