"""The page prefilter (issue 59 point 5): a page is skipped unparsed only when no reader could find
anything on it (code_blocks.may_hold_snippet, made of the readers' own words). The production stack's
Helm values in a ```yaml block of a page that never says `vllm serve` are its commands."""

from __future__ import annotations

import pytest

from driftmatrix.extractor.code_blocks import may_hold_snippet, snippets_from_block
from driftmatrix.extractor.corpus import detect, extract_file, files_of
from driftmatrix.extractor.markdown_blocks import code_blocks
from driftmatrix.extractor.markdown_pages import markdown_snippets
from driftmatrix.extractor.snippet_builder import Place

VALUES_PAGE = """\
# Disaggregated prefill

Write `values.yaml`:

```yaml
servingEngineSpec:
  modelSpec:
  - name: "llama"
    repository: "lmcache/vllm-openai"
    tag: "2025-05-17-v1"
    modelURL: "meta-llama/Llama-3.1-8B-Instruct"
    vllmConfig:
      extraArgs: ["--swap-space", "0"]
```

Then `helm install` it.
"""


def test_helm_values_on_a_page_without_vllm_serve_are_its_command():
    assert "vllm serve" not in VALUES_PAGE
    found, _ = markdown_snippets(VALUES_PAGE, Place("markdown", "", "page.md", 1), None)
    [snippet] = found
    assert snippet.kind == "docker" and snippet.image == "lmcache/vllm-openai:2025-05-17-v1"
    assert snippet.model == "meta-llama/Llama-3.1-8B-Instruct" and "--swap-space" in snippet.argv
    assert snippet.sources[0].line == 8  # the modelSpec entry's first line


def test_the_real_disaggregated_prefill_tutorial_gives_its_two_engines(corpus):
    tree = detect(next((corpus / "thirdparty").glob("production-stack-*")))
    page = tree.root / "tutorials" / "16-disagg-prefill.md"
    lines = page.read_text().split("\n")
    found, _ = extract_file(tree, page)
    got = sorted((s.sources[0].line, s.image) for s in found)
    assert [image for _, image in got] == ["lmcache/vllm-openai:2025-05-17-v1"] * 2
    for line, _ in got:  # each at its modelSpec entry: `- name: "llama-prefill"` / `"llama-decode"`
        assert lines[line - 1].lstrip().startswith("- name:"), lines[line - 1]


PAGES = [
    ("vllm-docs", "vllm-docs/0.33.0"),
    ("recipes", "recipes/8959cf6"),
    *((f"site:{name}", f"thirdparty/{name}-*") for name in ("aibrix", "production-stack", "tpu-inference")),
]


@pytest.mark.parametrize(("name", "where"), PAGES, ids=[p[0] for p in PAGES])
def test_a_page_the_prefilter_skips_gives_nothing_when_parsed_whole(name, where, corpus):
    """Never drops a real instruction: every block of every skipped page, read by its reader anyway."""
    root = next(corpus.glob(where))
    tree = detect(root)
    skipped = 0
    for path in files_of(tree):
        if path.suffix != ".md" or path.is_dir():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if may_hold_snippet(text) or "--8<--" in text:
            continue
        skipped += 1
        place = Place(tree.kind, tree.version, path.relative_to(root).as_posix(), 1)
        for block in code_blocks(text):
            found, _ = snippets_from_block(block.lang, block.text, place.at(block.line))
            assert not found, (path, block.line, [s.argv for s in found])
    assert skipped  # the prefilter still spares parsing some pages
