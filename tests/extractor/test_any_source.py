"""Any page that tells people to run vLLM (issue 21): a Markdown page, a plain folder of pages,
a Hugging Face model card, a saved HTML page of any site; links from `--url-base`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from driftmatrix.extractor.catalog import extract
from driftmatrix.runner.builds.resolve import stable_pin
from driftmatrix.runner.builds.targets import SEED_CPU

CARD = """---
license: apache-2.0
pipeline_tag: text-generation
library_name: transformers
base_model: Qwen/Qwen3-0.6B
{extra}---

# Acme Tiny

Serve this model from its own repository:

```bash
vllm serve . --max-model-len 4096
```

Or without naming it:

```bash
vllm serve --max-model-len 2048 --speculative-config '{{"method": "ngram", "num_speculative_tokens": 3}}'
```

A different model, named:

```bash
vllm serve Qwen/Qwen3-0.6B
```
"""


def test_a_model_card_serves_its_own_model(tmp_path):
    card = tmp_path / "acme-tiny" / "README.md"
    card.parent.mkdir()
    card.write_text(CARD.format(extra=""))
    catalog, unusable = extract(stable=stable_pin(SEED_CPU), sources=[card], model_id="acme/tiny-0.1")
    assert unusable == []
    info = catalog.corpora[0]
    assert (info.name, info.layout, info.snippets) == ("model-card", "model-card", 3)
    models = {s.sources[0].line: (s.model, s.argv[0]) for s in catalog.snippets}
    assert models == {
        13: ("acme/tiny-0.1", "acme/tiny-0.1"),
        19: ("acme/tiny-0.1", "acme/tiny-0.1"),
        25: ("Qwen/Qwen3-0.6B", "Qwen/Qwen3-0.6B"),
    }
    assert all(s.runnable for s in catalog.snippets)
    assert [s.sources[0].heading for s in catalog.snippets] == ["Acme Tiny"] * 3
    assert all(s.sources[0].url is None for s in catalog.snippets)  # no --url-base: no link, never a path


def test_a_card_names_its_model_in_front_matter_or_says_it_cannot(tmp_path):
    named = tmp_path / "named"
    named.mkdir()
    (named / "README.md").write_text(CARD.format(extra="model-index:\n- name: acme/tiny-0.2\n  results: []\n"))
    (named / "config.json").write_text("{}")
    catalog, _ = extract(stable=stable_pin(SEED_CPU), sources=[named])
    assert catalog.corpora[0].layout == "model-repo"
    assert {s.model for s in catalog.snippets} == {"acme/tiny-0.2", "Qwen/Qwen3-0.6B"}
    bare = tmp_path / "bare.md"
    bare.write_text(CARD.format(extra=""))
    catalog, _ = extract(stable=stable_pin(SEED_CPU), sources=[bare])
    assert [d.code for d in catalog.diagnostics] == ["card-without-model-id"]
    first = next(s for s in catalog.snippets if s.sources[0].line == 13)
    assert first.model == "."  # left as written: the reader's own directory


def test_a_plain_folder_of_pages_with_a_url_base(tmp_path):
    root = tmp_path / "runbooks"
    (root / "gpu").mkdir(parents=True)
    (root / "index.md").write_text("# Runbooks\n\nNothing to run here.\n")
    (root / "gpu" / "Serving Qwen.md").write_text(
        "# Serving on the GPU box\n\n## Start the server\n\n```console\n$ numactl --cpunodebind=0 vllm serve "
        "Qwen/Qwen3-0.6B \\\n    --max-model-len 4096\n```\n"
    )
    (root / "node_modules").mkdir()
    (root / "node_modules" / "x.md").write_text("```bash\nvllm serve skipped/model\n```\n")
    catalog, unusable = extract(
        stable=stable_pin(SEED_CPU), sources=[root], url_base="https://github.com/acme/runbooks/blob/main"
    )
    assert unusable == [] and (catalog.corpora[0].name, catalog.corpora[0].layout) == ("markdown", "markdown-folder")
    [s] = catalog.snippets
    src = s.sources[0]
    assert (src.file, src.line, src.anchor, src.title) == (
        "gpu/Serving Qwen.md",
        6,
        "start-the-server",
        "Serving on the GPU box",
    )
    assert src.url == "https://github.com/acme/runbooks/blob/main/gpu/Serving Qwen.md?plain=1#L6"
    assert s.wrapper == ["numactl", "--cpunodebind=0"] and s.model == "Qwen/Qwen3-0.6B"
    catalog, _ = extract(stable=stable_pin(SEED_CPU), sources=[root], url_base="https://runbooks.example.org/pages")
    assert (
        catalog.snippets[0].sources[0].url == "https://runbooks.example.org/pages/gpu/Serving Qwen.md#start-the-server"
    )


BLOG = """<!doctype html><html><head><title>How we serve Qwen3 with speculative decoding | Acme blog</title></head>
<body><header><h1>Acme blog</h1></header>
<article>
<h1 id="how-we-serve">How we serve Qwen3 with speculative decoding</h1>
<p>First the server:</p>
<div class="highlight highlight-source-shell"><pre>vllm serve Qwen/Qwen3-8B \\
  --speculative-config '{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 3}'</pre></div>
<h2 id="sphinx">From our Sphinx docs</h2>
<div class="highlight-bash notranslate"><div class="highlight"><pre><span></span>vllm<span class="w"> </span>serve<span class="w"> </span>facebook/opt-125m</pre></div></div>
<h2>Python</h2>
<pre><code class="lang-python">import subprocess
subprocess.run(["vllm", "serve", "Qwen/Qwen3-0.6B", "--port", "8001"])
</code></pre>
</article></body></html>
"""


def test_a_blog_page_of_any_site(tmp_path):
    page = tmp_path / "qwen3-spec.html"
    page.write_text(BLOG)
    catalog, unusable = extract(stable=stable_pin(SEED_CPU), sources=[page], url_base="https://blog.example.org/posts")
    assert unusable == []
    by_model = {s.model: s for s in catalog.snippets}
    assert set(by_model) == {"Qwen/Qwen3-8B", "facebook/opt-125m", "Qwen/Qwen3-0.6B"}
    spec = by_model["Qwen/Qwen3-8B"]
    assert spec.speculative_config == {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 3}
    src = spec.sources[0]
    assert src.url == "https://blog.example.org/posts/qwen3-spec.html#how-we-serve"
    assert src.title == "How we serve Qwen3 with speculative decoding" and src.version == ""
    assert by_model["facebook/opt-125m"].sources[0].heading == "From our Sphinx docs"


def test_another_projects_latest_docs_are_not_vllm_nightly(tmp_path):
    page = tmp_path / "ascend.html"
    page.write_text(
        '<html><head><link rel="canonical" href="https://vllm-ascend.readthedocs.io/en/latest/quick_start.html">'
        '</head><body><article><h1>Quick start</h1><pre><code class="language-bash">vllm serve Qwen/Qwen3-0.6B'
        "</code></pre></article></body></html>"
    )
    catalog, _ = extract(stable=stable_pin(SEED_CPU), sources=[page])
    [s] = catalog.snippets
    assert s.sources[0].version == ""
    assert "nightly" not in (s.sources[0].written_for.origin or "")


def test_the_cli_takes_the_new_options_and_still_refuses_what_holds_no_page(tmp_path):
    card = tmp_path / "README.md"
    card.write_text(CARD.format(extra=""))
    out = tmp_path / "snippets.json"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "driftmatrix.cli",
            "extract",
            str(card),
            "--model-id",
            "acme/tiny",
            "--url-base",
            "https://huggingface.co/acme/tiny/blob/main",
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert run.returncode == 0, run.stderr
    data = json.loads(out.read_text())
    assert {s["model"] for s in data["snippets"]} == {"acme/tiny", "Qwen/Qwen3-0.6B"}
    assert data["snippets"][0]["sources"][0]["url"].startswith("https://huggingface.co/acme/tiny/blob/main/README.md#")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("vllm serve x")
    run = subprocess.run(
        [sys.executable, "-m", "driftmatrix.cli", "extract", str(empty), "-o", str(out)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert run.returncode == 1 and "[bad-source]" in run.stderr and "Markdown page" in run.stderr
