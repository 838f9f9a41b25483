"""Gemma 4 twins: the multimodal model and its assistant (draft) model; used by twin_build.py.

Runs inside a target env (torch / transformers / tokenizers only).  Config dicts are written in
transformers 5.8's layout (`global_head_dim`) and handed to the *installed* config classes, which
convert them to their own layout (5.19 moves the full-attention head size into `per_layer_config`,
and a 5.19 config.json makes vLLM 0.20.1 fail with `AmbiguousGlobalPerLayerAttributeError`).
"""

from __future__ import annotations

import re
from pathlib import Path

# Gemma 4's own special-token strings, so vLLM's gemma4 reasoning and tool parsers, the Gemma 4
# chat templates (e.g. vLLM's examples/tool_chat_template_gemma4.jinja) and the multimodal
# processor find what they look up (`<|turn>`, `<|channel>`, `<|tool_call>`, `<|image|>`, ...).
# The processor reads image_token/boi_token/... from the tokenizer's named special tokens.
NAMED_TOKENS = {
    "image_token": "<|image|>",
    "boi_token": "<|image>",
    "eoi_token": "<image|>",
    "audio_token": "<|audio|>",
    "boa_token": "<|audio>",
    "eoa_token": "<audio|>",
}
SPECIAL = [
    "<pad>",
    "<eos>",
    "<bos>",
    "<|turn>",
    "<turn|>",
    "<|channel>",
    "<channel|>",
    "<|think|>",
    "<|tool>",
    "<tool|>",
    "<|tool_call>",
    "<tool_call|>",
    "<|tool_response>",
    "<tool_response|>",
    '<|"|>',
    *NAMED_TOKENS.values(),
    "<|video|>",
]
# Gemma 4's turn format; image parts become the image token, which vLLM expands to boi + soft tokens + eoi.
TEMPLATE = (
    "{{ bos_token }}{%- for m in messages %}<|turn>{{ 'model' if m['role'] == 'assistant' else m['role'] }}\n"
    "{%- if m['content'] is string %}{{ m['content'] }}{% else %}{% for p in m['content'] %}"
    "{%- if p['type'] == 'text' %}{{ p['text'] }}{% elif p['type'] in ('image', 'image_url') %}<|image|>{% endif %}"
    "{%- endfor %}{% endif %}<turn|>\n{% endfor %}"
    "{%- if add_generation_prompt %}<|turn>model\n{% endif %}"
)
TOKENIZER = {
    "special": SPECIAL,
    "eos": "<eos>",
    "pad": "<pad>",
    "bos": "<bos>",
    "template": TEMPLATE,
    "named": NAMED_TOKENS,
}
MAX_SOFT_TOKENS = 70  # the smallest token budget Gemma 4's image processor offers

# The real assistant checkpoints' structure, for when their config.json cannot be fetched:
# 4 decoder layers [sliding, sliding, sliding, full], all KV-shared with the target; a centroid
# (ordered-embedding) LM head on the E2B/E4B assistants; K=V projections on the 26B/31B ones.
# Source: the published config.json files of google/gemma-4-{E2B,E4B,26B-A4B,31B}-it-assistant
# as transcribed in public ports (mlx-swift-lm and CoreML-LLM tests/notes), May 2026.
ASSISTANT_LAYER_TYPES = ["sliding_attention"] * 3 + ["full_attention"]
ASSISTANT_FACTS = {  # size in the model id -> (centroid LM head, K=V projections, global KV heads)
    "E2B": (True, False, None),
    "E4B": (True, False, None),
    "26B-A4B": (False, True, 2),
    "31B": (False, True, 4),
}


def _ids(vocab: dict) -> dict:
    """The special-token ids of this twin's vocabulary, under the config's key names."""
    return {"pad_token_id": vocab["<pad>"], "eos_token_id": vocab["<eos>"], "bos_token_id": vocab["<bos>"]}


def _mm_ids(vocab: dict) -> dict:
    t = NAMED_TOKENS
    return {
        "image_token_id": vocab[t["image_token"]],
        "boi_token_id": vocab[t["boi_token"]],
        "eoi_token_id": vocab[t["eoi_token"]],
        "video_token_id": vocab["<|video|>"],
        "audio_token_id": vocab[t["audio_token"]],
        "boa_token_id": vocab[t["boa_token"]],
        "eoa_token_id": vocab[t["eoa_token"]],
        "eoa_token_index": vocab[t["eoa_token"]],
    }


def _global_head_dim(text: dict) -> int | None:
    if text.get("global_head_dim"):
        return text["global_head_dim"]
    per_layer = text.get("per_layer_config") or {}
    dims = {v.get("head_dim") for v in per_layer.values() if isinstance(v, dict)} - {None}
    return max(dims) if dims else None


def shrink_text(text: dict, layer_types: list[str], vocab_size: int, vocab: dict, full: bool = False) -> dict:
    """A gemma4_text config with tiny sizes (or, `full`, the source's sizes) and the source's structure."""
    t = {
        k: v
        for k, v in text.items()
        if k
        not in (
            "per_layer_config",
            "transformers_version",
            "_name_or_path",
            "architectures",
            "id2label",
            "label2id",
            "dtype",
        )
    }
    if full:
        glob = _global_head_dim(text)
        t.update(layer_types=layer_types, num_hidden_layers=len(layer_types), vocab_size=vocab_size, **_ids(vocab))
        if glob:
            t["global_head_dim"] = glob
        if t.get("vocab_size_per_layer_input"):
            t["vocab_size_per_layer_input"] = vocab_size
        return t
    grouped = (text.get("num_key_value_heads") or 1) < (text.get("num_attention_heads") or 1)
    t.update(
        hidden_size=64,
        intermediate_size=128,
        num_attention_heads=2,
        num_key_value_heads=1 if grouped else 2,
        head_dim=32,
        num_hidden_layers=len(layer_types),
        layer_types=layer_types,
        vocab_size=vocab_size,
        **_ids(vocab),
    )
    # full-attention layers keep a wider head than sliding ones when the source has one
    glob = _global_head_dim(text)
    t["global_head_dim"] = 64 if glob and glob != text.get("head_dim") else 32
    if text.get("num_global_key_value_heads"):
        t["num_global_key_value_heads"] = 1
    if text.get("hidden_size_per_layer_input"):  # per-layer embeddings (E2B/E4B)
        t.update(hidden_size_per_layer_input=16, vocab_size_per_layer_input=vocab_size)
    else:
        t["vocab_size_per_layer_input"] = 0 if not text.get("vocab_size_per_layer_input") else vocab_size
    if text.get("enable_moe_block"):  # 26B-A4B
        t.update(num_experts=4, top_k_experts=2, moe_intermediate_size=64)
    if text.get("num_kv_shared_layers"):
        # too few layers to share between; the assistant sets its own below
        t["num_kv_shared_layers"] = 0
    return t


def target_config(
    source: dict, vocab: dict, vocab_size: int, layers: int, full: bool = False
) -> tuple[dict, list[str]]:
    """A Gemma4ForConditionalGeneration config dict; also says which parts came from defaults."""
    import transformers

    notes = []
    text = source.get("text_config") or transformers.Gemma4TextConfig().to_dict()
    types = text.get("layer_types") or ["sliding_attention"] * 5 + ["full_attention"]
    # the last layers, at least one of each attention kind (Gemma 4 ends on a full-attention
    # layer, the one before slides); the kinds decide the KV-cache groups vLLM sets up
    layers = len(types) if full else max(layers, len(set(types)))
    cfg = {
        k: v
        for k, v in source.items()
        if k not in ("transformers_version", "_name_or_path", "dtype", "torch_dtype", "quantization_config")
    }
    cfg["text_config"] = shrink_text(text, types[-layers:], vocab_size, vocab, full)
    vision = source.get("vision_config")
    if not vision:
        vision = transformers.Gemma4VisionConfig().to_dict()
        notes.append("vision_config from Gemma4VisionConfig() defaults (every gemma-4-*-it has a vision tower)")
    vision = {k: v for k, v in vision.items() if k not in ("transformers_version", "_name_or_path", "dtype")}
    vision["default_output_length"] = MAX_SOFT_TOKENS
    if not full:
        vision.update(
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=2,
            head_dim=32,
        )
    cfg["vision_config"] = vision
    if source.get("audio_config"):
        notes.append("audio_config dropped (the twin has no audio tower)")
    cfg["audio_config"] = None
    cfg.update(
        _mm_ids(vocab),
        architectures=["Gemma4ForConditionalGeneration"],
        model_type="gemma4",
        tie_word_embeddings=source.get("tie_word_embeddings", True),
        dtype="bfloat16",
    )
    return cfg, notes


def assistant_config(
    source: dict, model_id: str, vocab: dict, vocab_size: int, backbone_hidden: int, full: bool = False
) -> tuple[dict, list[str]]:
    """A Gemma4AssistantForCausalLM config dict keeping the real layer pattern (all layers KV-shared)."""
    import transformers

    notes = []
    text = source.get("text_config")
    if not text:
        text = transformers.Gemma4TextConfig().to_dict()
        text.update(
            layer_types=ASSISTANT_LAYER_TYPES,
            hidden_size_per_layer_input=0,
            vocab_size_per_layer_input=0,
            final_logit_softcapping=None,
        )
        size = next((k for k in ASSISTANT_FACTS if re.search(rf"(?i)-{k}-", model_id)), None)
        if size:
            ordered, k_eq_v, global_kv = ASSISTANT_FACTS[size]
            text.update(attention_k_eq_v=k_eq_v, num_global_key_value_heads=global_kv)
            source = {**source, "use_ordered_embeddings": ordered}
            notes.append(
                f"layer pattern [sliding x3, full] and the {size} assistant's LM head (centroids: "
                f"{ordered}) from the published assistant configs"
            )
        else:
            notes.append(
                "layer pattern [sliding x3, full] from the published assistant configs; no published "
                "facts for this size, the rest is transformers' defaults"
            )
    t = shrink_text(text, list(text["layer_types"]), vocab_size, vocab, full)
    t.update(
        num_kv_shared_layers=len(t["layer_types"]),
        hidden_size_per_layer_input=0,
        vocab_size_per_layer_input=0,
        enable_moe_block=False,
        use_double_wide_mlp=False,
    )
    cfg = {
        k: v for k, v in source.items() if k not in ("transformers_version", "_name_or_path", "dtype", "torch_dtype")
    }
    cfg.update(
        text_config=t,
        backbone_hidden_size=backbone_hidden,
        architectures=["Gemma4AssistantForCausalLM"],
        model_type="gemma4_assistant",
        tie_word_embeddings=True,
        dtype="bfloat16",
        **_mm_ids(vocab),
    )
    if cfg.get("use_ordered_embeddings"):  # centroid LM head: the vocabulary must split evenly into centroids
        # (vLLM reshapes the token ordering to [centroids, vocab // centroids]; 262144 / 2048 on the real ones)
        if not (full and vocab_size % cfg.get("num_centroids", 2048) == 0):
            centroids = max(n for n in range(1, 33) if vocab_size % n == 0)
            cfg.update(num_centroids=centroids, centroid_intermediate_top_k=min(4, centroids))
    return cfg, notes


def add_shared_kv_weights(model) -> int:
    """Give the KV-shared layers the K/V projections and K norm the published checkpoints ship.

    transformers builds those layers without them (and ignores them when loading), but the
    released E2B/E4B files carry `k_proj`, `v_proj` and `k_norm` for every layer, and some vLLM
    releases load them (0.21.0 fails with "weights were not initialized from checkpoint:
    ...k_norm.weight" without them) while later ones drop them.  Random like everything else.
    """
    import torch.nn as nn
    from transformers.models.gemma4 import modeling_gemma4 as mg

    added = 0
    for attn in model.modules():
        if not (isinstance(attn, mg.Gemma4TextAttention) and attn.is_kv_shared_layer and not hasattr(attn, "k_proj")):
            continue
        cfg = attn.config
        heads = cfg.num_global_key_value_heads if attn.use_alternative_attention else cfg.num_key_value_heads
        attn.k_norm = mg.Gemma4RMSNorm(dim=attn.head_dim, eps=cfg.rms_norm_eps)
        attn.k_proj = nn.Linear(cfg.hidden_size, heads * attn.head_dim, bias=cfg.attention_bias)
        if not attn.use_alternative_attention:
            attn.v_proj = nn.Linear(cfg.hidden_size, heads * attn.head_dim, bias=cfg.attention_bias)
        added += 1
    return added


def save_processor(out: Path, tokenizer) -> None:
    """The multimodal processor vLLM loads next to the weights (image budget MAX_SOFT_TOKENS)."""
    import transformers as tf

    image = tf.Gemma4ImageProcessor(max_soft_tokens=MAX_SOFT_TOKENS)
    proc = tf.Gemma4Processor(
        feature_extractor=tf.Gemma4AudioFeatureExtractor(),
        image_processor=image,
        tokenizer=tokenizer,
        video_processor=tf.Gemma4VideoProcessor(),
        image_seq_length=MAX_SOFT_TOKENS,
    )
    proc.save_pretrained(out)


def build(
    family: str,
    out: Path,
    source: dict,
    model_id: str,
    layers: int,
    tokenizer,
    seed: int,
    backbone_hidden: int = 64,
    full: bool = False,
) -> dict:
    """Write weights + config (+ processor) for a gemma4 / gemma4_text / gemma4_assistant twin; return marker facts."""
    import torch
    import transformers as tf

    vocab = tokenizer.get_vocab()
    size = len(tokenizer)
    if family == "gemma4":
        cfg_dict, notes = target_config(source, vocab, size, layers, full)
        config = tf.Gemma4Config(**cfg_dict)
        model_cls = tf.Gemma4ForConditionalGeneration
    elif family == "gemma4_text":  # a text-only Gemma 4 (a plain draft model)
        text = source.get("text_config") or source
        types = text.get("layer_types") or ["full_attention"]
        # at least one layer of each attention kind: how many KV-cache groups a draft's layers
        # fall into decides whether vLLM's draft-model path accepts it, so a 1-layer twin of a
        # sliding+full model would pass where the real one does not
        n = len(types) if full else max(layers, len(set(types)))
        cfg_dict, notes = shrink_text(text, types[-n:], size, vocab, full), []
        config = tf.Gemma4TextConfig(**cfg_dict, architectures=["Gemma4ForCausalLM"], dtype="bfloat16")
        model_cls = tf.Gemma4ForCausalLM
    else:
        cfg_dict, notes = assistant_config(source, model_id, vocab, size, backbone_hidden, full)
        config = tf.Gemma4AssistantConfig(**cfg_dict)
        model_cls = tf.Gemma4AssistantForCausalLM
    torch.manual_seed(seed)
    model = model_cls(config)
    if family != "gemma4_assistant":
        add_shared_kv_weights(model)
    model = model.to(torch.bfloat16)
    if full:  # KV-shared sizes and the like are the source's: say what was built
        notes.append(f"full size: {sum(p.numel() for p in model.parameters()) / 1e9:.2f} B parameters")
    masked = getattr(model, "masked_embedding", None)
    if masked is not None:  # a real permutation of the vocabulary, not uninitialised memory
        order = torch.randperm(size, generator=torch.Generator().manual_seed(seed), device="cpu")
        masked.token_ordering.copy_(order.to(masked.token_ordering.device))
    model.save_pretrained(out, safe_serialization=True)
    if family == "gemma4":
        save_processor(out, tokenizer)
    text = config.get_text_config()
    return {
        "params": sum(p.numel() for p in model.parameters()),
        "architectures": config.architectures,
        "model_type": config.model_type,
        "layer_types": list(text.layer_types),
        "notes": notes,
        "bos": text.bos_token_id,
        "eos": text.eos_token_id,
    }
