"""Judging a plugin's site with no build of its versions checked (issue 45): the Intel Gaudi plugin's
pages (the shared corpus's thirdparty/vllm-gaudi-…) are written for vLLM 0.26 (its README: its newest
release is built on vLLM 0.26.0), a release no target here runs. The option history decides what it
can: an option no vLLM release ever had is doc-drift; the plugin's own values are not judged."""

from __future__ import annotations

from pathlib import Path

from extractor.catalog import extract
from publisher.judgement import Judge
from publisher.results import load


def _judged(corpus: Path, tmp_path: Path):
    catalog, _ = extract([next((corpus / "thirdparty").glob("vllm-gaudi-*"))], stable="0.34.0")
    catalog.write(tmp_path / "snippets.json")
    (tmp_path / "none.jsonl").write_text("")
    results = load(tmp_path / "snippets.json", [tmp_path / "none.jsonl"])
    judge = Judge(results)
    return {(src.file, src.line): judge.of_source(s, src) for s in results.snippets for src in s.sources}


def test_an_option_no_release_has_is_doc_drift_by_the_history(corpus, tmp_path):
    j = _judged(corpus, tmp_path)[("docs/configuration/warm-up/managing_warm-up.md", 49)]
    assert (j.kind, j.decided_by, j.history_release) == ("doc-drift", "history", ""), j.summary
    assert j.written_for.spec == "==0.26.*"
    assert "--weights-load-device (no vLLM release has it)" in j.summary
    assert "is not an option of any vLLM release" in j.option_notes[0]


def test_the_plugins_own_values_are_not_judged(corpus, tmp_path):
    j = _judged(corpus, tmp_path)[("docs/configuration/quantization/inc.md", 41)]
    assert j.kind == "unknown", j.summary  # `--quantization inc --kv-cache-dtype fp8_inc`: the plugin's


def test_a_value_a_plugin_may_register_is_left_out_of_the_historys_verdict(corpus):
    """A parser the history has removed (`--tool-call-parser minimax`), given on the plugin's page:
    the plugin may register it, so the history does not call the page wrong; on a page of no plugin it does."""
    from extractor.written_for import specifier
    from flaghistory.commands import shipped
    from publisher import option_verdict

    catalog, _ = extract([next((corpus / "thirdparty").glob("vllm-gaudi-*"))], stable="0.34.0")
    [s] = [x for x in catalog.snippets if any(src.file == "docs/configuration/quantization/inc.md" for src in x.sources)]
    history = shipped()
    removed = history.values["--tool-call-parser"]["values"]["minimax"]["removed"]
    s.argv = [*s.argv, "--tool-call-parser", "minimax"]
    spec = specifier(f">={removed}")
    assert option_verdict.verdict(history, s, spec, option_verdict.lower_bound(spec), []) is None
    for src in s.sources:
        src.plugin = ""
    said = option_verdict.verdict(history, s, spec, option_verdict.lower_bound(spec), [])
    assert said is not None and said.kind == "doc-drift" and said.options == ["--tool-call-parser minimax"]
