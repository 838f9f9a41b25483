import json

import pytest

from driftmatrix.extractor.catalog import extract
from driftmatrix.extractor.snippet_record import SCHEMA, SNIPPET_KINDS, Catalog, Snippet
from driftmatrix.runner.builds.resolve import stable_pin
from driftmatrix.runner.builds.targets import SEED_CPU


def test_catalog_round_trip_and_schema(tmp_path, corpus):
    catalog, _ = extract(stable=stable_pin(SEED_CPU), sources=[corpus / "recipes" / "8959cf6"])
    path = tmp_path / "snippets.json"
    catalog.write(path)
    data = json.loads(path.read_text())
    assert data["schema"] == SCHEMA == 2
    for snippet in data["snippets"]:
        assert {
            "id",
            "kind",
            "argv",
            "env",
            "model",
            "speculative_config",
            "placeholders",
            "runnable",
            "reason",
            "lints",
            "sources",
        } <= set(snippet)
        for source in snippet["sources"]:
            assert set(source) == {
                "corpus",
                "version",
                "file",
                "line",
                "anchor",
                "url",
                "text",
                "context",
                "written_for",
                "title",
                "heading",
                "plugin",
            }
            assert set(source["written_for"]) == {"spec", "origin", "basis"} and source["written_for"]["origin"]
    again = Catalog.read(path)
    assert [s.to_dict() for s in again.snippets] == [s.to_dict() for s in catalog.snippets]
    data["schema"] = 3
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="schema 3, this driftmatrix reads 1 and 2"):
        Catalog.read(path)
    # a schema-1 file (before `written_for`) is still read: its pages' versions are unrecorded
    data["schema"] = 1
    for snippet in data["snippets"]:
        for source in snippet["sources"]:
            del source["written_for"]
    path.write_text(json.dumps(data))
    old = Catalog.read(path)
    assert len(old.snippets) == len(catalog.snippets)
    assert all(src.written_for is None for s in old.snippets for src in s.sources)
    # ids name files on the site: a path-like id makes the file unusable, not a file outside the site
    data["snippets"][0]["id"] = "../../etc/x"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="snippet ids must be"):
        Catalog.read(path)


def test_identical_invocations_are_merged(corpus):
    catalog, _ = extract(
        stable=stable_pin(SEED_CPU), sources=[corpus / "vllm-docs" / "0.20.1", corpus / "vllm-docs" / "0.33.0"]
    )
    ids = [s.id for s in catalog.snippets]
    assert len(ids) == len(set(ids))
    multi = [s for s in catalog.snippets if len(s.sources) > 1]
    assert multi and all(len({(x.version, x.file, x.line) for x in s.sources}) == len(s.sources) for s in multi)


def test_every_kind_written_is_a_snippet_kind_and_an_unknown_one_is_read(corpus):
    """`Snippet.kind` is a SnippetKind; a later extractor's kind is read as it is (never an error), as
    before the Literal: readers compare kinds by value."""
    catalog, _ = extract(
        stable=stable_pin(SEED_CPU), sources=[corpus / "vllm-docs" / "0.20.1", corpus / "recipes" / "8959cf6"]
    )
    assert {s.kind for s in catalog.snippets} <= set(SNIPPET_KINDS)
    data = catalog.snippets[0].to_dict() | {"kind": "notebook"}
    assert Snippet.from_dict(data).kind == "notebook" and Snippet.from_dict(data).to_dict() == data
