"""Which vLLM versions each page is written for: the real corpora, pages that state it, the
override, and what a malformed specifier gets."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from driftmatrix.extractor.catalog import extract
from driftmatrix.extractor.written_for import WrittenForError, override, statements


def _tree(root: Path, page: str, name: str = "notes") -> Path:
    tree = root / name
    (tree / "docs").mkdir(parents=True)
    (tree / "mkdocs.yaml").write_text("site_name: t\n")
    (tree / "docs" / "index.md").write_text(page)
    return tree


def _by_line(catalog) -> dict[int, object]:
    return {src.line: src.written_for for s in catalog.snippets for src in s.sources}


def test_release_docs_are_written_for_their_release_line(real_catalog):
    seen = {}
    for s in real_catalog.snippets:
        for src in s.sources:
            if src.corpus == "vllm-docs" and not src.file.startswith("recipes/"):
                seen.setdefault(src.version, set()).add((src.written_for.spec, src.written_for.basis))
    assert seen == {"0.20.1": {("==0.20.*", "release")}, "0.33.0": {("==0.33.*", "release")}}


def test_recipes_are_written_for_their_min_vllm_version(real_catalog):
    gemma = {
        src.written_for.spec
        for s in real_catalog.snippets
        for src in s.sources
        if src.corpus == "recipes" and src.file == "models/Google/gemma-4-E2B-it.yaml"
    }
    assert gemma == {">=0.19.1"}  # the recipe's own claim: model.min_vllm_version "0.19.1"
    ling = {
        s.recipe["variant"]: src.written_for
        for s in real_catalog.snippets
        for src in s.sources
        if src.corpus == "recipes" and src.file == "models/inclusionAI/Ling-3.0-flash.yaml" and s.recipe
    }
    assert ling["default"].spec == ">=0.25.0.dev0"  # min 0.25.0 + nightly_required: its nightlies count
    assert ling["fp8"].spec == ">=0.26.0.dev0" and "variant fp8" in ling["fp8"].origin  # the variant's own
    # inside a versioned vLLM tree a recipe is read for that release line *and* its own claim
    inside = {
        src.written_for.spec
        for s in real_catalog.snippets
        for src in s.sources
        if src.corpus == "vllm-docs" and src.file == "recipes/models/Google/gemma-4-E2B-it.yaml"
    }
    assert inside == {"==0.33.*,>=0.19.1"}
    # ... unless it says it needs the nightly builds: its reader installs one, whatever the tree's release
    nightly = {
        (src.written_for.spec, src.written_for.basis)
        for s in real_catalog.snippets
        for src in s.sources
        if src.corpus == "vllm-docs" and src.file == "recipes/models/MiniMaxAI/MiniMax-M3.1-Flash.yaml"
    }
    assert nightly == {(">=0.33.0.dev0", "nightly")}


def test_a_recipe_page_that_installs_the_nightly_is_written_for_nightly(real_catalog):
    gemma_md = {
        src.written_for
        for s in real_catalog.snippets
        for src in s.sources
        if src.corpus == "recipes" and src.file == "Google/Gemma4.md" and src.line > 70
    }
    # its `docker run vllm/vllm-tpu:gemma4 …` too: vLLM's own launch image, built near the page that says nightly
    assert {(w.spec, w.basis) for w in gemma_md} == {(">0.20.1", "nightly")}
    assert all("Google/Gemma4.md:" in w.origin and "--pre" in w.origin for w in gemma_md)


def test_a_page_that_states_its_version_is_judged_from_that_line(tmp_path):
    page = """# Run it

```bash
vllm serve Qwen/Qwen3-0.6B --max-model-len 512
```

Install:

```bash
pip install "vllm>=0.32.0"
```

```bash
vllm serve Qwen/Qwen3-0.6B --max-model-len 1024
```

## With the image

```bash
docker run --gpus all vllm/vllm-openai:v0.21.0 --model Qwen/Qwen3-0.6B --max-model-len 256
```

This needs vLLM 0.30 or later:

```bash
vllm serve Qwen/Qwen3-0.6B --max-model-len 2048
```
"""
    catalog, _ = extract([_tree(tmp_path, page)], stable="0.20.1")
    wf = _by_line(catalog)
    assert wf[4].spec == ">=0.32.0" and wf[4].basis == "page"  # before any statement: the page's first
    assert wf[14].spec == ">=0.32.0" and "docs/index.md:10" in wf[14].origin and "pip install" in wf[14].origin
    assert wf[20].spec == "==0.21.0" and "vllm/vllm-openai:v0.21.0" in wf[20].origin  # its own image tag
    assert wf[26].spec == ">=0.30" and "0.30 or later" in wf[26].origin


def test_without_a_statement_the_current_stable_and_newer(tmp_path):
    catalog, _ = extract([_tree(tmp_path, "```bash\nvllm serve m\n```\n")], stable="0.21.0")
    (wf,) = _by_line(catalog).values()
    assert (wf.spec, wf.basis) == (">=0.21.0", "default") and "0.21.0" in wf.origin


@pytest.mark.parametrize(
    ("line", "spec"),
    [
        ("uv pip install -U vllm --torch-backend auto # vllm>=0.12.0 is required", ">=0.12.0"),
        ("uv pip install vllm==0.11.2 --torch-backend auto", "==0.11.2"),
        ("pip install 'vllm[audio]>=0.14.1,<0.20'", ">=0.14.1,<0.20"),
        ("uv pip install -U vllm --pre --extra-index-url https://wheels.vllm.ai/nightly", ">0.20.1"),
        ("docker pull vllm/vllm-openai:nightly", ">0.20.1"),
        ("docker run vllm/vllm-openai-rocm:v0.15.1", "==0.15.1"),
        ("Requires vLLM >= 0.12 for this model.", ">=0.12"),
        ("On vLLM v0.21.0+, the default changed.", ">=0.21.0"),
        ("pip install vllm", None),  # no version: nothing stated
        ("git clone https://github.com/vllm-project/vllm==0.1", None),
        ("docker pull vllm/vllm-openai:latest", None),
    ],
)
def test_statement_shapes(line, spec):
    found = statements(f"intro\n{line}\n", "0.20.1", "p.md")
    assert [s.written_for.spec for s in found] == ([spec] if spec else [])
    for s in found:
        assert s.line == 2 and "p.md:2" in s.written_for.origin
        SpecifierSet(s.written_for.spec)  # a real PEP 440 specifier


def test_docs_of_main_are_written_for_the_nightly_builds(tmp_path):
    tree = _tree(tmp_path, "```bash\nvllm serve m\n```\n", name="vllm-main")
    git = lambda *a: subprocess.run(["git", "-C", str(tree), *a], check=True, capture_output=True)  # noqa: E731
    git("init", "-q")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "docs")
    catalog, _ = extract([tree], stable="0.20.1")
    (wf,) = _by_line(catalog).values()
    assert (wf.spec, wf.basis) == (">0.20.1", "nightly") and "git" in wf.origin
    git("tag", "v0.21.0")  # the same checkout at a release tag: that release's docs
    catalog, _ = extract([tree], stable="0.20.1")
    assert catalog.corpora[0].version == "0.21.0"
    assert next(iter(_by_line(catalog).values())).spec == "==0.21.*"


def test_override_and_malformed_specifiers(tmp_path, corpus):
    assert override(" >=0.21.0 ").spec == ">=0.21.0"
    with pytest.raises(WrittenForError, match="'>= banana'"):
        override(">= banana")
    out = tmp_path / "s.json"
    cli = [
        sys.executable,
        "-m",
        "driftmatrix.cli",
        "extract",
        str(corpus / "vllm-docs" / "0.20.1"),
        "-q",
        "-o",
        str(out),
    ]
    bad = subprocess.run([*cli, "--written-for", "0.21 or later"], capture_output=True, text=True)
    assert bad.returncode == 2 and "'0.21 or later' is not a PEP 440 version specifier" in bad.stderr
    assert not out.exists()
    bad = subprocess.run([*cli, "--stable", "soon"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--stable 'soon'" in bad.stderr
    good = subprocess.run([*cli, "--written-for", ">=0.21.0"], capture_output=True, text=True)
    assert good.returncode == 0, good.stderr
    import json

    specs = {
        (src["written_for"]["spec"], src["written_for"]["basis"])
        for s in json.loads(out.read_text())["snippets"]
        for src in s["sources"]
    }
    assert specs == {(">=0.21.0", "override")}
