from driftmatrix.extractor.shell_commands import scan


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
