"""Issue 60 point 4: the run history stays small. Every run keeps a summary (each cell's status and
stage on the builds it checked), only the newest K keep their full matrix.json; what a later run reads
of the history (the changes since the previous run, first/last passing, the version ranges) is the same
from the summaries as from the full documents."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from driftmatrix.publisher import ranges, run_history
from driftmatrix.publisher.results import Results

STATUSES = ["PASS", "FAIL", "WARN", "SKIP", "PASS", "PASS"]


def doc(day: int, snippets: int = 40) -> dict:
    """A matrix.json of day `day`: stable 0.34.0, the day's nightly, yesterday's nightly retired; cells
    with everything a real one has besides status and stage (the bulk a summary leaves out)."""
    nightly = f"0.35.0.dev{day}+g{day:07x}"
    targets = {
        "stable": {"label": "stable", "kind": "CUDA", "name": "stable", "version": "0.34.0", "commit": None},
        f"nightly-{day}": {
            "label": "nightly",
            "kind": "CUDA",
            "name": "nightly",
            "version": nightly,
            "commit": f"{day:07x}",
        },
    }
    for t in targets.values():
        t.update(distribution="vllm", date=f"2026-11-{day:02d}")
    if day > 1:
        targets[f"nightly-{day - 1}"] = {
            "name": "nightly",
            "version": f"0.35.0.dev{day - 1}+g{day - 1:07x}",
            "commit": f"{day - 1:07x}",
            "distribution": "vllm",
            "date": f"2026-11-{day - 1:02d}",
            "retired": True,
        }
    out = {}
    for i in range(snippets):
        support = {}
        for key in targets:
            n = day if key == "stable" else int(key.split("-")[1])  # a nightly's cells are its build's, retired or not
            support[key] = {
                "status": STATUSES[(i + n + (key == "stable")) % len(STATUSES)],
                "stage": "config" if (i + n) % 3 else "probe",
                "depth": "the engine config was built " * 3,
                "notes": ["a note about this cell"] * 4,
                "evidence": f"commands/s{i}.html#{key}",
                "range": None,
            }
        out[f"s{i}"] = {"command": "vllm serve some/model --flag " * 5, "support": support, "judgement": "works"}
    return {"schema": 1, "generated": f"2026-11-{day:02d}T04:17:00Z", "targets": targets, "snippets": out}


def _keep_days(history: Path, days: range, keep_full: int) -> list[dict]:
    docs = [doc(d) for d in days]
    for d in docs:
        run_history.keep(json.dumps(d, indent=1), d, history, keep_full)
    return docs


def _current(docs: list[dict]) -> list[dict]:
    """The documents without their retired builds' cells: what a summary keeps of each run."""
    return [json.loads(json.dumps(run_history.summary(d))) for d in docs]


@pytest.mark.parametrize("keep_full", [0, 1, 3])
def test_k_full_snapshots_and_a_summary_per_run(tmp_path, keep_full):
    history = tmp_path / "history"
    docs = _keep_days(history, range(1, 11), keep_full)
    full = sorted(p.name for p in history.glob("matrix-*.json"))
    assert full == [f"matrix-202611{d:02d}T041700Z.json" for d in range(11 - keep_full, 11)]
    assert len(list(history.glob("summary-*.json.gz"))) == 10
    past = run_history.load(history)
    assert not past.problems and [d["generated"] for d in past.snapshots] == [d["generated"] for d in docs]
    assert sum(not d.get("summary") for d in past.snapshots) == keep_full  # the newest K read in full
    if keep_full:
        assert past.previous == docs[-1]
    # what a later run reads is the same from the summaries as from the full documents
    now = doc(11)
    assert run_history.changes(past.previous, now) == run_history.changes(docs[-1], now)
    current = [(sid, "0.35.0", "2026-11-12", "PASS") for sid in now["snippets"]]
    assert run_history.seen(past.snapshots, current) == run_history.seen(_current(docs), current)
    assert run_history.seen(past.snapshots, current) == run_history.seen(docs, current)  # retired: current before
    empty = Results(catalog=None, columns=[], cells={})
    assert ranges.runs(past.snapshots, empty) == ranges.runs(_current(docs), empty)


def test_a_summary_is_a_few_percent_of_its_document(tmp_path):
    history = tmp_path / "history"
    (d,) = _keep_days(history, range(5, 6), keep_full=1)
    full = (history / "matrix-20261105T041700Z.json").stat().st_size
    small = (history / "summary-20261105T041700Z.json.gz").stat().st_size
    assert small * 20 < full, (small, full)
    back = json.loads(gzip.decompress((history / "summary-20261105T041700Z.json.gz").read_bytes()))
    assert set(back["targets"]) == {"stable", "nightly-5"}  # the retired build is in earlier runs' summaries
    assert back["snippets"]["s0"]["support"]["stable"] == {
        k: d["snippets"]["s0"]["support"]["stable"][k] for k in ("status", "stage")
    }


def test_an_old_history_is_summarised_before_its_documents_go(tmp_path):
    """A history written before summaries (full documents only): pruning writes each one's summary first;
    a document that cannot be read is left where it is, and named by load."""
    history = tmp_path / "history"
    history.mkdir()
    docs = [doc(d) for d in range(1, 6)]
    for d in docs:
        (history / f"matrix-202611{d['generated'][8:10]}T041700Z.json").write_text(json.dumps(d))
    (history / "matrix-20261031T041700Z.json").write_text("{not json")
    removed = run_history.prune(history, keep_full=2)
    assert sorted(p.name for p in removed) == [f"matrix-202611{d:02d}T041700Z.json" for d in (1, 2, 3)]
    assert (history / "matrix-20261031T041700Z.json").exists()
    past = run_history.load(history)
    assert [d["generated"] for d in past.snapshots] == [d["generated"] for d in docs]
    assert len(past.problems) == 1 and "matrix-20261031T041700Z.json" in past.problems[0]
