"""Twins of architectures transformers lacks but vLLM describes itself: run inside a target env by
twin_build.py (`--family generic`), next to twin_generic.py.

vLLM ships configuration classes for models transformers does not know (vllm/transformers_utils/
configs/, registered by model type in vllm.transformers_utils.config's `_CONFIG_REGISTRY`, which
vLLM itself uses to read such a model's config.json). Such a twin's config is that class's defaults
(or the given config.json) shrunk by twin_generic's rules; its tokenizer is trained here. It has
no weights: no library here knows the checkpoint's layout, so vLLM initialises them itself
(`--load-format dummy`, which the runner adds and says so: runner/models/twins.py `WEIGHTLESS`).
Everything vLLM does before loading weights — the config class, the architecture's resolution, the
parallel split, the model's construction, the KV cache, the server — runs as for the real model.
"""

from __future__ import annotations

import os
import re
import sys

if not __package__:  # run by path (a target's Python, `-I`): PEP 366, as the package this folder is,
    # so that `from . import sibling` finds the files next to this one (and import-linter sees it)
    sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = os.path.basename(os.path.dirname(os.path.abspath(__file__)))

SUFFIX = re.compile(r"(For[A-Z]\w*|Model|LMHeadModel)$")


def _stem(name: str) -> str:
    return name.replace("_", "").lower()


def config_class(arch: str):
    """(model type, vLLM's configuration class) whose class name is ARCH's stem + `Config`
    (`Step3p5ForCausalLM` -> `Step3p5Config`), or None. Imports vLLM (only on this path)."""
    from .vllm_symbols import find

    registry = find("_CONFIG_REGISTRY") or {}
    stem = _stem(SUFFIX.sub("", arch))
    for model_type, cls in dict.items(registry):  # values: class names (lazy) or classes
        name = cls if isinstance(cls, str) else cls.__name__
        if stem and _stem(name.removesuffix("Config")) == stem:
            return model_type, registry[model_type]
    return None


def build(a, out, arch: str, given: dict | None, generic, train_tokenizer, copy_tokenizer, split: dict) -> dict:
    """Config and tokenizer of ARCH's twin from vLLM's configuration class (no weights); the builder's
    answer (as twin_build.build_generic's), or SystemExit when vLLM has no class for ARCH."""
    import transformers

    from .vllm_symbols import find

    vllm = find("vllm")
    found = config_class(arch)
    if found is None:
        raise SystemExit(
            f"{arch} is not in transformers {transformers.__version__} and vLLM {vllm.__version__} "
            "has no configuration class for it: no twin"
        )
    model_type, cls = found
    source = dict(given) if given else {**cls().to_dict(), "architectures": [arch]}
    where = (
        "config.json"
        if given
        else (
            f"vLLM's {cls.__name__}() defaults (vLLM {vllm.__version__}; "
            f"{arch} is not in transformers {transformers.__version__})"
        )
    )
    cfg, needed, notes = generic.twin_config(source, a.layers, a.full_size, split, defaults=not given)
    tokenizer = (
        copy_tokenizer(out, a.tokenizer_from)
        if a.tokenizer_from
        else train_tokenizer(out, generic.tokenizer_family(model_type), needed)
    )
    vocab = tokenizer.get_vocab()
    ids = {
        "bos_token_id": vocab[tokenizer.bos_token or tokenizer.pad_token],
        "eos_token_id": vocab[tokenizer.eos_token],
        "pad_token_id": vocab[tokenizer.pad_token],
    }
    generic.set_vocab(cfg, max(len(tokenizer), needed), ids)
    config = cls(**{**cfg, "architectures": [arch], "dtype": "bfloat16"})
    config.save_pretrained(out)
    notes.append(
        "no weights: vLLM initialises them itself (--load-format dummy), no library here knowing the "
        "checkpoint's layout"
    )
    return {
        "params": None,
        "architectures": [arch],
        "model_type": model_type,
        "layer_types": getattr(config, "layer_types", None),
        "notes": notes,
        "config_source": where,
        "processor_files": [],
        "transformers": transformers.__version__,
        "full_size": a.full_size,
        "weightless": True,
        "bos": ids["bos_token_id"],
        "eos": ids["eos_token_id"],
    }
