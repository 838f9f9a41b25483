"""Only instructions are commands (issue 45, point 4): program output in a code block, a process
pattern that names `vllm serve`, an elided option value and a model written after options are read
as what they are, on real pages of the shared corpus where they occur and inline where they do not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from driftmatrix.extractor.catalog import extract
from driftmatrix.extractor.serve_args import parse_serve_args, placeholders_in
from driftmatrix.extractor.shell_commands import blank_log_lines
from driftmatrix.extractor.snippet_builder import Place, from_shell_text
from driftmatrix.runner.builds.resolve import stable_pin
from driftmatrix.runner.builds.targets import SEED_CPU

CORPUS = Path(__file__).parents[2].parent / "shared" / "corpus"
PRODUCTION_STACK = CORPUS / "thirdparty" / "production-stack-a6c01db"


def _page(path: Path):
    """The catalog of one Markdown page (or folder) and its diagnostics."""
    catalog, unusable = extract(sources=[path], stable=stable_pin(SEED_CPU), workers=1)
    assert unusable == []
    return catalog


def _markdown(tmp_path: Path, body: str):
    page = tmp_path / "page.md"
    page.write_text(body, encoding="utf-8")
    return _page(page)


def _shell(text: str):
    return from_shell_text(text, Place("markdown", "", "page.md", 1, context="fence:bash"))


def _fenced(lines: list[str], lang: str = "console") -> str:
    return "# Page\n\n```" + lang + "\n" + "\n".join(lines) + "\n```\n"


# -- 1. program output in a code block -------------------------------------------------------------


@pytest.mark.parametrize(
    "file, command",
    [
        # a kubectl command, its comments, then the pod's log (`INFO 03-08 20:42:31 api_server.py:912] …`)
        ("thirdparty/production-stack-a6c01db/tutorials/terraform/gke/README.md", "kubectl logs -f"),
        ("thirdparty/production-stack-a6c01db/tutorials/19-engine-sleep-wakeup-mode.md", None),  # `INFO:     10.1…`
        ("vllm-docs/0.33.0/docs/deployment/frameworks/lws.md", None),  # `(Worker_PP0_TP0 pid=601) INFO 04-28 …`
        ("vllm-docs/0.33.0/docs/usage/troubleshooting.md", None),  # `(EngineCore_0 pid=9492) …`
    ],
)
def test_real_log_lines_are_output_and_commands_next_to_them_are_kept(file, command):
    text = (CORPUS / file).read_text(encoding="utf-8")
    logs = [ln for ln in text.split("\n") if ln.lstrip().startswith(("INFO 0", "INFO:", "(Worker_", "(EngineCore_"))]
    assert logs, file
    kept = blank_log_lines("\n".join(logs))
    assert kept.strip() == "" and kept.count("\n") == len(logs) - 1  # blanked, lines keep their numbers
    if command:
        line = next(ln for ln in text.split("\n") if ln.startswith(command))
        assert blank_log_lines(line) == line


@pytest.mark.parametrize(
    "log",
    [
        "tests/entrypoints/test_serve.py::test_start[tp2] PASSED  Running: vllm serve Qwen/Qwen3-0.6B -tp 2",
        "PASSED tests/e2e/test_spec.py::test_eagle - vllm serve Qwen/Qwen3-0.6B --port 8001",
        "[2025-01-01 12:00:00] Running: vllm serve Qwen/Qwen3-0.6B --port 8000",
        "2025-01-01T12:00:00.1234567Z Running: vllm serve Qwen/Qwen3-0.6B --port 8000",
        "INFO 01-02 12:34:56 [api_server.py:123] Running: vllm serve Qwen/Qwen3-0.6B",
        "(APIServer pid=1234) INFO 01-02 12:34:56 [utils.py:233] Running: vllm serve Qwen/Qwen3-0.6B",
        "INFO:     started server process: vllm serve Qwen/Qwen3-0.6B",
        "WARNING 01-02 12:34:56 [arg_utils.py:1] vllm serve Qwen/Qwen3-0.6B --enforce-eager is slow",
    ],
)
def test_a_log_line_quoting_a_server_start_is_not_a_command(tmp_path, log):
    catalog = _markdown(tmp_path, _fenced(["$ vllm serve meta-llama/Llama-3.1-8B-Instruct", log]))
    assert [s.model for s in catalog.snippets] == ["meta-llama/Llama-3.1-8B-Instruct"]


# -- 2. process patterns that name `vllm serve` ----------------------------------------------------


@pytest.mark.parametrize(
    "pattern",
    [
        'pgrep -f "vllm serve"',
        "ps aux | grep 'vllm serve'",
        "ps -ef | grep \"vllm serve\" | awk '{print $2}'",
        "pkill -f 'vllm serve'",
        "sudo pkill -9 -f vllm serve",
        "/usr/bin/pgrep -af 'vllm serve Qwen/Qwen3-8B'",
        "watch -n 1 \"ps aux | grep 'vllm serve'\"",
    ],
)
def test_a_process_pattern_naming_vllm_serve_is_not_a_command(tmp_path, pattern):
    catalog = _markdown(tmp_path, _fenced(["vllm serve Qwen/Qwen3-0.6B &", pattern], "bash"))
    assert [(s.model, s.argv) for s in catalog.snippets] == [("Qwen/Qwen3-0.6B", ["Qwen/Qwen3-0.6B"])]
    assert not any(lint.code == "no-model" for s in catalog.snippets for lint in s.lints)


# -- 3. elided option values -----------------------------------------------------------------------


@pytest.mark.parametrize("version, line", [("0.20.1", 215), ("0.20.1", 224), ("0.33.0", 410)])
def test_real_elided_kv_transfer_config_is_a_placeholder(version, line):
    page = CORPUS / "vllm-docs" / version / "docs/features/nixl_connector_usage.md"
    option = page.read_text(encoding="utf-8").split("\n")[line - 1]  # `--kv-transfer-config '{..., "…": …}'`
    [s] = _shell(f"vllm serve Qwen/Qwen3-0.6B {option}")
    assert not s.runnable and s.reason == "placeholder: ..." and s.placeholders == ["..."]


@pytest.mark.parametrize(
    "value",
    [
        "'{...}'",
        "'{…}'",
        "<...>",
        "<…>",
        '\'{"method": "eagle3", ...}\'',
        "'[...]'",
    ],
)
@pytest.mark.parametrize("flag", ["--kv-transfer-config", "--speculative-config", "--compilation-config"])
def test_an_elided_value_is_a_placeholder_not_broken_json(tmp_path, flag, value):
    catalog = _markdown(tmp_path, _fenced([f"vllm serve Qwen/Qwen3-0.6B {flag} {value}"], "bash"))
    [s] = catalog.snippets
    assert not s.runnable and s.reason.startswith("placeholder: ") and s.placeholders
    assert s.speculative_config_error is None
    assert not any(d.code == "invalid-json" for d in catalog.diagnostics)


def test_broken_json_without_an_elision_is_still_reported(tmp_path):
    catalog = _markdown(tmp_path, _fenced(["vllm serve Qwen/Qwen3-0.6B --speculative-config '{\"method\": eagle3}'"]))
    [s] = catalog.snippets
    assert s.speculative_config_error is not None and s.runnable
    assert [d.code for d in catalog.diagnostics] == ["invalid-json"]


def test_real_placeholder_in_json_is_not_invalid_json():
    """recipes Kimi-K2.5.md: `--speculative-config '{"model": <eagle3_model_name>, …}'`: the reader's
    model goes where the JSON breaks."""
    catalog = _page(CORPUS / "recipes" / "8959cf6" / "moonshotai" / "Kimi-K2.5.md")
    [s] = [s for s in catalog.snippets if "<eagle3_model_name>" in s.placeholders]
    assert s.speculative_config_error is None and not s.runnable
    assert not any(d.code == "invalid-json" for d in catalog.diagnostics)


def test_real_shell_variable_in_json_is_not_invalid_json(snippets_from):
    """Kimi-K3's runbooks build `"num_speculative_tokens":$K` in a double-quoted value: the shell fills it in."""
    found = snippets_from("vllm-docs", "0.33.0", "recipes/models/moonshotai/Kimi-K3.yaml")
    held = [s for s in found if any(p in ("$K", "<K>") for p in s.placeholders)]
    assert len(held) == 3
    assert all(s.speculative_config_error is None and not s.runnable for s in held)


def test_a_real_json_value_is_unchanged_by_the_elision_rule():
    assert placeholders_in(json.dumps({"think_start_str": "<think>", "note": "wait..."}), []) == []
    assert placeholders_in("../models/qwen", []) == []


# -- 4. lints about a missing argument read positional arguments ---------------------------------


def test_real_model_written_after_an_option_is_the_model():
    """production-stack: `vllm serve \\ --task transcription openai/whisper-small \\ --host … --port 8002`
    (argparse gives `--task` one word; the next is the model): no `no-model` lint, and the id of the
    model-first spelling."""
    catalog = _page(PRODUCTION_STACK / "tutorials" / "23-whisper-api-transcription.md")
    [s] = catalog.snippets
    assert s.model == "openai/whisper-small" and s.runnable
    assert [lint.code for lint in s.lints] == []
    [first] = _shell("vllm serve openai/whisper-small --task transcription --host 0.0.0.0 --port 8002")
    assert s.id == first.id


@pytest.mark.parametrize(
    "args, model",
    [
        (["--port", "8000", "Qwen/Qwen3-0.6B"], "Qwen/Qwen3-0.6B"),
        (["-tp", "2", "Qwen/Qwen3-0.6B", "--port", "8000"], "Qwen/Qwen3-0.6B"),
        (["--enforce-eager", "Qwen/Qwen3-0.6B"], "Qwen/Qwen3-0.6B"),
        (["--trust-remote-code", "Qwen/Qwen3-0.6B"], "Qwen/Qwen3-0.6B"),
        (["--enable-prefix-caching", "Qwen/Qwen3-0.6B"], "Qwen/Qwen3-0.6B"),
    ],
)
def test_the_model_is_the_first_word_no_option_takes(args, model):
    assert parse_serve_args(args).model == model
    [s] = _shell("vllm serve " + " ".join(args))
    assert s.model == model and not any(lint.code == "no-model" for lint in s.lints)


@pytest.mark.parametrize(
    "args, model",
    [
        (["--task=transcription", "openai/whisper-small"], "openai/whisper-small"),  # `=`: the option's word is its own
        (["--served-model-name", "a", "b"], None),  # a list option takes both words
        (["--port", "8000"], None),
        (["--port", "8000", "..."], None),  # "and more arguments": not a model
    ],
)
def test_words_an_option_takes_are_not_the_model(args, model):
    """What the rule above must not take: it changes nothing here (these held before it too)."""
    assert parse_serve_args(args).model == model
