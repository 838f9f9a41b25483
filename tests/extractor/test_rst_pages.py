"""reStructuredText pages are read (issue 59 point 1): a Sphinx site's `.rst` through docutils — its
code-block / code / sourcecode directives, `::` literal blocks, `literalinclude` (inside the tree only),
parsed-literal and substitutions, code inside directives docutils does not know (Sphinx's tabs) — each
command at the file line where it starts. A small site made here, and the real aibrix snapshot in the
shared corpus (the `corpus` fixture)."""

from __future__ import annotations

from pathlib import Path

import pytest

from driftmatrix.extractor.catalog import extract
from driftmatrix.extractor.corpus import detect
from driftmatrix.extractor.rst_pages import parse, title

_CONF = '''
project = "acme"
rst_prolog = """
.. |vllm_pin| replace:: 0.9.1
"""
'''

_PAGE = """\
.. _install-label:

Serving Acme
============

.. |model| replace:: Qwen/Qwen3-0.6B

Start the server, see :ref:`install-label` and :doc:`other`::

    vllm serve org/literal --port 8001

.. code-block:: bash
   :caption: start it
   :emphasize-lines: 1


   pip install vllm==|vllm_pin|
   vllm serve org/pinned \\
     --max-model-len 4096

On a machine
------------

.. tabs::

   .. tab:: CPU

      .. code-block:: console

         $ vllm serve org/in-a-tab

.. note::

   .. sourcecode:: sh

      vllm serve org/in-a-note

.. parsed-literal::

   vllm serve |model| --port 8002

.. literalinclude:: ../../../deploy/model.yaml
   :language: yaml
   :linenos:

.. literalinclude:: ../../../../outside.yaml

.. toctree::
   :maxdepth: 1

   other
"""

_MANIFEST = """\
apiVersion: apps/v1
kind: Deployment
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.8.5
          command: ["vllm", "serve", "org/included", "--port", "8003"]
"""


@pytest.fixture
def site(tmp_path: Path) -> Path:
    repo = tmp_path / "proj"
    files = {
        "README.md": "# Proj\n",
        "LICENSE": "Apache-2.0\n",
        "docs/source/conf.py": _CONF,
        "docs/source/serving/acme.rst": _PAGE,
        "deploy/model.yaml": _MANIFEST,
    }
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    (tmp_path / "outside.yaml").write_text(_MANIFEST.replace("org/included", "org/outside"))
    return repo


def _by_model(repo: Path):
    catalog, unusable = extract([repo], stable="0.34.0")
    assert unusable == []
    found = {}
    for snippet in catalog.snippets:
        for src in snippet.sources:
            if src.file.endswith(".rst"):
                found[snippet.model] = (snippet, src)
    return found, catalog


def test_every_kind_of_block_gives_its_command_at_its_line(site):
    found, _ = _by_model(site)
    lines = {model: src.line for model, (_, src) in found.items()}
    assert lines == {
        "org/literal": 10,  # `::`: the block's first line
        "org/pinned": 18,  # after the options, two blank lines and the install line
        "org/in-a-tab": 30,  # inside `.. tab:: CPU`, which docutils does not know
        "org/in-a-note": 36,
        "Qwen/Qwen3-0.6B": 40,  # parsed-literal: the page's own substitution rendered
        "org/included": 42,  # a literalinclude: at the directive's line
    }, lines
    assert "org/outside" not in found  # never read outside the tree


def test_contexts_anchors_titles_and_headings_are_sphinxs(site):
    found, _ = _by_model(site)
    src = {model: s for model, (_, s) in found.items()}
    assert src["org/literal"].anchor == "serving-acme"  # the section's own id (`install-label` is a span in it)
    assert src["org/in-a-tab"].anchor == "on-a-machine"
    assert src["org/in-a-tab"].heading == "On a machine"
    assert {s.title for s in src.values()} == {"Serving Acme"}
    assert src["org/literal"].context == "literal:plain"
    assert src["org/pinned"].context == "code-block:bash"
    assert src["org/in-a-tab"].context == "code-block:console in tab"
    assert src["org/in-a-note"].context == "sourcecode:sh in note"
    assert src["org/included"].context == "include:deploy/model.yaml:9"


def test_the_sites_substitutions_and_the_included_files_image_say_what_it_is_written_for(site):
    found, _ = _by_model(site)
    pinned = found["org/pinned"][1].written_for
    assert pinned.spec == "==0.9.1", pinned  # rst_prolog's |vllm_pin|, filled in from conf.py (never run)
    assert "vllm==0.9.1" in pinned.origin
    included = found["org/included"][1].written_for
    assert included.spec == "==0.8.5", included  # the manifest shown on the page names its image


def test_an_include_leading_out_of_the_tree_is_a_diagnostic(site):
    _, catalog = _by_model(site)
    out = [d for d in catalog.diagnostics if d.code == "unresolved-include"]
    assert [(d.file, d.line) for d in out] == [("docs/source/serving/acme.rst", 46)], out
    assert "leads out of this tree" in out[0].message


def test_a_plain_folder_of_rst_pages_is_read(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "run.rst").write_text("Run\n===\n\n.. code-block:: bash\n\n   vllm serve org/plain\n")
    tree = detect(tmp_path / "notes")
    assert (tree.kind, tree.layout) == ("markdown", "markdown-folder")
    catalog, _ = extract([tmp_path / "notes"], stable="0.34.0")
    assert [(s.model, s.sources[0].file, s.sources[0].line) for s in catalog.snippets] == [("org/plain", "run.rst", 6)]
    single, _ = extract([tmp_path / "notes" / "run.rst"], stable="0.34.0")
    assert [s.model for s in single.snippets] == ["org/plain"]


def test_a_broken_page_is_read_as_far_as_docutils_can():
    text = (
        "Broken\n======\n\n.. code-block:: bash\n   :bogus-option: [\n\n   vllm serve org/a\n\n"
        ".. unknown-directive:: x y z\n\n   Text with :unknown-role:`x` and `unclosed\n\n"
        "Title\n===\n\n::\n\n   vllm serve org/b\n"
    )
    document = parse(text)
    assert title(document) == "Broken"
    blocks = [(n.line, n.astext()) for n in document.findall(lambda n: n.tagname == "literal_block")]
    assert (7, "vllm serve org/a") in blocks and (18, "vllm serve org/b") in blocks, blocks


@pytest.fixture
def aibrix(corpus) -> Path:
    return next((corpus / "thirdparty").glob("aibrix-*"))


def test_the_aibrix_sphinx_pages_give_their_commands(aibrix):
    catalog, _ = extract([aibrix], stable="0.34.0")
    rst = {
        (src.file, src.line): (snippet, src)
        for snippet in catalog.snippets
        for src in snippet.sources
        if src.file.endswith(".rst")
    }
    local = rst[("docs/source/getting_started/installation/local-mode.rst", 69)][0]
    assert (local.model, local.argv) == ("Qwen/Qwen2.5-1.5B-Instruct", ["Qwen/Qwen2.5-1.5B-Instruct", "--port", "8000"])
    lora, lora_src = rst[("docs/source/features/runtime.rst", 316)]
    assert lora.env == {"VLLM_ALLOW_RUNTIME_LORA_UPDATING": "true"} and "--enable-lora" in lora.argv
    assert lora_src.anchor == "model-configuration-api" and lora_src.title == "AI Engine Runtime"
    api_key = rst[("docs/source/features/lora-dynamic-loading.rst", 571)][0]
    assert any(lint.code == "no-model" for lint in api_key.lints)  # `vllm serve --api-key …`: no model
    # quickstart.rst:43 `.. literalinclude:: ../../../samples/quickstart/model.yaml`: its manifest's command,
    # written for the image it names (vllm/vllm-openai:v0.11.0), as the file read alone is
    quick, quick_src = rst[("docs/source/getting_started/quickstart.rst", 43)]
    assert quick_src.context == "include:samples/quickstart/model.yaml:23"
    assert quick_src.written_for.spec == "==0.11.0"
    assert any(s.file == "samples/quickstart/model.yaml" for s in quick.sources)
    # a yaml code-block: the manifest's command list at its `- command:` line
    assert ("docs/source/getting_started/advanced-k8s-examples.rst", 59) in rst


def test_where_a_label_and_a_title_give_the_same_id_the_anchor_is_that_id_not_a_made_up_one(aibrix):
    # kvcache-offloading.rst: `.. _l1_cache_example:` before "L1 Cache Example": docutils ids
    # ['id2', 'l1-cache-example'], both in Sphinx's HTML; the readable one is the anchor
    catalog, _ = extract([aibrix], stable="0.34.0")
    anchors = {
        src.line: src.anchor
        for s in catalog.snippets
        for src in s.sources
        if src.file == "docs/source/features/kvcache-offloading.rst"
    }
    assert anchors == {54: "l1-cache-example", 187: "l2-cache-example"}, anchors
