"""Docker Compose services that run vLLM's server (issue 59 point 3): each is the command a reader
runs with `docker compose up` — the image's entry point (or the service's `entrypoint:`) and its
`command:` — with its environment, at the file line where the command starts
(extractor/compose_files.py)."""

from __future__ import annotations

import textwrap

import pytest

from driftmatrix.extractor.corpus import detect, extract_file
from driftmatrix.extractor.markdown_pages import markdown_snippets
from driftmatrix.extractor.snippet_builder import Place, from_shell_text
from driftmatrix.extractor.yaml_commands import from_yaml_block

AIBRIX = "thirdparty/aibrix-e3e10f9e"


def compose(text: str, first_line: int = 1):
    snippets, diagnostics = from_yaml_block(textwrap.dedent(text), Place("site", "x", "docker-compose.yml", first_line))
    assert diagnostics == []
    return snippets


def line_of(text: str, needle: str, first_line: int = 1) -> int:
    return next(n for n, line in enumerate(textwrap.dedent(text).split("\n"), first_line) if needle in line)


FOLDED = """\
    x-gpu: &gpu
      deploy: {resources: {reservations: {devices: [{driver: nvidia, capabilities: [gpu]}]}}}
    services:
      redis:
        image: redis:7.4-alpine
        command: redis-server --appendonly yes
      vllm:
        image: ${VLLM_IMAGE:-vllm/vllm-openai:v0.6.6}
        environment:
          CUDA_VISIBLE_DEVICES: ${VLLM_GPU:-0}
          VLLM_LOGGING_LEVEL: DEBUG
          HF_TOKEN:
        <<: *gpu
        command: >
          --model ${MODEL_NAME:-Qwen/Qwen2.5-1.5B-Instruct}
          --max-model-len ${MAX_MODEL_LEN:-8192}
          --enable-prefix-caching
"""


def test_folded_command_with_the_images_entry_point_env_and_defaults():
    [s] = compose(FOLDED, first_line=3)
    assert s.kind == "docker" and s.image == "vllm/vllm-openai:v0.6.6"  # `${VLLM_IMAGE:-…}`: its default
    assert s.argv == ["--model", "Qwen/Qwen2.5-1.5B-Instruct", "--max-model-len", "8192", "--enable-prefix-caching"]
    assert s.model == "Qwen/Qwen2.5-1.5B-Instruct" and s.runnable and s.placeholders == []
    assert s.env == {"CUDA_VISIBLE_DEVICES": "0", "VLLM_LOGGING_LEVEL": "DEBUG"}  # `HF_TOKEN:`: the reader's own
    assert s.sources[0].line == line_of(FOLDED, "--model ${MODEL_NAME", first_line=3)
    assert s.sources[0].text.startswith("--model ${MODEL_NAME") and s.sources[0].text.endswith(
        "--enable-prefix-caching"
    )
    assert s.sources[0].context == "compose:services.vllm"
    # The same command as `docker run -e … vllm/vllm-openai:v0.6.6 --model …`: one id.
    [same] = from_shell_text(
        "docker run --gpus all -e CUDA_VISIBLE_DEVICES=0 -e VLLM_LOGGING_LEVEL=DEBUG vllm/vllm-openai:v0.6.6 "
        "--model Qwen/Qwen2.5-1.5B-Instruct --max-model-len 8192 --enable-prefix-caching",
        Place("markdown", "x", "run.md", 1),
    )
    assert s.id == same.id


LIST = """\
    services:
      engine:
        image: vllm/vllm-openai:v0.8.5
        environment:
          - HF_HOME=/data/hf
          - HF_TOKEN
        command:
          - "--model"
          - "Qwen/Qwen3-0.6B"
          - "--port=8000"
"""


def test_list_command_and_list_environment():
    [s] = compose(LIST)
    assert s.argv == ["--model", "Qwen/Qwen3-0.6B", "--port=8000"] and s.image == "vllm/vllm-openai:v0.8.5"
    assert s.env == {"HF_HOME": "/data/hf"}  # a bare `HF_TOKEN` passes the reader's own: nothing recorded
    assert s.sources[0].line == line_of(LIST, '- "--model"')
    assert s.sources[0].written_for is None  # set per page by extract_file; the image is kept for it


ENTRYPOINT = """\
    services:
      legacy:
        image: ghcr.io/acme/inference:2.1
        entrypoint: ["python3", "-m", "vllm.entrypoints.openai.api_server"]
        command: ["--model", "facebook/opt-125m", "--port", "8000"]
      cli:
        image: vllm/vllm-openai:v0.9.1
        entrypoint: vllm serve
        command: Qwen/Qwen3-0.6B --max-num-seqs 8
      script:
        image: vllm/vllm-openai:v0.9.1
        entrypoint: ["/bin/bash", "-c"]
        command:
          - |
            pip install extra
            vllm serve Qwen/Qwen3-0.6B --port 8001
      shell:
        image: vllm/vllm-openai:v0.9.1
        entrypoint: ["/bin/bash"]
"""


def test_entrypoint_list_string_and_a_shell_script():
    legacy, cli, script = compose(ENTRYPOINT)
    # exec-form legacy module: the legacy-entrypoint command, in any image
    assert legacy.kind == "docker" and legacy.image == "ghcr.io/acme/inference:2.1"
    assert legacy.argv == ["--model", "facebook/opt-125m", "--port", "8000"]
    assert legacy.entry_point == "vllm.entrypoints.openai.api_server"
    assert [lint.code for lint in legacy.lints] == ["legacy-entrypoint"]
    assert legacy.sources[0].line == line_of(ENTRYPOINT, 'entrypoint: ["python3"')
    # `entrypoint: vllm serve` (a string: split as a shell splits it) + `command:`
    assert cli.argv == ["Qwen/Qwen3-0.6B", "--max-num-seqs", "8"] and cli.entry_point is None
    assert cli.sources[0].line == line_of(ENTRYPOINT, "entrypoint: vllm serve")
    # `entrypoint: ["/bin/bash", "-c"]` with the script as the command
    assert script.argv == ["Qwen/Qwen3-0.6B", "--port", "8001"] and script.image == "vllm/vllm-openai:v0.9.1"
    assert script.sources[0].line == line_of(ENTRYPOINT, "vllm serve Qwen/Qwen3-0.6B --port 8001")
    # a service that runs only a shell starts no server


def test_unset_variable_is_the_readers_placeholder():
    text = """\
        services:
          vllm:
            image: vllm/vllm-openai:${VLLM_TAG}
            command: --model $MODEL
    """
    [s] = compose(text)
    assert s.image == "vllm/vllm-openai:${VLLM_TAG}" and not s.runnable
    assert {"$MODEL", "${VLLM_TAG}"} <= set(s.placeholders)


def test_a_service_of_another_image_without_vllm_is_not_a_command():
    text = """\
        services:
          web:
            image: nginx:1.27
            command: ["nginx", "-g", "daemon off; # vllm"]
          router:
            image: vllm/vllm-router:latest
            command: ["--port", "8000"]
    """
    assert compose(text) == []


def test_compose_yaml_block_of_a_page(tmp_path):
    page = textwrap.dedent(
        """\
        # Run it with compose

        ```yaml
        services:
          vllm:
            image: vllm/vllm-openai:v0.10.1
            command: --model Qwen/Qwen3-0.6B --gpu-memory-utilization 0.8
        ```
        """
    )
    snippets, _ = markdown_snippets(page, Place("markdown", "x", "compose.md", 1), tmp_path)
    [s] = snippets
    assert s.kind == "docker" and s.image == "vllm/vllm-openai:v0.10.1"
    assert s.argv == ["--model", "Qwen/Qwen3-0.6B", "--gpu-memory-utilization", "0.8"]
    assert s.sources[0].line == 7


def test_aibrix_standalone_docker_compose(corpus):
    root = corpus / AIBRIX
    if not root.is_dir():
        pytest.skip("the aibrix corpus is not here")
    rel = "deployment/standalone/docker-compose.yml"
    lines = (root / rel).read_text(encoding="utf-8").split("\n")
    snippets, diagnostics = extract_file(detect(root), root / rel)
    assert [d for d in diagnostics if d.severity == "error"] == []
    # the vllm service and the P/D profile's prefill and decode engines; redis, envoy, the gateway not
    assert [s.sources[0].context for s in snippets] == [
        "compose:services.vllm",
        "compose:services.prefill-engine",
        "compose:services.decode-engine",
    ]
    models = [n for n, line in enumerate(lines, 1) if "--model ${MODEL_NAME:-Qwen/Qwen2.5-1.5B-Instruct}" in line]
    assert [s.sources[0].line for s in snippets] == models and len(models) == 3
    vllm, prefill, decode = snippets
    for s in snippets:
        assert s.kind == "docker" and s.image == "vllm/vllm-openai:v0.6.6" and s.runnable
        assert s.model == "Qwen/Qwen2.5-1.5B-Instruct" and "--enable-prefix-caching" in s.argv
        assert s.env["VLLM_ATTENTION_BACKEND"] == "FLASH_ATTN"
        # the image's tag is the vLLM the file is written for
        assert (
            s.sources[0].written_for.spec == "==0.6.6" and "vllm/vllm-openai:v0.6.6" in s.sources[0].written_for.origin
        )
    assert vllm.argv[-1] == "--disable-log-requests" and "--max-num-seqs" not in vllm.argv
    assert prefill.argv[-2:] == ["--max-num-seqs", "64"] and prefill.env["CUDA_VISIBLE_DEVICES"] == "0"
    assert decode.argv[-2:] == ["--max-num-seqs", "256"] and decode.env["CUDA_VISIBLE_DEVICES"] == "1"


def test_a_service_takes_the_command_of_the_mapping_it_merges():
    text = """\
        x-engine: &engine
          image: vllm/vllm-openai:v0.8.5
          command: ["--model", "Qwen/Qwen3-0.6B"]
        services:
          a:
            <<: *engine
            environment: [CUDA_VISIBLE_DEVICES=0]
          b:
            <<: *engine
            command: ["--model", "Qwen/Qwen3-1.7B"]
    """
    a, b = compose(text)
    assert (a.model, a.env, a.sources[0].line) == ("Qwen/Qwen3-0.6B", {"CUDA_VISIBLE_DEVICES": "0"}, 3)
    assert (b.model, b.image, b.sources[0].line) == ("Qwen/Qwen3-1.7B", "vllm/vllm-openai:v0.8.5", 10)
