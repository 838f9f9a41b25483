"""The perf tier and the self-speculation variant, on the nightly CPU target with the tiny Qwen3
models: the served fixture's draft-model command at the perf tier (one server per variant, its
probes and its perf figures from the same start).

CPU figures say nothing about GPU speed; what is checked is that the tier measures what it
says: every stream decodes max_tokens, the counters are the deltas of these requests, and
the target as its own draft has its drafts accepted under greedy decoding.
"""

from __future__ import annotations

import pytest
from runhelp import pick

pytestmark = pytest.mark.xdist_group("served")  # runs in one worker with the tests sharing its servers


def test_perf_tier_with_spec_no_spec_and_self_spec(served):
    items, ids, *_ = served
    sid = ids["draft-model"][0]
    runs = {v: pick(items, sid, "nightly", v) for v in (None, "no-spec", "self-spec")}
    for variant, o in runs.items():
        assert (o.verdict, o.stage) in {("PASS", "perf"), ("WARN", "perf")}, (variant, o.reason)
        p = o.evidence.perf
        assert p["device"] == "cpu"
        assert (p["single"]["completed"], p["single"]["tokens"]) == (1, 256)
        assert (p["concurrent"]["completed"], p["concurrent"]["tokens"]) == (16, 16 * 256)
        assert p["single"]["decode_tok_s_median"] > 0 and p["concurrent"]["throughput_tok_s"] > 0
    assert runs["no-spec"].evidence.perf["spec_decode"] is None
    assert runs[None].evidence.perf["spec_decode"]["num_draft_tokens"] > 0
    own = runs["self-spec"]
    assert own.evidence.effective_config["speculative_method"] == "draft_model"
    assert own.evidence.perf["spec_decode"]["acceptance_rate"] > 0.5  # greedy, the draft is the target
