"""Generic twins: a tiny random-weight copy of any architecture the installed transformers knows.

Used inside a target env by twin_build.py (`--family generic`, which builds the model and the
tokenizer); imports only the standard library at module level, transformers where it needs it.
The config is the model's own config.json or, offline, the defaults of the configuration class
transformers maps the architecture to.  Sizes shrink by the config's own keys (the rule tables
below, applied to every nested sub-config: text, vision, audio, ...), keeping what vLLM's start-up
paths branch on: architecture, model type, the per-layer pattern (attention kinds, dense/MoE,
linear-attention/Mamba blocks), MoE routing, MLA ranks, rope type and parameters, multimodal token
ids.  The weights come from the transformers model class itself (its checkpoint layout), random,
bf16.  Quantization is not reproduced: `quantization_config` is dropped and noted.  The tokenizer
(twin_build.train_tokenizer) has the qwen3 or llama special tokens and chat template for qwen* /
llama* model types, else GENERIC_TOKENIZER's; it is padded up to the config's highest token id.

Special cases built elsewhere, because what they need is in no config key: qwen3 / llama
(twin_build.twin_config) are the first families, whose twins (hidden 64) cached runs and tests
already use; gemma4 (twin_gemma4.py) needs the image soft-token budget and processor, the
assistant's KV sharing with its target and centroid LM head, and the KV-shared layers' projections
the published checkpoints carry.
"""

from __future__ import annotations

import copy
import math
import os
import re
import sys

if not __package__:  # run by path (a target's Python, `-I`): PEP 366, as the package this folder is,
    # so that `from . import sibling` finds the files next to this one (and import-linter sees it)
    sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = os.path.basename(os.path.dirname(os.path.abspath(__file__)))

VOCAB = 2000

# --- decoder sizes -------------------------------------------------------------------------------
# 4 heads of 32 make the hidden size, so a config without head_dim derives the same head size;
# vLLM's CPU attention backend needs head_dim >= 32
TEXT_SET = {"hidden_size": 128, "n_embd": 128, "num_attention_heads": 4, "n_head": 4, "n_heads": 4}
HEADS = ("num_attention_heads", "n_head", "n_heads")
KV_HEADS = (
    "num_key_value_heads",
    "n_kv_heads",
    "num_kv_heads",
    "multi_query_group_num",
    "num_attention_groups",
)  # Step-3.5's (vLLM's Step3p5Config)
FFN = (
    "ffn_dim",
    "ffn_hidden_size",
    "n_inner",
    "encoder_ffn_dim",  # and every key with "intermediate_size"
    "share_expert_dim",
)  # Step-3.5's shared expert
# MLA (DeepSeek V2/V3, Kimi K2, GLM MLA variants): the q LoRA rank shrinks (a null q_lora_rank, no q
# LoRA, stays null); the head sizes do not: kv_lora_rank + qk_rope_head_dim is the latent cache entry
# and vLLM's MLA kernels take only the published sizes (320/512/576; its CPU kernel 0.32 only 576),
# and its GPU prefill backends only the published q/k "nope" and v head sizes (128: with 32, vLLM
# 0.26.0 on the H200 found "No valid MLA prefill backend"), so a smaller twin fails where the real
# model starts
MLA = {"q_lora_rank": 32}
MLA_KEPT = ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
# Gated DeltaNet (Qwen3-Next, Qwen3.5) and Mamba-2 blocks (Nemotron-H, Granite 4, Falcon-H1): groups
# divide heads (1 divides all); Mamba heads x head dim = 2 x hidden (the usual expand of 2).  The
# DeltaNet head sizes (linear_key/value_head_dim) stay: vLLM's CPU kernel takes only the published 128
HYBRID = {
    "linear_num_key_heads": 2,
    "mamba_num_heads": 8,
    "mamba_n_heads": 8,
    "mamba_head_dim": 32,
    "mamba_d_head": 32,
    "ssm_state_size": 16,
    "mamba_d_state": 16,
    "n_groups": 1,
    "mamba_n_groups": 1,
}
CONTEXT = ("max_seq_len", "seq_length", "max_sequence_length")  # a context length under another name
# MoE: four experts still route top-2 in one group; scoring/normalisation/scaling keys stay as they are
EXPERTS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts", "num_routed_experts")
TOP_K = (
    "num_experts_per_tok",
    "moe_topk",
    "moe_top_k",
    "moe_k",
    "top_k_experts",
    "num_selected_experts",
    "experts_per_token",
)
GROUPS = ("n_group", "topk_group", "num_expert_group")
AT_MOST_ONE = (
    "n_shared_experts",
    "num_shared_experts",
    "moe_num_shared_experts",  # shared experts kept
    "num_nextn_predict_layers",
    "mtp_num_hidden_layers",
)  # one MTP layer still says "has MTP"

# --- layers: every per-layer key read as one feature tuple per layer ----------------------------
LAYER_COUNTS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
# one entry per layer (as is any other list whose key names layers/blocks, of that length)
PER_LAYER = ("layer_types", "layers_block_type", "hybrid_override_pattern", "no_rope_layers")
INDEX_LISTS = (
    "mlp_only_layers",
    "moe_layers",
    "full_attn_idxs",
    "global_attn_layers",
    "sliding_window_layers",
    "swa_layers",
    "dense_layers",
    "attn_layer_indices",
    "linear_attn_layers",
)  # the layers of one kind
# layer i is of the first kind while i < v; rewritten to the kept layers
THRESHOLDS = (
    "first_k_dense_replace",  # dense MLPs before the MoE layers (DeepSeek, Kimi K2, GLM-4.5)
    "max_window_layers",
)  # Qwen2: the sliding window from this layer on
# periodic rules, left as they are: a whole period of layers is kept
PERIODS = {
    "decoder_sparse_step": lambda c, v, i: (i + 1) % v == 0,  # Qwen MoE: an MoE block every v-th layer
    "moe_layer_freq": lambda c, v, i: i % v == 0,  # DeepSeek: MoE where i % v == 0 (after the dense ones)
    "interleave_moe_layer_step": lambda c, v, i: (i + 1) % v == 0,  # Llama 4
    "sliding_window_pattern": lambda c, v, i: (i + 1) % v == 0,  # Gemma 2/3, Cohere 2: every v-th is global
    "full_attention_interval": lambda c, v, i: (i + 1) % v == 0,  # Qwen3-Next/3.5: full attention every v
    "attn_layer_period": lambda c, v, i: i % v == c.get("attn_layer_offset", 0),  # Jamba
    "expert_layer_period": lambda c, v, i: i % v == c.get("expert_layer_offset", 0),  # Jamba
}

# --- towers (vision / audio encoders): two blocks, 64 wide, 4 heads ------------------------------
TOWER_WORDS = ("vision", "visual", "audio", "speech", "image", "vit", "encoder", "whisper")
TEXT_WORDS = ("text", "llm", "language", "decoder", "thinker", "talker")
TOWER_DEPTH = ("depth", "num_hidden_layers", "num_layers", "encoder_layers")
TOWER_SET = {
    **dict.fromkeys(TOWER_DEPTH, 2),
    **dict.fromkeys(("hidden_size", "embed_dim", "d_model", "width"), 64),
    **dict.fromkeys(("num_heads", "num_attention_heads", "encoder_attention_heads", "num_key_value_heads"), 4),
    "head_dim": 16,
}
# the tower's output feeds the decoder: these are the decoder twin's width, and so is any width key
# (named FEEDS_TEXT, not image/patch sizes) equal to the source decoder's hidden size
TO_TEXT_WIDTH = ("out_hidden_size", "projector_output_dim", "text_hidden_size", "output_hidden_size")
FEEDS_TEXT = ("hidden", "proj", "output", "out_")
TOWER_INDEX_LISTS = ("fullatt_block_indexes", "deepstack_visual_indexes")
NOT_SUBCONFIGS = ("per_layer_config", "rope_config")
PER_LAYER_DICTS = ("per_layer_config",)  # {layer index: overrides}: kept layers renumbered
DROPPED = (
    "auto_map",
    "quantization_config",
    "compression_config",  # noted
    "_name_or_path",
    "transformers_version",
    "torch_dtype",
    "dtype",
)
OWN_ENCODING = {"gpt_oss": "openai_harmony's o200k_harmony"}
"""Model types whose prompts vLLM encodes itself, not with the model's tokenizer (gpt-oss: harmony,
token ids up to 200,018): the twin keeps the config's vocab_size (its tokenizer padded with
unreachable ids), or vLLM refuses the prompt ("Token id 200008 is out of vocabulary")."""
REPLACED_IDS = ("bos_token_id", "eos_token_id", "pad_token_id")  # the twin tokenizer's
TOKEN_ID = re.compile(r"_token_(id|index)$")


def sibling(name: str):
    """A builder module next to this file (twin_split, twin_restate, which read this module's
    tables), wherever this file was loaded from: a target's Python runs it as a script, a test loads it
    by its path."""
    import importlib

    return importlib.import_module(f".{name}", __package__)  # by name: they import this module


class NoTwin(Exception):
    """No generic twin with the installed transformers (a one-line reason)."""


def is_count(v) -> bool:  # an int that is not a bool
    return isinstance(v, int) and not isinstance(v, bool)


def _each(value, fn):
    """FN on an int, or on each int of a list (ERNIE-VL lists expert counts per modality)."""
    return (
        [fn(v) if is_count(v) else v for v in value]
        if isinstance(value, list)
        else fn(value)
        if is_count(value)
        else value
    )


# --- architecture -> model type and classes ------------------------------------------------------


def _mappings():
    """transformers' auto mappings (model type -> class name), the generative ones first."""
    from transformers.models.auto import modeling_auto as ma

    first = [
        "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES",
        "MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES",
        "MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES",
        "MODEL_FOR_VISION_2_SEQ_MAPPING_NAMES",
        "MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES",
        "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES",
    ]
    rest = sorted(n for n in dir(ma) if n.startswith("MODEL_") and n.endswith("_MAPPING_NAMES") and n not in first)
    return [getattr(ma, n) for n in first + rest if hasattr(ma, n)]


def model_type_of(arch: str) -> str | None:
    """The model type whose model class is ARCH (the auto mappings inverted)."""
    return next(
        (
            model_type
            for mapping in _mappings()
            for model_type, names in mapping.items()
            if arch == names or (isinstance(names, (list, tuple)) and arch in names)
        ),
        None,
    )


def model_class(arch: str, model_type: str):
    """(model class, note): the class named ARCH, else the model type's generative class."""
    import transformers

    if hasattr(transformers, arch):
        return getattr(transformers, arch), None
    for mapping in _mappings()[:6]:
        name = mapping.get(model_type)
        name = name[0] if isinstance(name, (list, tuple)) else name
        if name and hasattr(transformers, name):
            return getattr(transformers, name), (
                f"{arch} is not in transformers {transformers.__version__}: "
                f"weights laid out by {name} (model type {model_type})"
            )
    raise NoTwin(f"{arch} is not in transformers {transformers.__version__}: no generic twin")


def source_config(arch: str | None, config: dict | None) -> tuple[dict, str, str]:
    """(config dict, architecture, where the config came from)."""
    import transformers
    from transformers import CONFIG_MAPPING

    version = transformers.__version__
    if config is not None:
        arch, given = (config.get("architectures") or [arch])[0], config.get("model_type")
        known = model_type_of(arch) if arch and hasattr(transformers, arch) else None
        if given not in CONFIG_MAPPING and known in CONFIG_MAPPING:  # a remote-code model type (Kimi K2's
            # kimi_k2) of an architecture transformers has: its config class reads the config
            return (
                {**config, "model_type": known},
                arch,
                f"config.json (model type {given} read as {known}, {arch}'s in transformers {version})",
            )
        if given not in CONFIG_MAPPING or not arch:
            raise NoTwin(
                f"model type {given!r} ({arch or 'no architecture'}) is not in transformers {version}: no generic twin"
            )
        return config, arch, "config.json"
    model_type = model_type_of(arch) if hasattr(transformers, arch) else None
    if model_type not in CONFIG_MAPPING:
        raise NoTwin(f"{arch} is not in transformers {version}: no generic twin")
    cls = CONFIG_MAPPING[model_type]
    return (
        {**cls().to_dict(), "architectures": [arch]},
        arch,
        f"family defaults, not the published config (transformers {cls.__name__}() {version})",
    )


# --- layers -------------------------------------------------------------------------------------


def layer_count(cfg: dict) -> tuple[str | None, int | None]:
    """(the key holding the layer count, the count); a per-layer list's length when no key has it."""
    key = next((k for k in LAYER_COUNTS if is_count(cfg.get(k))), None)
    if key:
        return key, cfg[key]
    return None, next((len(cfg[k]) for k in PER_LAYER if isinstance(cfg.get(k), (list, str)) and cfg[k]), None)


def per_layer_keys(cfg: dict, n: int) -> list[str]:
    return [
        k
        for k, v in cfg.items()
        if k not in INDEX_LISTS
        and isinstance(v, (list, str))
        and len(v) == n
        and (
            k in PER_LAYER
            or (
                isinstance(v, list)
                and ("layer" in k or "block" in k or k.endswith("_types"))
                and all(x is None or isinstance(x, (str, int, float)) for x in v)
            )
        )
    ]


def features(cfg: dict, n: int) -> list[tuple]:
    """What each of the N layers is, by every per-layer key of the config: one tuple per layer."""
    cols = [list(cfg[k]) for k in per_layer_keys(cfg, n)]
    cols += [[i in set(cfg[k]) for i in range(n)] for k in INDEX_LISTS if isinstance(cfg.get(k), list)]
    cols += [[repr(layer_entry(cfg[k], i)) for i in range(n)] for k in PER_LAYER_DICTS if isinstance(cfg.get(k), dict)]
    cols += [[i < cfg[k] for i in range(n)] for k in THRESHOLDS if is_count(cfg.get(k))]
    cols += [
        [rule(cfg, cfg[k], i) for i in range(n)] for k, rule in PERIODS.items() if is_count(cfg.get(k)) and cfg[k] > 0
    ]
    return list(zip(*cols)) if cols else [()] * n


def layer_entry(by_layer: dict, i: int):
    """Layer I's entry of a per-layer dict (`per_layer_config`: {"05": {...}}; JSON keys are strings)."""
    return next((v for k, v in by_layer.items() if str(k).isdigit() and int(k) == i), None)


def kept_layers(feats: list[tuple], default: int) -> tuple[list[int], str]:
    """The source layers the twin keeps, and why: one period of the pattern when it repeats (a
    truncated last period allowed), else the first layer of each kind; DEFAULT when all are alike."""
    n = len(feats)
    if len(set(feats)) <= 1:
        return [i % n for i in range(default)], ""
    period = next(p for p in range(1, n + 1) if all(feats[i] == feats[i % p] for i in range(n)))
    if period <= n // 2:
        return list(range(period)), "one period of the pattern"
    first: dict = {}
    for i, f in enumerate(feats):
        first.setdefault(f, i)
    return sorted(first.values()), "the first layer of each kind"


def shrink_layers(cfg: dict, default: int, notes: list[str], where: str) -> None:
    """Keep the fewest layers that show the source's per-layer pattern."""
    count_key, n = layer_count(cfg)
    if not n:
        return
    per_layer, feats = per_layer_keys(cfg, n), features(cfg, n)
    keep, why = kept_layers(feats, default)
    for k in per_layer:
        cfg[k] = "".join(cfg[k][i] for i in keep) if isinstance(cfg[k], str) else [cfg[k][i] for i in keep]
    for k in [k for k in INDEX_LISTS if isinstance(cfg.get(k), list)]:
        cfg[k] = [j for j, i in enumerate(keep) if i in set(cfg[k])]
    for k in [k for k in PER_LAYER_DICTS if isinstance(cfg.get(k), dict)]:
        cfg[k] = {str(j): layer_entry(cfg[k], i) for j, i in enumerate(keep) if layer_entry(cfg[k], i) is not None}
    cfg.update({k: sum(i < cfg[k] for i in keep) for k in THRESHOLDS if is_count(cfg.get(k))})
    if count_key:
        cfg[count_key] = len(keep)
    if features(cfg, len(keep)) != [feats[i] for i in keep]:  # a rule the rewrites above do not cover
        notes.append(f"{where}the layer pattern could not be kept exactly")
    if why:
        notes.append(f"{where}{n} layers -> {len(keep)}: source layers {keep} ({why})")


# --- sizes --------------------------------------------------------------------------------------


def shrink_moe(cfg: dict) -> None:
    for k in EXPERTS:
        if k in cfg:
            cfg[k] = _each(cfg[k], lambda v: min(v, 4))
    experts = min(
        [
            v
            for k in EXPERTS
            if k in cfg
            for v in (cfg[k] if isinstance(cfg[k], list) else [cfg[k]])
            if is_count(v) and v > 0
        ]
        or [4]
    )
    for k in TOP_K:  # never more than the experts there are
        if k in cfg:
            cfg[k] = _each(cfg[k], lambda v: min(v, 2, experts))
    cfg.update({k: 1 for k in GROUPS if is_count(cfg.get(k))})
    cfg.update({k: min(cfg[k], 1) for k in AT_MOST_ONE if is_count(cfg.get(k))})


def shrink_text(cfg: dict, source: dict) -> None:
    """Decoder sizes by the tables above; norms, rope, windows and routing keys stay as they are."""
    heads = next((source[k] for k in HEADS if is_count(source.get(k))), None)
    cfg.update({k: v for k, v in TEXT_SET.items() if k in cfg})
    # stated even where the config class leaves it out (Glm4MoeConfig(); vLLM's GLM-4 MoE reads it,
    # the published configs have it); 32 is what hidden / heads gives anyway
    # a class default left None (HunYuanMoEV1Config(): the model computes head_dim ** -0.5): the width
    # hidden / heads gives, as the published configs state it
    if (
        is_count(cfg.get("head_dim"))
        or ("head_dim" in cfg and cfg["head_dim"] is None)
        or ("head_dim" not in cfg and head_dim(cfg) == 32)
    ):
        cfg["head_dim"] = 32
    for k in KV_HEADS:  # grouped-query attention stays grouped, plain multi-head stays plain
        if is_count(cfg.get(k)):
            cfg[k] = 2 if heads and cfg[k] < heads else 4
    for k, v in list(cfg.items()):  # expert MLPs narrower than the dense one, as in the real models
        if "intermediate_size" in k or k in FFN:
            cfg[k] = _each(v, lambda _: 64 if k.startswith(("moe_", "shared_expert")) or "expert" in k else 128)  # noqa: B023
    shrink_moe(cfg)
    if any(cfg.get(k) is not None for k in (*MLA, *MLA_KEPT)):
        cfg.update({k: v for k, v in MLA.items() if cfg.get(k) is not None})
        if "qk_head_dim" in cfg:
            cfg["qk_head_dim"] = cfg.get("qk_nope_head_dim", 0) + cfg.get("qk_rope_head_dim", 0)
        if is_count(cfg.get("head_dim")) and is_count(cfg.get("qk_rope_head_dim")):
            cfg["head_dim"] = cfg["qk_rope_head_dim"]  # as DeepseekV3Config derives it
    cfg.update({k: v for k, v in HYBRID.items() if is_count(cfg.get(k))})
    if "max_position_embeddings" in cfg and cfg["max_position_embeddings"] is None:  # a class default left
        # unset (vLLM's Step3p5Config) where the published config has it: the config's own context length
        cfg["max_position_embeddings"] = next((cfg[k] for k in CONTEXT if is_count(cfg.get(k))), 4096)
    if is_count(cfg.get("linear_num_value_heads")):  # value heads a multiple of key heads, as before
        more = source["linear_num_value_heads"] > (source.get("linear_num_key_heads") or 1)
        cfg["linear_num_value_heads"] = 4 if more else 2


def head_dim(cfg: dict) -> float | None:
    if is_count(cfg.get("head_dim")):
        return cfg["head_dim"]
    width = next((cfg[k] for k in ("hidden_size", "n_embd") if is_count(cfg.get(k))), None)
    heads = next((cfg[k] for k in HEADS if is_count(cfg.get(k))), None)
    return width / heads if width and heads else None


def shrink_rope(rope: dict, ratio: float) -> None:
    """Rope type and parameters stay; lists sized by the head do not: `mrope_section` sums to half the
    rotary dim (rescaled in proportion), longrope's factors have one entry per rotary pair."""
    for value in rope.values():
        if isinstance(value, dict):  # per layer kind (Gemma 3's full/sliding rope parameters)
            shrink_rope(value, ratio)
    section = rope.get("mrope_section")
    if isinstance(section, list) and section:
        total = max(len(section), round(sum(section) * ratio))
        new = [max(1, math.floor(s * ratio)) for s in section]
        for i in range(total - sum(new)):
            new[i % len(new)] += 1
        rope["mrope_section"] = new
    for key in ("short_factor", "long_factor"):
        values = rope.get(key)
        if isinstance(values, list) and values:
            size = max(1, round(len(values) * ratio))
            rope[key] = [values[int(i * len(values) / size)] for i in range(size)]


def shrink_tower(cfg: dict, text_hidden: int | None, notes: list[str], where: str) -> None:
    for k, v in list(cfg.items()):
        if k in TO_TEXT_WIDTH or (is_count(v) and v == text_hidden and any(w in k for w in FEEDS_TEXT)):
            cfg[k] = TEXT_SET["hidden_size"]  # e.g. Qwen2-VL's vision hidden_size is the merger's output
        elif k in TOWER_SET and is_count(v):
            cfg[k] = TOWER_SET[k]
        elif ("intermediate_size" in k or k in FFN) and is_count(v):
            cfg[k] = 128
    sibling("twin_restate").tie_tower_widths(cfg, notes, where)
    depth = next((cfg[k] for k in TOWER_DEPTH if is_count(cfg.get(k))), 2)
    for k in TOWER_INDEX_LISTS:  # indices of blocks: those kept, at least the last one
        if isinstance(cfg.get(k), list) and cfg[k]:
            cfg[k] = [i for i in cfg[k] if i < depth] or [depth - 1]
            notes.append(f"{where}{k} -> {cfg[k]}")


# --- the whole config ---------------------------------------------------------------------------


def sub_configs(cfg: dict, role: str):
    """(key, sub-config, its role): text or tower by the key's name, else the parent's role."""
    for key, value in cfg.items():
        if isinstance(value, dict) and key not in NOT_SUBCONFIGS and (key.endswith("_config") or "model_type" in value):
            low = key.lower()
            yield (
                key,
                value,
                (
                    "text"
                    if any(w in low for w in TEXT_WORDS)
                    else "tower"
                    if any(w in low for w in TOWER_WORDS)
                    else role
                ),
            )


def shrink(
    cfg: dict, layers: int, notes: list[str], role: str = "text", where: str = "", text_hidden: int | None = None
) -> dict:
    """A shrunk copy of CFG and of every sub-config in it."""
    out = copy.deepcopy(cfg)
    if role == "text":
        text = cfg["text_config"] if isinstance(cfg.get("text_config"), dict) else cfg
        text_hidden = text.get("hidden_size") if is_count(text.get("hidden_size")) else text_hidden
    for key, value, sub_role in sub_configs(cfg, role):
        out[key] = shrink(value, layers, notes, sub_role, f"{where}{key}: ", text_hidden)
    if role == "tower":
        shrink_tower(out, text_hidden, notes, where)
        return out
    shrink_text(out, cfg)
    before, after = head_dim(cfg), head_dim(out)
    for key in ("rope_scaling", "rope_parameters"):
        if isinstance(out.get(key), dict) and before and after:
            shrink_rope(out[key], after / before)
    shrink_layers(out, layers, notes, where)
    return out


def token_ids(cfg: dict) -> list[int]:
    """Every *_token_id / *_token_index in CFG (nested), but those the twin tokenizer sets."""
    found = []
    for key, value in cfg.items():
        if isinstance(value, dict):
            found += token_ids(value)
        elif isinstance(key, str) and TOKEN_ID.search(key) and key not in REPLACED_IDS:
            found += [v for v in (value if isinstance(value, list) else [value]) if is_count(v)]
    return found


def tokenizer_family(model_type: str) -> str:
    """Whose special tokens and chat template twin_build.train_tokenizer gives the twin."""
    return "qwen3" if model_type.startswith("qwen") else "llama" if model_type.startswith("llama") else "generic"


def set_vocab(cfg: dict, size: int, ids: dict, role: str = "text") -> None:
    """The twin tokenizer's vocabulary size and bos/eos/pad ids, in every decoder config."""
    for _, value, sub_role in sub_configs(cfg, role):
        set_vocab(value, size, ids, sub_role)
    if role == "text":
        cfg.update(ids, **({"vocab_size": size} if "vocab_size" in cfg else {}))


def twin_config(
    source: dict, layers: int, full: bool = False, split: dict | None = None, defaults: bool = False
) -> tuple[dict, int, list[str]]:
    """(shrunk config dict, the vocabulary size it needs, notes); FULL: the source's sizes as they are;
    SPLIT: the command's parallel sizes ({tp, pp, ep}) the twin must divide by (twin_split.fit_parallel)
    and its context length, given to a twin from class DEFAULTS (twin_split.fit_context)."""
    notes = [
        f"{k} dropped"
        + (
            " (the twin is bf16: quantization is not reproduced)"
            if k == "quantization_config"
            else " (vLLM's own implementation is used)"
            if k == "auto_map"
            else ""
        )
        for k in DROPPED[:3]
        if source.get(k)
    ]
    cfg = {k: v for k, v in source.items() if k not in DROPPED}
    cfg = cfg if full else shrink(cfg, layers, notes)
    if not full:
        twin_split = sibling("twin_split")  # it reads this module's tables
        twin_split.fit_parallel(cfg, split or {}, notes)
        if defaults:  # a published config states the context it has and every key vLLM reads
            twin_split.fit_context(cfg, (split or {}).get("context"), notes)
            for sub in [cfg, *(s for _, s, role in sub_configs(cfg, "text") if role == "text")]:
                sibling("twin_restate").restate(sub, notes)
    text = cfg["text_config"] if isinstance(cfg.get("text_config"), dict) else cfg
    own = cfg.get("model_type") in OWN_ENCODING  # vLLM's own encoder emits ids up to the config's size
    floor = (text.get("vocab_size") or VOCAB) if full or own else VOCAB
    needed = max([floor - 1, *token_ids(cfg)]) + 1
    if own and not full:
        notes.append(
            f"vocab {floor}: the config's, as vLLM encodes {cfg['model_type']} prompts with "
            f"{OWN_ENCODING[cfg['model_type']]} (padded with unreachable <unusedN> tokens)"
        )
    if needed > floor:  # placeholder ids (image, video, ...) point into the twin vocabulary
        notes.append(f"vocab {needed}: up to the config's token ids, padded with unreachable <unusedN> tokens")
    return cfg, needed, notes
