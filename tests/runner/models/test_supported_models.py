"""The architecture vLLM's own supported-models table names for a model id (runner/models/supported_models.py),
read from the real 0.33.0 docs: where an offline twin's architecture comes from."""

from __future__ import annotations

import pytest

from driftmatrix.runner.models import supported_models, twins


@pytest.mark.parametrize(
    "model, architecture, listed",
    [
        ("Qwen/Qwen3-30B-A3B", "Qwen3MoeForCausalLM", "Qwen/Qwen3-30B-A3B"),  # as listed
        ("qwen/qwen3-30b-a3b", "Qwen3MoeForCausalLM", "Qwen/Qwen3-30B-A3B"),  # hub ids are case-insensitive
        ("Qwen/Qwen3-8B-FP8", "Qwen3ForCausalLM", "Qwen/Qwen3-8B"),  # re-quantized checkpoint
        ("Qwen/Qwen3-VL-8B-Instruct", "Qwen3VLForConditionalGeneration", "Qwen/Qwen3-VL-4B-Instruct"),  # another size
        ("zai-org/GLM-4.5-Air", "Glm4MoeForCausalLM", "zai-org/GLM-4.5"),  # a variant of a listed id
        ("deepseek-ai/DeepSeek-V3-0324", "DeepseekV3ForCausalLM", "deepseek-ai/DeepSeek-V3"),  # a dated release
        ("zai-org/GLM-4.5V", "Glm4vMoeForConditionalGeneration", "zai-org/GLM-4.5V"),  # not GLM-4.5's
        ("nvidia/DeepSeek-V3-FP4", "DeepseekV3ForCausalLM", "deepseek-ai/DeepSeek-V3"),  # re-published elsewhere
    ],
)
def test_a_listed_model_or_its_variant_gets_the_table_architecture(corpus, model, architecture, listed):
    found = supported_models.architecture_for(model, corpus / "vllm-docs" / "0.33.0", "0.33.0")
    assert found is not None and (found.architecture, found.listed_as) == (architecture, listed)
    assert found.table == "docs/models/supported_models.md of vLLM 0.33.0"


@pytest.mark.parametrize(
    "model",
    [
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",  # a Qwen2 distilled from R1: not R1's architecture
        # a Qwen3 distilled from R1-0528: a variant suffix with a size of its own is another model (it was
        # taken for DeepSeek-R1's DeepseekV3 and would have got a DeepSeek twin)
        "Intel/DeepSeek-R1-0528-Qwen3-8B-int4-AutoRound",
        "acme/unlisted-7B",
        "Qwen/Qwen3-Next",  # no size, not listed as such
    ],
)
def test_a_near_name_of_another_kind_gets_none(corpus, model):
    assert supported_models.architecture_for(model, corpus / "vllm-docs" / "0.33.0", "0.33.0") is None


def test_without_the_target_docs_nothing_is_guessed(tmp_path):
    assert supported_models.architecture_for("Qwen/Qwen3-8B", None) is None
    assert supported_models.architecture_for("Qwen/Qwen3-8B", tmp_path) is None


@pytest.mark.parametrize(
    "model, family",
    [
        ("Qwen/Qwen3-8B", "qwen3"),
        ("Qwen/Qwen3-0.6B-FP8", "qwen3"),
        ("NousResearch/Hermes-3-Llama-3.1-8B", "llama"),
        ("meta-llama/Llama-3.2-1B", "llama"),
        ("google/gemma-4-31B-it", "gemma4"),
        # a later generation, a mixture of experts, another kind: architectures of their own, never a
        # dense Qwen3 / Llama twin (before, 213 commands of the 0.33.0 docs got one, Qwen3.5 and Qwen3-VL among them)
        ("Qwen/Qwen3.5-4B", None),
        ("Qwen/Qwen3.6-27B", None),
        ("Qwen/Qwen3-VL-32B", None),
        ("Qwen/Qwen3-30B-A3B", None),
        ("Qwen/Qwen3-Next-80B-A3B-Instruct", None),
        ("Qwen/Qwen3-TTS-12Hz-1.7B-Base", None),
        ("meta-llama/Llama-4-Scout-17B-16E-Instruct", None),
        ("meta-llama/Llama-3.2-11B-Vision-Instruct", None),
        ("nvidia/Llama-3.1-Nemotron-Nano-8B-v1", None),
    ],
)
def test_the_model_id_family_is_only_the_dense_decoders(model, family):
    assert twins.family_of(model) == family


def test_a_size_and_release_suffix_find_the_listed_family(corpus):
    found = supported_models.architecture_for("Qwen/Qwen3.5-4B", corpus / "vllm-docs" / "0.33.0", "0.33.0")
    assert found is not None and found.architecture.startswith("Qwen3_5")
