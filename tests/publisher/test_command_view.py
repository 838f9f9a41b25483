"""Each command's view is computed once and every output says what it says (publisher/command_view.py):
the site fixture's real records, read as written for vLLM 0.20.1 and newer (judgeable), rendered into
matrix.json, matrix-data.js, the pages, annotate's patch and the PR body."""

from __future__ import annotations

import pytest

from driftmatrix.publisher import annotate as ann
from driftmatrix.publisher import judgement, matrix_data, matrix_json, pages, pr_body, public
from driftmatrix.publisher.command_view import views_of
from driftmatrix.publisher.results import load
from driftmatrix.runner.outcomes import vocabulary


@pytest.fixture(scope="module")
def commands(stable_plus, site_inputs):
    return views_of(public.public_results(load(stable_plus, [site_inputs["parse"], site_inputs["config"]])))


def test_one_view_per_command_in_the_snippets_order(commands):
    assert [v.id for v in commands] == [s.id for s in commands.results.snippets]
    kinds = {v.worst.kind for v in commands}
    assert {"doc-drift", "ok"} <= kinds  # the fixture judges both ways: the test below compares something
    for v in commands:
        assert [v.at(src) for src in v.snippet.sources] == v.at_sources
        assert v.worst.kind == min((j.kind for j in v.judgements), key=vocabulary.JUDGEMENTS.index)
        assert set(v.ranges) == set(v.notes) == set(v.outcomes)


def test_matrix_json_and_matrix_data_say_what_the_view_says(commands):
    doc = matrix_json.build(commands)
    rows = {row[0]: row for g in matrix_data.build(commands)["groups"] for row in g[3]}
    for v in commands:
        entry = doc["snippets"][v.id]
        assert (entry["judgement"], entry["command"], entry["flags_valid"]) == (v.worst.kind, v.command, v.flags)
        assert [src["judgement"] for src in entry["sources"]] == [j.kind for j in v.at_sources]
        assert (entry["first_passing"], entry["last_passing"]) == (v.seen.first_passing, v.seen.last_passing)
        for key, cell in entry["support"].items():
            found = v.ranges[key]
            assert cell["notes"] == v.notes[key] and cell["range"] == (found.as_json() if found else None)
        row = rows[v.id]
        assert vocabulary.JUDGEMENTS[row[5]] == v.at_sources[0].kind


def test_the_outputs_judge_nothing_themselves(commands, corpus, monkeypatch):
    """Every judgement is made while the views are built: rendering the pages, matrix.json,
    matrix-data.js, annotate's warnings and the PR body judges no command again."""
    made = []
    real = judgement.judge
    monkeypatch.setattr(judgement, "judge", lambda *a, **k: made.append(a[1].id) or real(*a, **k))
    again = views_of(commands.results)
    assert made  # building the views judges
    made.clear()
    doc = matrix_json.build(again)
    pages.render(again, doc, [], had_history=False)
    annotation = ann.annotate_tree(again, corpus / "vllm-docs" / "0.33.0")
    assert annotation.patches  # doc-drift on these pages: warnings were written from the views
    pr_body.body(again, annotation, "https://example.test/site")
    assert made == []


def test_the_my_version_table_holds_values_and_keys_too(commands):
    """matrix-data.js's option table (the "my version" selector): a command's values and config keys as
    the history reads them, each with the releases that take it; flags_valid counts them as well."""
    from driftmatrix.flaghistory.commands import shipped
    from driftmatrix.flaghistory.uses import uses_of

    history = shipped()
    data = matrix_data.build(commands)
    rows = {row[0]: row for g in data["groups"] for row in g[3]}
    with_values = [
        v
        for v in commands
        if v.snippet.kind != "subcommand" and any(u.kind != "option" for u in uses_of(history, v.snippet.argv or []))
    ]
    assert len(with_values) >= 5
    for v in with_values:
        names = [data["options"][i][0] for i in rows[v.id][8]]
        uses = uses_of(history, v.snippet.argv or [])
        given = frozenset(u.option for u in uses)
        # what follows an option is listed only where some release refuses it (the option's line says the rest)
        uses = [
            u
            for u in uses
            if u.kind != "argument" or any(history.accepts_use(u, r, given) is False for r in history.releases)
        ]
        assert names == [u.text() for u in uses]
        for i, use in zip(rows[v.id][8], uses):
            taken = [history.accepts_use(use, r, given) is not False for r in history.releases]
            spans = data["options"][i][1]
            assert [any(a <= k <= b for a, b in spans) for k in range(len(history.releases))] == taken
        valid = history.valid_range(uses, given)
        assert (v.flags or {}).get("first") == (valid[0] if valid else None)
