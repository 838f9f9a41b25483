"""Issue 32, items 7 and 8, on a real page and two real runs: the 18 commands of vLLM 0.33.0's
`docs/benchmarking/cli.md` (read as written for vLLM 0.32.0 and newer, so both checked builds
count), with the outcomes two parse-tier runs recorded on the same two builds
(tests/fixtures/stable-text). The one failing command's message quotes an address that differs
between the runs (`<function loads at 0x7f6060678540>`); its warning and the PR body are byte for
byte the same for both runs (a second day's run with unchanged outcomes changes no byte of the
PR), and the body lists the builds it names and leaves out what it has nothing for."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from driftmatrix.extractor.catalog import extract
from driftmatrix.extractor.written_for import override
from driftmatrix.publisher import annotate as ann
from driftmatrix.publisher import pr_body, public
from driftmatrix.publisher.command_view import views_of
from driftmatrix.publisher.results import load
from driftmatrix.runner.builds.resolve import stable_pin
from driftmatrix.runner.builds.targets import SEED_CPU

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "stable-text"
PAGE = "docs/benchmarking/cli.md"
FAILING = "s-e51a479f23e4"  # --mm-processor-kwargs max_pixels=1003520, at line 1317
SITE = "https://example.test/dm"


@pytest.fixture(scope="module")
def tree_and_snippets(corpus, tmp_path_factory):
    """The real page in a docs tree of its own (vLLM 0.33.0's mkdocs.yaml beside it), extracted."""
    root = tmp_path_factory.mktemp("stable-text")
    tree = root / "vllm-0.33.0"
    (tree / PAGE).parent.mkdir(parents=True)
    shutil.copy(corpus / "vllm-docs" / "0.33.0" / "mkdocs.yaml", tree / "mkdocs.yaml")
    shutil.copy(corpus / "vllm-docs" / "0.33.0" / PAGE, tree / PAGE)
    catalog, _ = extract(stable=stable_pin(SEED_CPU), sources=[tree], written_for=override(">=0.32.0"))
    catalog.write(root / "snippets.json")
    assert FAILING in {s.id for s in catalog.snippets}
    return tree, root / "snippets.json"


def _day(tree_and_snippets, run: str):
    tree, snippets = tree_and_snippets
    results = load(snippets, [RUNS / f"outcomes-{run}.jsonl"])
    annotation = ann.annotate(results, tree)
    return (
        results,
        annotation,
        pr_body.fit(pr_body.body(views_of(public.public_results(results)), annotation, SITE), SITE),
    )


def test_two_runs_of_the_same_failure_give_the_same_bytes(tree_and_snippets):
    one, two = _day(tree_and_snippets, "run1"), _day(tree_and_snippets, "run2")
    raw = [{c.name: r.cell(FAILING, c).evidence.exception.message for c in r.columns} for r, _, _ in (one, two)]
    assert raw[0] != raw[1] and all(re.search(r"at 0x[0-9a-f]{12}>", m) for r in raw for m in r.values())
    (p1,), (p2,) = one[1].patches, two[1].patches
    assert p1.after == p2.after and one[1].diff() == two[1].diff()  # the page `annotate` writes
    assert one[2] == two[2]  # the PR body
    warning = p1.inserts[0].admonition
    # what made it differ is gone; the option's value, the raising file:line and the versions stay
    assert "<function loads at 0x…>" in warning and not re.search(r"0x[0-9a-f]{6,}", one[2])
    assert "Value max_pixels=1003520 cannot be converted" in warning and "argparse_utils.py:" in one[2]
    assert "vLLM 0.32.0" in warning and "vLLM 0.34.0" in warning


def test_the_body_lists_the_builds_it_names(tree_and_snippets):
    results, _, text = _day(tree_and_snippets, "run1")
    head = text.split("\n")
    assert head[0] == "driftmatrix ran the commands these pages show against these vLLM builds:"
    listed = head[2 : 2 + len(results.columns)]
    assert listed == [f"- {c.label}" + (f", commit `{c.commit}`" if c.commit else "") for c in results.columns]
    assert {"- stable (vLLM 0.34.0, CUDA build), commit `62d4bc3c7`", "- cpu (vLLM 0.32.0, CPU build)"} == set(listed)
    assert "| Command | Page |" in text and f"`{PAGE}:1317`" in text


def test_an_empty_section_is_left_out(tree_and_snippets):
    """The same page with no warning to add: no table with a header and nothing under it, no
    "Commands fixed" heading, no regressions heading."""
    tree, snippets = tree_and_snippets
    results = load(snippets, [RUNS / "outcomes-run1.jsonl"])
    empty = ann.Annotation(tree)
    text = pr_body.body(views_of(results), empty, SITE)
    assert "| Command |" not in text and "|---|" not in text and "##" not in text
    assert "these vLLM builds:\n\n- " in text


def test_public_text_made_public_again_is_unchanged(tree_and_snippets):
    """`pr` makes the records public, and `annotate` (which it calls) does too: the second pass
    changes nothing (the runs' `private /tmp` sandbox note once became `……/tmp`)."""
    _, snippets = tree_and_snippets
    once = public.public_results(load(snippets, [RUNS / "outcomes-run1.jsonl"]))
    assert any("…/tmp" in str(o.host) for o in once.cells.values())
    assert public.public_results(once).cells == once.cells
