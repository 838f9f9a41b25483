"""Which models a snippet needs, and where to find them locally.

A model id is usable when it is an existing local directory, when the model map names a local
directory for it, or when the Hugging Face hub is reachable: then its configuration and tokenizer
files are fetched (runner/models/hub.py) and that folder replaces the id, with the weights only when the
job starts a server and they fit the weights budget. A model that cannot be had SKIPs the tiers
that need it (or runs on a twin with `--stand-ins`) — never a FAIL, unless the hub says it
cannot be loaded as written (runner/models/hub_answer.py): that is the docs' fault, and no twin
stands in for it.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from driftmatrix.runner.models import hub
from driftmatrix.runner.outcomes.evidence_record import HubAnswer
from driftmatrix.runner.settings import cache_dir

TWIN_MARKER = "driftmatrix-standin.json"


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


def is_local_path(model: str) -> bool:
    """A folder, not a hub id (`org/name`): `/models/x`, `./x`, `~/x`, `a/b/c`."""
    return model.startswith(("/", ".", "~")) or model.count("/") > 1


def has_weights(path: str) -> bool:
    """A model dir with weight files (not just a config.json to build a twin from)."""
    p = Path(path)
    return not p.is_dir() or any(p.glob("*.safetensors")) or any(p.glob("*.bin")) or any(p.glob("*.gguf"))


@dataclass
class Resolution:
    """Where each model of a job comes from."""

    subs: dict[str, str] = field(default_factory=dict)
    """Model id -> local directory to use in its place."""
    missing: list[str] = field(default_factory=list)
    """Models that cannot be had here."""
    from_hub: dict[str, str] = field(default_factory=dict)
    """Model id -> what was fetched from the hub for it (a note for the outcome)."""
    no_weights: dict[str, str] = field(default_factory=dict)
    """Hub models whose folder has no weights although the job starts a server: why (`weights ...`)."""
    unavailable: dict[str, str] = field(default_factory=dict)
    """Missing models the hub could not give (refused id, gated, the hub's trouble): why."""
    unloadable: dict[str, HubAnswer] = field(default_factory=dict)
    """Models the hub says cannot be loaded as written (not in `missing`: nothing stands in for them)."""


class ModelResolver:
    """Maps model ids to local dirs; fetches from the hub when it can be reached."""

    def __init__(self, model_map: dict[str, str] | None = None, hub: bool | None = None):
        self.model_map = dict(model_map or {})
        self._hub = hub
        self._fetched: dict[tuple, Path | str | None] = {}
        """(model, what) -> a fetch's result this run (a folder, or why not), so many jobs of one
        model ask the hub once."""
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    @property
    def hub(self) -> bool:
        if self._hub is None:
            self._hub = hub.reachable()
        return self._hub

    def resolve(self, models: list[str], cache: Path | None = None, weights_budget: int | None = None) -> Resolution:
        """`weights_budget` (bytes): the job starts a server, so fetch weights within it; None: the
        job stops before the start tier and needs configuration and tokenizer only."""
        res = Resolution()
        for model in models:
            if model in self.model_map:
                res.subs[model] = self.model_map[model]
            elif is_local_path(model):  # the docs author's folder: never read from this host
                res.missing.append(model)
                res.unavailable[model] = (
                    "a local folder named by the docs, which driftmatrix never reads from the "
                    "host (map it in the targets file's [models] to check it)"
                )
            elif not self.hub:
                res.missing.append(model)
            else:
                # a draft goes without weights when the served model does (a twin's draft is a twin)
                bare = model != models[0] and (
                    models[0] in res.no_weights or models[0] in res.missing or models[0] in res.unloadable
                )
                self._from_hub(model, cache or cache_dir(), weights_budget, res, models[0] if bare else None)
        return res

    def _from_hub(self, model: str, cache: Path, budget: int | None, res: Resolution, bare_as: str | None) -> None:
        with self._lock:
            lock = self._locks.setdefault(model, threading.Lock())
        with lock:  # jobs side by side: one fetch per model
            folder = self._once((model, "configs"), lambda: hub.fetch_configs(model, cache))
            if isinstance(folder, HubAnswer):
                res.unloadable[model] = folder
                return
            if isinstance(folder, str):
                res.missing.append(model)
                res.unavailable[model] = folder
                return
            res.subs[model] = str(folder)
            where = hub.shown_endpoint()
            if budget is None:
                res.from_hub[model] = (
                    f"configuration and tokenizer files from {where} (no weights: not needed below the start tier)"
                )
                return
            why = (
                f"weights not fetched: {bare_as} runs without its own"
                if bare_as
                else self._once((model, "weights", budget), lambda: hub.fetch_weights(model, folder, budget, cache))
            )
        if why:
            res.no_weights[model] = why
            res.from_hub[model] = f"configuration and tokenizer files from {where}; {why}"
        else:
            res.from_hub[model] = f"configuration, tokenizer and weights from {where}"

    def _once(self, key: tuple, fetch) -> Path | str | HubAnswer | None:
        """`fetch()` once per run: its result, or why it failed (the hub's answer, or this machine's
        disk: either is a SKIP or a twin, never a crashed job), or the hub's answer that the model
        cannot be loaded as written."""
        if key not in self._fetched:
            try:
                self._fetched[key] = fetch()
            except hub.NotLoadable as err:
                self._fetched[key] = err.answer
            except (hub.HubError, OSError) as err:
                why = str(err) if isinstance(err, hub.HubError) else f"storing it failed ({err})"
                self._fetched[key] = f"weights download failed: {why}" if "weights" in key else why
        return self._fetched[key]

    @staticmethod
    def is_twin(path: str) -> bool:
        return (Path(path) / TWIN_MARKER).exists()

    @staticmethod
    def takes_images(path: str) -> bool:
        """Whether the served config describes image input: a vision tower or image token anywhere in
        it (an audio-only model such as Qwen3-ASR is multimodal but takes no image)."""
        try:
            cfg = json.loads((Path(path) / "config.json").read_text())
        except (OSError, ValueError):
            return False
        return _names_images(cfg) or any("VL" in a or "Vision" in a for a in cfg.get("architectures") or [])


def _names_images(cfg) -> bool:
    if isinstance(cfg, dict):
        return any(
            ("vision" in k or "image" in k) and v is not None for k, v in cfg.items() if isinstance(k, str)
        ) or any(_names_images(v) for v in cfg.values())
    return isinstance(cfg, list) and any(_names_images(v) for v in cfg[:8])


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
