"""Files a command names in vLLM's tree, checked against the release its page is written for (issue 32):
real pages of the corpora, real release trees (the vllm 0.20.1 and 0.32.0 sdists, cached)."""

from __future__ import annotations

import shutil

import pytest

from driftmatrix.extractor.catalog import extract
from driftmatrix.extractor.release_files import CODE, ReleaseTrees, named_paths
from driftmatrix.extractor.snippet_record import BREAKING_LINTS
from driftmatrix.extractor.written_for import override
from driftmatrix.runner.builds import source_trees
from driftmatrix.runner.builds.resolve import stable_pin
from driftmatrix.runner.builds.targets import SEED_CPU
from driftmatrix.runner.settings import cache_dir

CLI_PAGE = "docs/benchmarking/cli.md"
MOVED = "examples/template_vlm2vec_phi3v.jinja"
NOW_AT = "examples/pooling/embed/template/vlm2vec_phi3v.jinja"


@pytest.fixture(scope="module")
def trees() -> ReleaseTrees:
    """The releases looked at besides a page's own: the shipped CPU targets' pins."""
    return ReleaseTrees(cache_dir() / "sdists", ["0.20.1", "0.32.0"])


def _lints(catalog):
    return [(s, lint) for s in catalog.snippets for lint in s.lints if lint.code == CODE]


def test_a_chat_template_the_release_does_not_have(corpus, trees):
    """vLLM 0.20.1's benchmarking page serves VLM2Vec with `--chat-template examples/template_vlm2vec_phi3v.jinja`;
    0.20.1's tree has it at examples/pooling/embed/template/vlm2vec_phi3v.jinja. Before: the runner found no
    such file in the build's sdist and SKIPped (`file-from-source-tree`: unknown). Now the page has the
    breaking lint, with its evidence; every other file the 0.20.1 docs' commands name is there: no lint."""
    catalog, _ = extract(stable=stable_pin(SEED_CPU), sources=[corpus / "vllm-docs" / "0.20.1"], release_trees=trees)
    ((snippet, lint),) = _lints(catalog)
    assert MOVED in named_paths(snippet) and CODE in BREAKING_LINTS
    assert (lint.file, lint.line, lint.corpus, lint.version) == (CLI_PAGE, 1174, "vllm-docs", "0.20.1")
    page = (corpus / "vllm-docs" / "0.20.1" / CLI_PAGE).read_text().splitlines()
    assert MOVED in page[lint.line - 1]  # the line the path is on
    assert lint.message.startswith(f"`{MOVED}` is not in vLLM 0.20.1's tree: the command cannot read it as written")
    assert f"it is at `{NOW_AT}` in vLLM 0.20.1 and 0.32.0" in lint.message
    # before: the runner's own substitution finds nothing in the build's tree (it SKIPped the command)
    assert source_trees.files_named(snippet.argv, trees.tree("0.20.1")) == {}
    checked = [p for s in catalog.snippets for p in named_paths(s)]
    assert len(checked) >= 6  # five other chat templates are there: no lint for them
    assert not [d for d in catalog.diagnostics if d.code == "release-tree-unavailable"]


def test_a_range_is_drift_only_when_no_release_looked_at_has_the_file(corpus, trees):
    """The 0.33.0 docs read as written for `>=0.20.0` (a range: 0.20.1 and 0.32.0 looked at): scoring.md's
    `examples/pooling/score/template/zerank2.jinja` is not in 0.20.1 but is in 0.32.0: nothing said.
    The 0.20.1 docs read as `>=0.20.0`: neither release has the old VLM2Vec path: the lint, saying so."""
    newer, _ = extract(
        stable=stable_pin(SEED_CPU),
        sources=[corpus / "vllm-docs" / "0.33.0"],
        written_for=override(">=0.20.0"),
        release_trees=trees,
    )
    zerank = [s for s in newer.snippets if "examples/pooling/score/template/zerank2.jinja" in named_paths(s)]
    assert zerank and not (trees.tree("0.20.1") / "examples/pooling/score/template/zerank2.jinja").exists()
    assert _lints(newer) == []
    older, _ = extract(
        stable=stable_pin(SEED_CPU),
        sources=[corpus / "vllm-docs" / "0.20.1"],
        written_for=override(">=0.20.0"),
        release_trees=trees,
    )
    ((_, lint),) = _lints(older)
    assert lint.message.startswith(f"`{MOVED}` is not in vLLM 0.20.1 and 0.32.0's tree (each release looked at")


def test_a_file_the_page_writes_and_an_offline_index(corpus, trees, tmp_path, monkeypatch):
    """The same real page, where it first writes the template itself (`cat > examples/…`): not the
    release's file, no lint. Offline (no release tree to be had): a diagnostic, never a lint."""
    docs = tmp_path / "0.20.1"
    (docs / "docs" / "benchmarking").mkdir(parents=True)
    (docs / "mkdocs.yaml").write_text("site_name: vLLM\n")
    text = (corpus / "vllm-docs" / "0.20.1" / CLI_PAGE).read_text()
    shutil.copy(corpus / "vllm-docs" / "0.20.1" / CLI_PAGE, docs / CLI_PAGE)
    catalog, _ = extract(stable=stable_pin(SEED_CPU), sources=[docs], release_trees=trees)
    assert len(_lints(catalog)) == 1  # the copy is the page: the lint
    writes = f"cat > {MOVED} <<'EOF'\n{{{{ messages }}}}\nEOF\n"
    (docs / CLI_PAGE).write_text(
        text.replace("# Run this in another process", writes + "# Run this in another process", 1)
    )
    catalog, _ = extract(stable=stable_pin(SEED_CPU), sources=[docs], release_trees=trees)
    assert _lints(catalog) == []
    monkeypatch.setenv("DRIFTMATRIX_INDEX_URL", "http://127.0.0.1:9/simple")
    shutil.copy(corpus / "vllm-docs" / "0.20.1" / CLI_PAGE, docs / CLI_PAGE)
    catalog, _ = extract(
        stable=stable_pin(SEED_CPU), sources=[docs], release_trees=ReleaseTrees(tmp_path / "empty-cache", ["0.32.0"])
    )
    assert _lints(catalog) == []
    (diag,) = [d for d in catalog.diagnostics if d.code == "release-tree-unavailable"]
    assert (diag.file, diag.line) == (CLI_PAGE, 1174) and "vLLM 0.20.1 could not be had" in diag.message
