"""vLLM's inspections of its own architectures, made once per target (runner/serve/model_infos.py):
a contained helper used to import vLLM a second time, in vLLM's registry subprocess, for every
architecture it met (40 such processes, ~430 CPU s, in one run of this suite)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from runhelp import CACHE

from driftmatrix.runner.isolation.sandbox import detection
from driftmatrix.runner.jobs.job import RunContext
from driftmatrix.runner.models import twins
from driftmatrix.runner.models.resolution import ModelResolver
from driftmatrix.runner.serve import helper_client, model_infos

REGISTRY_SUBPROCESS = b"vllm.model_executor.models.registry"
"""What vLLM's `_run_in_subprocess` runs (`python -m vllm.model_executor.models.registry`)."""

pytestmark = pytest.mark.skipif(not detection.active(), reason="made only where the sandbox is active")


def test_the_inspections_are_vllms_own_files_made_once_per_target(cpu_envs, tmp_path):
    ctx = RunContext(ModelResolver({}, hub=False), tmp_path, cache_dir=CACHE)
    made = model_infos.ensure(cpu_envs["nightly"], ctx)
    assert made is not None and made.name == "vllm-cache"
    files = sorted((made / "modelinfos").glob("*.json"))
    assert len(files) > 100  # every built-in architecture that imports here (0.32.0: ~290)
    llama = json.loads((made / "modelinfos" / "vllm-model_executor-models-llama-LlamaForCausalLM.json").read_text())
    assert set(llama) == {"hash", "modelinfo"} and llama["modelinfo"]["architecture"] == "LlamaForCausalLM"
    ready = made.parent / "READY"
    first = ready.stat().st_mtime_ns
    assert json.loads(ready.read_text())["inspected"] >= len(files)  # one file per module and class
    assert model_infos.ensure(cpu_envs["nightly"], ctx) == made and ready.stat().st_mtime_ns == first  # not again
    assert (
        model_infos.ensure(cpu_envs["nightly"], RunContext(ctx.resolver, tmp_path, cache_dir=ctx.cache_dir, gpus=1))
        is None
    )


def _registry_children(root: int, seen: set[int], stop: threading.Event) -> None:
    """Note every process below `root` that runs vLLM's registry subprocess (polled: each lives ~10 s)."""
    while not stop.is_set():
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit() or int(proc.name) in seen:
                continue
            try:
                if REGISTRY_SUBPROCESS in (proc / "cmdline").read_bytes() and _descends(int(proc.name), root):
                    seen.add(int(proc.name))
            except OSError:
                continue
        time.sleep(0.05)


def _descends(pid: int, root: int) -> bool:
    for _ in range(32):
        if pid == root:
            return True
        try:
            pid = int((Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            return False
        if pid <= 1:
            return False
    return False


def _registry_processes_of_a_config(env, twin: str, vllm_cache, tmp_path: Path, name: str) -> int:
    """How many registry subprocesses a contained helper starts for one config-tier request."""
    helper = helper_client.contained(env.python, dict(env.env), tmp_path / f"{name}.log", [twin], vllm_cache=vllm_cache)
    seen: set[int] = set()
    stop = threading.Event()
    helper.start()
    watcher = threading.Thread(target=_registry_children, args=(helper.proc.pid, seen, stop))
    watcher.start()
    try:
        answer = helper.ask([twin, "--max-model-len", "512"], "config")
        assert answer.result == "ok", answer.error
    finally:
        stop.set()
        watcher.join()
        helper.shutdown()
    return len(seen)


def test_a_seeded_helper_asks_vllm_no_inspection_process(cpu_envs, tmp_path):
    """A Llama twin (the warm-up's Qwen3 is not it) at the config tier: with the inspections, none; without,
    vLLM starts its own (which shows that the watcher sees them)."""
    env = cpu_envs["nightly"]
    twin = twins.ensure("meta-llama/Llama-3.1-8B-Instruct", env, CACHE).dir
    infos = model_infos.ensure(env, RunContext(ModelResolver({}, hub=False), tmp_path, cache_dir=CACHE))
    assert infos is not None
    assert _registry_processes_of_a_config(env, twin, lambda: infos, tmp_path, "seeded") == 0
    assert _registry_processes_of_a_config(env, twin, None, tmp_path, "bare") >= 1
