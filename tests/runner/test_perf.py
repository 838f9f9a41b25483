"""The perf tier and the self-speculation variant, on the nightly CPU target with Qwen3 twins.

CPU figures say nothing about GPU speed; what is checked is that the tier measures what it
says: every stream decodes max_tokens, the counters are the deltas of these requests, and
the target as its own draft has its drafts accepted under greedy decoding.
"""

from __future__ import annotations

from runhelp import catalog_of, docs_tree, outcomes, pick, run_cli

DOC = """# Perf

```bash
vllm serve Qwen/Qwen3-8B --max-model-len 1024 --speculative-config '{"model": "Qwen/Qwen3-0.6B", "num_speculative_tokens": 2}'
```
"""


def test_perf_tier_with_spec_no_spec_and_self_spec(cpu_envs, tmp_path):
    snippets, ids = catalog_of(docs_tree(tmp_path / "docs", DOC))
    out = tmp_path / "o.jsonl"
    run_cli(str(snippets), "--stand-ins", "--target", "nightly", "--tier", "perf", "--variants", "no-spec,self-spec",
            "-o", str(out), cwd=tmp_path)
    items = outcomes(out)
    sid = ids["perf"][0]
    runs = {v: pick(items, sid, "nightly", v) for v in (None, "no-spec", "self-spec")}
    for variant, o in runs.items():
        assert (o.verdict, o.stage) == ("PASS", "perf"), (variant, o.reason)
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
