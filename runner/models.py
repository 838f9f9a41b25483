"""Which models a snippet needs, and where to find them locally.

A model id is usable when it is an existing local directory, when the model map names
a local directory for it, or when the Hugging Face hub is reachable (vLLM then downloads
it).  Otherwise the config/start tiers are SKIPped with the reason — never a FAIL.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import httpx

STANDIN_MARKER = "driftmatrix-standin.json"


def needed_models(snippet) -> list[str]:
    """The served model and, when the speculative config names one, the draft model."""
    out = []
    if snippet.model:
        out.append(snippet.model)
    spec = snippet.speculative_config or {}
    draft = spec.get("model") if isinstance(spec, dict) else None
    if isinstance(draft, str) and draft and draft not in out:
        out.append(draft)
    return out


def _replace(value: Any, mapping: dict[str, str]) -> Any:
    if isinstance(value, str):
        return mapping.get(value, value)
    if isinstance(value, dict):
        return {k: _replace(v, mapping) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace(v, mapping) for v in value]
    return value


def substitute(argv: list[str], mapping: dict[str, str]) -> list[str]:
    """Replace model ids by local directories: bare values and inside JSON config values."""
    if not mapping:
        return list(argv)
    out = []
    for token in argv:
        if token in mapping:
            out.append(mapping[token])
            continue
        head, eq, tail = token.partition("=")
        if eq and head.startswith("-") and tail in mapping:
            out.append(f"{head}={mapping[tail]}")
            continue
        stripped = token.strip()
        if stripped.startswith("{") and any(m in token for m in mapping):
            try:
                out.append(json.dumps(_replace(json.loads(stripped), mapping)))
                continue
            except ValueError:
                pass
        out.append(token)
    return out


def has_weights(path: str) -> bool:
    """A model dir with weight files (not just a config.json to build a twin from)."""
    p = Path(path)
    return not p.is_dir() or any(p.glob("*.safetensors")) or any(p.glob("*.bin")) or any(p.glob("*.gguf"))


class ModelResolver:
    """Maps model ids to local dirs; knows whether the hub can be reached."""

    def __init__(self, model_map: dict[str, str] | None = None, hub: bool | None = None):
        self.model_map = dict(model_map or {})
        self._hub = hub

    @property
    def hub(self) -> bool:
        if self._hub is None:
            if os.environ.get("HF_HUB_OFFLINE") == "1":
                self._hub = False
            else:
                try:
                    self._hub = httpx.head("https://huggingface.co/api/models", timeout=5).status_code < 500
                except httpx.HTTPError:
                    self._hub = False
        return self._hub

    def resolve(self, models: list[str]) -> tuple[dict[str, str], list[str]]:
        """(substitutions to make, models that cannot be had)."""
        subs, missing = {}, []
        for model in models:
            if model in self.model_map:
                subs[model] = self.model_map[model]
            elif Path(model).is_dir():
                continue
            elif not self.hub:
                missing.append(model)
        return subs, missing

    @staticmethod
    def is_stand_in(path: str) -> bool:
        return (Path(path) / STANDIN_MARKER).exists()

    @staticmethod
    def is_multimodal(path: str) -> bool:
        try:
            cfg = json.loads((Path(path) / "config.json").read_text())
        except (OSError, ValueError):
            return False
        return any(k in cfg for k in ("vision_config", "audio_config")) or any(
            "ConditionalGeneration" in a or "VL" in a for a in cfg.get("architectures", []))


_SIZE = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)[Bb](?![a-z])")


def billions_of_parameters(model: str) -> float | None:
    """The parameter count a model id states (`gemma-4-31B-it` -> 31.0), or None."""
    found = _SIZE.findall(model.split("/")[-1])
    return float(found[-1]) if found else None


def estimated_bytes(model: str, local: str | None) -> int | None:
    """Weights size: the local safetensors, else the parameter count in the id (bf16)."""
    if local and Path(local).is_dir():
        total = sum(p.stat().st_size for p in Path(local).glob("*.safetensors"))
        if total:
            return total
    billions = billions_of_parameters(model)
    return int(billions * 1e9 * 2) if billions else None
