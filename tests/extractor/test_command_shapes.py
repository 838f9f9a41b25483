"""Command shapes in the real docs (issue 21): wrappers in front of `vllm serve`, other vLLM
subcommands given a speculative config, commands nested in strings, and placeholders that are
(and are not) the reader's to fill in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from driftmatrix.extractor.python_calls import from_python
from driftmatrix.extractor.snippet_builder import Place, from_shell_text


def _line_of(path: Path, needle: str, start: int = 1) -> int:
    lines = path.read_text(encoding="utf-8").split("\n")
    return next(i for i, ln in enumerate(lines, 1) if i >= start and needle in ln)


def _shell(text: str):
    return from_shell_text(text, Place("markdown", "", "page.md", 10, context="fence:bash"))


@pytest.mark.parametrize("version", ["0.20.1", "0.33.0"])
def test_nsys_profile_in_front_of_vllm_serve_is_recorded_not_run(corpus, snippets_from, version):
    page = corpus / "vllm-docs" / version / "docs/contributing/profiling.md"
    [s] = [s for s in snippets_from("vllm-docs", version, "docs/contributing/profiling.md") if s.wrapper]
    assert s.wrapper[:2] == ["nsys", "profile"] and "--trace-fork-before-exec=true" in s.wrapper
    assert s.kind == "serve" and s.model == "meta-llama/Llama-3.1-8B-Instruct" and s.runnable
    assert s.argv[0] == "meta-llama/Llama-3.1-8B-Instruct" and "nsys" not in s.argv
    src = next(x for x in s.sources if x.version == version)
    lines = page.read_text(encoding="utf-8").split("\n")
    assert lines[src.line - 1].startswith("nsys profile")  # the command's first line …
    assert any("vllm serve meta-llama" in ln for ln in lines[src.line : src.line + 8])  # … is the server's


@pytest.mark.parametrize(
    "text, wrapper, model",
    [
        (
            "numactl --cpunodebind=0 --membind=0 vllm serve Qwen/Qwen3-0.6B",
            ["numactl", "--cpunodebind=0", "--membind=0"],
            "Qwen/Qwen3-0.6B",
        ),
        ("taskset -c 0-7 vllm serve Qwen/Qwen3-0.6B --port 8001", ["taskset", "-c", "0-7"], "Qwen/Qwen3-0.6B"),
        ("timeout -s KILL 600 vllm serve Qwen/Qwen3-0.6B", ["timeout", "-s", "KILL", "600"], "Qwen/Qwen3-0.6B"),
        (
            "sudo -E nohup python -m vllm.entrypoints.cli.main serve Qwen/Qwen3-0.6B &",
            ["sudo", "-E", "nohup"],
            "Qwen/Qwen3-0.6B",
        ),
        (
            "kubectl exec -it vllm-0 -- env HF_HOME=/cache vllm serve facebook/opt-125m",
            ["kubectl", "exec", "-it", "vllm-0", "--", "env"],
            "facebook/opt-125m",
        ),
        (
            "perf record -g -o out.data -- VLLM_LOGGING_LEVEL=DEBUG vllm serve facebook/opt-125m",
            ["perf", "record", "-g", "-o", "out.data", "--"],
            "facebook/opt-125m",
        ),
    ],
)
def test_any_wrapper_program_is_peeled_and_recorded(text, wrapper, model):
    [s] = _shell(text)
    assert (s.wrapper, s.model, s.kind) == (wrapper, model, "serve")
    assert all(w not in s.argv for w in wrapper)


@pytest.mark.parametrize(
    "text",
    [
        "echo vllm serve Qwen/Qwen3-0.6B",
        "pip install vllm",
        "grep -r vllm serve .",
        "uv pip install vllm serve",
        "cd vllm && ls",
    ],
)
def test_words_that_only_mention_vllm_are_not_commands(text):
    assert _shell(text) == []


@pytest.mark.parametrize("version, line", [("0.20.1", 568), ("0.33.0", 881)])
def test_vllm_bench_with_a_speculative_config_is_a_subcommand_snippet(corpus, snippets_from, version, line):
    page = corpus / "vllm-docs" / version / "docs/benchmarking/cli.md"
    found = [s for s in snippets_from("vllm-docs", version, "docs/benchmarking/cli.md") if s.kind == "subcommand"]
    [s] = [s for s in found if s.subcommand == ["bench", "throughput"]]
    assert s.id.startswith("c-") and s.model == "meta-llama/Meta-Llama-3-8B-Instruct" and s.runnable
    assert s.speculative_config == {
        "method": "ngram",
        "num_speculative_tokens": 5,
        "prompt_lookup_max": 5,
        "prompt_lookup_min": 2,
    }
    assert "bench" not in s.argv and "--speculative-config" in s.argv
    assert s.env == {"VLLM_WORKER_MULTIPROC_METHOD": "spawn"}  # its line is the command's first: the env prefix
    assert next(x.line for x in s.sources if x.version == version) == _line_of(page, "vllm bench throughput", line) - 1
    # `vllm bench serve` without a speculative config is a benchmark client, not a snippet
    assert not [s for s in found if s.subcommand == ["bench", "serve"]]


def test_run_batch_and_python_module_forms_are_subcommands_too():
    [a, b] = _shell(
        "vllm run-batch -i in.jsonl -o out.jsonl --model Qwen/Qwen3-0.6B "
        '-sc \'{"method": "ngram", "num_speculative_tokens": 2}\'\n'
        "python -m vllm.entrypoints.cli.main bench latency --model Qwen/Qwen3-0.6B "
        "--speculative-config.method ngram --speculative-config.num_speculative_tokens 2"
    )
    assert (a.kind, a.subcommand, a.model) == ("subcommand", ["run-batch"], "Qwen/Qwen3-0.6B")
    assert a.speculative_config == {"method": "ngram", "num_speculative_tokens": 2}
    assert (b.subcommand, b.speculative_config) == (
        ["bench", "latency"],
        {"method": "ngram", "num_speculative_tokens": 2},
    )
    assert a.id != b.id


@pytest.mark.parametrize("version", ["0.20.1", "0.33.0"])
def test_serve_cmd_in_a_quoted_option_is_extracted_at_the_strings_line(corpus, snippets_from, version):
    page = corpus / "vllm-docs" / version / "docs/benchmarking/sweeps.md"
    nested = [
        s
        for s in snippets_from("vllm-docs", version, "docs/benchmarking/sweeps.md")
        if any("--serve-cmd" in x.context for x in s.sources)
    ]
    assert nested and all(s.model == "meta-llama/Llama-2-7b-chat-hf" and s.runnable for s in nested)
    lines = sorted({x.line for s in nested for x in s.sources if x.version == version})
    assert lines[0] == _line_of(page, "--serve-cmd 'vllm serve")
    assert all("vllm serve" in page.read_text().split("\n")[n - 1] for n in lines)


def test_python_strings_and_argument_lists_hold_commands():
    code = """import os, subprocess
model = "Qwen/Qwen3-0.6B"
proc = subprocess.Popen(["vllm", "serve", model, "--port", "8000",
    "--speculative-config", '{"method": "ngram", "num_speculative_tokens": 3}'])
os.system("vllm serve facebook/opt-125m --max-model-len 512")
cmd = f"vllm serve {other_model} --port 1"
subprocess.run(["bash", "-c", "sleep 1 && vllm serve meta-llama/Llama-3.2-1B"])
print("install vllm first")
"""
    found, diags = from_python(code, Place("markdown", "", "page.md", 20, context="fence:python"))
    assert diags == []
    by_model = {s.model: s for s in found}
    listed = by_model["Qwen/Qwen3-0.6B"]
    assert listed.speculative_config == {"method": "ngram", "num_speculative_tokens": 3} and listed.runnable
    assert listed.sources[0].line == 22 and "argument list" in listed.sources[0].context
    assert by_model["facebook/opt-125m"].sources[0].line == 24
    assert by_model["meta-llama/Llama-3.2-1B"].sources[0].line == 26
    assert not by_model["{other_model}"].runnable  # a replacement field is the reader's value
    assert len(found) == 4


@pytest.mark.parametrize("version", ["0.20.1", "0.33.0"])
def test_a_docstring_holding_the_serve_command_is_read(corpus, snippets_from, version):
    page = corpus / "vllm-docs" / version / "docs/features/interleaved_thinking.md"
    [s] = [s for s in snippets_from("vllm-docs", version, "docs/features/interleaved_thinking.md") if s.kind == "serve"]
    assert s.model == "MiniMaxAI/MiniMax-M2" and "--enable-auto-tool-choice" in s.argv
    assert next(x.line for x in s.sources if x.version == version) == _line_of(page, "vllm serve MiniMaxAI")


def test_image_placeholders_make_a_docker_command_not_runnable(snippets_from):
    [s] = [
        s
        for s in snippets_from("vllm-docs", "0.33.0", "docs/getting_started/installation/gpu.rocm.inc.md")
        if s.image and "<tag>" in s.image
    ]
    assert not s.runnable and "<tag>" in s.placeholders


@pytest.mark.parametrize(
    "file", ["docs/getting_started/installation/cpu.x86.inc.md", "docs/getting_started/installation/gpu.cuda.inc.md"]
)
def test_an_args_placeholder_is_never_the_model(snippets_from, file):
    found = [s for s in snippets_from("vllm-docs", "0.33.0", file) if "<args...>" in s.argv]
    assert found and all(s.model is None and not s.runnable and "<args...>" in s.placeholders for s in found)


@pytest.mark.parametrize(
    "file, word",
    [
        ("docs/features/lora.md", "model"),
        ("docs/training/weight_transfer/README.md", "my-model"),
        ("docs/features/watermarking.md", "MODEL"),
    ],
)
def test_placeholder_words_are_not_models(snippets_from, file, word):
    found = [s for s in snippets_from("vllm-docs", "0.33.0", file) if word in s.argv[:1]]
    assert found and all(s.model is None and not s.runnable and word in s.placeholders for s in found)


def test_more_placeholder_words_can_be_given(tmp_path):
    from driftmatrix.extractor.catalog import extract
    from driftmatrix.runner.builds.resolve import stable_pin
    from driftmatrix.runner.builds.targets import SEED_CPU

    page = tmp_path / "runbook.md"
    page.write_text("# Runbook\n\n```bash\nvllm serve the-model-you-picked --port 8000\n```\n")
    catalog, _ = extract(stable=stable_pin(SEED_CPU), sources=[page], placeholder_models=["the-model-you-picked"])
    [s] = catalog.snippets
    assert s.model is None and s.placeholders == ["the-model-you-picked"] and not s.runnable


def test_more_placeholder_words_add_to_the_shipped_ones_for_that_run_only(tmp_path):
    """`--placeholder-model X` once replaced the shipped words (`my-model` turned into a model to fetch)
    and stayed for every later extraction in the process: the words are now an argument of the run."""
    from driftmatrix.extractor.catalog import extract
    from driftmatrix.runner.builds.resolve import stable_pin
    from driftmatrix.runner.builds.targets import SEED_CPU

    page = tmp_path / "runbook.md"
    page.write_text(
        "# Runbook\n\n```bash\nvllm serve the-model-you-picked --port 8000\n```\n\n"
        "```bash\nvllm serve my-model --port 8000\n```\n"
    )
    given, _ = extract(stable=stable_pin(SEED_CPU), sources=[page], placeholder_models=["the-model-you-picked"])
    assert sorted(p for s in given.snippets for p in s.placeholders) == ["my-model", "the-model-you-picked"]
    assert all(s.model is None and not s.runnable for s in given.snippets)
    plain, _ = extract(stable=stable_pin(SEED_CPU), sources=[page])
    [chosen] = [s for s in plain.snippets if "the-model-you-picked" in s.argv]
    assert chosen.model == "the-model-you-picked" and chosen.placeholders == []


@pytest.mark.parametrize("version", ["0.20.1", "0.33.0"])
def test_angle_brackets_inside_json_strings_are_tokens_not_placeholders(snippets_from, version):
    found = [
        s
        for s in snippets_from("vllm-docs", version, "docs/features/reasoning_outputs.md")
        if "--reasoning-config" in s.argv
    ]
    assert found
    for s in found:
        config = json.loads(s.argv[s.argv.index("--reasoning-config") + 1])
        assert "<think>" in json.dumps(config)
        assert s.runnable and s.placeholders == [], (s.placeholders, s.reason)


def test_a_placeholder_in_a_json_model_value_still_counts():
    [s] = _shell(
        'vllm serve Qwen/Qwen3-8B --speculative-config \'{"model": "<draft-model>", '
        '"num_speculative_tokens": 2}\' --chat-template-kwargs \'{"stop": "<image>"}\''
    )
    assert s.placeholders == ["<draft-model>"] and not s.runnable


def test_a_placeholder_word_keeps_the_commands_id():
    """The id hashes the model position as written: a command whose first word stopped counting as a
    model (`vllm serve model …`) keeps the id its recorded outcomes and history are filed under."""
    from driftmatrix.extractor.serve_args import parse_serve_args

    assert parse_serve_args(["model", "--port", "8000"]).canonical() == ["model", "--port", "8000"]
    assert parse_serve_args(["<args...>"]).canonical() == ["<args...>"]
    [s] = _shell("vllm serve model --enable-lora --max-lora-cls-labels 8")
    assert s.id == "s-ba932ed14119" and s.model is None  # as in tests/fixtures/site/snippets.json
