"""The perf tier (meant for GPUs; on CPU it only shows that it works), on the running server after
the probes passed: decode speed at 1 and 16 streams and the spec-decode counters during those
requests (runner/serve/throughput.py measures)."""

from __future__ import annotations

import httpx

from driftmatrix.runner.jobs.tiers.state import JobState, Verdict, error
from driftmatrix.runner.outcomes.evidence_record import PerfRun
from driftmatrix.runner.serve import throughput
from driftmatrix.runner.serve.server import gpu_memory_used


def perf(state: JobState) -> Verdict | None:
    out, server = state.outcome, state.server
    if not server.alive():
        return None  # it stopped after the probes: nothing to measure (as before: the probes decide)
    state.report("perf")
    out.stage = "perf"
    try:
        measured = PerfRun.from_json(throughput.measure(f"http://127.0.0.1:{server.port}", api_key=state.api_key))
    except (httpx.HTTPError, ValueError, KeyError, IndexError) as err:
        return error(f"perf measurement failed: {type(err).__name__}: {err}"[:500], "perf")
    out.evidence.perf = measured
    measured.device = "gpu" if state.gpu_ids else "cpu"
    if state.gpu_ids:  # while the server still holds its weights, KV cache and graphs
        measured.gpu_mib_used = gpu_memory_used(state.gpu_ids)
        measured.keep_none("gpu_mib_used")  # written as null when nvidia-smi could not say
    if not measured.concurrent.completed:
        return Verdict("FAIL", f"perf: no request completed ({measured.concurrent.errors})", "perf")
    return None
