"""The allow-list plain mode runs by (runner/isolation/inert_args.py), against the shipped option history:
the red team's vectors are not inert, each named; honest commands of the real docs are; an option the
allow-list has never seen, or one added after the release it was reviewed through, is not."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from driftmatrix.flaghistory.commands import shipped
from driftmatrix.flaghistory.history import FlagHistory
from driftmatrix.runner.isolation import env_policy
from driftmatrix.runner.isolation.inert_args import REVIEWED_THROUGH, Reading, not_inert


@pytest.fixture(scope="module")
def history() -> FlagHistory:
    found = shipped()
    assert found is not None
    return found


def _what(argv, reading, env=None, ours=()):
    return [item.what for item in not_inert(argv, env or {}, reading, ours)]


RED_TEAM = {
    "0.32.0": [
        (["--structured-outputs-config", '{"reasoning_parser_plugin": "planted.py"}'], "reasoning_parser_plugin"),
        (["--structured-outputs-config.reasoning_parser_plugin", "planted.py"], "--structured-outputs-config"),
        (["--structured-outputs-config", '{"reasoning_parser_plugin": "../../logs/x.py"}'], "reasoning_parser_plugin"),
        (["--logging-config", '{"pylogging_config_file": "f.json"}'], "--logging-config"),
        (["--kv-transfer-config", '{"kv_connector": "X", "kv_connector_module_path": "evil"}'], "module_path"),
        (["--ec-transfer-config", '{"ec_connector": "X", "ec_connector_module_path": "evil"}'], "module_path"),
        (["--compilation-config", '{"backend": "evil.module.compile"}'], "backend"),
        (["--model-class-overrides", '{"LlamaForCausalLM": "evil.Model"}'], "--model-class-overrides"),
        (["--chat-template", "/etc/hostname"], "--chat-template"),
        (["--config", "cfg.yaml"], "--config"),
        (["--trust-remote-code"], "--trust-remote-code"),
        (["--tool-parser-plugin", "p.py", "--tool-call-parser", "mine"], "--tool-parser-plugin"),
    ],
    "0.20.1": [
        (["--log-config-file", "factory.json"], "--log-config-file"),
        (["--structured-outputs-config", '{"reasoning_parser_plugin": "planted.py"}'], "reasoning_parser_plugin"),
    ],
}


@pytest.mark.parametrize(("version", "argv", "named"), [(v, a, n) for v, cases in RED_TEAM.items() for a, n in cases])
def test_every_vector_is_not_inert_and_named(history, version, argv, named):
    found = _what(["Qwen/Qwen3-0.6B", *argv], Reading.of(history, version))
    assert any(named in what for what in found), found


HONEST = [
    "Qwen/Qwen3-8B",
    "--max-model-len",
    "4096",
    "--tensor-parallel-size",
    "2",
    "--gpu-memory-utilization",
    "0.9",
    "--enable-auto-tool-choice",
    "--tool-call-parser",
    "hermes",
    "--speculative-config",
    '{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4}',
    "--served-model-name",
    "qwen",
    "--dtype",
    "bfloat16",
    "--host",
    "0.0.0.0",
    "--port",
    "8000",
    "--max-num-batched-tokens",
    "8k",
    "-O3",
]


@pytest.mark.parametrize("version", ["0.20.1", "0.32.0"])
def test_an_honest_command_is_inert(history, version):
    assert _what(HONEST, Reading.of(history, version), {"VLLM_USE_V1": "1", "OMP_NUM_THREADS": "4"}) == []


def test_a_value_outside_vllms_own_is_not_inert_but_ours_is(history):
    reading = Reading.of(history, "0.32.0")
    assert _what(["m/x", "--tool-call-parser", "planted_parser"], reading) == ["`--tool-call-parser`"]
    assert (
        _what(
            ["/srv/ours/model", "--chat-template", "/srv/ours/t.jinja"],
            reading,
            ours={"/srv/ours/model", "/srv/ours/t.jinja"},
        )
        == []
    )
    assert _what(["/models/theirs"], reading) == ["`/models/theirs`"]


def test_an_option_the_allow_list_never_saw_is_not_inert(history):
    reading = Reading.of(history, "0.32.0")
    assert _what(["m/x", "--added-by-a-newer-build", "3"], reading) == ["`--added-by-a-newer-build`"]
    # a history read after a newer release: its new options stay out until the list is reviewed again
    data = copy.deepcopy(history.data)
    newer = "0.99.0"
    data["releases"].append(newer)
    data["flags"]["--new-int-option"] = {"added": newer, "removed": None}
    data["args"]["--new-int-option"] = {"one:int": {"added": newer, "removed": None}}
    later = FlagHistory(json.loads(json.dumps(data)))
    found = not_inert(["m/x", "--new-int-option", "3", "--max-model-len", "4096"], {}, Reading.of(later, newer))
    assert [f.what for f in found] == ["`--new-int-option`"]
    assert REVIEWED_THROUGH in found[0].why


def test_no_history_for_the_build_is_not_inert(history):
    assert not_inert(["m/x"], {}, Reading.of(history, "0.1.0")) != []


def test_env_values_must_be_plain(history):
    reading = Reading.of(history, "0.32.0")
    env = env_policy.docs_env({"VLLM_ATTENTION_BACKEND": "TORCH_SDPA", "VLLM_SOME_SETTING": "a/b.py"})[0]
    assert _what(["m/x"], reading, env) == ["env `VLLM_SOME_SETTING`"]


def test_the_real_docs_hold_inert_commands(history, corpus, tmp_path):
    """Of vLLM 0.33.0's docs, many commands are inert on 0.32.0 and every --trust-remote-code one is not."""
    out = tmp_path / "s.json"
    subprocess.run(
        [
            str(Path(sys.executable).with_name("driftmatrix")),
            "extract",
            "-q",
            "-o",
            str(out),
            str(corpus / "vllm-docs" / "0.33.0"),
        ],
        check=True,
        capture_output=True,
    )
    reading = Reading.of(history, "0.32.0")
    snippets = [s for s in json.loads(out.read_text())["snippets"] if s["kind"] != "python"]
    inert = [s for s in snippets if not not_inert(s["argv"], {}, reading)]
    remote = [s for s in snippets if any(a.startswith("--trust-remote-code") for a in s["argv"])]
    assert len(inert) > len(snippets) / 4
    assert remote and not any(s in inert for s in remote)


def test_docs_env_values_that_name_paths_or_forge_logs_are_dropped():
    """Point 5: a value vLLM opens, creates or prunes, and the log prefix, are dropped with why."""
    dropped = env_policy.dropped_why(
        {
            "VLLM_HUMMING_W4_QUANT_CONFIG": "/etc/hostname",
            "VLLM_MEDIA_CACHE": "media",
            "VLLM_SOME_FOLDER_SETTING": "../../logs",
            "VLLM_LOGGING_PREFIX": "ERROR ",
            "VLLM_ATTENTION_BACKEND": "FLASH_ATTN",
            "VLLM_USE_V1": "1",
        }
    )
    assert set(dropped) == {
        "VLLM_HUMMING_W4_QUANT_CONFIG",
        "VLLM_MEDIA_CACHE",
        "VLLM_SOME_FOLDER_SETTING",
        "VLLM_LOGGING_PREFIX",
    }
    assert "path" in dropped["VLLM_HUMMING_W4_QUANT_CONFIG"] and "log" in dropped["VLLM_LOGGING_PREFIX"]
