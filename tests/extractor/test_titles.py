"""Each place records its page's title and the nearest heading's text (`Source.title`, `Source.heading`),
as plain text a reader sees: on the real corpora (docs, recipes YAML and their guides), the same as
mkdocs-material renders them (saved HTML pages built from the real Markdown), and an older
snippets.json (before these fields) still loads."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_html_pages import MKDOCS  # the same mkdocs config the HTML-page tests build with

from driftmatrix.extractor.catalog import extract
from driftmatrix.extractor.markdown_blocks import code_blocks, plain_text, title_from_file
from driftmatrix.extractor.snippet_record import Catalog, Source
from driftmatrix.runner.builds.resolve import stable_pin
from driftmatrix.runner.builds.targets import SEED_CPU

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "site" / "snippets.json"


def places(catalog: Catalog, corpus: str, version: str, file: str) -> list[Source]:
    return sorted(
        (
            src
            for s in catalog.snippets
            for src in s.sources
            if (src.corpus, src.version, src.file) == (corpus, version, file)
        ),
        key=lambda src: src.line,
    )


def test_speculative_decoding_pages_give_the_page_title_and_the_section(real_catalog):
    eagle = places(real_catalog, "vllm-docs", "0.33.0", "docs/features/speculative_decoding/eagle.md")
    assert [(src.title, src.heading, src.anchor) for src in eagle] == [
        ("EAGLE Draft Models", "Eagle Drafter Example", "eagle-drafter-example"),
        ("EAGLE Draft Models", "Eagle3 Drafter Example", "eagle3-drafter-example"),
    ]
    readme = places(real_catalog, "vllm-docs", "0.33.0", "docs/features/speculative_decoding/README.md")
    assert {src.title for src in readme} == {"Speculative Decoding"}
    # "## `--speculative-config` schema": the code span's text, without the backticks
    by_line = {src.line: src.heading for src in readme}
    assert by_line[62] == "--speculative-config schema"
    assert by_line[122] == "N-gram" and by_line[143] == "Suffix decoding"
    # right under the page's `# ` heading: the heading is the title
    draft = places(real_catalog, "vllm-docs", "0.33.0", "docs/features/speculative_decoding/draft_model.md")
    assert (draft[0].title, draft[0].heading) == ("Draft Models", "Draft Models")


def test_front_matter_is_metadata_not_a_heading(real_catalog):
    # docs/deployment/docker.md starts with `---\ntoc_depth: 2\n---`: mkdocs reads it as metadata
    # (CommonMark alone would make "toc_depth: 2" a heading); the page's title is its `# ` heading
    docker = places(real_catalog, "vllm-docs", "0.33.0", "docs/deployment/docker.md")
    assert docker and {src.title for src in docker} == {"Using Docker"}
    assert "toc_depth: 2" not in {src.heading for src in docker}
    page = (
        '---\ntitle: "Serving &lt;model&gt; <em>fast</em>"\ntoc_depth: 2\n---\n'
        "# Ignored\n\n```bash\nvllm serve m\n```\n"
    )
    blocks = list(code_blocks(page))
    assert [(b.line, b.heading) for b in blocks] == [(8, "Ignored")]  # line numbers kept
    catalog = extract_page(page)
    assert {(src.title, src.line) for s in catalog.snippets for src in s.sources} == {("Serving <model> fast", 8)}


def extract_page(text: str, name: str = "page.md") -> Catalog:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "vllm-0.33.0"
        (tree / "docs").mkdir(parents=True)
        (tree / "mkdocs.yaml").write_text("site_name: x\n")
        (tree / "docs" / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / "docs" / name).write_text(text)
        catalog, _ = extract(stable=stable_pin(SEED_CPU), sources=[tree])
    return catalog


def test_a_page_without_headings_is_called_by_its_file(real_catalog):
    parts = places(real_catalog, "vllm-docs", "0.33.0", "docs/getting_started/installation/gpu.rocm.inc.md")
    assert parts and {src.title for src in parts} == {"gpu.rocm.inc.md"}
    assert all(src.heading for src in parts)  # its `####` sections still name each command's place
    catalog = extract_page("Run it:\n\n```bash\nvllm serve m\n```\n", "quantization/README.md")
    ((src,),) = [s.sources for s in catalog.snippets]
    assert (src.title, src.heading) == ("quantization/README.md", "")
    assert title_from_file("docs/a/index.md") == "a/index.md" and title_from_file("x.inc.md") == "x.inc.md"


def test_recipes_give_the_recipe_title_and_what_each_command_composes(real_catalog, corpus):
    import yaml

    rel = "models/Qwen/Qwen3.6-27B.yaml"
    meta = yaml.safe_load((corpus / "recipes" / "8959cf6" / rel).read_text())["meta"]
    recipe = places(real_catalog, "recipes", "8959cf6", rel)
    assert {src.title for src in recipe} == {meta["title"]} == {"Qwen3.6-27B"}
    heading = {src.context: src.heading for src in recipe}
    assert heading["recipe:model.model_id"] == ""  # the default command: the recipe itself
    assert heading["recipe:features.spec_decoding.args"] == "Spec decoding"
    assert heading["recipe:features.text_only.args"] == "Text only"
    assert heading["recipe:variants.fp8"] == "Variant fp8"
    # the guide's commands are on the recipe's page, under the guide's headings
    guide = [src for src in recipe if src.context.startswith("fence:")]
    assert guide and {src.heading for src in guide} >= {"Single node (TP1)", "NVFP4 on Blackwell"}
    # a mode's label, and every recipe command has its recipe's title
    flash = places(real_catalog, "recipes", "8959cf6", "models/deepseek-ai/DeepSeek-V4-Flash.yaml")
    modes = {src.context: src.heading for src in flash}
    assert modes["recipe:features.spec_decoding.modes.dspark.args"] == "Spec decoding (DSpark)"
    assert modes["recipe:variants.fp8"] == "Variant FP8 (Preview)"  # the variant's own label
    recipes = [src for s in real_catalog.snippets for src in s.sources if src.context.startswith("recipe:")]
    assert recipes and all(src.title for src in recipes)
    # the Markdown recipes (older layout) are docs pages: their `# ` heading
    qwen3 = places(real_catalog, "recipes", "8959cf6", "Qwen/Qwen3.md")
    assert qwen3 and {src.title for src in qwen3} == {"Qwen3 Usage Guide"}


def test_every_place_of_the_real_corpora_has_a_plain_text_title(real_catalog):
    sources = [src for s in real_catalog.snippets for src in s.sources]
    assert len(sources) > 3000
    assert all(src.title for src in sources)
    for src in sources:
        for text in (src.title, src.heading):
            # text as a reader sees it: no entity, no code-span backticks, no link syntax, one line
            assert "&lt;" not in text and "&amp;" not in text and "`" not in text and "](" not in text, (src.file, text)
            assert "\n" not in text and text == text.strip(), (src.file, text)
    # a heading with an anchor has its text (the anchor's heading); one without has none
    assert all(src.heading for src in sources if src.anchor and src.corpus == "vllm-docs")


def test_plain_text_of_headings():
    assert (
        plain_text("Serve `<target-model>` with &lt;care&gt; & *style* {#serve}")
        == "Serve <target-model> with <care> & style"
    )
    assert (
        plain_text("A [link](https://x.example) ![logo](x.png) <b>bold</b> \\*stars\\* __init__ max_model_len")
        == "A link bold *stars* init max_model_len"
    )
    assert plain_text('Qwen <img src="https://qwenlm.github.io/favicon.png" alt="Qwen" width="16">') == "Qwen"
    assert plain_text("`` a`b ``  and  <https://x.example/a>") == "a`b and https://x.example/a"
    assert (
        plain_text("Hostile <script>alert(1)</script> `<img src=x onerror=alert(2)>`")
        == "Hostile alert(1) <img src=x onerror=alert(2)>"
    )
    # what Python-Markdown (CommonMark's tag grammar) does not read as a tag is text; unpaired markers too
    assert (
        plain_text("<img src=x onerror=window.__pwned=1> *a*b* 2*3 snake_case")
        == "<img src=x onerror=window.__pwned=1> ab* 2*3 snake_case"
    )
    assert plain_text("*`a*b`* [`<m>`](x) &amp;lt;") == "a*b <m> &lt;"


def test_an_older_snippets_json_still_loads():
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert not any("title" in src or "heading" in src for s in data["snippets"] for src in s["sources"])
    catalog = Catalog.read(FIXTURE)
    assert catalog.snippets
    assert all(src.title == "" and src.heading == "" for s in catalog.snippets for src in s.sources)
    # and a newer one with a source field this version does not know loads too
    src = Source.from_dict({**data["snippets"][0]["sources"][0], "title": "T", "heading": "H", "later_field": 1})
    assert (src.title, src.heading) == ("T", "H")


PAGES = [
    "features/speculative_decoding/README.md",
    "features/speculative_decoding/eagle.md",
    "features/speculative_decoding/mtp.md",
    "deployment/docker.md",
    "benchmarking/cli.md",
]
TRICKY = """# Serving `<target-model>` &amp; friends

## Run `<target-model>` with &lt;care&gt; & *style* {#run}

```bash
vllm serve a
```

### A [link](https://x.example) ![logo](x.png) <b>bold</b> \\*stars\\* __init__ and max_model_len

```bash
vllm serve b
```

## Hostile <img src=x onerror=window.__pwned=1> `<script>window.__pwned=2</script>`

```bash
vllm serve c
```
"""


def test_saved_html_pages_give_the_titles_and_headings_mkdocs_renders(tmp_path, corpus):
    tree = tmp_path / "vllm-0.33.0"
    for page in PAGES:
        (tree / "docs" / page).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(corpus / "vllm-docs" / "0.33.0" / "docs" / page, tree / "docs" / page)
    (tree / "docs" / "tricky.md").write_text(TRICKY)
    (tree / "mkdocs.yaml").write_text(MKDOCS)
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(tree / "mkdocs.yaml"), "-d", str(tmp_path / "site")],
        check=True,
        capture_output=True,
    )
    markdown, _ = extract(stable=stable_pin(SEED_CPU), sources=[tree])
    for page in [*PAGES, "tricky.md"]:
        html_path = tmp_path / "site" / page.removesuffix(".md").removesuffix("README") / "index.html"
        html, _ = extract(stable=stable_pin(SEED_CPU), sources=[html_path])
        want = {
            (s.id, src.title, src.heading)
            for s in markdown.snippets
            for src in s.sources
            if src.file == f"docs/{page}" and not any(x.code == "fence-not-rendered" for x in s.lints)
        }
        got = {(s.id, src.title, src.heading) for s in html.snippets for src in s.sources}
        assert want and got == want, page
    tricky = {src.heading for s in markdown.snippets for src in s.sources if src.file == "docs/tricky.md"}
    assert tricky == {
        "Run <target-model> with <care> & style",
        "A link bold *stars* init and max_model_len",
        "Hostile <img src=x onerror=window.__pwned=1> <script>window.__pwned=2</script>",
    }
    assert {src.title for s in markdown.snippets for src in s.sources if src.file == "docs/tricky.md"} == {
        "Serving <target-model> & friends"
    }


@pytest.mark.parametrize("raw", ["", "   ", "{#only-an-id}"])
def test_empty_headings_have_no_text(raw):
    assert plain_text(raw) == ""
