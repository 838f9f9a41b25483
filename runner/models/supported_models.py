"""The architecture vLLM's own docs name for a model id: the "Example HF Models" column of
`docs/models/supported_models.md` in the target version's docs (its sdist, runner/builds/source_trees.py).

Offline, with no model-map entry and no hub, this is the last place a twin's configuration can
come from: the architecture found here, built from that architecture's configuration class
defaults in the target's transformers — "family defaults, not the published config". A model
id the table does not list gets no twin (the job SKIPs with the reason).

Matching is exact (case-insensitive), then with the quantization / precision suffix of a
checkpoint's name removed on both sides (`Qwen/Qwen3-8B-FP8` is `Qwen/Qwen3-8B` re-quantized:
the same architecture), then with only the size differing (`-7B` for a listed `-3B`) when all
listed sizes agree, then a listed id followed by a variant suffix (`zai-org/GLM-4.5-Air`,
`deepseek-ai/DeepSeek-V3-0324`: the longest listed prefix ending at a `-`) unless the suffix names a
change of modality or role (`-VL`, `-OCR`, `-Eagle3`, …); nothing fuzzier, because a near name can
be another architecture (`Qwen3-8B` is dense, `Qwen3-30B-A3B` a mixture of experts: the active-size
`A3B` is kept; `GLM-4.5V` is not `GLM-4.5`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

TABLE = Path("docs/models/supported_models.md")
_ROW = re.compile(r"^\|\s*`([A-Za-z0-9_]+)`[^|]*\|(.*)$")  # `Qwen2_5_VL…` <sup>Q</sup> | …
_SIZE = re.compile(r"(?i)(?<=[-_])(\d+x)?\d+(\.\d+)?[bm](?=[-_]|$)")  # -7B, -0.6B, -8x7B (not -A3B)
_ACTIVE = re.compile(r"(?i)(?<=[-_])a\d+(\.\d+)?[bm](?=[-_]|$)")  # -A3B: a mixture of experts, any size
# a suffix after a listed id that makes another model kind (another architecture or head)
_OTHER_KIND = re.compile(
    r"(?i)(^|[-_])(vl|vision|omni|audio|asr|tts|ocr|mtp|eagle\d*|draft|embed\w*|rerank\w*|reward"
    r"|prm|rm|classify|cls|speech|video|image|mm|multimodal|distill|assistant)([-_.]|$)"
)
# release suffixes of one model (`-Instruct`, `-Base`, `-2507`): the same architecture
_RELEASE = re.compile(r"(?i)([-_](instruct|base|it|chat|thinking|hf|\d{4}))+$")
_MODEL_ID = re.compile(r"`([\w.-]+/[\w.-]+)`")
# Checkpoint-name suffixes that change the weights' format, not the architecture.
_QUANT_SUFFIX = re.compile(
    r"(?i)([-_.](fp8|fp4|nvfp4|mxfp4|bf16|fp16|int4|int8|w4a16|w8a8|w4a8|awq|gptq(-int\d)?"
    r"|dynamic|static|block|gguf|quantized|q\d_k_m|\d+bit))+$"
)


@dataclass(frozen=True)
class Found:
    """Where the table names a model's architecture."""

    architecture: str
    listed_as: str
    """The model id as the table lists it (differs when matched without a quantization suffix)."""
    table: str
    """`docs/models/supported_models.md of vLLM X`."""


def _strip(model_id: str) -> str:
    return _QUANT_SUFFIX.sub("", model_id.lower())


@functools.lru_cache(maxsize=8)
def _rows(path: Path) -> dict[str, tuple[str, str]]:
    """{lowercased model id: (architecture, id as listed)}. A checkpoint listed both in a text-only table
    and in a multimodal one (with an "Inputs" column) is the multimodal architecture: its published
    config names that one (the text table lists it for text-only use); else the first row wins."""
    out: dict[str, tuple[str, str]] = {}
    multimodal: set[str] = set()
    column, inputs = 2, False  # "Example HF Models", from each table's header
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("| Architecture"):
            heads = [c.strip() for c in line.strip().strip("|").split("|")]
            column = heads.index("Example HF Models") if "Example HF Models" in heads else 2
            inputs = "Inputs" in heads
            continue
        m = _ROW.match(line)
        if not m:
            continue
        cells = m.group(2).split("|")
        cell = cells[column - 1] if len(cells) >= column else ""
        for listed in _MODEL_ID.findall(cell):
            key = listed.lower()
            if key not in out or (inputs and key not in multimodal):
                out[key] = (m.group(1), listed)
            if inputs:
                multimodal.add(key)
    return out


def _same_family(model_id: str, rows: dict[str, tuple[str, str]]) -> tuple[str, str] | None:
    """A listed model that differs only in size and release suffix (`Qwen2.5-VL-7B` for the listed
    `Qwen2.5-VL-3B-Instruct`), when every such listed model has the same architecture."""

    def shape(model: str) -> str:
        return _RELEASE.sub("", _ACTIVE.sub("a#", _SIZE.sub("#", _strip(model))))

    key = shape(model_id)
    if "#" not in key:
        return None
    hits = [v for k, v in rows.items() if shape(k) == key]
    return hits[0] if hits and len({h[0] for h in hits}) == 1 else None


def _same_kind(suffix: str) -> bool:
    """A `-suffix` that keeps the listed model's architecture: not another kind (`-VL`, `-assistant`)
    and no parameter size of its own (`DeepSeek-R1-0528-Qwen3-8B` is a Qwen3 distilled from R1)."""
    return not _OTHER_KIND.search(suffix.lstrip("-")) and not _SIZE.search(suffix)


def _variant_of(model_id: str, rows: dict[str, tuple[str, str]]) -> tuple[str, str] | None:
    """The longest listed id that `model_id` extends by a `-suffix` of the same kind."""
    low = _strip(model_id)
    best = max((k for k in rows if low.startswith(k + "-") and _same_kind(low[len(k) :])), key=len, default=None)
    return rows[best] if best else None


def _lookup(model_id: str, rows: dict[str, tuple[str, str]]) -> tuple[str, str] | None:
    hit = rows.get(model_id.lower())
    if hit is None:
        stripped = _strip(model_id)
        hit = (
            next((v for k, v in rows.items() if _strip(k) == stripped), None)
            or _same_family(model_id, rows)
            or _variant_of(model_id, rows)
        )
    return hit


@functools.lru_cache(maxsize=8)
def _by_name(path: Path) -> dict[str, tuple[str, str]]:
    """The rows keyed by the name after the organisation, where that name has one architecture."""
    names: dict[str, set[tuple[str, str]]] = {}
    for key, value in _rows(path).items():
        names.setdefault(key.split("/", 1)[-1], set()).add(value)
    return {k: next(iter(v)) for k, v in names.items() if len({a for a, _ in v}) == 1}


def architecture_for(model_id: str, docs_root: Path | None, version: str = "") -> Found | None:
    """The architecture the target's supported-models table gives `model_id`, or None. A checkpoint
    re-published under another organisation (`nvidia/DeepSeek-V3-FP4`, `RedHatAI/…-FP8-dynamic`)
    is matched by its name when nothing matches with the organisation."""
    if docs_root is None or not (docs_root / TABLE).is_file():
        return None
    path = docs_root / TABLE
    hit = _lookup(model_id, _rows(path)) or (
        _lookup(model_id.split("/", 1)[1], _by_name(path)) if "/" in model_id else None
    )
    return Found(hit[0], hit[1], f"{TABLE} of vLLM {version}".strip()) if hit else None
