"""Merging outcomes from several files (targets, shards, reruns) into one table."""

from __future__ import annotations

import json

from driftmatrix.publisher.results import load


def test_split_files_merge_to_the_same_table(site_inputs, tmp_path):
    """The parse run split by target into two files, plus a torn line and a record for a
    snippet that is not in the catalog: the same cells as the single file, and both
    problems named."""
    lines = [ln for ln in site_inputs["parse"].read_text().splitlines() if ln.strip()]
    by_target: dict[str, list[str]] = {}
    for ln in lines:
        by_target.setdefault(json.loads(ln)["target"]["name"], []).append(ln)
    files = []
    for name, group in by_target.items():
        path = tmp_path / f"{name}.jsonl"
        path.write_text("\n".join(group) + "\n")
        files.append(path)
    stray = json.loads(lines[0])
    stray["snippet_id"] = "s-000000000000"
    files[0].write_text(files[0].read_text() + json.dumps(stray) + "\n" + lines[0][: len(lines[0]) // 2])
    whole = load(site_inputs["snippets"], [site_inputs["parse"]])
    split = load(site_inputs["snippets"], files)
    assert {k: o.verdict for k, o in split.cells.items()} == {k: o.verdict for k, o in whole.cells.items()}
    assert [c.key for c in split.columns] == [c.key for c in whole.columns] and len(whole.columns) == 2
    assert whole.columns[0].version < whole.columns[1].version  # oldest first
    assert any("unreadable outcome line" in p for p in split.problems)
    assert any("s-000000000000" in p for p in split.problems)


def test_the_deeper_verdict_wins_a_cell(site_inputs):
    """A snippet run at parse and later at config: the cell shows the config-tier verdict,
    unless that run only SKIPped (no model here): then the parse verdict stays."""
    merged = load(site_inputs["snippets"], [site_inputs["parse"], site_inputs["config"]])
    config = [json.loads(ln) for ln in site_inputs["config"].read_text().splitlines() if ln.strip()]
    assert config
    for rec in config:
        shown = merged.cells[
            (rec["snippet_id"], None, next(c.key for c in merged.columns if c.name == rec["target"]["name"]))
        ]
        if rec["verdict"] in ("PASS", "WARN", "FAIL"):
            assert shown.tier == "config" and shown.verdict == rec["verdict"]
        elif rec["stage"] == "config":  # the parser accepted it: its verdict, config not checked
            assert (shown.verdict, shown.stage) == ("PASS", "parse") and shown.reason.startswith("config not checked: ")
        else:
            assert shown.tier == "parse" or shown.verdict == rec["verdict"]


def test_tier_config_alone_publishes_what_the_two_passes_do(stable_plus, site_inputs, tmp_path):
    """Issue 32: a command whose config tier SKIPs (a placeholder, no model config offline) was published
    `unknown` by `run --tier config` alone, though its arguments were accepted, and `ok` by the two-pass
    pipeline (parse, then config). One rule (runner/counts.as_counted): the parser's PASS with "config not
    checked: <why>". The recorded config run of the real 0.33.0 speculative-decoding pages, alone and
    after the recorded parse run of the same commands: the same judgement for every command."""
    from driftmatrix.publisher.judgement import Judge

    config = [json.loads(ln) for ln in site_inputs["config"].read_text().splitlines() if ln.strip()]
    ids = {r["snippet_id"] for r in config}
    skipped = {r["snippet_id"] for r in config if (r["verdict"], r["stage"]) == ("SKIP", "config")}
    assert len(skipped) >= 5  # recorded SKIPs at config: before, each was published `unknown`
    parse = tmp_path / "parse.jsonl"
    parse.write_text(
        "".join(
            ln + "\n"
            for ln in site_inputs["parse"].read_text().splitlines()
            if ln.strip() and json.loads(ln)["snippet_id"] in ids
        )
    )
    alone = load(stable_plus, [site_inputs["config"]])
    two_pass = load(stable_plus, [parse, site_inputs["config"]])
    kinds = [{s.id: Judge(r).of(s).kind for s in r.snippets if s.id in ids} for r in (alone, two_pass)]
    assert kinds[0] == kinds[1]
    # before: `unknown` on a build where config SKIPped; now judged by the parser's verdict (a FAIL on
    # the other build still makes doc-drift)
    assert "unknown" not in {kinds[0][sid] for sid in skipped} and "ok" in {kinds[0][sid] for sid in skipped}
    cells = {(r["snippet_id"], r["target"]["name"]) for r in config if (r["verdict"], r["stage"]) == ("SKIP", "config")}
    for column in alone.columns:
        for sid in {sid for sid, name in cells if name == column.name}:
            o = alone.cell(sid, column)
            assert (o.verdict, o.stage) == ("PASS", "parse") and o.reason.startswith("config not checked: ")
            assert "must be filled in" in o.reason or "not available here" in o.reason, o.reason


def test_unreadable_snippets_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "snippets.json"
    bad.write_text("{not json")
    try:
        load(bad, [])
    except ValueError as err:
        assert "not a readable snippets.json" in str(err)
    else:
        raise AssertionError("expected ValueError")
