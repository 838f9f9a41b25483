"""The probe tier, on the one running server: /v1/models, a json_schema request right after start,
chat, streaming chat, a tool call when tool flags are present, an image when the model is
taking images, and the spec-decode counters from /metrics when a speculative config is present. A
failed probe is judged by the server's own traceback when it logged one."""

from __future__ import annotations

from driftmatrix.extractor.vllm_commands import SPEC_FLAGS
from driftmatrix.runner.diagnosis import classify, logscan
from driftmatrix.runner.jobs.tiers.state import JobState, Verdict, crashed, error, fail, sandbox_limit
from driftmatrix.runner.outcomes.evidence_record import ProbeResult, RaisedException
from driftmatrix.runner.serve import probes

TOOL_FLAGS = ("--enable-auto-tool-choice", "--tool-call-parser")


def probe(state: JobState) -> Verdict | None:
    out, server, snippet = state.outcome, state.server, state.job.snippet
    state.report("probe")
    out.stage = "probe"
    served = out.substitutions.get(snippet.model or "")  # a folder we resolved, never one the docs name
    multimodal = bool(served) and state.ctx.resolver.takes_images(served)
    tools = any(t.split("=")[0] in TOOL_FLAGS for t in state.argv)
    spec = any(t.split("=")[0].split(".")[0] in SPEC_FLAGS for t in state.argv)
    ctx = probes.ProbeContext(f"http://127.0.0.1:{server.port}", "", server.alive)
    results, metrics = probes.run(ctx, tools, multimodal, spec, api_key=state.api_key)
    # the probes' answers as runner/serve/probes.py made them (their keys in its order)
    out.evidence.probes, out.evidence.spec_decode = [ProbeResult.from_json(r) for r in results], metrics
    failed = [p for p in out.evidence.probes if not p.ok]
    if not failed:
        return None
    first = failed[0]
    if server.alive() and deadline_missed(first):
        return error(
            f"probe {first.name}: no answer within our deadline ({_said(first)}): this run's deadline or "
            "this machine's load, not the docs'",
            "probe",
        )
    lines = server.log_lines()
    if not server.alive():  # it died while answering: stopped by a sandbox limit, or its own failure
        state.close()
        if hit := server.limit_hit():
            return error(sandbox_limit(hit), "probe")
    crash = crashed(state, "probe", lines)
    if crash:
        return Verdict(crash.verdict, f"probe {first.name}: {crash.reason}", crash.stage)
    root = classify.root_cause(logscan.tracebacks(lines))
    if root is None:
        return Verdict("FAIL", f"probe {first.name} failed: status {first.status} {str(first.detail)[:200]}", "probe")
    verdict = fail(
        state, "probe", RaisedException(root.type, root.message, root.location()), logscan.excerpt(lines, root.end)
    )
    return Verdict(verdict.verdict, f"probe {first.name}: {verdict.reason}", verdict.stage)


OUR_DEADLINES = (
    "ReadTimeout",
    "WriteTimeout",
    "ConnectTimeout",
    "PoolTimeout",
    "TimeoutException",
    "not run: the probes' deadline",
)
"""How a probe that got no answer in time is reported by runner/serve/probes.py (no HTTP status)."""


def _said(result: ProbeResult) -> str:
    return str((result.detail or {}).get("error") if isinstance(result.detail, dict) else result.detail)[:200]


def deadline_missed(result: ProbeResult) -> bool:
    """The probe failed on our side's deadline while the server lived: no verdict on the command."""
    return result.status is None and _said(result).startswith(OUR_DEADLINES)
