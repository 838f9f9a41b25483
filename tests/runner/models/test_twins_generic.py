"""Generic twins (runner/intarget/twin_generic.py, `twin_build.py --family generic`):
architectures outside the qwen3/llama/gemma4 families, built from the nightly target's (vLLM 0.32.0,
transformers 5.19) configuration-class defaults or from a published config.json, and checked by that
build's own config tier (`create_engine_config` in one vllm_helper process for all of them): it accepts
each twin and resolves the same architecture.  One twin of a published config also on stable (0.20.1).

The twins are built once per module, two at a time (the builder is mostly import and tokenizer
training, one core each); their build times are printed (`pytest -s`)."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from runhelp import CACHE, HERE, catalog_of, docs_tree, outcomes, run_cli

from driftmatrix.runner.builds.targets import SEED_CPU
from driftmatrix.runner.isolation.env_policy import without_secrets
from driftmatrix.runner.jobs.job import RunContext
from driftmatrix.runner.models.resolution import ModelResolver
from driftmatrix.runner.models.twins import BUILDER_FILES
from driftmatrix.runner.serve import model_infos
from driftmatrix.runner.serve.helper_client import contained

BUILDER = HERE.parent.parent / "runner" / "intarget" / "twin_build.py"
SLIDING, FULL, LINEAR = "sliding_attention", "full_attention", "linear_attention"


def moe(experts_key: str, top_k: int = 2) -> dict:
    return {experts_key: 4, "num_experts_per_tok": top_k}


def mla() -> dict:  # DeepSeek's latent attention: q LoRA kept (shrunk); the head sizes as published (kernels)
    return {"kv_lora_rank": 512, "q_lora_rank": 32, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128}


# architecture -> (sub-config the checks read or None, the keys the twin's config must have)
FROM_DEFAULTS = {
    "DeepseekV3ForCausalLM": (
        None,
        {
            "num_hidden_layers": 2,
            "first_k_dense_replace": 1,
            **moe("n_routed_experts"),
            "n_group": 1,
            "topk_group": 1,
            "n_shared_experts": 1,
            **mla(),
            "num_nextn_predict_layers": 1,
            "moe_intermediate_size": 64,
            # DeepseekV3Config() has no routing method; its model's router bias implies it
            "topk_method": "noaux_tc",
            "scoring_func": "sigmoid",
        },
    ),
    "MixtralForCausalLM": (None, {"num_hidden_layers": 2, **moe("num_local_experts"), "num_key_value_heads": 2}),
    # transformers 5.19's Qwen3MoeConfig names the expert count num_local_experts (published: num_experts)
    "Qwen3MoeForCausalLM": (
        None,
        {
            "num_hidden_layers": 2,
            **moe("num_local_experts"),
            "moe_intermediate_size": 64,
            "norm_topk_prob": False,
            "mlp_only_layers": [],
        },
    ),
    "Qwen2_5_VLForConditionalGeneration": (
        "text_config",
        {"num_hidden_layers": 2, "layer_types": [FULL, FULL], "hidden_size": 128},
    ),
    "GptOssForCausalLM": (
        None,
        {
            "layer_types": [SLIDING, FULL],
            "num_hidden_layers": 2,
            **moe("num_local_experts"),
            "sliding_window": 128,
            "head_dim": 32,
        },
    ),
    "Glm4MoeForCausalLM": (
        None,
        {"num_hidden_layers": 2, "first_k_dense_replace": 1, **moe("n_routed_experts"), "partial_rotary_factor": 0.5},
    ),
    "GraniteForCausalLM": (None, {"num_hidden_layers": 2, "hidden_size": 128, "num_attention_heads": 4}),
    "Phi3ForCausalLM": (None, {"num_hidden_layers": 2, "hidden_size": 128, "num_key_value_heads": 4}),
    # hybrids: one period of [linear x3, full]; one layer of each Nemotron-H block kind
    "Qwen3NextForCausalLM": (
        None,
        {
            "layer_types": [LINEAR] * 3 + [FULL],
            "num_hidden_layers": 4,
            "linear_num_key_heads": 2,
            "linear_num_value_heads": 4,
            **moe("num_experts"),
            "linear_key_head_dim": 128,
        },
    ),  # vLLM's CPU DeltaNet kernel: 128 only
    "NemotronHForCausalLM": (None, {"layers_block_type": [LINEAR, "moe", FULL, "mlp"], "mamba_num_heads": 8}),
}

# Trimmed from the published config.json files (deepseek-ai/DeepSeek-V3, Qwen/Qwen2.5-VL-7B-Instruct).
DEEPSEEK_V3 = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "model_type": "deepseek_v3",
    "auto_map": {
        "AutoConfig": "configuration_deepseek.DeepseekV3Config",
        "AutoModelForCausalLM": "modeling_deepseek.DeepseekV3ForCausalLM",
    },
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 61,
    "first_k_dense_replace": 3,
    "moe_layer_freq": 1,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "num_experts_per_tok": 8,
    "n_group": 8,
    "topk_group": 4,
    "topk_method": "noaux_tc",
    "scoring_func": "sigmoid",
    "norm_topk_prob": True,
    "routed_scaling_factor": 2.5,
    "kv_lora_rank": 512,
    "q_lora_rank": 1536,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "num_nextn_predict_layers": 1,
    "max_position_embeddings": 163840,
    "rope_theta": 10000,
    "rope_scaling": {
        "beta_fast": 32,
        "beta_slow": 1,
        "factor": 40,
        "mscale": 1.0,
        "mscale_all_dim": 1.0,
        "original_max_position_embeddings": 4096,
        "type": "yarn",
    },
    "quantization_config": {
        "activation_scheme": "dynamic",
        "fmt": "e4m3",
        "quant_method": "fp8",
        "weight_block_size": [128, 128],
    },
    "bos_token_id": 0,
    "eos_token_id": 1,
    "tie_word_embeddings": False,
    "vocab_size": 129280,
    "torch_dtype": "bfloat16",
}
QWEN25_VL = {
    "architectures": ["Qwen2_5_VLForConditionalGeneration"],
    "model_type": "qwen2_5_vl",
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "num_attention_heads": 28,
    "num_hidden_layers": 28,
    "num_key_value_heads": 4,
    "max_window_layers": 28,
    "max_position_embeddings": 128000,
    "rope_theta": 1000000.0,
    "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
    "vocab_size": 152064,
    "bos_token_id": 151643,
    "eos_token_id": 151645,
    "vision_start_token_id": 151652,
    "vision_end_token_id": 151653,
    "vision_token_id": 151654,
    "image_token_id": 151655,
    "video_token_id": 151656,
    "tie_word_embeddings": False,
    "vision_config": {
        "depth": 32,
        "hidden_size": 1280,
        "intermediate_size": 3420,
        "num_heads": 16,
        "out_hidden_size": 3584,
        "patch_size": 14,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
        "window_size": 112,
        "fullatt_block_indexes": [7, 15, 23, 31],
        "tokens_per_second": 2,
    },
}
PUBLISHED = {"deepseek-v3": DEEPSEEK_V3, "qwen2.5-vl-7b": QWEN25_VL}


def build(env, out, *args: str) -> tuple[subprocess.CompletedProcess, float]:
    """The builder in the target env, as runner/models/twins.build runs it; (process, seconds)."""
    t0 = time.monotonic()
    proc = subprocess.run(
        [env.python, str(BUILDER), "--family", "generic", "--out", str(out), *args],
        capture_output=True,
        text=True,
        timeout=900,
        env=without_secrets({**os.environ, **env.env}),
    )
    return proc, time.monotonic() - t0


def build_all(env, root, jobs: dict[str, list[str]]) -> dict[str, dict]:
    """{name: builder record + dir + seconds}, built two at a time; a twin built before from the same
    inputs (builder files, arguments and config files, the env) is taken from the cache."""

    def one(item):
        name, args = item
        return name, cached_build(env, name, ["--model-id", f"test/{name}", *args])

    with ThreadPoolExecutor(2) as pool:
        built = dict(pool.map(one, jobs.items()))
    version = env.info.get("transformers")
    print(
        "\n"
        + "\n".join(
            f"twin build, transformers {version}, {n}: "
            + (f"{b['seconds']} s" if b["seconds"] is not None else "cached")
            for n, b in built.items()
        )
    )
    return built


def cached_build(env, name: str, args: list[str]) -> dict:
    """The builder's record of the twin of `args` (dir, seconds: None when cached). Kept in the driftmatrix
    cache under a key of everything the twin is made from, as the runner keeps its twins
    (runner/models/twins.ensure): another session builds it only when the builder or the env changed."""
    inputs = [a if not Path(a).is_file() else hashlib.sha256(Path(a).read_bytes()).hexdigest() for a in args]
    key = hashlib.sha256(
        json.dumps(
            {
                "args": inputs,
                "python": env.python,
                "env": env.info,
                "builder": [hashlib.sha256(f.read_bytes()).hexdigest() for f in BUILDER_FILES if f.exists()],
            },
            sort_keys=True,
            default=str,
        ).encode()
    ).hexdigest()[:16]
    out = CACHE / "test-twins" / f"{name}-{key}"
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{out}.lock", "w") as lock:  # another xdist worker may want the same twin
        fcntl.flock(lock, fcntl.LOCK_EX)
        record = out / "test-record.json"
        if not record.exists():
            for stale in out.parent.glob(f"{name}-*/test-record.json"):  # other builders' twins, a week unused
                if time.time() - stale.stat().st_mtime > 7 * 86400:
                    shutil.rmtree(stale.parent, ignore_errors=True)
            proc, seconds = build(env, out, *args)
            assert proc.returncode == 0, f"{name}: {proc.stderr[-3000:]}"
            built = {**json.loads(proc.stdout.strip().splitlines()[-1]), "seconds": round(seconds, 1)}
            record.write_text(json.dumps(built))
            return built
        os.utime(record)  # its last use
    return {**json.loads(record.read_text()), "seconds": None}


def config_tier(env, log, dirs: dict[str, str], then: dict[str, list[str]] | None = None) -> dict[str, tuple]:
    """{name: (HelperAnswer, architectures vLLM logged as resolved)}: one helper process for all, asked
    each twin's config, then the commands `then` ({name: argv}) in order; seeded, as a run's helpers are,
    with vLLM's inspections of its architectures (runner/serve/model_infos.py: no registry subprocess each)."""
    ctx = RunContext(ModelResolver({}, hub=False), log.parent, cache_dir=CACHE)
    helper = contained(
        env.python, env.env, log, [str(p) for p in dirs.values()], vllm_cache=lambda: model_infos.ensure(env, ctx)
    )
    found = {}
    try:
        for name, argv in [*((n, [p]) for n, p in dirs.items()), *(then or {}).items()]:
            seen = log.stat().st_size if log.exists() else 0
            answer = helper.ask(argv, "config")
            logged = log.read_bytes()[seen:].decode(errors="replace")
            found[name] = (answer, re.findall(r"Resolved architecture: (\S+)", logged))
    finally:
        helper.shutdown()
    return found


@pytest.fixture(scope="module")
def nightly(cpu_envs, tmp_path_factory):
    """Every twin of this module built with the nightly env, then its config tier run on each, in one
    helper; the same helper is then asked the two commands of
    test_a_command_leaves_nothing_behind_for_the_next_in_the_helper (one helper start less)."""
    env = cpu_envs["nightly"]
    root = tmp_path_factory.mktemp("generic-twins")
    for name, config in PUBLISHED.items():
        (root / f"{name}.json").write_text(json.dumps(config))
    jobs = {arch: ["--architecture", arch] for arch in FROM_DEFAULTS}
    jobs |= {name: ["--config-json", str(root / f"{name}.json")] for name in PUBLISHED}
    twins = build_all(env, root, jobs)
    then = {
        "routed-experts": [twins["Qwen3MoeForCausalLM"]["dir"], "--enable-return-routed-experts"],
        "plain-after-it": [twins["Phi3ForCausalLM"]["dir"]],
    }
    checked = config_tier(env, root / "helper.log", {name: t["dir"] for name, t in twins.items()}, then)
    return env, twins, checked


def config_of(twin: dict) -> dict:
    with open(f"{twin['dir']}/config.json") as fh:
        return json.load(fh)


def tensor_names(twin: dict) -> set[str]:
    """The tensor names of a twin's safetensors (headers only: no torch in the test env)."""
    names = set()
    for path in sorted(os.listdir(twin["dir"])):
        if path.endswith(".safetensors"):
            with open(f"{twin['dir']}/{path}", "rb") as fh:
                (size,) = struct.unpack("<Q", fh.read(8))
                names |= set(json.loads(fh.read(size))) - {"__metadata__"}
    return names


@pytest.mark.parametrize("arch", list(FROM_DEFAULTS))
def test_twin_from_defaults_passes_the_config_tier(nightly, arch):
    env, twins, checked = nightly
    twin, (answer, resolved) = twins[arch], checked[arch]
    assert answer.result == "ok", answer.error.get("message")
    assert resolved == [arch]  # vLLM's model_config.architecture, as it logs it
    assert answer.effective_config["architectures"] == [arch]
    assert answer.effective_config.get("resolved_architecture", arch) == arch  # where the helper reports it
    version = env.info["transformers"]
    assert twin["config_source"].startswith("family defaults, not the published config (transformers ")
    assert twin["config_source"].endswith(f"Config() {version})") and twin["transformers"] == version
    cfg = config_of(twin)
    assert cfg["architectures"] == [arch] and cfg["dtype"] == "bfloat16"
    sub, expected = FROM_DEFAULTS[arch]
    part = cfg[sub] if sub else cfg
    assert {k: part.get(k) for k in expected} == expected


def test_moe_twins_keep_the_per_expert_checkpoint_layout(nightly):
    """transformers 5 saves MoE experts one by one (the layout vLLM's loaders read); gpt-oss as published,
    fused gate_up_proj per layer."""
    _, twins, _ = nightly
    assert "model.layers.0.block_sparse_moe.experts.3.w1.weight" in tensor_names(twins["MixtralForCausalLM"])
    for arch in ("Qwen3MoeForCausalLM", "DeepseekV3ForCausalLM", "Glm4MoeForCausalLM"):
        assert "model.layers.1.mlp.experts.3.gate_proj.weight" in tensor_names(twins[arch]), arch
    assert "model.layers.0.mlp.experts.0.gate_proj.weight" not in tensor_names(twins["DeepseekV3ForCausalLM"])
    assert "model.layers.1.mlp.experts.gate_up_proj" in tensor_names(twins["GptOssForCausalLM"])


def test_multimodal_twin_keeps_its_token_ids_and_tower(nightly):
    _, twins, _ = nightly
    twin = twins["Qwen2_5_VLForConditionalGeneration"]
    cfg = config_of(twin)
    text, vision = cfg["text_config"], cfg["vision_config"]
    assert cfg["image_token_id"] == 151655 and cfg["video_token_id"] == 151656
    assert text["vocab_size"] == 151657  # 1 + the highest placeholder id
    assert vision["depth"] == 2 and vision["fullatt_block_indexes"] == [1] and vision["hidden_size"] == 64
    assert vision["out_hidden_size"] == text["hidden_size"]  # the merger feeds the decoder
    with open(f"{twin['dir']}/tokenizer.json") as fh:
        vocab = json.load(fh)["model"]["vocab"]
    assert sorted(vocab.values()) == list(range(text["vocab_size"]))  # every id the config names decodes
    with open(f"{twin['dir']}/generation_config.json") as fh:
        assert json.load(fh)["eos_token_id"] == text["eos_token_id"] == vocab["<|im_end|>"]


def test_twin_from_a_published_config_keeps_its_architecture_and_pattern(nightly):
    _, twins, checked = nightly
    for name, source in PUBLISHED.items():
        answer, resolved = checked[name]
        assert answer.result == "ok", answer.error.get("message")
        assert resolved == source["architectures"] and twins[name]["config_source"] == "config.json"
    ds = config_of(twins["deepseek-v3"])
    # one dense layer, then MoE (source layers 0 and 3); routing and yarn as published
    assert ds["num_hidden_layers"] == 2 and ds["first_k_dense_replace"] == 1 and ds["moe_layer_freq"] == 1
    assert {k: ds[k] for k in ("topk_method", "scoring_func", "routed_scaling_factor", "norm_topk_prob")} == {
        "topk_method": "noaux_tc",
        "scoring_func": "sigmoid",
        "routed_scaling_factor": 2.5,
        "norm_topk_prob": True,
    }
    assert {k: ds[k] for k in mla()} == mla() and ds["n_routed_experts"] == 4 and ds["n_group"] == 1
    rope = ds.get("rope_parameters") or ds["rope_scaling"]
    assert rope["rope_type"] == "yarn" and rope["factor"] == 40 and ds["max_position_embeddings"] == 163840
    assert "quantization_config" not in ds and "auto_map" not in ds
    notes = " | ".join(twins["deepseek-v3"]["notes"])
    assert "quantization_config dropped" in notes and "auto_map dropped" in notes and "[0, 3]" in notes
    vl = config_of(twins["qwen2.5-vl-7b"])
    text = vl["text_config"]
    rope = text.get("rope_parameters") or text["rope_scaling"]
    # half the twin's head (32 / 2), in the published proportions 16:24:24
    assert rope["mrope_section"] == [4, 6, 6] and text["hidden_size"] // text["num_attention_heads"] == 32
    assert text["num_key_value_heads"] < text["num_attention_heads"]  # grouped-query stays grouped


def test_published_config_twin_on_stable(cpu_envs, tmp_path):
    """The same DeepSeek-V3 twin built with transformers 5.8 passes vLLM 0.20.1's config tier."""
    env = cpu_envs["stable"]
    (tmp_path / "ds.json").write_text(json.dumps(DEEPSEEK_V3))
    twin = build_all(env, tmp_path, {"ds": ["--config-json", str(tmp_path / "ds.json")]})["ds"]
    answer, resolved = config_tier(env, tmp_path / "helper.log", {"ds": twin["dir"]})["ds"]
    assert answer.result == "ok", answer.error.get("message")
    assert resolved == ["DeepseekV3ForCausalLM"] and twin["transformers"] == env.info["transformers"]


def test_unknown_architecture_is_refused_in_one_line(cpu_envs, tmp_path):
    env = cpu_envs["nightly"]
    proc, _ = build(env, tmp_path / "x", "--model-id", "acme/x", "--architecture", "AcmeForCausalLM")
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines()[-1] == (
        f"AcmeForCausalLM is not in transformers {env.info['transformers']} and vLLM {env.info['version']} "
        "has no configuration class for it: no twin"
    )


def test_layer_patterns_of_published_configs_keep_one_of_each_kind():
    """The shrink rules alone (twin_generic imports only the standard library at module level), on
    layer patterns the defaults above do not have: Nemotron-H's pattern string, Gemma 3's 5:1 pattern
    with a truncated last period, Qwen2-MoE's dense layers among sparse ones, Phi-3.5's longrope."""
    sys.path.insert(0, str(BUILDER.parent))
    try:
        import twin_generic as generic
    finally:
        sys.path.remove(str(BUILDER.parent))
    notes: list[str] = []
    pattern = "M-M-M-M*-M-M-M-M*-M-M-M-M*-M-M-M-M*-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-M-"  # Nemotron-H-8B
    nemotron = generic.shrink({"num_hidden_layers": len(pattern), "hybrid_override_pattern": pattern}, 2, notes)
    assert nemotron["hybrid_override_pattern"] == "M-*" and nemotron["num_hidden_layers"] == 3
    kinds = (["sliding_attention"] * 5 + ["full_attention"]) * 11
    gemma = generic.shrink(
        {
            "text_config": {"num_hidden_layers": 62, "layer_types": kinds[:62], "hidden_size": 5376},
            "vision_config": {"hidden_size": 1152, "num_hidden_layers": 27, "image_size": 896},
        },
        2,
        notes,
    )
    assert gemma["text_config"]["layer_types"] == kinds[:6] and gemma["text_config"]["num_hidden_layers"] == 6
    assert gemma["vision_config"] == {"hidden_size": 64, "num_hidden_layers": 2, "image_size": 896}
    # an MoE block every 2nd layer, layers 0 and 23 dense: source layers 0, 1, 2 and 23 are kept
    moe_cfg = generic.shrink(
        {
            "num_hidden_layers": 24,
            "decoder_sparse_step": 2,
            "mlp_only_layers": [0, 23],
            "num_experts": 60,
            "num_experts_per_tok": 4,
        },
        2,
        notes,
    )
    assert {k: moe_cfg[k] for k in ("num_hidden_layers", "mlp_only_layers", "decoder_sparse_step")} == {
        "num_hidden_layers": 4,
        "mlp_only_layers": [0, 3],
        "decoder_sparse_step": 2,
    }
    assert not [n for n in notes if "could not be kept" in n]
    phi = generic.shrink(
        {
            "num_hidden_layers": 32,
            "hidden_size": 3072,
            "num_attention_heads": 32,
            "rope_scaling": {"type": "longrope", "short_factor": [1.0] * 48, "long_factor": [2.0] * 48},
        },
        2,
        notes,
    )
    assert len(phi["rope_scaling"]["long_factor"]) == 16  # one per rotary pair of a 32-wide head


def test_a_command_leaves_nothing_behind_for_the_next_in_the_helper(nightly):
    """One helper process answers every command of a target; an option vLLM applies by mutating a
    shared default (0.32.0: `--enable-return-routed-experts` on the parser's AuxOutputConfig) must not
    reach the next command, which a fresh `vllm serve` would run without it. (Asked of the `nightly`
    fixture's helper, right after each twin's own config tier.)"""
    _, _, checked = nightly
    (first, _), (after, _) = checked["routed-experts"], checked["plain-after-it"]
    assert first.result == "failed" and "AuxOutput" in first.error.get("message", ""), first.error
    assert after.result == "ok", after.error  # as it is alone (test_twin_from_defaults_passes_the_config_tier)


TP_DOC = """# Tensor parallel

## R1 on eight GPUs

```bash
vllm serve deepseek-ai/DeepSeek-R1 -tp 8 --max-model-len 1024
```

## Qwen3 on eight GPUs

```bash
vllm serve Qwen/Qwen3-8B --tensor-parallel-size 8
```
"""


def test_twins_split_by_the_command_tensor_parallel_size(cpu_envs, tmp_path):
    """A shrunk twin has 4 attention heads; `-tp 8` then fails vLLM's divisibility check for a reason the
    published model does not have. The runner builds the twin with heads the command's tensor parallel
    size divides (generic and family builders), so the config tier judges the command itself."""

    snippets, ids = catalog_of(docs_tree(tmp_path / "docs", TP_DOC))
    run_cli(
        str(snippets),
        "--targets",
        str(SEED_CPU),
        "--stand-ins",
        "--tier",
        "config",
        "--target",
        "nightly",
        "--jobs",
        "1",
        "-o",
        str(tmp_path / "o.jsonl"),
        cwd=tmp_path,
    )
    got = {o.snippet_id: o for o in outcomes(tmp_path / "o.jsonl")}
    for name in ("r1-on-eight-gpus", "qwen3-on-eight-gpus"):
        o = got[ids[name][0]]
        assert (o.verdict, o.stage) == ("PASS", "config"), o.reason
        assert o.evidence.effective_config["tensor_parallel_size"] == 8
        assert any(
            "num_attention_heads 4 -> 8: divisible by the command's tensor parallel size 8" in n
            for n in o.evidence.notes
        ), o.evidence.notes
        twin = o.evidence.twins[0]
        assert twin.resolved_architecture == twin.published_architecture and twin.counts is True
