"""The compile cache's pruner shares its folder with other servers' (parallel jobs, two runs on one
cache): files and folders that vanish while it counts are not an error. The suite's serve fixture once
died of a FileNotFoundError there while another run pruned the same cache. A GPU run makes no warm-up."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import time

from driftmatrix.runner.builds.envs import TargetEnv
from driftmatrix.runner.builds.targets import Target
from driftmatrix.runner.isolation.sandbox import detection
from driftmatrix.runner.jobs.job import RunContext
from driftmatrix.runner.models.resolution import ModelResolver
from driftmatrix.runner.serve import compile_cache, made_once


def test_pruning_while_another_server_writes_and_prunes(tmp_path, monkeypatch):
    root = tmp_path / "own"
    monkeypatch.setattr(compile_cache, "OWN_MAX_BYTES", 64 * 1024)  # small: it prunes all the time
    stop = threading.Event()

    def churn(worker: int) -> None:  # another server: writes its cache, then prunes, as keep() does
        n = 0
        while not stop.is_set():
            folder = root / f"target-{worker}" / f"cmd-{n % 7}" / "inductor"
            try:
                folder.mkdir(parents=True, exist_ok=True)
                for i in range(20):
                    (folder / f"k{i}.cpp").write_bytes(b"x" * 2048)
            except OSError:
                pass  # the pruner took the folder away meanwhile: the server's own write-out would retry
            if n % 3 == 0:
                shutil.rmtree(folder.parent, ignore_errors=True)
            n += 1

    writers = [threading.Thread(target=churn, args=(w,)) for w in range(2)]
    for t in writers:
        t.start()
    errors: list[BaseException] = []
    deadline = time.monotonic() + 3
    rounds = 0
    try:
        while time.monotonic() < deadline:
            try:
                compile_cache._prune(root) if root.exists() else None
            except OSError as err:  # the defect: a file gone between listing and stat
                errors.append(err)
            rounds += 1
    finally:
        stop.set()
        for t in writers:
            t.join()
    assert rounds > 20 and not errors, errors[:3]
    compile_cache._prune(root)
    assert compile_cache.folder_bytes(root) <= compile_cache.OWN_MAX_BYTES + 20 * 4096 * 2  # what is left fits


def test_a_gpu_run_makes_no_warm_up(tmp_path):
    """The warm-up's server is contained without the GPU's devices: on a GPU run a CUDA build's would
    only fail, after a twin build, once per target and run (device time). None is made or tried."""
    assert detection.active(), detection.describe()  # where there is no sandbox there is no warm-up anyway
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    python = str(tmp_path / "venv" / "bin" / "python")
    target = TargetEnv(
        Target("gpu", python=python), python, [python, "-m", "vllm.entrypoints.cli.main"], info={"version": "0.21.0"}
    )
    ctx = RunContext(ModelResolver({}), tmp_path / "work", gpus=1, devices=[0], cache_dir=tmp_path / "cache")
    assert compile_cache.warm(target, ctx) is None
    assert not (tmp_path / "cache").exists() and made_once.failed(compile_cache.folder(target, ctx.cache_dir)) is None
