"""What reaches the processes driftmatrix starts (runner/isolation/env_policy.py), both ways, and what is
refused where there is no sandbox (runner/isolation/trust.py, `gate`). Remote code that tries to read secrets,
sockets and the host: tests/runner/isolation/test_hostile.py."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from runhelp import CACHE, catalog_of, docs_tree, outcomes, run_argv

from driftmatrix.runner.builds.targets import SEED_CPU
from driftmatrix.runner.isolation import env_policy

CANARIES = {
    "HF_TOKEN": "hf_canaryAAAA1111",
    "GITHUB_TOKEN": "ghp_canaryBBBB2222",
    "MY_SECRET": "canaryCCCC3333",
    "AWS_SECRET_ACCESS_KEY": "canaryDDDD4444",
    "SOME_API_KEY": "canaryEEEE5555",
}


def test_env_from_the_docs_is_allow_listed():
    kept, dropped = env_policy.docs_env(
        {
            "VLLM_USE_DEEP_GEMM": "1",
            "CUDA_VISIBLE_DEVICES": "0,1",
            "LD_PRELOAD": "x.so",
            "PYTHONPATH": "/src",
            "HF_ENDPOINT": "https://evil.example",
            "HF_TOKEN": "hf_x",
            "VLLM_USE_MODELSCOPE": "True",
            "NCCL_DEBUG": "INFO",
            "TOKENIZERS_PARALLELISM": "false",
            "https_proxy": "http://p:1",
            "VLLM_USE_FASTOKENS": "1",
        }
    )
    assert kept == {
        "VLLM_USE_DEEP_GEMM": "1",
        "CUDA_VISIBLE_DEVICES": "0,1",
        "NCCL_DEBUG": "INFO",
        "TOKENIZERS_PARALLELISM": "false",
        "VLLM_USE_FASTOKENS": "1",
    }
    assert dropped == ["HF_ENDPOINT", "HF_TOKEN", "LD_PRELOAD", "PYTHONPATH", "VLLM_USE_MODELSCOPE", "https_proxy"]
    assert env_policy.meaningless_without(dropped) == ["PYTHONPATH", "VLLM_USE_MODELSCOPE"]


@pytest.mark.parametrize(
    "name",
    [
        "NCCL_NET_PLUGIN",
        "NCCL_TUNER_PLUGIN",
        "NCCL_PROFILER_PLUGIN",
        "VLLM_NCCL_SO_PATH",
        "VLLM_LOGGING_CONFIG_PATH",
        "NCCL_DEBUG_FILE",
        "VLLM_TORCH_PROFILER_DIR",
        "VLLM_DEBUG_DUMP_PATH",
        "VLLM_ALLOW_INSECURE_SERIALIZATION",
        "VLLM_CACHE_ROOT",
        "VLLM_CONFIG_ROOT",
        "VLLM_RPC_BASE_PATH",
        "VLLM_PLUGINS",
        "VLLM_HOST_IP",
    ],
)
def test_docs_variables_that_load_code_or_name_paths_are_dropped(name):
    """Allowed by their prefix, but each loads code, reads or writes a path, or names a host: the
    review's list, caught by the rule (a word of the name) rather than one by one."""
    assert env_policy.denied_why(name), name


@pytest.mark.parametrize(
    "name, value, why",
    [
        ("VLLM_LOGGING_STREAM", "ext://attacker.module", "imports the module"),
        ("VLLM_LOGGING_LEVEL", " EXT://x.y", "imports the module"),
        ("VLLM_USAGE_STATS_SERVER", "https://collector.example", "another host"),
        ("VLLM_SOME_ENDPOINTLESS_SETTING", "grpc://10.1.2.3:9000", "a URL"),
        ("NCCL_COMM_ID", "10.0.0.1:29500", "host and port"),
        ("NCCL_COMM_ID", "node-3.cluster.lan:29500", "host and port"),
        ("VLLM_ANY", "[fe80::1]:80", "host and port"),
        ("NCCL_ANY", "fe80::1", "IP address"),
        ("VLLM_ANY", "192.168.1.20", "IP address"),
    ],
)
def test_docs_values_that_import_or_name_a_host_are_dropped_by_rule(name, value, why):
    """The review's VLLM_LOGGING_STREAM=ext://…, VLLM_USAGE_STATS_SERVER and NCCL_COMM_ID=host:port, and the
    class they stand for: what the value says, whatever the name."""
    assert why in (env_policy.denied_why(name, value) or ""), env_policy.denied_why(name, value)
    assert name in env_policy.docs_env({name: value})[1]


@pytest.mark.parametrize(
    "name, value",
    [
        ("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"),
        ("CUDA_VISIBLE_DEVICES", "0,1,2,3"),
        ("VLLM_CPU_OMP_THREADS_BIND", "0-31|32-63"),
        ("VLLM_LOGGING_LEVEL", "DEBUG"),
        ("VLLM_GPU_MEMORY_UTILIZATION", "0.9"),
        ("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:512"),
    ],
)
def test_ordinary_values_pass(name, value):
    assert env_policy.docs_env({name: value}) == ({name: value}, [])


def test_a_child_gets_an_allow_list_of_our_environment():
    ours = {
        "PATH": "/usr/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "HOME": "/home/r",
        "HF_TOKEN": "hf_x",
        "PGPASSWORD": "p",
        "MYSQL_PWD": "p",
        "DATABASE_URL": "postgres://u:p@h/db",
        "NGC_APIKEY": "k",
        "HFTOKEN": "t",
        "MY_SECRETS": "s",
        "AWS_PROFILE": "prod",
        "https_proxy": "http://p:1",
        "PIP_INDEX_URL": "https://i",
        "DRIFTMATRIX_PASS_ENV": "AWS_PROFILE",
    }
    assert env_policy.runner_env("contained", ours) == {
        "PATH": "/usr/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "HOME": "/home/r",
        "AWS_PROFILE": "prod",
    }
    assert set(env_policy.runner_env("installer", ours)) == {
        "PATH",
        "LANG",
        "LC_ALL",
        "HOME",
        "AWS_PROFILE",
        "https_proxy",
        "PIP_INDEX_URL",
    }
    for name in ("PGPASSWORD", "MYSQL_PWD", "DATABASE_URL", "NGC_APIKEY", "HFTOKEN", "MY_SECRETS"):
        assert env_policy.SECRET_NAME.search(name), name  # and so redacted, and never passed from the docs
    clean = env_policy.without_secrets({**CANARIES, "PATH": "/bin", "ACTIONS_RUNTIME_TOKEN": "x", "VLLM_API_KEY": "k"})
    assert clean == {"PATH": "/bin", "VLLM_API_KEY": "k"}


def test_a_local_folder_named_by_the_docs_is_never_read(tmp_path):
    """`vllm serve /some/dir`: the docs author's folder, not ours to read — even where it exists here."""
    from driftmatrix.runner.models.resolution import ModelResolver
    from driftmatrix.runner.models.twins import TwinError, plan

    secret = tmp_path / "models" / "secret"
    secret.mkdir(parents=True)
    (secret / "config.json").write_text('{"architectures": ["SecretForCausalLM"], "model_type": "secret"}')
    res = ModelResolver({}, hub=False).resolve([str(secret)])
    assert res.missing == [str(secret)] and "never reads" in res.unavailable[str(secret)] and not res.subs
    with pytest.raises(TwinError):
        plan(str(secret), tmp_path / "cache", local_paths=False)
    assert plan(str(secret), tmp_path / "cache").config_path == secret / "config.json"  # given by the user: read


def test_without_bubblewrap_remote_code_and_the_gate_refuse(tiny_models, tmp_path):
    """bubblewrap absent (DRIFTMATRIX_BWRAP names no program, as on a fresh machine): a command with
    `--trust-remote-code` is parsed (no model code runs there) and refused from the config tier on,
    saying how to get the sandbox; a plain command still runs, said to be unsandboxed; `gate` refuses
    outright. The model is our own tiny twin: nothing hostile runs even if a refusal failed."""
    env = {**os.environ, "DRIFTMATRIX_BWRAP": str(tmp_path / "no-bwrap")}
    targets = tmp_path / "targets.toml"
    targets.write_text(SEED_CPU.read_text() + f'"org/tiny" = "{tiny_models["target"]}"\n')
    snippets, _ = catalog_of(
        docs_tree(
            tmp_path / "docs",
            "# R\n\n```bash\nvllm serve org/tiny --trust-remote-code "
            "--max-model-len 256\n```\n\n```bash\nvllm serve org/tiny --max-model-len 256 "
            "--no-such-flag 1\n```\n",
        )
    )
    out = tmp_path / "o.jsonl"
    proc = subprocess.run(
        run_argv(
            str(snippets),
            "--targets",
            str(targets),
            "--target",
            "nightly",
            "--tier",
            "start",
            "--cache-dir",
            str(CACHE),
            "-o",
            str(out),
        ),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert "NOT contained" in proc.stderr and "apt-get install bubblewrap" in proc.stderr, proc.stderr[-2000:]
    by_flag = {("--trust-remote-code" in o.argv): o for o in outcomes(out)}
    remote, plain = by_flag[True], by_flag[False]
    assert (remote.verdict, remote.stage) == ("SKIP", "config"), remote.reason
    assert "not run without a sandbox" in remote.reason and "--unsandboxed" in remote.reason
    assert (plain.verdict, plain.stage) == ("FAIL", "parse") and plain.host["contained"] is False
    gate = subprocess.run(
        [
            sys.executable,
            "-m",
            "driftmatrix.cli",
            "gate",
            "--repo",
            str(tmp_path),
            "--base",
            "HEAD",
            "--workdir",
            str(tmp_path / "gate"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert gate.returncode == 2 and "a sandbox is required" in gate.stderr and "--unsandboxed" in gate.stderr, (
        gate.stderr
    )


def test_required_means_no_process_kind_runs_plainly(tmp_path, monkeypatch):
    """`DRIFTMATRIX_SANDBOX=required` with bubblewrap hidden: the target-environment query, a twin
    build, the option-history query and the parse/config helper each refuse with one clear error,
    and the target's vLLM (a fake build that leaves a file when imported: tests/runner/fake_vllm.py) is
    never imported outside a sandbox. The review saw the environment query import it plainly."""
    from fake_vllm import make_target

    from driftmatrix.runner.builds import envs, history_agreement
    from driftmatrix.runner.builds.targets import Target
    from driftmatrix.runner.isolation import sandbox
    from driftmatrix.runner.isolation.sandbox import detection
    from driftmatrix.runner.models import twins
    from driftmatrix.runner.serve import helper_client

    markers = tmp_path / "markers"
    markers.mkdir()
    python = str(make_target(tmp_path / "fake-env", markers))
    monkeypatch.setenv("DRIFTMATRIX_BWRAP", str(tmp_path / "no-bwrap"))
    monkeypatch.setenv("DRIFTMATRIX_SANDBOX", "required")
    detection.detect.cache_clear()
    try:
        with pytest.raises(envs.EnvError, match="a sandbox is required"):
            envs._query(python, {})
        with pytest.raises(sandbox.SandboxError, match="query not started: a sandbox is required"):
            history_agreement.ask_parser(python, ["--max-model-len"])
        env = envs.TargetEnv(Target("fake", python=python), python, [python, "-m", "vllm"], info={"version": "0.0.1"})
        config = tmp_path / "model"
        config.mkdir()
        (config / "config.json").write_text('{"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3"}')
        with pytest.raises(twins.TwinError, match="build not started: a sandbox is required"):
            twins.build("org/m", env, tmp_path / "twin", cache=tmp_path / "cache", config_from=str(config))
        helper = helper_client.contained(python, {}, tmp_path / "helper.log")
        with pytest.raises(helper_client.HelperError, match="a sandbox is required"):
            helper.start()
        assert not (tmp_path / "twin").exists()
    finally:
        detection.detect.cache_clear()
    assert list(markers.iterdir()) == []  # vLLM was never imported plainly


def test_sandbox_check_says_nothing_runs_when_required_and_missing(tmp_path):
    env = {**os.environ, "DRIFTMATRIX_BWRAP": str(tmp_path / "no-bwrap"), "DRIFTMATRIX_SANDBOX": "required"}
    proc = subprocess.run(
        [sys.executable, "-m", "driftmatrix.cli", "sandbox", "--check"], env=env, capture_output=True, text=True
    )
    assert proc.returncode == 1
    assert "a sandbox is required" in proc.stdout and "nothing from the docs runs" in proc.stdout, proc.stdout
    assert "runs as plain processes" not in proc.stdout
