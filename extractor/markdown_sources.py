"""Markdown that is not a vLLM docs tree: a single page, any folder of pages (another project's
docs, a runbook, a blog's sources), or a Hugging Face model card (`README.md` whose YAML front
matter carries the card's metadata). Pages are read as in a docs tree (same code blocks, same
heading anchors); links are built from `--url-base` when given, and are absent otherwise (a host
path never becomes a link).

A model card knows its model: `vllm serve` without a model, or with a relative path (`vllm serve
.`), serves the card's model, from `--model-id` or the front matter (`model_id`, `model_name` or
`model-index[0].name` when it is a full `org/name`).
"""

from __future__ import annotations

import re
from pathlib import Path

from driftmatrix.extractor import bounds
from driftmatrix.extractor.markdown_blocks import _FRONT_MATTER

MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdx")  # .mdx: Docusaurus (extractor/mdx.py)
RST_SUFFIXES = (".rst",)
PAGE_SUFFIXES = MARKDOWN_SUFFIXES + RST_SUFFIXES
"""The pages read: Markdown (and MDX), and reStructuredText (a Sphinx site's, extractor/rst_pages.py)."""
# Front-matter keys the Hugging Face hub reads from a model card (its "model card metadata").
_CARD_KEYS = {
    "license",
    "pipeline_tag",
    "library_name",
    "base_model",
    "model-index",
    "datasets",
    "language",
    "tags",
    "inference",
    "widget",
    "license_name",
    "extra_gated_prompt",
}
_MODEL_ID = re.compile(r"^[\w.-]+/[\w.-]+$")


def card_metadata(text: str) -> dict | None:
    """The front matter of a Hugging Face model card, or None when `text` is not one."""
    m = _FRONT_MATTER.match(text) if text.startswith("---") else None
    if not m:
        return None
    import yaml  # noqa: PLC0415 — only for pages with front matter

    from driftmatrix.extractor.yaml_nodes import load  # noqa: PLC0415

    try:
        meta = load(m.group(1))
    except yaml.YAMLError:  # an alias bomb too (YAMLTooLarge): not a card then
        return None
    return meta if isinstance(meta, dict) and _CARD_KEYS & set(map(str, meta)) else None


def card_model_id(meta: dict) -> str:
    """The card's own model id from its metadata, or "" (the hub does not require one: the
    repository's name is the id, which a saved card does not carry)."""
    candidates = [meta.get("model_id"), meta.get("model-id"), meta.get("model_name")]
    index = meta.get("model-index")
    if isinstance(index, list) and index and isinstance(index[0], dict):
        candidates.append(index[0].get("name"))
    return next((str(c) for c in candidates if isinstance(c, str) and _MODEL_ID.match(c.strip())), "")


def is_card(path: Path, root: Path | None = None) -> bool:
    """Whether the page (its start, and only when it lies inside `root`) is a model card."""
    head = bounds.read_head(path, root)
    return head is not None and card_metadata(head) is not None


def markdown_files(root: Path, skip_dirs: set[str]) -> list[Path]:
    """The Markdown and reST pages of a folder (or the one page), in path order, with the links among them
    that lead out of the folder (never read: the reader reports them)."""
    if root.is_file():
        return [root]
    files, escapes = bounds.walk(root, root, skip_dirs)
    return sorted(p for p in files + escapes if p.suffix.lower() in PAGE_SUFFIXES or (p in escapes and p.is_dir()))


def page_link(url_base: str, rel: str) -> str | None:
    """The page's address under `--url-base` (a GitHub tree/blob base links lines), else None."""
    if not url_base:
        return None
    return f"{url_base.rstrip('/')}/{rel}"


def is_relative_model(word: str) -> bool:
    """`.`, `./`, `./model`, `../x`: a path into the card's own repository."""
    return word in (".", "./") or word.startswith(("./", "../"))
