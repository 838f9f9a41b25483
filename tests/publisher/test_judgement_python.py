"""Issue 45, point 6: a page whose Python block Python's parser rejects as a reader pastes it is
doc-drift decided by `python` on every build, in Python's words at the page line of the error; the
same page's block that parses once dedented is judged by the builds as before. Real records: a docs
tree extracted here, published with no outcome."""

from __future__ import annotations

import pytest

from driftmatrix.extractor.catalog import extract
from driftmatrix.publisher import annotate as ann
from driftmatrix.publisher import matrix_json, pr_body
from driftmatrix.publisher.command_view import views_of
from driftmatrix.publisher.judgement import Judge
from driftmatrix.publisher.results import load

PAGE = """# Offline inference

1. Build the engine:

   ```python
   from vllm import LLM
       llm = LLM(model="facebook/opt-125m",
                 speculative_config={"method": "ngram", "num_speculative_tokens": 3})
   ```

2. Or, indented as a whole:

   ```python
      from vllm import LLM
      llm = LLM(model="facebook/opt-350m",
                speculative_config={"method": "ngram", "num_speculative_tokens": 3})
   ```
"""
FILE = "docs/offline.md"


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    root = tmp_path_factory.mktemp("docs-tree")
    (root / "docs").mkdir()
    (root / "mkdocs.yaml").write_text("site_name: t\n")
    (root / FILE).write_text(PAGE)
    catalog, unread = extract([root], stable="0.34.0")
    assert not unread
    catalog.write(root / "snippets.json")
    return root, load(root / "snippets.json", [])


def _by_model(results):
    broken = next(s for s in results.snippets if not s.runnable)
    fine = next(s for s in results.snippets if s.model == "facebook/opt-350m")
    return broken, fine


def test_a_block_python_rejects_is_doc_drift_decided_by_python(published):
    _root, results = published
    broken, _fine = _by_model(results)
    j = Judge(results).of_source(broken, broken.sources[0])
    assert (j.kind, j.decided_by, j.depth, j.failing) == ("doc-drift", "python", "python", [])
    assert [(d.code, d.line) for d in j.defects] == [("python-syntax", 7)]
    assert j.summary.startswith(
        f"Python does not run this block as written ({FILE}:7: IndentationError: "
        "unexpected indent (line 2 of the block): Python 3."
    )
    assert "command as meant" not in j.summary  # nothing of it ran: no builds' reading to add
    [shown] = matrix_json.build(views_of(results))["snippets"][broken.id]["judgements"]
    assert (shown["judgement"], shown["depth"], shown["decided_by"]) == ("doc-drift", "python", "python")
    assert shown["defects"][0]["code"] == "python-syntax"


def test_the_block_that_parses_once_dedented_is_judged_by_the_builds(published):
    _root, results = published
    _broken, fine = _by_model(results)
    j = Judge(results).of_source(fine, fine.sources[0])
    assert (j.kind, j.decided_by, j.defects) == ("unknown", "builds", [])  # no build checked it


def test_the_warning_and_the_pr_row_say_python(published):
    root, results = published
    broken, _fine = _by_model(results)
    commands = views_of(results)
    annotation = ann.annotate_tree(commands, root)
    [patch] = annotation.patches
    [insert] = patch.inserts
    assert insert.snippet_id == broken.id  # the other block gets no warning
    assert "Does not run as written: Python stops reading the block on line 7" in patch.after
    assert "Read by driftmatrix with Python's own parser, as a reader pastes it." in patch.after
    body = pr_body.body(commands, annotation, None)
    assert "| Python's parser | stops reading the block on line 7 | `IndentationError: unexpected indent" in body
