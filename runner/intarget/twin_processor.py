"""The multimodal processor files of a generic twin (preprocessor / video / feature-extractor configs).

vLLM loads a multimodal model's Hugging Face processor at start (its placeholder tokens, image sizes,
patch and merge sizes), so a twin without one SKIPs at start as a twin artefact. transformers names
the processor class per model type (AutoProcessor's mapping) and the classes of its parts (image /
video processor, feature extractor) per model type too; each part is built with its class defaults,
which are the published processors' defaults (patch 14, merge 2, ...), and the twin's vision tower
keeps the patch and merge sizes of its config (twin_generic shrinks widths and depths only).

The placeholder tokens a processor writes into prompts (`<|image_pad|>`, `<image>`, ...) must be
tokens of the twin's vocabulary at the ids the config names for them (`image_token_id`, ...), as in
the published tokenizer: the model merges image features where those ids stand. The twin vocabulary
is padded with `<unusedN>` up to the config's highest id, so those slots are renamed to the
processor's tokens; a token the config names no id for is added at the end of the vocabulary.

Imports transformers only inside functions (this module runs in the target env).
"""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

# processor attribute -> the auto mapping of its classes (transformers.models.auto.*)
PART_MAPPINGS = {
    "image_processor": ("image_processing_auto", "IMAGE_PROCESSOR_MAPPING_NAMES"),
    "video_processor": ("video_processing_auto", "VIDEO_PROCESSOR_MAPPING_NAMES"),
    "feature_extractor": ("feature_extraction_auto", "FEATURE_EXTRACTOR_MAPPING_NAMES"),
    "audio_processor": ("feature_extraction_auto", "FEATURE_EXTRACTOR_MAPPING_NAMES"),
}
# the part implementations, in order of preference (vLLM 0.2x calls the fast/torchvision ones)
IMPLEMENTATIONS = ("torchvision", "fast", "pil", "slow")


class NoProcessor(Exception):
    """A multimodal twin whose processor cannot be built from class defaults (the reason)."""


def processor_class(model_type: str):
    """The processor class transformers maps MODEL_TYPE to, or None for a text-only model."""
    import transformers
    from transformers.models.auto import processing_auto

    name = processing_auto.PROCESSOR_MAPPING_NAMES.get(model_type)
    return getattr(transformers, name, None) if isinstance(name, str) else None


def part_class(attr: str, model_types: list[str]):
    import importlib

    import transformers

    module, table = PART_MAPPINGS[attr]
    names = getattr(importlib.import_module(f"transformers.models.auto.{module}"), table)
    for model_type in model_types:
        name = names.get(model_type)
        if isinstance(name, dict):
            name = next((name[k] for k in IMPLEMENTATIONS if name.get(k)), None)
        elif isinstance(name, (tuple, list)):
            name = next((n for n in name if n), None)
        if name and getattr(transformers, name, None) is not None:
            return getattr(transformers, name)
    raise NoProcessor(f"no {attr} class for model types {model_types} in transformers {transformers.__version__}")


def model_types(cfg: dict, cls) -> list[str]:
    """Where to look a part up: the model type, its sub-configs' types, the processor's own model folder."""
    found = [cfg.get("model_type")] + [v.get("model_type") for v in cfg.values() if isinstance(v, dict)]
    found.append(cls.__module__.split(".")[-2])  # transformers.models.<type>.processing_<type>
    return [t for t in dict.fromkeys(found) if isinstance(t, str)]


# a part's patch grid and the vision config's keys for it: the published processors match their
# model's tower, class defaults need not (Qwen3.5's tower takes 16-pixel patches, the image
# processor class transformers maps it to cuts 14: vLLM 0.26.0 on the H200 failed "shape '[40960,
# -1, 2, 16, 16]' is invalid for input of size 48168960" in the vision patch embedding)
GRID = {
    "patch_size": ("patch_size",),
    "temporal_patch_size": ("temporal_patch_size",),
    "merge_size": ("spatial_merge_size", "merge_size"),
}


def align(part, cfg: dict, notes: list[str]) -> None:
    """Set the part's patch grid to the twin's own vision config (where both have the key), and the
    tower's image size to the part's (one square side); a part
    that draws on video frames with a font file the published processor downloads (ERNIE-4.5-VL's
    `draw_on_frames`, Roboto-Regular.ttf) does not draw: a twin has no such file."""
    vision = next((v for k, v in cfg.items() if isinstance(v, dict) and "vision" in k), None)
    size = getattr(part, "size", None)
    side = getattr(size, "height", None) if not isinstance(size, dict) else size.get("height")
    width = getattr(size, "width", None) if not isinstance(size, dict) else size.get("width")
    if (
        vision
        and isinstance(side, int)
        and side == width
        and isinstance(vision.get("image_size"), int)
        and vision["image_size"] != side
    ):
        # the tower's position embeddings are sized for the image the processor makes (Llama 4: the
        # class defaults say 448, its processor's tiles are 336, as the published config says)
        notes.append(f"vision image_size {vision['image_size']} -> {side}: the processor's image size")
        vision["image_size"] = side
    if getattr(part, "draw_on_frames", False):
        part.draw_on_frames = False
        notes.append(f"{type(part).__name__}.draw_on_frames off: its font file is the published processor's")
    for attr, keys in GRID.items() if vision else ():
        value = next((vision[k] for k in keys if isinstance(vision.get(k), int)), None)
        if value is not None and isinstance(getattr(part, attr, None), int) and getattr(part, attr) != value:
            notes.append(f"{type(part).__name__}.{attr} {getattr(part, attr)} -> {value}: the vision config's")
            setattr(part, attr, value)


def build(cls, cfg: dict, tokenizer, notes: list[str] | None = None):
    parts = {
        attr: tokenizer if attr == "tokenizer" else part_class(attr, model_types(cfg, cls))()
        for attr in cls.get_attributes()
    }
    for attr, part in parts.items():
        if attr != "tokenizer":
            align(part, cfg, notes if notes is not None else [])
    return cls(**parts)


def placeholder_tokens(processor) -> dict[str, str]:
    """{attribute: token text} of the processor's prompt tokens (image_token, video_token, boi_token, ...)."""
    return {
        k: v
        for k, v in vars(processor).items()
        if k.endswith("_token") and isinstance(v, str) and v.startswith(("<", "[")) and len(v) < 40
    }


def vllm_placeholders(arch: str) -> dict[str, str]:
    """{modality: vLLM's own placeholder string} for ARCH (`get_placeholder_str`: what a chat message's
    image/video/audio becomes in the prompt, e.g. `<|vision_start|><|image_pad|><|vision_end|>`)."""
    try:
        from vllm_symbols import find  # next to this file: ModelRegistry where this release keeps it

        model = find("ModelRegistry")._try_load_model_cls(arch)
    except Exception:  # an architecture this vLLM lacks: none
        return {}
    found = {}
    for modality in ("image", "video", "audio"):
        try:
            found[modality] = model.get_placeholder_str(modality, 1)
        except Exception:  # a modality the model has not
            continue
    return {m: text for m, text in found.items() if text}


def special_tokens(text: str) -> list[str]:
    import re

    return re.findall(r"<\|[^<>|]+\|>|<[a-z_]+>|\[[A-Z_]+\]", text)


# a chat message's media part, as vLLM passes it to the template ({"type": "image"}) or as sent
PART_TYPES = {
    "image": ("image", "image_url"),
    "video": ("video", "video_url"),
    "audio": ("audio", "audio_url", "input_audio"),
}


def with_media(template: str, placeholders: dict[str, str]) -> str:
    """The twin's chat template, rendering each media part as vLLM's placeholder string for it (as the
    published models' templates do); without this a part-iterating template drops the image and vLLM
    finds no placeholder to replace ("Failed to apply prompt replacement")."""
    text_part = "{% if part['type'] == 'text' %}{{ part['text'] }}"
    media = "".join(
        f"{{% elif part['type'] in {list(PART_TYPES[m])} %}}{{{{ {json.dumps(text)} }}}}"
        for m, text in placeholders.items()
    )
    return template.replace(text_part, text_part + media) if text_part in template else template


def named_id(text: str, ids: dict[str, int]) -> int | None:
    """The config's id for TOKEN TEXT by name: `<|vision_start|>` is vision_start_token_id's token."""
    name = text.strip("<>[]|").lower()
    return ids.get(f"{name}_token", ids.get(name))


def config_ids(cfg: dict) -> dict[str, int]:
    """{token attribute: id} from the config's image_token_id / image_token_index / ... (nested too)."""
    ids: dict[str, int] = {}
    for key, value in cfg.items():
        if isinstance(value, dict):
            ids = {**config_ids(value), **ids}
        elif isinstance(key, str) and isinstance(value, int) and not isinstance(value, bool):
            for suffix in ("_token_id", "_token_index", "_id"):
                if key.endswith(suffix) and key.removesuffix(suffix).endswith("_token" if suffix == "_id" else ""):
                    ids[key.removesuffix(suffix) + ("" if suffix == "_id" else "_token")] = value
                    break
    return ids


def rename_slots(out: Path, wanted: dict[str, int], notes: list[str]) -> None:
    """Rename the `<unusedN>` entries at the WANTED ids of OUT/tokenizer.json to those token texts (added,
    special); a token without an id, or whose id holds a trained token, is appended at the end."""
    path = out / "tokenizer.json"
    data = json.loads(path.read_text())
    vocab = data["model"]["vocab"]
    by_id = {i: t for t, i in vocab.items()}
    added = data.setdefault("added_tokens", [])
    next_id = 1 + max([*vocab.values(), *(t["id"] for t in added)])
    for text, want in wanted.items():
        if text in vocab or any(t["content"] == text for t in added):
            continue
        slot = by_id.get(want) if want is not None else None
        if slot is None or not slot.startswith("<unused"):
            if want is not None:
                notes.append(f"processor token {text}: id {want} holds a trained token, added as {next_id}")
            want, next_id = next_id, next_id + 1
        else:
            del vocab[slot]
        vocab[text] = want
        added.append(
            {
                "id": want,
                "content": text,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
        )
    path.write_text(json.dumps(data, ensure_ascii=False))


TOKENIZER_TOKEN = re.compile(r"\btokenizer\.(\w+_token)\b(?!_id)|\btokenizer\.(\w+_token)_id\b")
ROLE_WORDS = {"start": ("start", "begin", "bos"), "end": ("end", "eos")}


def tokenizer_tokens(cls) -> list[str]:
    """The named tokens the processor class reads from its tokenizer (`tokenizer.image_token`, as
    PaddleOCR-VL's and ERNIE-4.5-VL's do): a published tokenizer names them, a trained one does not."""
    try:
        text = inspect.getsource(cls.__init__)
    except (OSError, TypeError):
        return []
    names = [a or b for a, b in TOKENIZER_TOKEN.findall(text)]
    return [n for n in dict.fromkeys(names) if n not in ("bos_token", "eos_token", "pad_token", "unk_token")]


def token_text(name: str, placeholders: dict[str, str]) -> str:
    """The text of tokenizer token NAME (`image_start_token`): the matching special token of vLLM's
    placeholder for its modality (`<|IMAGE_START|>` of `<|IMAGE_START|><|IMAGE_PLACEHOLDER|>...`), so the
    processor and vLLM's prompt replacement agree; else `<|name|>`."""
    stem = name.removesuffix("_token")
    modality = next((m for m in ("image", "video", "audio") if stem.startswith(m)), None)
    found = special_tokens(placeholders.get(modality, "")) if modality else []
    role = next((r for r, words in ROLE_WORDS.items() if stem.endswith(r)), None)
    pick = (
        [t for t in found if role and any(w in t.lower() for w in ROLE_WORDS[role])]
        if role
        else [t for t in found if not any(w in t.lower() for ws in ROLE_WORDS.values() for w in ws)]
    )
    return pick[0] if pick else f"<|{stem}|>"


def name_tokens(out: Path, cls, placeholders: dict[str, str], ids: dict[str, int], notes: list[str]):
    """OUT's tokenizer with the named tokens CLS reads from it (`tokenizer_tokens`): each a special token
    (at the config's id for it where one is named) and named in tokenizer_config.json."""
    from transformers import AutoTokenizer

    names = {n: token_text(n, placeholders) for n in tokenizer_tokens(cls)}
    if names:
        rename_slots(out, {text: ids.get(n) for n, text in names.items()}, notes)
        path = out / "tokenizer_config.json"
        config = json.loads(path.read_text())
        extra = config.get("extra_special_tokens")
        config["extra_special_tokens"] = {**(extra if isinstance(extra, dict) else {}), **names}
        path.write_text(json.dumps(config, ensure_ascii=False, indent=2))
        notes.append(f"tokenizer names {sorted(names)}: {cls.__name__} reads them from its tokenizer")
    return AutoTokenizer.from_pretrained(out)


def save_processor(out: Path, cfg: dict, arch: str, model_type: str, notes: list[str]) -> list[str]:
    """Write the processor files of a multimodal twin next to its tokenizer; the files written."""
    from transformers import AutoTokenizer

    cls = processor_class(model_type)
    if cls is None:
        return []
    ids = config_ids(cfg)
    placeholders = vllm_placeholders(arch)
    tokenizer = name_tokens(out, cls, placeholders, ids, notes)
    first = build(cls, cfg, tokenizer, notes)
    wanted = {text: ids.get(attr) for attr, text in placeholder_tokens(first).items()}
    for text in special_tokens("".join(placeholders.values())):
        wanted.setdefault(text, named_id(text, ids))
    rename_slots(out, wanted, notes)
    template = tokenizer.chat_template
    tokenizer = AutoTokenizer.from_pretrained(out)
    if isinstance(template, str):
        tokenizer.chat_template = with_media(template, placeholders)
    before = {p.name for p in out.iterdir()}
    build(cls, cfg, tokenizer, notes).save_pretrained(out)
    written = sorted({p.name for p in out.iterdir()} - before)
    notes[:] = list(dict.fromkeys(notes))  # each part was built twice: once to read its tokens
    notes.append(
        f"processor {cls.__name__} from class defaults: {', '.join(written) or 'no new files'}; "
        f"placeholder tokens {sorted(wanted)}"
    )
    return written
