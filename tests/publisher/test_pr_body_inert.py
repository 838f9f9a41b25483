"""Issue 30, item 8: the doc-fix PR body shows docs and vLLM text only as code. A docs tree (real
extractor, real `annotate`) whose page name, commands and the outcomes' messages carry a mention,
an image, links, bare URLs, HTML and fences goes through `pr_body.body` and `fit` exactly as
`driftmatrix pr` sends it; markdown-it-py (CommonMark + GFM tables, as GitHub reads it) finds no
image, no link but the site's, no HTML but the body's own `<details>`, no mention or hostile URL
outside code, and every table row with its six cells."""

from __future__ import annotations

import copy
import json

import mdcheck
import pytest

from driftmatrix.extractor.catalog import extract
from driftmatrix.extractor.written_for import override
from driftmatrix.publisher import annotate as ann
from driftmatrix.publisher import pr_body, public
from driftmatrix.publisher.command_view import views_of
from driftmatrix.publisher.results import load
from driftmatrix.runner.builds.resolve import stable_pin
from driftmatrix.runner.builds.targets import SEED_CPU
from driftmatrix.runner.outcomes.evidence_record import RaisedException
from driftmatrix.runner.outcomes.outcome_record import Evidence, Outcome, TargetRef

SITE = "https://example.test/dm"
PAGE = "docs/@vllm-project |x| ``` <img src=x onerror=alert(3)> [p](https:evil.example).md"
"""A page name is docs text too (a file name cannot hold `/`)."""
VALUE = "@vllm-project/some-team ![](https://evil.example/p.png) [fix](https://evil.example)"
OWN_HTML = ("<details><summary>Log excerpt</summary>", "</details>")
OLD, NEW = TargetRef("old", "0.19.0", "aaaaaaaaa", "vllm"), TargetRef("stable", "0.20.1", "bbbbbbbbb", "vllm")


def _docs(tmp):
    tree = tmp / "vllm-0.20.1"
    (tree / "docs").mkdir(parents=True)
    (tree / "mkdocs.yaml").write_text("site_name: docs\n")
    (tree / PAGE).write_text(
        f"# Serve {VALUE}\n\n```bash\nvllm serve Qwen/Qwen3-0.6B --dtype '{VALUE}'\n```\n\n"
        "## Later\n\n```bash\nvllm serve Qwen/Qwen3-0.6B --max-model-len 4096\n```\n",
        encoding="utf-8",
    )
    return tree


def _fail(sid, target, message, log=None):
    exc = {
        "type": f"ArgumentError{VALUE}",
        "message": message,
        "location": {"file": "vllm/engine/`arg_utils`@vllm-project.py", "line": 12, "function": "parse"},
    }
    return Outcome(
        sid,
        target,
        "parse",
        "parse",
        "FAIL",
        reason=f"ArgumentError: {message}",
        evidence=Evidence(exception=RaisedException.from_json(exc), log_excerpt=log),
        started="2026-12-02T16:00:00+00:00",
    )


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pr-inert")
    tree = _docs(tmp)
    catalog, unusable = extract(stable=stable_pin(SEED_CPU), sources=[tree], written_for=override(">=0.19"))
    assert not unusable and len(catalog.snippets) == 2
    catalog.write(tmp / "snippets.json")
    drift, regression = sorted(catalog.snippets, key=lambda s: s.sources[0].line)
    invalid = (
        f"argument --dtype: invalid choice: '{VALUE}' (choose from 'auto', 'half') "
        f"{mdcheck.HOSTILE}\n{mdcheck.MULTILINE}"
    )
    log = "".join(f"{mdcheck.MULTILINE}\n{mdcheck.HOSTILE}\n" for _ in range(400))  # > GitHub's 65,536
    outcomes = [
        _fail(drift.id, OLD, invalid),
        _fail(drift.id, NEW, invalid),
        Outcome(regression.id, OLD, "parse", "parse", "PASS", started="2026-12-02T16:00:00+00:00"),
        _fail(regression.id, NEW, f"broken {mdcheck.HOSTILE}\n{mdcheck.MULTILINE}", log),
    ]
    (tmp / "outcomes.jsonl").write_text("".join(json.dumps(o.to_dict()) + "\n" for o in outcomes), encoding="utf-8")
    results = public.public_results(load(tmp / "snippets.json", [tmp / "outcomes.jsonl"]))
    annotation = ann.annotate(results, tree)
    assert [len(p.inserts) for p in annotation.patches] == [1], annotation.problems
    fix = ann.FixApplied(
        drift.id,
        4,
        f"vllm serve x --dtype '{VALUE}'\n{mdcheck.MULTILINE}",
        mdcheck.HOSTILE,
        [mdcheck.HOSTILE, mdcheck.MULTILINE],
        [("stable vLLM 0.20.1", "0.20.1", "accepted by the argument parser (not started)")],
    )
    annotation.patches[0].fixes.append(fix)
    return results, annotation, drift, regression


def test_the_body_shows_docs_and_vllm_text_only_as_code(inputs):
    results, annotation, drift, regression = inputs
    text = pr_body.body(views_of(results), annotation, SITE)
    assert len(text) > pr_body.BODY_BUDGET  # the log excerpt: the body is cut below
    r = mdcheck.assert_inert(text, allowed_links=(f"{SITE}/snippets/",), allowed_html=OWN_HTML)
    assert any(f"invalid choice: '{VALUE}'" in c for c in r.code)  # shown, as typed
    assert any("<img src=x onerror=alert(2)>" in c for c in r.code)  # a line of the log excerpt, in its block
    assert any(c.startswith("vllm serve x --dtype") and "```" in c for c in r.code)  # a fix's "before", whole
    assert f"{SITE}/snippets/{drift.id}.html" in r.links and f"{SITE}/snippets/{regression.id}.html" in r.links


def test_a_cut_body_stays_inert(inputs):
    results, annotation, _, _ = inputs
    text = pr_body.fit(pr_body.body(views_of(results), annotation, SITE), SITE)
    assert len(text) <= pr_body.BODY_BUDGET and "cut at GitHub's 65,536-character limit" in text
    r = mdcheck.assert_inert(text, allowed_links=(f"{SITE}/snippets/",), allowed_html=OWN_HTML)
    assert r.html.count("</details>\n") == 1  # the cut inside the log excerpt closed its fence, then <details>
    assert "every command's evidence is on the site" in r.prose[-1]


def test_every_table_row_keeps_its_cells(inputs):
    results, annotation, drift, _ = inputs
    text = pr_body.body(views_of(results), annotation, SITE)
    rows = [ln for ln in text.splitlines() if ln.startswith("| [")]
    assert len(rows) == 2  # the command fails on both builds
    for row in rows:
        cells = mdcheck.table_cells("| a | b | c | d | e | f |\n|---|---|---|---|---|---|\n" + row)
        assert cells == [6, 6], row
    assert PAGE.removeprefix("docs/") in text.replace("\\|", "|")  # the page, in its cell


@pytest.mark.parametrize("message", [mdcheck.HOSTILE, mdcheck.MULTILINE, "`" * 40, "xx|||||", "@a " * 30])
def test_one_hostile_cause_in_a_row(inputs, message):
    """Each hostile message alone, as the one cause of a PR row (`causes.cause`)."""
    results, annotation, drift, _ = copy.deepcopy(inputs)
    for o in results.cells.values():
        if o.snippet_id == drift.id:
            o.evidence.exception.message = message
    r = mdcheck.assert_inert(
        pr_body.body(views_of(results), annotation, SITE), allowed_links=(f"{SITE}/snippets/",), allowed_html=OWN_HTML
    )
    assert any(mdcheck.collapsed(message)[:150] in c for c in r.code)
