from driftmatrix.extractor.markdown_pages import markdown_snippets
from driftmatrix.extractor.shell_commands import scan
from driftmatrix.extractor.snippet_builder import Place
from driftmatrix.extractor.written_for import PageFacts, assign


def one(text):
    found = scan(text).invocations
    assert len(found) == 1, found
    return found[0]


def args(inv):
    return [w.text for w in inv.args]


def test_env_prefix_and_wrappers_are_peeled():
    inv = one("CUDA_VISIBLE_DEVICES=0 VLLM_X=1 nohup uv run --with foo vllm serve m --port 8000 > log 2>&1 &")
    assert inv.kind == "serve"
    assert inv.env == {"CUDA_VISIBLE_DEVICES": "0", "VLLM_X": "1"}
    assert args(inv) == ["m", "--port", "8000"]


def test_commands_in_a_chain_and_pipeline():
    found = scan("source .venv/bin/activate && vllm serve a | tee out.log\nvllm serve b; echo done").invocations
    assert [args(i) for i in found] == [["a"], ["b"]]
    assert [i.line for i in found] == [0, 1]


def test_console_prompt_is_not_part_of_the_command():
    assert args(one("$ vllm serve m --x 1\nINFO: started")) == ["m", "--x", "1"]


def test_legacy_entrypoint_is_a_serve_with_a_lint():
    inv = one("python3 -m vllm.entrypoints.openai.api_server --model m")
    assert args(inv) == ["--model", "m"]
    assert [lint.code for lint in inv.lints] == ["legacy-entrypoint"]


def test_docker_run_options_image_and_server_args():
    inv = one(
        "docker run --runtime nvidia --gpus all -v ~/.cache/huggingface:/root/.cache/huggingface "
        '--env "HF_TOKEN=$HF_TOKEN" -e VLLM_X=1 -p 8000:8000 --ipc=host --rm -it '
        "vllm/vllm-openai:v0.20.1 --model Qwen/Qwen3-0.6B --max-model-len 4096"
    )
    assert inv.kind == "docker"
    assert inv.image == "vllm/vllm-openai:v0.20.1"
    assert args(inv) == ["--model", "Qwen/Qwen3-0.6B", "--max-model-len", "4096"]
    assert inv.env == {"HF_TOKEN": "$HF_TOKEN", "VLLM_X": "1"}
    assert "--gpus" in inv.docker_options and "--ipc=host" in inv.docker_options


def test_docker_with_other_image_counts_only_when_it_runs_vllm_serve():
    assert scan("docker run -d nginx:latest").invocations == []
    assert scan("docker run vllm/vllm-router:latest --port 1").invocations == []
    inv = one("docker run rocm/vllm:latest vllm serve m --x 1")
    assert (inv.image, args(inv)) == ("rocm/vllm:latest", ["m", "--x", "1"])


def test_docker_entrypoint_shell_runs_serve_inside():
    inv = one(
        "docker run --gpus all --entrypoint bash vllm/vllm-openai:latest -lc 'source e.sh && exec vllm serve m --x 1'"
    )
    assert inv.kind == "docker" and args(inv) == ["m", "--x", "1"]
    assert scan("docker run -it --entrypoint /bin/bash vllm/vllm-openai:deploy").invocations == []


def test_sh_c_script_is_searched():
    inv = one('sh -c "pip install x && vllm serve m --port 1"')
    assert args(inv) == ["m", "--port", "1"]


def test_bare_spec_config_is_a_fragment():
    inv = one('--speculative-config \'{"method": "ngram"}\'')
    assert inv.kind == "fragment"


def test_arguments_after_an_ended_command_are_linted_not_fragments():
    found = scan("vllm serve m\n  --speculative-config '{}'\n  --port 1").invocations
    assert len(found) == 1 and args(found[0]) == ["m"]
    assert [lint.code for lint in found[0].lints] == ["orphan-arguments", "orphan-arguments"]


# --- every way a shell line starts a container that runs vLLM (issue 59 point 4) -----------------


def test_docker_entrypoint_python3_runs_the_legacy_server():
    inv = one(
        "docker run --gpus all --entrypoint python3 vllm/vllm-openai:v0.6.6 "
        "-m vllm.entrypoints.openai.api_server --model facebook/opt-125m --port 8000"
    )
    assert (inv.kind, inv.image) == ("docker", "vllm/vllm-openai:v0.6.6")
    assert args(inv) == ["--model", "facebook/opt-125m", "--port", "8000"]
    assert [lint.code for lint in inv.lints] == ["legacy-entrypoint"]
    # `--entrypoint=python3` in an image of any name: the program says it runs vLLM's server
    inv = one(
        "docker run --entrypoint=python3 ghcr.io/acme/serving:1.2 -m vllm.entrypoints.openai.api_server --model m"
    )
    assert (inv.image, args(inv), [lint.code for lint in inv.lints]) == (
        "ghcr.io/acme/serving:1.2",
        ["--model", "m"],
        ["legacy-entrypoint"],
    )


def test_docker_entrypoint_vllm_with_serve_after_the_image():
    inv = one("docker run --entrypoint vllm vllm/vllm-openai:v0.9.1 serve Qwen/Qwen3-0.6B --port 8000")
    assert args(inv) == ["Qwen/Qwen3-0.6B", "--port", "8000"] and inv.lints == []
    inv = one('docker run --entrypoint "vllm serve" vllm/vllm-openai:v0.9.1 Qwen/Qwen3-0.6B')
    assert args(inv) == ["Qwen/Qwen3-0.6B"]
    # `--entrypoint python3` running something else starts no server
    assert scan("docker run --entrypoint python3 vllm/vllm-openai:v0.9.1 -c 'import vllm'").invocations == []


def test_podman_run_is_docker_run():
    inv = one(
        "podman run --device nvidia.com/gpu=all -e HF_HOME=/data --security-opt=label=disable "
        "vllm/vllm-openai:v0.8.5 --model Qwen/Qwen3-0.6B"
    )
    assert (inv.kind, inv.image, args(inv), inv.env) == (
        "docker",
        "vllm/vllm-openai:v0.8.5",
        ["--model", "Qwen/Qwen3-0.6B"],
        {"HF_HOME": "/data"},
    )


def test_kubectl_run_args_and_command():
    inv = one(
        "kubectl run vllm --image=vllm/vllm-openai:v0.8.5 --env=HF_HOME=/data --port=8000 -- --model Qwen/Qwen3-0.6B"
    )
    assert (inv.kind, inv.image, args(inv), inv.env) == (
        "docker",
        "vllm/vllm-openai:v0.8.5",
        ["--model", "Qwen/Qwen3-0.6B"],
        {"HF_HOME": "/data"},
    )
    inv = one(
        "kubectl run vllm --image ghcr.io/acme/serving:1.2 --restart=Never --command -- vllm serve Qwen/Qwen3-0.6B"
    )
    assert (inv.image, args(inv)) == ("ghcr.io/acme/serving:1.2", ["Qwen/Qwen3-0.6B"])
    assert scan("kubectl run shell --image=busybox -- sleep 3600").invocations == []


def test_args_after_a_vllm_server_image_are_the_servers():
    inv = one("docker run --rm vllm/vllm-openai:v0.8.5 --model Qwen/Qwen3-0.6B --max-model-len 4096")
    assert (inv.kind, args(inv), inv.lints) == ("docker", ["--model", "Qwen/Qwen3-0.6B", "--max-model-len", "4096"], [])


CONTAINERS_PAGE = """\
# Start the server in a container

```bash
docker run --gpus all \\
    --entrypoint python3 \\
    vllm/vllm-openai:v0.6.6 \\
    -m vllm.entrypoints.openai.api_server --model facebook/opt-125m
podman run --device nvidia.com/gpu=all vllm/vllm-openai:v0.8.5 --model Qwen/Qwen3-0.6B
sudo docker run --entrypoint=vllm vllm/vllm-openai:v0.9.1 serve Qwen/Qwen3-0.6B
kubectl run vllm --image=vllm/vllm-openai:v0.10.1 \\
    --command -- vllm serve Qwen/Qwen3-0.6B --port 8000
```
"""


def test_container_commands_of_a_page_at_their_lines(tmp_path):
    snippets, _ = markdown_snippets(CONTAINERS_PAGE, Place("markdown", "x", "containers.md", 1), tmp_path)
    assign(snippets, PageFacts("0.34.0", None, text=CONTAINERS_PAGE, file="containers.md"))
    got = [
        (s.sources[0].line, s.kind, s.image, s.model, s.entry_point, s.sources[0].written_for.spec) for s in snippets
    ]
    assert got == [
        (4, "docker", "vllm/vllm-openai:v0.6.6", "facebook/opt-125m", "vllm.entrypoints.openai.api_server", "==0.6.6"),
        (8, "docker", "vllm/vllm-openai:v0.8.5", "Qwen/Qwen3-0.6B", None, "==0.8.5"),
        (9, "docker", "vllm/vllm-openai:v0.9.1", "Qwen/Qwen3-0.6B", None, "==0.9.1"),
        (10, "docker", "vllm/vllm-openai:v0.10.1", "Qwen/Qwen3-0.6B", None, "==0.10.1"),
    ]
    assert snippets[2].wrapper == ["sudo"]
