"""`driftmatrix plan`: what the scheduled run still has to do, before installing anything —
the gate that keeps the GPU jobs from starting on an unchanged day."""

from __future__ import annotations

import json
import subprocess
import sys

from runhelp import HERE

from driftmatrix.runner.builds.targets import SEED_CPU

SITE = HERE.parent / "fixtures" / "site"


def plan(*args) -> dict:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "driftmatrix.cli",
            "plan",
            str(SITE / "snippets.json"),
            "--targets",
            str(SEED_CPU),
            *args,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def test_unchanged_inputs_leave_nothing_to_do():
    snippets = len(json.loads((SITE / "snippets.json").read_text())["snippets"])
    fresh = plan("--tier", "parse", "--shards", "3")
    assert fresh["jobs"] == 2 * snippets and fresh["shards"] == [1, 2, 3]
    again = plan("--tier", "parse", "--shards", "3", "--previous", str(SITE / "outcomes-cpu-parse.jsonl"))
    assert again["jobs"] == 0 and again["shards"] == [] and again["reused"] == 2 * snippets


def test_a_deeper_tier_or_one_target_is_still_to_do():
    deeper = plan("--tier", "start", "--shards", "2", "--previous", str(SITE / "outcomes-cpu-parse.jsonl"))
    assert deeper["jobs"] > 0 and deeper["shards"]
    config = plan("--tier", "config", "--previous", str(SITE / "outcomes-cpu-config.jsonl"), "--target", "stable")
    done = {
        json.loads(ln)["snippet_id"]
        for ln in (SITE / "outcomes-cpu-config.jsonl").read_text().splitlines()
        if ln.strip() and json.loads(ln)["target"]["name"] == "stable" and json.loads(ln)["verdict"] != "ERROR"
    }
    assert config["reused"] == len(done) and set(config["by_target"]) == {"stable"}


def test_merge_keeps_one_record_per_job(tmp_path):
    """What the workflow's publish job does with the previous state and the shards (each shard
    starts from a copy of that state): one record per job key, the later one."""
    parse = SITE / "outcomes-cpu-parse.jsonl"
    lines = [ln for ln in parse.read_text().splitlines() if ln.strip()]
    shard = tmp_path / "shard.jsonl"
    later = json.loads(lines[0])
    later["started"] = "2099-01-01T00:00:00Z"
    shard.write_text(parse.read_text() + json.dumps(later) + "\n")
    merged = tmp_path / "merged.jsonl"
    subprocess.run(
        [sys.executable, "-m", "driftmatrix.cli", "merge", str(parse), str(shard), "-o", str(merged)],
        check=True,
        capture_output=True,
    )
    out = [json.loads(ln) for ln in merged.read_text().splitlines()]
    assert len(out) == len(lines)
    assert any(o["started"] == "2099-01-01T00:00:00Z" for o in out)
