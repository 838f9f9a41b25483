from pathlib import Path

import markdown
from bs4 import BeautifulSoup

from driftmatrix.extractor.markdown_blocks import code_blocks

# The Markdown extensions of the vLLM mkdocs.yaml that shape headings and blocks.
VLLM_DOCS_EXTENSIONS = [
    "attr_list",
    "md_in_html",
    "admonition",
    "pymdownx.details",
    "pymdownx.superfences",
    "pymdownx.tabbed",
    "toc",
]

PAGE = """# Title

```bash
vllm serve a
```

=== "Tab one"

    ```bash
    vllm serve b
    ```

=== "Tab two"
    ```sh
    vllm serve c
    ```

!!! note "Inside an admonition"
    ```console
    $ vllm serve d
    ```

???+ tip
    Text first.

    ```bash
    vllm serve e
    ```

## `--speculative-config` schema

<details>
<summary>More</summary>
```bash
vllm serve f
```
</details>

<details markdown="1">
<summary>More</summary>

    ```bash
    vllm serve g
    ```

</details>

- a list item:

    ```yaml
    args: ["vllm serve h"]
    ```

## Title { #custom-id }

    vllm serve i
"""


def test_every_container_shape_with_exact_lines_and_anchors():
    blocks = list(code_blocks(PAGE))
    lines = PAGE.split("\n")
    found = {b.text.strip().split()[-1].strip('"]'): b for b in blocks}
    assert sorted(found) == list("abcdefghi")
    for name, block in found.items():
        # the reported line holds the block's first content line
        assert lines[block.line - 1].strip() == block.text.split("\n")[0].strip(), name
    assert found["b"].container == "tab" and found["c"].container == "tab"
    assert found["d"].container == "admonition" and found["e"].container == "admonition"
    assert found["f"].container == "html"
    assert found["a"].anchor == "title"
    assert found["f"].anchor == found["h"].anchor == "-speculative-config-schema"
    assert found["i"].anchor == "custom-id"
    assert found["h"].lang == "yaml" and found["d"].lang == "console"


def test_anchors_match_python_markdown_toc_on_real_pages(corpus: Path):
    """Our heading ids must be the ids mkdocs renders (Python-Markdown's toc)."""
    docs = corpus / "vllm-docs" / "0.33.0" / "docs"
    pages = [
        "features/speculative_decoding/README.md",
        "serving/expert_parallel_deployment.md",
        "benchmarking/cli.md",
        "deployment/k8s.md",
    ]
    for page in pages:
        text = (docs / page).read_text()
        html = markdown.markdown(text, extensions=VLLM_DOCS_EXTENSIONS)
        rendered = [
            h.get("id") for h in BeautifulSoup(html, "html.parser").find_all(["h1", "h2", "h3", "h4", "h5", "h6"])
        ]
        ours = {b.anchor for b in code_blocks(text)} - {None}
        assert ours, page
        assert ours <= set(rendered), (page, ours - set(rendered))


def test_blank_lines_inside_a_container_do_not_cut_its_code():
    page = "??? code\n\n    ```python\n    import a\n\n\n    def f():\n        return LLM(speculative_config={})\n    ```\n\nafter\n"
    (block,) = code_blocks(page)
    assert block.text.endswith("return LLM(speculative_config={})\n") and not block.unclosed


def test_unclosed_fence_is_flagged_but_quoted_and_closed_ones_are_not():
    blocks = list(code_blocks("> ```bash\n> vllm serve a\n> ```\n\n```bash\nvllm serve b\n\ntext\n"))
    assert [b.unclosed for b in blocks] == [False, True]
