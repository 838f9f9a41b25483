"""Twins: built offline in each target env (served for real with `run --stand-ins` in
test_twins_served.py, a module of its own so that pytest-xdist's --dist loadfile can run the two
side by side)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest
from runhelp import CACHE, HERE

from driftmatrix.runner.builds.targets import SEED_CPU
from driftmatrix.runner.models.twins import TwinError, build

REPO = HERE.parent.parent

# The shape of meta-llama/Llama-3.1-8B-Instruct's published config.json (the input a twin
# is made from when the hub or a local copy provides it).
LLAMA31 = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "rms_norm_eps": 1e-05,
    "tie_word_embeddings": False,
    "rope_theta": 500000.0,
    "rope_scaling": {
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
        "rope_type": "llama3",
    },
    "bos_token_id": 128000,
    "eos_token_id": [128001, 128008, 128009],
    "torch_dtype": "bfloat16",
}


def sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_cli_twin_from_transformers_defaults_is_deterministic(cpu_envs, tmp_path):
    for name in ("a", "b"):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "driftmatrix.cli",
                "standin",
                "Qwen/Qwen3-0.6B",
                "-o",
                str(tmp_path / name),
                "--targets",
                str(SEED_CPU),
                "--target",
                "nightly",
                "--cache-dir",
                str(CACHE),
            ],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    assert record["family"] == "qwen3" and record["config_source"].startswith("transformers Qwen3Config() defaults")
    cfg = json.loads((tmp_path / "a" / "config.json").read_text())
    assert cfg["architectures"] == ["Qwen3ForCausalLM"] and cfg["model_type"] == "qwen3"
    assert cfg["max_position_embeddings"] == 32768 and cfg["hidden_size"] == 64 and cfg["head_dim"] == 32
    assert sha(tmp_path / "a" / "model.safetensors") == sha(tmp_path / "b" / "model.safetensors")
    assert sha(tmp_path / "a" / "tokenizer.json") == sha(tmp_path / "b" / "tokenizer.json")


def test_twin_from_a_real_config_keeps_its_structure(cpu_envs, tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "config.json").write_text(json.dumps(LLAMA31))
    for name, env in cpu_envs.items():  # each env's own transformers writes its own layout
        twin = build(str(tmp_path / "src"), env, tmp_path / name, cache=CACHE)
        assert twin.family == "llama" and twin.config_source.startswith("config.json from")
        assert twin.transformers == env.info["transformers"]
        cfg = json.loads((tmp_path / name / "config.json").read_text())
        rope = cfg.get("rope_parameters") or cfg.get("rope_scaling")
        assert rope["rope_type"] == "llama3" and rope["factor"] == 8.0
        assert cfg["max_position_embeddings"] == 131072 and cfg["tie_word_embeddings"] is False
        assert cfg["num_key_value_heads"] < cfg["num_attention_heads"]  # grouped-query stays grouped
        assert cfg["hidden_size"] == 64 and cfg["vocab_size"] == 2000


def test_draft_twin_shares_the_tokenizer(tiny_models):
    """The session's Qwen3 twin and its 1-layer draft (tests/runner/conftest.py: built by the same
    `build(..., layers=1, tokenizer_from=...)`, through the twin cache, for the served tests)."""
    t_dir, d_dir = tiny_models["target"], tiny_models["draft"]
    assert sha(t_dir / "tokenizer.json") == sha(d_dir / "tokenizer.json")
    t, d = (json.loads((x / "config.json").read_text()) for x in (t_dir, d_dir))
    assert t["vocab_size"] == d["vocab_size"] and d["num_hidden_layers"] == 1


def test_a_model_without_any_configuration_is_refused(cpu_envs, tmp_path, corpus):
    with pytest.raises(
        TwinError, match="no configuration for acme/unlisted-7B: .*not in docs/models/supported_models.md"
    ):
        build(
            "acme/unlisted-7B",
            cpu_envs["nightly"],
            tmp_path / "x",
            cache=CACHE,
            docs_root=corpus / "vllm-docs" / "0.33.0",
        )


def _safetensors_params(model_dir) -> int:
    """Parameter count from the safetensors headers (no torch in the test env)."""
    import struct

    total = 0
    for path in model_dir.glob("*.safetensors"):
        with open(path, "rb") as f:
            (size,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(size))
        for name, meta in header.items():
            if name != "__metadata__":
                n = 1
                for d in meta["shape"]:
                    n *= d
                total += n
    return total


def test_full_size_twin_keeps_the_real_sizes(cpu_envs, tmp_path):
    """`--full-size` (the perf tier's twins): the published Qwen3-0.6B sizes, a tokenizer padded
    to the full vocabulary so every id the random weights emit decodes to text."""
    source = json.loads((REPO / "benchmarks" / "gpu" / "configs" / "Qwen3-0.6B" / "config.json").read_text())
    twin = build(
        "Qwen/Qwen3-0.6B",
        cpu_envs["nightly"],
        tmp_path / "full",
        cache=CACHE,
        config_from=str(REPO / "benchmarks" / "gpu" / "configs" / "Qwen3-0.6B"),
        full_size=True,
    )
    cfg = json.loads((tmp_path / "full" / "config.json").read_text())
    for key in (
        "hidden_size",
        "intermediate_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "vocab_size",
        "tie_word_embeddings",
    ):
        assert cfg[key] == source[key], key
    assert twin.full_size and twin.layers == source["num_hidden_layers"]
    vocab = json.loads((tmp_path / "full" / "tokenizer.json").read_text())["model"]["vocab"]
    assert sorted(vocab.values()) == list(range(source["vocab_size"]))  # every id has a token
    assert vocab.get("<unused0>") is not None
    params = _safetensors_params(tmp_path / "full")
    assert 0.55e9 < params < 0.65e9  # Qwen3-0.6B: 0.60 B with tied embeddings
    assert any(n.startswith("full size: 0.6") for n in twin.notes)


def test_full_size_gemma4_twin_keeps_the_source_layout(cpu_envs, tmp_path):
    """The Gemma 4 path of `--full-size`: nothing shrunk — all layers of the pattern, head sizes,
    per-layer embeddings, KV sharing and the vision tower as the source config has them."""
    text = {
        "model_type": "gemma4_text",
        "hidden_size": 128,
        "intermediate_size": 256,
        "num_hidden_layers": 6,
        "layer_types": ["sliding_attention", "sliding_attention", "full_attention"] * 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 64,
        "global_head_dim": 128,
        "hidden_size_per_layer_input": 32,
        "vocab_size_per_layer_input": 4096,
        "vocab_size": 4096,
        "num_kv_shared_layers": 2,
        "sliding_window": 512,
    }
    vision = {
        "model_type": "gemma4_vision",
        "hidden_size": 96,
        "intermediate_size": 192,
        "num_hidden_layers": 3,
        "num_attention_heads": 2,
        "num_key_value_heads": 2,
        "head_dim": 48,
    }
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "config.json").write_text(
        json.dumps(
            {
                "model_type": "gemma4",
                "architectures": ["Gemma4ForConditionalGeneration"],
                "text_config": text,
                "vision_config": vision,
            }
        )
    )
    env = cpu_envs["stable"]  # transformers 5.8: the layout with global_head_dim
    twin = build(
        "google/gemma-4-E2B-it", env, tmp_path / "t", cache=CACHE, config_from=str(tmp_path / "src"), full_size=True
    )
    cfg = json.loads((tmp_path / "t" / "config.json").read_text())
    built_text, built_vision = cfg["text_config"], cfg["vision_config"]
    for key in (
        "hidden_size",
        "intermediate_size",
        "num_hidden_layers",
        "layer_types",
        "head_dim",
        "global_head_dim",
        "hidden_size_per_layer_input",
        "num_kv_shared_layers",
        "vocab_size",
    ):
        assert built_text[key] == text[key], key
    for key in ("hidden_size", "num_hidden_layers", "head_dim"):
        assert built_vision[key] == vision[key], key
    assert twin.full_size and twin.layers == 6
