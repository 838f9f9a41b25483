"""What the docs make us run cannot reach the machine's secrets or the network: a model whose
own remote code (`--trust-remote-code`) reports its environment, argv, what /proc shows and
whether it can reach a port on the host — run by the real vLLM CPU build, in the parse/config
helper and in `vllm serve`, with canary tokens set for the run."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading

import pytest
from runhelp import CACHE, catalog_of, docs_tree, outcomes, run_argv

from runner import env_policy, sandbox
from runner.targets import DEFAULT_CPU

CANARIES = {"HF_TOKEN": "hf_canaryAAAA1111", "GITHUB_TOKEN": "ghp_canaryBBBB2222", "MY_SECRET": "canaryCCCC3333",
            "AWS_SECRET_ACCESS_KEY": "canaryDDDD4444", "SOME_API_KEY": "canaryEEEE5555"}
REMOTE_CODE = '''
import json, os, socket, sys
from transformers import Qwen3Config

def _report():
    seen = {"env": dict(os.environ), "argv": sys.argv, "proc": []}
    for pid in os.listdir("/proc"):  # every environment this code can read
        try:
            seen["proc"].append(open(f"/proc/{pid}/environ", "rb").read().decode(errors="replace"))
        except (OSError, ValueError):
            pass
    try:  # a credential file in the home directory
        seen["home_secret"] = open(os.path.expanduser("~/.secret-token"), encoding="utf-8").read()
    except OSError as err:
        seen["home_secret"] = f"hidden: {err}"
    try:
        socket.create_connection(("127.0.0.1", __PORT__), timeout=3).close()
        seen["host_port"] = "reached"
    except OSError as err:
        seen["host_port"] = f"blocked: {err}"
    with open(os.path.join(__REPORT_DIR__, f"canary-{os.getpid()}-{os.urandom(4).hex()}.json"), "w") as fh:
        json.dump(seen, fh)

_report()


class CanaryConfig(Qwen3Config):
    model_type = "qwen3"
'''


@pytest.fixture
def listener():
    """A port on the host's loopback that sandboxed code must not reach."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                server.accept()[0].close()
            except OSError:
                pass
    threading.Thread(target=accept, daemon=True).start()
    yield server.getsockname()[1]
    stop.set()
    server.close()


def test_env_from_the_docs_is_allow_listed():
    kept, dropped = env_policy.docs_env({"VLLM_USE_DEEP_GEMM": "1", "CUDA_VISIBLE_DEVICES": "0,1", "LD_PRELOAD": "x.so",
                                         "PYTHONPATH": "/src", "HF_ENDPOINT": "https://evil.example",
                                         "HF_TOKEN": "hf_x", "VLLM_USE_MODELSCOPE": "True", "NCCL_DEBUG": "INFO",
                                         "TOKENIZERS_PARALLELISM": "false", "https_proxy": "http://p:1"})
    assert kept == {"VLLM_USE_DEEP_GEMM": "1", "CUDA_VISIBLE_DEVICES": "0,1", "NCCL_DEBUG": "INFO",
                    "TOKENIZERS_PARALLELISM": "false"}
    assert dropped == ["HF_ENDPOINT", "HF_TOKEN", "LD_PRELOAD", "PYTHONPATH", "VLLM_USE_MODELSCOPE", "https_proxy"]
    assert env_policy.meaningless_without(dropped) == ["PYTHONPATH", "VLLM_USE_MODELSCOPE"]
    clean = env_policy.without_secrets({**CANARIES, "PATH": "/bin", "ACTIONS_RUNTIME_TOKEN": "x", "VLLM_API_KEY": "k"})
    assert clean == {"PATH": "/bin", "VLLM_API_KEY": "k"}


def test_remote_code_sees_no_secret_and_no_network(tmp_path, tiny_models, listener):
    usable, how = sandbox.detect()
    assert usable, f"bubblewrap should be usable here (tests/install_tools.sh installs it): {how}"
    model = tmp_path / "canary-model"
    shutil.copytree(tiny_models["target"], model)
    reports = tmp_path / "work" / "logs" / "canary"  # the one place both sandboxes may write (the logs)
    reports.mkdir(parents=True)
    (model / "configuration_canary.py").write_text(
        REMOTE_CODE.replace("__PORT__", str(listener)).replace("__REPORT_DIR__", repr(str(reports))))
    config = json.loads((model / "config.json").read_text())
    config["auto_map"] = {"AutoConfig": "configuration_canary.CanaryConfig"}
    (model / "config.json").write_text(json.dumps(config))
    targets = tmp_path / "targets.toml"
    targets.write_text(DEFAULT_CPU.read_text() + f'"org/canary-model" = "{model}"\n')
    snippets, _ = catalog_of(docs_tree(tmp_path / "docs", "# C\n\n```bash\nLD_PRELOAD=/tmp/evil.so "
                                       "VLLM_LOGGING_LEVEL=DEBUG vllm serve org/canary-model --trust-remote-code "
                                       "--max-model-len 256\n```\n"))
    home = tmp_path / "home"  # the run's home holds a credential file, as a runner's may
    home.mkdir()
    (home / ".secret-token").write_text("canaryFFFF6666")
    out = tmp_path / "o.jsonl"
    proc = subprocess.run(run_argv(str(snippets), "--targets", str(targets), "--target", "nightly", "--tier", "start",
                                   "--workdir", str(tmp_path / "work"), "--cache-dir", str(CACHE), "-o", str(out)),
                          cwd=tmp_path, capture_output=True, text=True, timeout=900,
                          env={**os.environ, **CANARIES, "HOME": str(home)})
    [o] = outcomes(out)
    assert (o.verdict, o.stage) == ("PASS", "start"), (o.reason, proc.stderr[-2000:])
    assert o.evidence.env_dropped == ["LD_PRELOAD"] and o.host["sandbox"].startswith("bubblewrap")
    found = [json.loads(p.read_text()) for p in reports.glob("canary-*.json")]
    assert len(found) >= 2  # the helper (config tier) and the server (start tier) both ran the repo's code
    for seen in found:
        dump = json.dumps(seen)
        assert not any(value in dump for value in CANARIES.values()), "a secret reached the model's code"
        # the docs' LD_PRELOAD is dropped (vLLM's CPU build sets its own, to its libgomp)
        assert seen["env"].get("HF_HUB_OFFLINE") == "1" and "/tmp/evil.so" not in dump
        assert seen["host_port"].startswith("blocked")  # no network but its own loopback
        assert seen["home_secret"].startswith("hidden") and "canaryFFFF6666" not in dump  # the home is hidden
    assert any(seen["env"].get("VLLM_LOGGING_LEVEL") == "DEBUG" for seen in found)  # allowed env still passes
