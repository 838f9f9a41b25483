"""Log reading on the real server logs the served fixture produced (nothing hand-written)."""

from __future__ import annotations

import pytest

from runner import classify, logscan

pytestmark = pytest.mark.xdist_group("served")  # runs in one worker with the tests sharing its servers


def real_logs(work):
    return {p.name: p.read_text(errors="replace").splitlines() for p in (work / "driftmatrix-work" / "logs").glob("*.log")}


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


def test_chained_traceback_from_logger_exception_lines(served):
    _, ids, work, _ = served
    lines = real_logs(work)[f"{ids['a-lora-adapter-that-is-not-there'][0]}-doc-nightly-probe.log"]
    tbs = logscan.tracebacks(lines)
    assert len(tbs) >= 3 and any(tb.chained for tb in tbs)
    assert all(tb.frames for tb in tbs)
    root = classify.root_cause(tbs)
    assert root.type.endswith("LoRAAdapterNotFoundError") and root.location()["file"].startswith("vllm/")


def test_raising_file_is_named_from_the_vllm_package_wherever_it_is_installed():
    from runner.logscan import relative

    assert relative("/x/lib/python3.12/site-packages/vllm/v1/a.py") == "vllm/v1/a.py"
    assert relative("/root/site-0.20.1/vllm/v1/spec_decode/llm_base_proposer.py") == \
        "vllm/v1/spec_decode/llm_base_proposer.py"  # a carried vLLM (GPU run)
    assert relative("/home/u/vllm/vllm/config/speculative.py") == "vllm/config/speculative.py"  # a checkout
    assert relative("/usr/lib/python3.12/json/decoder.py") == "/usr/lib/python3.12/json/decoder.py"
