"""Saved pages of the rendered docs: build real corpus pages with mkdocs-material (the
vLLM docs' own Markdown extensions) and extract the HTML; it must give the same
snippets, anchors and URLs as the Markdown."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from driftmatrix.extractor.catalog import extract
from driftmatrix.runner.builds.resolve import stable_pin
from driftmatrix.runner.builds.targets import SEED_CPU

PAGES = [
    "benchmarking/cli.md",
    "features/speculative_decoding/README.md",
    "features/speculative_decoding/mtp.md",
    "serving/expert_parallel_deployment.md",
    "deployment/k8s.md",
]
MKDOCS = """site_name: vLLM
site_url: https://docs.vllm.ai/en/v0.33.0/
theme:
  name: material
markdown_extensions:
  - attr_list
  - md_in_html
  - admonition
  - pymdownx.details
  - pymdownx.superfences
  - pymdownx.tabbed:
      alternate_style: true
  - pymdownx.highlight:
      anchor_linenums: true
      line_spans: __span
      pygments_lang_class: true
  - pymdownx.inlinehilite
  - toc:
      permalink: true
"""


@pytest.fixture(scope="module")
def built_site(tmp_path_factory, corpus: Path) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("html")
    tree = root / "vllm-0.33.0"  # the folder name gives the version (no PKG-INFO, no git)
    for page in PAGES:
        target = tree / "docs" / page
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(corpus / "vllm-docs" / "0.33.0" / "docs" / page, target)
    (tree / "mkdocs.yaml").write_text(MKDOCS)
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(tree / "mkdocs.yaml"), "-d", str(root / "site")],
        check=True,
        capture_output=True,
    )
    return tree, root / "site"


def test_html_page_gives_the_same_snippets_as_its_markdown(built_site):
    tree, site = built_site
    markdown, _ = extract(stable=stable_pin(SEED_CPU), sources=[tree])
    assert markdown.corpora[0].version == "0.33.0"
    for page in PAGES:
        html_path = site / page.removesuffix(".md").removesuffix("README") / "index.html"
        html, _ = extract(stable=stable_pin(SEED_CPU), sources=[html_path])
        assert html.corpora[0].version == "0.33.0" and html.corpora[0].layout == "html-page"
        # A fence mkdocs renders as text is not code on the page: linted, absent from the HTML.
        want = {
            (s.id, src.anchor, src.url)
            for s in markdown.snippets
            for src in s.sources
            if src.file == f"docs/{page}" and not any(x.code == "fence-not-rendered" for x in s.lints)
        }
        got = {(s.id, src.anchor, src.url) for s in html.snippets for src in s.sources}
        assert want and got == want, page
        assert all(src.corpus == "html" and src.line > 1 for s in html.snippets for src in s.sources)
        # the page's URL (/en/v0.33.0/) says which docs it is: the same versions as the Markdown
        assert {src.written_for.spec for s in html.snippets for src in s.sources} == {"==0.33.*"}


def test_the_stray_indented_fence_in_speculative_decoding_readme_is_linted(built_site):
    tree, _ = built_site
    markdown, _ = extract(stable=stable_pin(SEED_CPU), sources=[tree])
    lints = [x for s in markdown.snippets for x in s.lints if x.code == "fence-not-rendered"]
    assert [(x.file, x.line) for x in lints] == [("docs/features/speculative_decoding/README.md", 166)]


def test_script_in_a_page_is_not_a_problem(tmp_path):
    page = tmp_path / "p.html"
    page.write_text(
        '<html><head><link rel="canonical" href="https://docs.vllm.ai/en/latest/x/"></head><body>'
        '<article><h2 id="run">Run</h2><div class="language-bash highlight"><pre><code>'
        "vllm serve m --served-model-name &lt;script&gt;</code></pre></div></article></body></html>"
    )
    result, _ = extract(stable=stable_pin(SEED_CPU), sources=[page])
    (snippet,) = result.snippets
    assert snippet.argv == ["m", "--served-model-name", "<script>"]
    assert snippet.sources[0].url == "https://docs.vllm.ai/en/latest/x/#run"
    assert snippet.sources[0].written_for.basis == "nightly"  # /en/latest/ is built from main
