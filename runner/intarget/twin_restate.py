"""Keys a configuration class states in one form that vLLM's implementation reads in another, and
widths a tower's layers meet at: run inside a target env by twin_build.py, next to
twin_generic.py. A twin from a class's defaults (no published config.json here) gets vLLM's form
too, from keys of the same config; a published config states both. Standard library only."""

from __future__ import annotations

import os
import sys

if not __package__:  # run by path (a target's Python, `-I`): PEP 366, as the package this folder is,
    # so that `from . import sibling` finds the files next to this one (and import-linter sees it)
    sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = os.path.basename(os.path.dirname(os.path.abspath(__file__)))

from . import twin_generic as g

# keys a transformers implementation implies that its config class does not carry (so its defaults
# lack them): architecture prefix -> (parameter, keys).  DeepSeek V3 there always has a router bias and
# sigmoid scoring; vLLM creates that bias only with topk_method noaux_tc (as the published configs say)
IMPLIED = {
    "DeepseekV3": ("e_score_correction_bias", {"topk_method": "noaux_tc", "scoring_func": "sigmoid"}),
    # transformers' Qwen3-VL-MoE router always renormalises its top-k weights, which is what the
    # published text config's norm_topk_prob: true says; its config class lacks the key that
    # vLLM's Qwen3-MoE block reads (vLLM 0.26.0 on the H200: AttributeError 'norm_topk_prob')
    "Qwen3VLMoe": ("gate_up_proj", {"norm_topk_prob": True}),
    # MiniMax-M2's router has the same bias and sigmoid scoring; vLLM's reads scoring_func, and creates
    # the bias only with use_routing_bias
    "MiniMaxM2": ("e_score_correction_bias", {"scoring_func": "sigmoid", "use_routing_bias": True}),
}


def restate(cfg: dict, notes: list[str]) -> None:
    """Keys a config states in one form that vLLM's implementation reads in another, stated in both
    where only one is there (a published config.json has both; a transformers class's defaults only
    its own): RESTATED's rules, each from keys of the same config."""
    for key, rule in RESTATED.items():
        if key not in cfg:
            value = rule(cfg)
            if value is not None:
                cfg[key] = value
                notes.append(f"{key} {value}: restated from the config's own keys (vLLM reads it)")


def tie_tower_widths(cfg: dict, notes: list[str], where: str) -> None:
    """Widths a tower's layers meet at, equal in the published configs (Llama 4's vision adapter: the
    pixel shuffle gives hidden / ratio^2 features to an MLP of intermediate_size, whose output
    (projector_output_dim; vLLM reads projector_input_dim for the same layer) is what the projector
    takes (vision_output_dim)); the class defaults (7680 against 4096) and the shrinking would
    otherwise give shapes that meet nowhere."""
    ratio = cfg.get("pixel_shuffle_ratio")
    if isinstance(ratio, float) and 0 < ratio < 1 and g.is_count(cfg.get("hidden_size")) and "intermediate_size" in cfg:
        cfg["intermediate_size"] = int(cfg["hidden_size"] / ratio**2)
        notes.append(f"{where}intermediate_size {cfg['intermediate_size']}: hidden_size / pixel_shuffle_ratio^2")
    if g.is_count(cfg.get("projector_output_dim")):
        for k in ("projector_input_dim", "vision_output_dim"):
            if g.is_count(cfg.get(k)) and cfg[k] != cfg["projector_output_dim"]:
                cfg[k] = cfg["projector_output_dim"]
                notes.append(f"{where}{k} {cfg[k]}: the width its layer meets (projector_output_dim)")


def _pattern(key: str, kind: str):
    """1 where the per-layer list KEY says KIND, else 0 (vLLM's hybrid_layer_pattern, moe_layer_freq)."""
    return lambda cfg: (
        [int(k == kind) for k in cfg[key]] if isinstance(cfg.get(key), list) and kind in cfg[key] else None
    )


def _sliding(key: str):
    """KEY where some layers are sliding-window ones, else None (MiMo-V2's swa_* sizes)."""
    return lambda cfg: cfg.get(key) if "sliding_attention" in (cfg.get("layer_types") or []) else None


ROTARY_DIM_READERS = ("minimax_m2",)
"""Model types whose vLLM implementation reads `config.rotary_dim` while the class's defaults leave the
partial rotary factor unset (None: all of the head; `to_dict` drops it)."""


def _rotary_dim(cfg: dict):
    rope = cfg.get("rope_parameters") if isinstance(cfg.get("rope_parameters"), dict) else {}
    if (
        "partial_rotary_factor" not in cfg
        and "partial_rotary_factor" not in rope
        and cfg.get("model_type") not in ROTARY_DIM_READERS
    ):
        return None  # a config without the notion: vLLM's implementation reads no rotary_dim
    factor = cfg.get("partial_rotary_factor") or rope.get("partial_rotary_factor") or 1.0  # None: all of it
    return int(cfg["head_dim"] * factor) if g.is_count(cfg.get("head_dim")) else None


# vLLM's key -> how the config's own keys give it (None: not stated): HY V3 and MiMo-V2 read first_k_dense_replace /
# moe_layer_freq / hybrid_layer_pattern where transformers' classes give mlp_layer_types / layer_types;
# MiniMax-M2 reads rotary_dim where the class gives a partial rotary factor; MiMo-V2's
# sliding-window layers read swa_* sizes, which the class states once for all layers
RESTATED = {
    "first_k_dense_replace": lambda cfg: (
        next((i for i, k in enumerate(cfg["mlp_layer_types"]) if k != "dense"), len(cfg["mlp_layer_types"]))
        if isinstance(cfg.get("mlp_layer_types"), list)
        else None
    ),
    "moe_layer_freq": _pattern("mlp_layer_types", "sparse"),
    "hybrid_layer_pattern": _pattern("layer_types", "sliding_attention"),
    "rotary_dim": _rotary_dim,
    # HY V3's name for the expert width
    "expert_hidden_dim": lambda cfg: cfg.get("moe_intermediate_size") if cfg.get("model_type") == "hy_v3" else None,
    "layernorm_epsilon": lambda cfg: (
        cfg.get("rms_norm_eps") if str(cfg.get("model_type")).startswith("mimo_v2") else None
    ),
    # transformers' HY V3 router always renormalises its top-k weights; vLLM's reads route_norm
    "route_norm": lambda cfg: True if cfg.get("model_type") == "hy_v3" else None,
    **{f"swa_{k}": _sliding(k) for k in ("num_attention_heads", "num_key_value_heads", "head_dim", "v_head_dim")},
    "sliding_window_size": _sliding("sliding_window"),
}


def add_implied(model, text_config, notes: list[str]) -> None:
    names = {name.rsplit(".", 1)[-1] for name in model.state_dict()}  # parameters and buffers
    for prefix, (param, keys) in IMPLIED.items():
        if type(model).__name__.startswith(prefix) and param in names:
            for k, v in keys.items():
                if getattr(text_config, k, None) is None:
                    setattr(text_config, k, v)
                    notes.append(f"{k} {v}: implied by the model's {param}")
