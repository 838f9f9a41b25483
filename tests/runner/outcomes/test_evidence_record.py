"""The evidence records (runner/outcomes/evidence_record.py) read and write outcomes.jsonl byte for
byte: every recorded outcome under tests/fixtures/ comes back as it was written, and what the tiers
build has the keys the writers wrote before these records (a null where they wrote one, nothing where
they left a key out)."""

from __future__ import annotations

import gzip
import json
from dataclasses import MISSING, asdict, fields
from pathlib import Path

import pytest

from driftmatrix.runner.diagnosis import classify, logscan
from driftmatrix.runner.outcomes import store
from driftmatrix.runner.outcomes.evidence_record import (
    CodeLocation,
    LoggedWarning,
    PerfRun,
    ProbeResult,
    RaisedException,
    ServerRun,
    TwinNote,
)
from driftmatrix.runner.outcomes.outcome_record import Evidence, Outcome, TargetRef

FIXTURES = Path(__file__).parents[2] / "fixtures"
RECORDED = sorted(p for p in FIXTURES.rglob("*.jsonl*") if p.suffix in (".jsonl", ".gz"))


def _lines(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return [line.rstrip("\n") for line in fh if line.strip()]


def _line(o: Outcome) -> str:
    """As Store.append writes it."""
    return json.dumps(o.to_dict(), ensure_ascii=False, default=str)


def _default(f):
    return f.default_factory() if f.default_factory is not MISSING else f.default


def _as_read_today(data: dict) -> dict:
    """The record as Outcome.from_dict has always read it: an evidence field that a record of an earlier
    version lacks (`twins`, `env_dropped`, `placeholders`) is there with its default, and the target is
    the TargetRef it reads as (its fields in today's order, the later ones with their defaults)."""
    ev, names = data["evidence"], [f.name for f in fields(Evidence)]
    assert [k for k in ev if k in names] == [k for k in names if k in ev]  # only missing fields are added
    return {
        **data,
        "target": asdict(TargetRef(**data["target"])),
        "evidence": {f.name: ev[f.name] if f.name in ev else _default(f) for f in fields(Evidence)},
    }


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_recorded_outcome_is_written_back_as_it_was_read(path):
    lines = _lines(path)
    assert lines
    for line in lines:
        data = json.loads(line)
        if "record" in data:  # a target's diagnostic, not an outcome (store.read_records)
            continue
        assert json.dumps(data, ensure_ascii=False) == line  # the fixture is in the store's own format
        assert _line(Outcome.from_dict(data)) == json.dumps(_as_read_today(data), ensure_ascii=False)


def test_the_fixtures_hold_every_part_of_the_evidence():
    """So the round trip above covers each record, and both shapes of those written two ways."""
    seen: dict[str, set] = {}
    for path in RECORDED:
        for line in _lines(path):
            ev = json.loads(line).get("evidence") or {}
            for name in ("exception", "signature", "perf", "server"):
                if ev.get(name):
                    seen.setdefault(name, set()).add(tuple(ev[name]))
            for name in ("warnings", "probes", "twins"):
                for item in ev.get(name) or []:
                    seen.setdefault(name, set()).add(tuple(item))
    assert {("type", "message", "location", "traceback"), ("type", "message", "location", "final")} <= seen["exception"]
    assert {
        ("file", "line", "message", "process", "feature"),
        ("level", "logger", "file", "line", "message", "feature"),
    } <= seen["warnings"]
    assert any("resolved_architecture" in keys for keys in seen["twins"]) and len(seen["twins"]) >= 2
    assert any("sandbox" in keys for keys in seen["server"]) and any(
        "gpu_mib_before" in keys for keys in seen["server"]
    )
    assert seen["perf"] and seen["probes"] and seen["signature"]


def test_what_the_store_writes_it_reads_back_unchanged(tmp_path):
    """An outcome built as the tiers build it, through outcomes.jsonl and back."""
    o = Outcome("s-1", TargetRef("stable", "0.20.1"), "start", "start", "FAIL", reason="ValueError: bad")
    o.evidence.exception = RaisedException(
        "ValueError", "bad", CodeLocation("vllm/config/model.py", 7, "f"), final=None
    ).keep_none("final")
    o.evidence.server = ServerRun.stopped(
        ServerRun(41234, None, "exited"), {"returncode": 1, "left_processes": 0, "stop_s": 0.2}
    )
    o.evidence.twins.append(TwinNote("Qwen/Qwen3-0.6B", "qwen3", True, "Qwen3ForCausalLM", "config.json from the hub"))
    path = tmp_path / "outcomes.jsonl"
    s = store.Store(path)
    s.append(o)
    s.close()
    (back,), problems = store.read(path)
    assert not problems and _line(back) == _line(o) == path.read_text(encoding="utf-8").rstrip("\n")
    ev = json.loads(path.read_text())["evidence"]
    assert ev["exception"] == {
        "type": "ValueError",
        "message": "bad",
        "final": None,
        "location": {"file": "vllm/config/model.py", "line": 7, "function": "f"},
    }
    assert list(ev["exception"]) == ["type", "message", "location", "final"]
    assert list(ev["server"]) == ["port", "ready_s", "state", "returncode", "left_processes", "stop_s"]
    assert list(ev["twins"][0]) == ["model", "family", "served", "published_architecture", "config_source"]


def test_each_writer_keeps_its_own_keys():
    """A null where the writer wrote one, nothing where it left the key out."""
    helper = RaisedException.from_helper({"type": "ValueError", "message": "m", "location": None, "ok": False})
    assert helper.to_json() == {"type": "ValueError", "message": "m", "location": None, "traceback": None}
    probe = RaisedException("KeyError", "'x'", None)  # the probe tier's: no traceback, no final
    assert list(probe.to_json()) == ["type", "message", "location"]
    lines = [
        "WARNING 01-02 03:04:05 [vllm/config/model.py:12] speculative decoding is not supported",
        "(EngineCore_DP0 pid=7) WARNING 01-02 03:04:05 [vllm/v1/core.py:3] chunked prefill is disabled",
    ]
    written = [w.to_json() for w in classify.warning_records(logscan.warnings(lines))]
    assert [list(w) for w in written] == [["file", "line", "message", "process", "feature"]] * 2
    assert written[1]["process"] and written[0]["process"] is None  # the API server's own line: null, not left out
    twin = TwinNote("m", "qwen3", True, None, "defaults")
    twin.resolved_architecture, twin.counts = None, None
    assert list(twin.keep_none("resolved_architecture", "counts").to_json())[-2:] == ["resolved_architecture", "counts"]
    assert ServerRun.stopped(None, {"returncode": 0}).to_json() == {"returncode": 0}  # stopped before it said ready


def test_keys_this_version_does_not_know_survive_inside_a_record():
    """Inside a record (as when it was a dict) they are kept in place; at the evidence's top level and
    the outcome's they are dropped, as Outcome.from_dict always did."""
    data = {
        "snippet_id": "s",
        "target": {"name": "t", "version": "1"},
        "tier": "probe",
        "stage": "probe",
        "verdict": "PASS",
        "later_field": 1,
        "evidence": {
            "server": {"port": 1, "log": "/tmp/x", "state": "ready"},
            "later_evidence": [],
            "probes": [
                {
                    "name": "models",
                    "ok": True,
                    "status": 200,
                    "duration_s": 0.1,
                    "detail": {"models": ["m"]},
                    "retries": 0,
                }
            ],
            "perf": {
                "single": {"streams": 1, "max_tokens": 8, "completed": 1, "errors": [], "extra": 2},
                "concurrent": {},
                "spec_decode": None,
                "device": "cpu",
            },
        },
    }
    out = Outcome.from_dict(data).to_dict()
    assert "later_field" not in out and "later_evidence" not in out["evidence"]
    assert out["evidence"]["server"] == data["evidence"]["server"]
    assert list(out["evidence"]["server"]) == ["port", "log", "state"]
    assert list(out["evidence"]["probes"][0]) == ["name", "ok", "status", "duration_s", "detail", "retries"]
    assert out["evidence"]["perf"] == data["evidence"]["perf"]


def test_read_records_are_typed_and_tolerant():
    o = Outcome.from_dict(
        {
            "snippet_id": "s",
            "target": {"name": "t", "version": "1"},
            "tier": "warmup",
            "stage": "warmup",
            "verdict": "PASS",
            "evidence": {
                "exception": {"type": "E", "message": "m", "location": "vllm/x.py:3"},
                "warnings": [{"file": "f", "line": 1, "message": "w", "feature": True}],
                "perf": {"single": {"streams": 1}, "concurrent": {"streams": 16}, "spec_decode": None},
            },
        }
    )
    assert o.stage == o.tier == "warmup"  # a later version's tier: kept as read (vocabulary.stage_rank: no depth)
    assert o.evidence.exception.location == "vllm/x.py:3"  # an early version's location, kept as it is
    assert isinstance(o.evidence.warnings[0], LoggedWarning) and o.evidence.warnings[0].feature
    assert isinstance(o.evidence.perf, PerfRun) and o.evidence.perf.concurrent.streams == 16
    assert o.evidence.perf.single.completed is None  # a key it lacks reads as None ...
    assert "completed" not in o.to_dict()["evidence"]["perf"]["single"]  # ... and stays out when written
    assert ProbeResult.from_json({"name": "chat"}).to_json() == {"name": "chat"}
