"""Docusaurus sites and MDX pages (issue 59 point 2): a `.mdx` page, and the `.md` pages of a Docusaurus
site's docs, are read as the Markdown they render — imports, JSX tags and `:::` admonition markers blanked,
never deleted, so each command is at its real line — and a page of `versioned_docs/version-X/` (or of its
translations under `i18n/<lang>/…/version-X/`) is that site version's page. No snapshot in the shared
corpus is a Docusaurus site, so the site is made here, from the shapes Docusaurus documents."""

from __future__ import annotations

from pathlib import Path

from driftmatrix.extractor.catalog import extract
from driftmatrix.extractor.corpus import detect
from driftmatrix.extractor.mdx import as_markdown

PAGE = """\
---
title: Serving
---
import Tabs from '@theme/Tabs';
import TabItem from '@theme/TabItem';
import {{
  Note,
}} from '@site/src/components';

# Serving {tag}

:::note Before you start
Install vLLM first.
:::

<Tabs groupId="way">
  <TabItem value="cli" label="CLI">
```bash
vllm serve Qwen/Qwen3-8B --max-model-len {len}
```
  </TabItem>
  <TabItem
    value="py"
    label="Python">

```python
import vllm  # code: kept
```

```bash
vllm serve Qwen/Qwen3-8B --port {port}
```

  </TabItem>
</Tabs>

<Note type="tip" />

:::tip[Docker]
```bash
docker run --gpus all vllm/vllm-openai:v0.10.0 --model Qwen/Qwen3-8B --port {port}
```
:::
"""

PAGES = {
    "docs/serve.mdx": ("current", 8192, 8001),
    "versioned_docs/version-0.3/serve.mdx": ("0.3", 4096, 8002),
    "i18n/zh/docusaurus-plugin-content-docs/current/serve.mdx": ("current", 8192, 8001),
    "i18n/zh/docusaurus-plugin-content-docs/version-0.3/serve.md": ("0.3", 4096, 8002),  # .md: MDX too
}


def site(root: Path, pages: dict = PAGES) -> Path:
    root.mkdir(parents=True)
    (root / "docusaurus.config.js").write_text("module.exports = { title: 'Acme' };\n")
    for rel, (tag, length, port) in pages.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(PAGE.format(tag=tag, len=length, port=port))
    return root


def line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.split("\n"), 1) if needle in line)


def test_mdx_is_blanked_line_for_line_and_code_is_untouched():
    text = PAGE.format(tag="x", len=1, port=2)
    out = as_markdown(text)
    assert out.count("\n") == text.count("\n")
    kept = [line for line in out.split("\n") if line.strip()]
    assert kept == [  # imports (one over three lines), tags (one over three lines), `:::` markers: gone
        "---",
        "title: Serving",
        "---",
        "# Serving x",
        "Install vLLM first.",
        "```bash",
        "vllm serve Qwen/Qwen3-8B --max-model-len 1",
        "```",
        "```python",
        "import vllm  # code: kept",  # inside a fence: Python, never MDX
        "```",
        "```bash",
        "vllm serve Qwen/Qwen3-8B --port 2",
        "```",
        "```bash",
        "docker run --gpus all vllm/vllm-openai:v0.10.0 --model Qwen/Qwen3-8B --port 2",
        "```",
    ]
    for n, (before, after) in enumerate(zip(text.split("\n"), out.split("\n"), strict=True)):
        assert after in ("", before), n  # a line is kept as written or blank, never moved


def test_a_docusaurus_site_gives_each_command_at_its_line_with_its_version(tmp_path):
    root = site(tmp_path / "acme")
    tree = detect(root)
    assert tree.kind == "site"
    catalog, unusable = extract([root], stable="0.34.0")
    assert not unusable
    found = {(src.file, src.line): (s, src) for s in catalog.snippets for src in s.sources}
    for rel, (tag, length, port) in PAGES.items():
        text = (root / rel).read_text()
        want = {
            line_of(text, "--max-model-len"): f"--max-model-len {length}",
            line_of(text, "vllm serve Qwen/Qwen3-8B --port"): f"--port {port}",
            line_of(text, "docker run"): f"--port {port}",
        }
        for line, args in want.items():
            assert (rel, line) in found, (rel, line, sorted(found))
            snippet, src = found[rel, line]
            assert args in " ".join(snippet.argv)
            assert src.version == (tree.version if tag == "current" else "0.3"), (rel, src.version)
            assert src.title == "Serving" and src.heading == f"Serving {tag}"  # front matter's title
    # the translation is the same command as the page it translates: one snippet, both places
    [max_len] = [s for s in catalog.snippets if "--max-model-len" in s.argv and "4096" in s.argv]
    assert sorted(src.file for src in max_len.sources) == [
        "i18n/zh/docusaurus-plugin-content-docs/version-0.3/serve.md",
        "versioned_docs/version-0.3/serve.mdx",
    ]
    assert len(catalog.snippets) == 6  # two `vllm serve` and one `docker run` per site version


def test_a_plugins_versioned_docs_are_written_for_that_vllm_release_line(tmp_path):
    pages = {rel.replace("version-0.3", "version-0.26.0"): v for rel, v in PAGES.items()}
    root = site(tmp_path / "gaudi-docs", pages)
    for rel in pages:  # an image tag is the page's own statement: here the page states nothing
        (root / rel).write_text((root / rel).read_text().replace("vllm/vllm-openai:v0.10.0", "vllm/vllm-openai"))
    (root / "README.md").write_text("# Hardware plugin\n\n`pip install vllm-gaudi`: vllm-gaudi for Intel Gaudi.\n")
    catalog, _ = extract([root], stable="0.34.0")
    versioned = [src for s in catalog.snippets for src in s.sources if "version-0.26.0" in src.file]
    assert len(versioned) == 6  # 3 commands on each of the two pages (versioned_docs/ and its i18n copy)
    for src in versioned:
        assert src.version == "0.26.0"
        assert src.written_for.spec == "==0.26.*" and src.written_for.basis == "site", src.written_for
        assert src.plugin == "vllm-gaudi"


def test_an_mdx_page_outside_docusaurus_is_read_too(tmp_path):
    page = tmp_path / "guide.mdx"
    page.write_text(PAGE.format(tag="x", len=1024, port=9000))
    catalog, _ = extract([page], stable="0.34.0")
    lines = sorted(src.line for s in catalog.snippets for src in s.sources)
    text = page.read_text()
    assert lines == sorted(
        [line_of(text, "--max-model-len"), line_of(text, "serve Qwen/Qwen3-8B --port"), line_of(text, "docker run")]
    )
