"""Judging a plugin's site with no build of its versions checked (issue 45): the Intel Gaudi plugin's
pages (the shared corpus's thirdparty/vllm-gaudi-…) are written for vLLM 0.26 (its README: its newest
release is built on vLLM 0.26.0), a release no target here runs. The option history decides what it
can: an option removed before 0.26 is doc-drift on the plugin's site as anywhere; what a plugin may
give — its values, an option it adds (vllm-omni adds `--omni`) — is not judged by stock vLLM's history."""

from __future__ import annotations

import shutil
from pathlib import Path

from driftmatrix.extractor.catalog import extract
from driftmatrix.publisher.judgement import Judge
from driftmatrix.publisher.results import load


def _judged(site: Path, tmp_path: Path):
    catalog, _ = extract([site], stable="0.34.0")
    catalog.write(tmp_path / "snippets.json")
    (tmp_path / "none.jsonl").write_text("")
    results = load(tmp_path / "snippets.json", [tmp_path / "none.jsonl"])
    judge = Judge(results)
    return {(src.file, src.line): judge.of_source(s, src) for s in results.snippets for src in s.sources}


def _gaudi(corpus: Path) -> Path:
    return next((corpus / "thirdparty").glob("vllm-gaudi-*"))


def test_a_removed_option_on_the_plugins_site_is_doc_drift_by_the_history(corpus, tmp_path):
    site = tmp_path / "gaudi"  # the plugin's site with one more page, as a doc writer's change would add it
    (site / "docs").mkdir(parents=True)
    for name in ("mkdocs.yaml", "README.md", "LICENSE"):
        shutil.copy(_gaudi(corpus) / name, site / name)
    (site / "docs" / "swap.md").write_text("# Swap\n\n```bash\nvllm serve org/m --swap-space 4\n```\n")
    j = _judged(site, tmp_path)[("docs/swap.md", 4)]
    assert (j.kind, j.decided_by, j.history_release) == ("doc-drift", "history", "0.18.0"), j.summary
    assert j.written_for.spec == "==0.26.*"


def test_what_a_plugin_may_give_is_not_judged_by_stock_vllms_history(corpus, tmp_path):
    judged = _judged(_gaudi(corpus), tmp_path / "g")
    # `--quantization inc --kv-cache-dtype fp8_inc`: the plugin's values
    assert judged[("docs/configuration/quantization/inc.md", 41)].kind == "unknown"
    # `--weights-load-device`: no stock release has it; the plugin's page may be right (a plugin can add options)
    assert judged[("docs/configuration/warm-up/managing_warm-up.md", 49)].kind == "unknown"


def test_a_value_a_plugin_may_register_is_left_out_of_the_historys_verdict(corpus):
    """A parser the history has removed (`--tool-call-parser minimax`), given on the plugin's page:
    the plugin may register it, so the history does not call the page wrong; on a page of no plugin it does."""
    from driftmatrix.extractor.written_for import specifier
    from driftmatrix.flaghistory.commands import shipped
    from driftmatrix.publisher import option_verdict

    catalog, _ = extract([_gaudi(corpus)], stable="0.34.0")
    [s] = [
        x for x in catalog.snippets if any(src.file == "docs/configuration/quantization/inc.md" for src in x.sources)
    ]
    history = shipped()
    removed = history.values["--tool-call-parser"]["values"]["minimax"]["removed"]
    s.argv = [*s.argv, "--tool-call-parser", "minimax"]
    spec = specifier(f">={removed}")
    assert option_verdict.verdict(history, s, spec, option_verdict.lower_bound(spec), []) is None
    for src in s.sources:
        src.plugin = ""
    said = option_verdict.verdict(history, s, spec, option_verdict.lower_bound(spec), [])
    assert said is not None and said.kind == "doc-drift" and said.options == ["--tool-call-parser minimax"]
