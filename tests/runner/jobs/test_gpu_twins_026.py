"""The second H200 twins run (issue 22): CUDA vLLM 0.26.0 (the newest release on the device's torch
2.11), tiny twins, eight servers sharing the GPU, made by benchmarks/gpu/run_on_device.sh.

tests/fixtures/gpu/twins-h200-0.26.0.jsonl: one documented command per architecture of the 0.26.0
table (benchmarks/gpu/twins_sample.py, 60 architectures); -extra.jsonl: other one-GPU commands drawn
at random, to see whether a command fares as its architecture's sample. The record predates the
rules this run led to (twin_artefacts: shrunk shapes, a defaults config's context length, the
multimodal processing frames, a missing special token; the cutlass / loader / fewer-GPUs / shared
GPU signatures): re-judged by them, what stays a FAIL must be a finding about a command, and every
fault of our twins, of the carried build or of the shared GPU must be a SKIP or an ERROR."""

from __future__ import annotations

import copy
import json

import pytest
from runhelp import HERE, rejudged

from driftmatrix.runner.jobs.tiers import twin_artefacts
from driftmatrix.runner.outcomes.outcome_record import Outcome

FIXTURES = HERE.parent / "fixtures" / "gpu"


def load(name: str) -> dict[str, Outcome]:
    last = {}
    for line in (FIXTURES / name).read_text().splitlines():
        o = Outcome.from_dict(json.loads(line))
        last[o.snippet_id] = o  # a rerun's outcome comes later in the file
    return last


@pytest.fixture(scope="module")
def sample() -> dict[str, Outcome]:
    return load("twins-h200-0.26.0.jsonl")


@pytest.fixture(scope="module")
def extra() -> dict[str, Outcome]:
    return load("twins-h200-0.26.0-extra.jsonl")


def test_the_sample_is_one_command_per_architecture_on_0_26_0(sample):
    assert len(sample) == 60
    assert {o.target.version for o in sample.values()} == {"0.26.0"} and all(
        "H200" in o.host["gpus"][0] for o in sample.values()
    )


def test_what_stays_a_failure_is_an_option_this_release_lacks(sample, extra):
    """Every start or probe FAIL of the run was our twin's, the carried build's or the shared GPU's;
    the findings left are options of the 0.33.0 pages that vLLM 0.26.0 does not have."""
    fails = {sid: o for sid, o in {**sample, **extra}.items() if o.verdict == "FAIL"}
    assert len(fails) >= 20
    still = {sid: o for sid, o in fails.items() if rejudged(o) == "FAIL"}
    assert {o.stage for o in still.values()} == {"parse"}, {s: o.reason for s, o in still.items()}
    assert all("unrecognized arguments" in o.reason for o in still.values())
    assert len(still) == 3


@pytest.mark.parametrize(
    "snippet, verdict, words",
    [
        ("r-11c37c7be6cf", "SKIP", "shrunk sizes"),  # DeepSeek MLA: no kernel for the twin's head sizes
        ("d-0937a402a2c6", "SKIP", "shrunk sizes"),  # Qwen3.5 vision grid vs the processor's patch size
        ("s-8599560e7e9e", "SKIP", "special tokens"),  # gpt-oss reasoning parser: KeyError '<|end|>'
        ("r-91a301bb6a92", "SKIP", "processor"),  # GLM-4.5V: prompt replacement in vLLM's processing
        ("s-61d4e2e7e825", "SKIP", None),  # Gemma 4: cutlass (a GPU extra the payload leaves out)
        ("s-6471702d5b8e", "ERROR", None),  # no KV-cache memory left in a shared GPU's share
    ],
)
def test_each_kind_of_fault_gets_its_verdict(sample, snippet, verdict, words):
    o = sample[snippet]
    assert o.verdict == "FAIL" and rejudged(o) == verdict
    if words:
        why = twin_artefacts.reason([copy.copy(t) for t in o.evidence.twins], o.stage, o.evidence.exception, "0.26.0")
        assert words in why and "a twin artefact, not a finding about the docs" in why


def test_a_defaults_config_context_length_and_a_missing_gpu_count_are_not_the_docs(extra):
    ctx = extra["s-e61baee53885"]  # --max-model-len 262144 vs the class default 32768
    assert "configuration (class defaults)" in twin_artefacts.reason(
        [copy.copy(t) for t in ctx.evidence.twins], ctx.stage, ctx.evidence.exception, "0.26.0"
    )
    assert rejudged(extra["s-cbdfd550e46c"]) == "SKIP"  # world size 8 on a one-GPU machine
    assert rejudged(extra["s-5e889272011b"]) == "SKIP"  # --load-format runai_streamer, package absent


def test_multimodal_twins_answer_images_with_their_processor_files(sample):
    """Processor files from the class defaults (runner/intarget/twin_processor.py): Qwen2.5-VL's
    twin starts and its image probe is answered on the H200, as on CPU."""
    passed = [o for o in sample.values() if o.verdict == "PASS"]
    assert len(passed) >= 8
    vl = next(o for o in passed if o.evidence.twins[0].published_architecture == "Qwen2_5_VLForConditionalGeneration")
    assert {p.name: p.ok for p in vl.evidence.probes}.get("image") is True
    for o in passed:
        twin = next(t for t in o.evidence.twins if t.served)
        assert twin.resolved_architecture == twin.published_architecture and twin.counts, o.snippet_id
