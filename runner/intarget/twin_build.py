"""Build a twin model directory; run by a *target* env's Python.

    python twin_build.py --family qwen3|llama|gemma4|gemma4_text|gemma4_assistant --out DIR
                            [--model-id ID] [--config-json FILE] [--layers N] [--head-dim D]
                            [--tokenizer-from DIR] [--seed S] [--full-size]
    python twin_build.py --family generic --out DIR --model-id ID (--config-json FILE | --architecture ARCH)
                            [--layers N] [--tokenizer-from DIR] [--seed S] [--full-size] [--tensor-parallel N]
                            [--pipeline-parallel N] [--expert-parallel N]

The twin keeps what vLLM's start-up paths look at — `architectures`, `model_type`, rope
type and parameters, tied embeddings, max positions, the attention layout — and shrinks
the sizes (hidden 64, 4 heads of 32, 2 layers, vocab 2000).  Weights are random (seeded),
bf16 safetensors; the tokenizer is a byte-level BPE trained offline on this interpreter's
own standard library sources, with the family's special tokens and chat template.  With
`--tokenizer-from` the tokenizer (and so the vocabulary) is copied from another twin, so a
draft and its target can be used together for speculative decoding.  Gemma 4 (multimodal
model, text-only model, assistant) is built by twin_gemma4.py next to this file.

`--family generic` (twin_generic.py) twins any architecture the env's transformers knows, from
its config.json or, with `--architecture` alone, its configuration class's defaults; qwen3, llama
and gemma4 stay special cases (see twin_generic's docstring for why).  An architecture
transformers does not know exits 1 with the reason on one stderr line.

With `--full-size` nothing is shrunk: the twin has the source's hidden sizes, layer counts and
vocabulary size (the tokenizer is padded with unreachable `<unusedN>` entries up to it, so every
id the random weights emit decodes to text), for speed measurements on a GPU.  The weights are
initialised on the GPU when there is one, directly in bf16.

Imports only torch / transformers / tokenizers: no driftmatrix code runs in the target env.
"""

import argparse
import importlib.util
import json
import os
import re
import shutil
import sys
import sysconfig
from pathlib import Path

if not __package__:  # run by path (a target's Python, `-I`): PEP 366, as the package this folder is,
    # so that `from . import sibling` finds the files next to this one (and import-linter sees it)
    sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = os.path.basename(os.path.dirname(os.path.abspath(__file__)))

from . import (
    twin_gemma4,
    twin_generic,
    twin_layout,
    twin_processor,
    twin_restate,
    twin_split,
    twin_vllm_config,
)

VOCAB = 2000
CHATML = (
    "{%- if tools %}<|im_start|>system\nYou may call these tools:\n<tools>\n"
    "{%- for t in tools %}{{ t | tojson }}\n{% endfor %}</tools>\n"
    'Answer with <tool_call>{"name": ..., "arguments": ...}</tool_call>.<|im_end|>\n{% endif %}'
    "{%- for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{%- if m['content'] is string %}{{ m['content'] }}{% else %}"
    "{%- for part in m['content'] %}{% if part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}"
    "{%- endif %}<|im_end|>\n{% endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
LLAMA3 = (
    "{{- '<|begin_of_text|>' }}{%- for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n"
    "{%- if m['content'] is string %}{{ m['content'] }}{% else %}"
    "{%- for part in m['content'] %}{% if part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}"
    "{%- endif %}<|eot_id|>{% endfor %}"
    "{%- if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)
FAMILIES = {
    # family: (config class, model class, special tokens, eos, pad, bos, chat template)
    "qwen3": (
        "Qwen3Config",
        "Qwen3ForCausalLM",
        ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"],
        "<|im_end|>",
        "<|endoftext|>",
        None,
        CHATML,
    ),
    "llama": (
        "LlamaConfig",
        "LlamaForCausalLM",
        [
            "<|begin_of_text|>",
            "<|end_of_text|>",
            "<|start_header_id|>",
            "<|end_header_id|>",
            "<|eot_id|>",
            "<tool_call>",
            "</tool_call>",
        ],
        "<|eot_id|>",
        "<|end_of_text|>",
        "<|begin_of_text|>",
        LLAMA3,
    ),
}
# The markers vLLM's reasoning and tool-call parsers look up in a model's tokenizer when they are
# created (vllm/reasoning/*, vllm/tool_parsers/* of 0.21.0), so that a documented
# `--reasoning-parser X` / `--tool-call-parser Y` finds them in a twin as in the published model
# (its own tokenizer has them); random weights never emit them.
PARSER_MARKERS = [
    "<think>",
    "</think>",
    "<seed:think>",
    "</seed:think>",
    "<seed:tool_call>",
    "</seed:tool_call>",
    "<minimax:tool_call>",
    "</minimax:tool_call>",
    "<tool_calls>",
    "</tool_calls>",
    "<tool_response>",
    "</tool_response>",
    "<function_call>",
    "<start_function_call>",
    "<end_function_call>",
    "<longcat_tool_call>",
    "</longcat_tool_call>",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
    "<|tool_call|>",
    "<|tool_call_begin|>",
    "<|tool_call_end|>",
    "<|tool_calls_section_begin|>",
    "<|tool_calls_section_end|>",
    "<|python_tag|>",
    "[TOOL_CALLS]",
    "[ARGS]",
    "<|START_THINKING|>",
    "<|END_THINKING|>",
    "<response>",
    "</response>",
    "<｜tool▁calls▁begin｜>",
    "<｜tool▁calls▁end｜>",
    "<｜tool▁call▁begin｜>",
    "<｜tool▁call▁end｜>",
    "<｜tool▁sep｜>",
    "<｜DSML｜function_calls>",
    "</｜DSML｜function_calls>",
    # gpt-oss (harmony): its reasoning parser looks these up (KeyError '<|end|>' on the H200)
    "<|start|>",
    "<|end|>",
    "<|message|>",
    "<|channel|>",
    "<|return|>",
    "<|call|>",
    "<|constrain|>",
]
# a marker as vLLM's parsers spell it in their sources: a quoted <...> or [UPPER] literal, not a
# format string (`<think{suffix}>`), a regex (`<\\|sep\\|>`) or a byte token (`<0x0A>`)
PARSER_LITERAL = re.compile(r"""["']((?:<[^"'\s<>{}\\]{1,40}>)|(?:\[[A-Z_]{2,30}\]))["']""")
PARSER_SOURCES = ("reasoning", "tool_parsers", "entrypoints/openai/tool_parsers", "parser")


def parser_markers() -> list[str]:
    """PARSER_MARKERS and every marker the reasoning and tool-call parsers of this target's vLLM spell
    out (read from its sources, not imported): `--reasoning-parser minimax_m3` looks up `<mm:think>`,
    which a list kept by hand lacks until someone sees the twin fail."""
    spec = importlib.util.find_spec("vllm")
    roots = [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
    found = {
        m
        for root in roots
        for sub in PARSER_SOURCES
        for f in sorted((root / sub).glob("**/*.py"))
        for m in PARSER_LITERAL.findall(f.read_text(errors="ignore"))
        if not m.startswith("<0x")
    }
    return [*PARSER_MARKERS, *sorted(found - set(PARSER_MARKERS) - {"<s>", "</s>", "<pad>"})]


# the generic family's tokenizer (twin_generic.py, when the model type has no known set): ChatML's
# layout with <s> ... </s> turns, so </s> also ends a reply; the parsers' markers (parser_markers)
GENERIC_TOKENIZER = {
    "special": ["<s>", "</s>", "<pad>", "<tool_call>", "</tool_call>"],
    "eos": "</s>",
    "pad": "<pad>",
    "bos": "<s>",
    "template": CHATML.replace("<|im_start|>", "<s>").replace("<|im_end|>", "</s>"),
    "named": {},
}
# built by twin_gemma4.py (multimodal model + assistant); config class for the offline defaults
GEMMA4 = {"gemma4": "Gemma4Config", "gemma4_text": "Gemma4TextConfig", "gemma4_assistant": "Gemma4AssistantConfig"}
SHRINK = {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "vocab_size": VOCAB}


def corpus(limit=3_000_000):
    size = 0
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        text = path.read_text(errors="ignore")
        size += len(text)
        yield text
        if size > limit:
            return


def pad_vocab(tok, size: int):
    """Extend a trained BPE vocabulary to `size` ids with unreachable `<unusedN>` entries (no merge
    leads to them; they decode to their own text), like the real tokenizers' reserved slots."""
    from tokenizers import Tokenizer

    data = json.loads(tok.to_str())
    vocab = data["model"]["vocab"]
    next_id = 1 + max([*vocab.values(), *(t["id"] for t in data.get("added_tokens") or [])])
    for i in range(size - next_id):
        vocab[f"<unused{i}>"] = next_id + i
    return Tokenizer.from_str(json.dumps(data))


def train_tokenizer(out: Path, family: str, vocab_size: int | None = None):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    if family in GEMMA4 or family == "generic":
        spec = twin_gemma4.TOKENIZER if family in GEMMA4 else GENERIC_TOKENIZER
        special, eos, pad, bos, template, named = (
            spec["special"],
            spec["eos"],
            spec["pad"],
            spec["bos"],
            spec["template"],
            spec["named"],
        )
        if family == "generic":
            special = [*special, *(m for m in parser_markers() if m not in special)]
    else:
        _, _, special, eos, pad, bos, template = FAMILIES[family]
        named = {}
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB - 16, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(corpus(), trainer)
    if vocab_size and vocab_size > tok.get_vocab_size():
        tok = pad_vocab(tok, vocab_size)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token=eos, pad_token=pad, bos_token=bos, unk_token=None, extra_special_tokens=named
    )
    fast.chat_template = template
    fast.save_pretrained(out)
    return fast


def split_of(a) -> dict:
    """The command's parallel sizes the twin is fitted to (twin_split.fit_parallel)."""
    return {"tp": a.tensor_parallel, "pp": a.pipeline_parallel, "ep": a.expert_parallel, "context": a.context}


def twin_config(
    family: str,
    source: dict,
    layers: int,
    head_dim: int,
    ids: dict,
    full: bool = False,
    split: dict | None = None,
    notes: list | None = None,
    defaults: bool = False,
):
    import transformers

    config_cls, model_cls, _, eos, pad, bos, _ = FAMILIES[family]
    cfg = dict(source)
    for key in ("_name_or_path", "transformers_version", "quantization_config", "auto_map"):
        cfg.pop(key, None)
    if full:  # the source's sizes as they are
        layers = cfg.get("num_hidden_layers") or layers
    else:
        cfg.update(SHRINK)
        # grouped-query attention stays grouped, plain multi-head stays plain
        grouped = (source.get("num_key_value_heads") or 1) < (source.get("num_attention_heads") or 1)
        cfg["num_key_value_heads"] = 2 if grouped else 4
        cfg["head_dim"] = head_dim
        cfg["num_hidden_layers"] = layers
        twin_split.fit_parallel(cfg, split or {}, notes if notes is not None else [])
        if defaults:
            twin_split.fit_context(cfg, (split or {}).get("context"), notes if notes is not None else [])
        layers = cfg["num_hidden_layers"]  # a stage per pipeline rank may have added layers
    if isinstance(cfg.get("layer_types"), list):  # keep the sliding/full pattern's start
        cfg["layer_types"] = (cfg["layer_types"] * layers)[:layers]
    if cfg.get("max_window_layers") is not None:
        cfg["max_window_layers"] = min(cfg["max_window_layers"], layers)
    cfg["architectures"] = source.get("architectures") or [model_cls]
    cfg["bos_token_id"] = ids[bos] if bos else ids[pad]
    cfg["eos_token_id"] = ids[eos]
    cfg["pad_token_id"] = ids[pad]
    cfg["dtype"] = "bfloat16"
    cfg.pop("torch_dtype", None)
    return getattr(transformers, config_cls)(**cfg), getattr(transformers, model_cls)


def copy_tokenizer(out: Path, source: str):
    """The tokenizer files of another twin (a draft shares its target's vocabulary)."""
    from transformers import PreTrainedTokenizerFast

    for f in Path(source).iterdir():
        if "token" in f.name or f.name == "chat_template.jinja":
            shutil.copy(f, out / f.name)
    return PreTrainedTokenizerFast.from_pretrained(out)


def build_generic(a, out: Path) -> dict:
    """`--family generic`: the config by twin_generic's rules, the weights by the architecture's own
    transformers class (its checkpoint layout), the tokenizer trained (or copied) here."""
    import torch
    import transformers

    if bool(a.config_json) == bool(a.architecture):
        raise SystemExit("--family generic takes one of --config-json or --architecture")
    g = twin_generic
    given = json.loads(Path(a.config_json).read_text()) if a.config_json else None
    try:
        source, arch, config_source = g.source_config(a.architecture, given)
        model_type = source["model_type"]
        cls, cls_note = g.model_class(arch, model_type)
    except g.NoTwin:  # an architecture vLLM describes itself: its own configuration class, no weights
        arch = (given or {}).get("architectures", [a.architecture])[0] if given else a.architecture
        return twin_vllm_config.build(a, out, arch, given, g, train_tokenizer, copy_tokenizer, split_of(a))
    cfg, needed, notes = g.twin_config(source, a.layers, a.full_size, split_of(a), defaults=given is None)
    tokenizer = (
        copy_tokenizer(out, a.tokenizer_from)
        if a.tokenizer_from
        else train_tokenizer(out, g.tokenizer_family(model_type), needed)
    )
    processor_files = []
    try:  # multimodal: the processor vLLM loads at start, its placeholder tokens in the vocabulary
        processor_files = twin_processor.save_processor(out, cfg, arch, model_type, notes)
    except twin_processor.NoProcessor as exc:
        notes.append(f"no processor files: {exc}")
    tokenizer = transformers.AutoTokenizer.from_pretrained(out) if processor_files else tokenizer
    vocab = tokenizer.get_vocab()
    ids = {
        "bos_token_id": vocab[tokenizer.bos_token or tokenizer.pad_token],
        "eos_token_id": vocab[tokenizer.eos_token],
        "pad_token_id": vocab[tokenizer.pad_token],
    }
    g.set_vocab(cfg, max(len(tokenizer), needed), ids)
    config = transformers.CONFIG_MAPPING[model_type](**{**cfg, "architectures": [arch], "dtype": "bfloat16"})
    full_size_defaults(a.full_size)
    torch.manual_seed(a.seed)
    model = cls(config).to(torch.bfloat16)
    twin_restate.add_implied(model, config.get_text_config(), notes)  # before saving: config.json gets them
    params = sum(p.numel() for p in model.parameters())
    notes += [f"full size: {params / 1e9:.2f} B parameters"] if a.full_size else []
    model.save_pretrained(out, safe_serialization=True)
    notes += twin_layout.as_published(out, model, model_type)
    if cls.__name__ != arch:  # save_pretrained names the class it saved; vLLM resolves the published name
        (out / "config.json").write_text(
            json.dumps({**json.loads((out / "config.json").read_text()), "architectures": [arch]}, indent=2)
        )
    return {
        "params": params,
        "architectures": [arch],
        "model_type": model_type,
        "layer_types": getattr(config.get_text_config(), "layer_types", None),
        "notes": notes + ([cls_note] if cls_note else []),
        "config_source": config_source,
        "processor_files": processor_files,
        "transformers": transformers.__version__,
        "full_size": a.full_size,
        "bos": ids["bos_token_id"],
        "eos": ids["eos_token_id"],
    }


def full_size_defaults(full: bool) -> None:
    """Billions of parameters: initialise where it is fast, in the dtype that is saved."""
    import torch

    if full:
        torch.set_default_dtype(torch.bfloat16)
        if torch.cuda.is_available():
            torch.set_default_device("cuda")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", required=True, choices=sorted([*FAMILIES, *GEMMA4, "generic"]))
    ap.add_argument("--architecture", help="generic: a transformers model class name (its config's defaults)")
    ap.add_argument("--model-id", default="", help="the documented model id (picks known structure facts)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--config-json", help="the real model's config.json (else the family's defaults)")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--head-dim", type=int, default=32, help="32+ for vLLM's CPU attention backend (generic: 32)")
    ap.add_argument("--tokenizer-from")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--tensor-parallel",
        type=int,
        default=1,
        help="the command's tensor parallel size: head counts divisible by it (not gemma4)",
    )
    ap.add_argument(
        "--pipeline-parallel",
        type=int,
        default=1,
        help="the command's pipeline parallel size: at least a layer per stage (not gemma4)",
    )
    ap.add_argument(
        "--expert-parallel",
        type=int,
        default=1,
        help="the command's expert parallel size: experts divisible by it (not gemma4)",
    )
    ap.add_argument(
        "--context",
        type=int,
        default=0,
        help="the command's context length: a twin from class defaults is given at least it",
    )
    ap.add_argument("--full-size", action="store_true", help="keep the source's sizes (speed measurements)")
    a = ap.parse_args()
    import torch
    import transformers

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    if a.family == "generic":
        built = build_generic(a, out)
        write_generation_config(out, built.pop("bos"), built.pop("eos"))
        print(json.dumps({"dir": str(out), **built}))
        return
    config_cls = GEMMA4.get(a.family) or FAMILIES[a.family][0]
    if a.config_json:
        source, config_source = json.loads(Path(a.config_json).read_text()), "config.json"
    else:
        source, config_source = getattr(transformers, config_cls)().to_dict(), f"transformers {config_cls}() defaults"
    if a.tokenizer_from:
        tokenizer = copy_tokenizer(out, a.tokenizer_from)
    else:
        vocab_size = (source.get("text_config") or source).get("vocab_size") if a.full_size else None
        tokenizer = train_tokenizer(out, a.family, vocab_size)
    facts = {"config_source": config_source, "transformers": transformers.__version__, "full_size": a.full_size}
    full_size_defaults(a.full_size)
    if a.family in GEMMA4:
        backbone = 64
        if a.tokenizer_from and (Path(a.tokenizer_from) / "config.json").exists():  # the target this drafts for
            target = json.loads((Path(a.tokenizer_from) / "config.json").read_text())
            backbone = (target.get("text_config") or target).get("hidden_size", 64)
        built = twin_gemma4.build(
            a.family, out, source, a.model_id, a.layers, tokenizer, a.seed, backbone, full=a.full_size
        )
        bos, eos = built.pop("bos"), built.pop("eos")
    else:
        ids = tokenizer.get_vocab()
        fitted: list[str] = []
        cfg, model_cls = twin_config(
            a.family,
            source,
            a.layers,
            a.head_dim,
            ids,
            full=a.full_size,
            split=split_of(a),
            notes=fitted,
            defaults=not a.config_json,
        )
        torch.manual_seed(a.seed)
        model = model_cls(cfg).to(torch.bfloat16)
        model.save_pretrained(out, safe_serialization=True)
        params = sum(p.numel() for p in model.parameters())
        built = {
            "params": params,
            "architectures": cfg.architectures,
            "model_type": cfg.model_type,
            "layer_types": getattr(cfg, "layer_types", None),
            "notes": fitted + ([f"full size: {params / 1e9:.2f} B parameters"] if a.full_size else []),
        }
        bos, eos = cfg.bos_token_id, cfg.eos_token_id
    write_generation_config(out, bos, eos)
    print(json.dumps({"dir": str(out), **built, **facts}))


def write_generation_config(out: Path, bos, eos) -> None:
    (out / "generation_config.json").write_text(
        json.dumps({"bos_token_id": bos, "eos_token_id": eos, "do_sample": False})
    )


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
