"""Log reading helpers (the real server logs are read in test_serve.py, next to the servers that wrote them)."""

from __future__ import annotations


def test_raising_file_is_named_from_the_vllm_package_wherever_it_is_installed():
    from runner.logscan import relative

    assert relative("/x/lib/python3.12/site-packages/vllm/v1/a.py") == "vllm/v1/a.py"
    assert relative("/root/site-0.20.1/vllm/v1/spec_decode/llm_base_proposer.py") == \
        "vllm/v1/spec_decode/llm_base_proposer.py"  # a carried vLLM (GPU run)
    assert relative("/home/u/vllm/vllm/config/speculative.py") == "vllm/config/speculative.py"  # a checkout
    assert relative("/usr/lib/python3.12/json/decoder.py") == "/usr/lib/python3.12/json/decoder.py"
