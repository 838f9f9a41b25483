"""Commands for a `docker` target (GPU runners with a Docker engine): vLLM in its image, with the
promises runner/sandbox.py makes for bubblewrap, and a few more.

Every container (the server and the parse/config helper) runs from argv, never a shell, with:
no network (`--network none`: its own loopback only), a private IPC namespace with a sized
/dev/shm, all capabilities dropped and no way to gain privileges, a read-only root file system
with a size-limited /tmp (HOME and vLLM's, torch's and triton's caches point there), a non-root
uid (65534, "nobody"), limits on memory (no swap), processes/threads, file size and core
dumps, HF_HUB_OFFLINE=1, and the model folders mounted read-only at the same paths. Its
environment is only what the caller passes (minus secret-looking names) and ours; the docker
CLI's own environment never reaches it (`-e NAME=VALUE` only, never `-e NAME`).

The server's port crosses the missing network through a Unix socket: the caller makes a
runner/unix_relay.UnixRelay (127.0.0.1:port on the host) and gives us its directory, mounted at
RELAY_MOUNT; inside, runner/intarget/container_relay.py (the image's python3) binds RELAY_MOUNT/s,
forwards it to 127.0.0.1:port in the container and execs the image's `vllm serve`. Teardown
removes the container by name, since killing the `docker run` client does not stop it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from driftmatrix.runner.isolation.env_policy import without_secrets
from driftmatrix.runner.serve.helper_client import HELPER

INNER = f"/driftmatrix/{HELPER.parent.name}"
"""runner/intarget/, mounted read-only under its own name (its scripts import each other as that
package, PEP 366): the helper and the container's relay."""
INNER_HELPER = f"{INNER}/{HELPER.name}"
INNER_RELAY = f"{INNER}/container_relay.py"
RELAY_MOUNT = "/driftmatrix-relay"
"""Where the caller's relay directory is mounted (read-write: the container binds its socket)."""
USER = "65534:65534"
"""nobody:nogroup: owns nothing in the image or on the host."""
GiB = 1 << 30

INSIDE_ENV = {
    # nothing to download: every model is a local folder fetched beforehand (runner/models/hub.py)
    "HF_HUB_OFFLINE": "1",
    # the root file system is read-only: everything that writes goes to the private /tmp
    "HOME": "/tmp",
    "XDG_CACHE_HOME": "/tmp/.cache",
    "XDG_CONFIG_HOME": "/tmp/.config",
    "VLLM_CACHE_ROOT": "/tmp/vllm-cache",
    "TORCHINDUCTOR_CACHE_DIR": "/tmp/torchinductor",
    "TRITON_CACHE_DIR": "/tmp/triton",
    "TRITON_HOME": "/tmp",
    "HF_HOME": "/tmp/hf",
    "HF_MODULES_CACHE": "/tmp/hf-modules",  # a repository's remote code is written and imported here
    # uid 65534 may have no passwd entry in an image: getpass.getuser() (torch's cache names) asks these first
    "USER": "nobody",
    "LOGNAME": "nobody",
    # no network but loopback: vLLM's own address lookup would fall back to 0.0.0.0
    "VLLM_HOST_IP": "127.0.0.1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
}
"""Set in every container, over the caller's values: host paths (a target's VLLM_CACHE_ROOT, an
HF_HOME) mean nothing in the container, and the offline switch is not the caller's to turn off."""
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class ContainerLimits:
    """What one container may take from the machine (docker's cgroup and rlimit settings)."""

    memory_bytes: int = 64 * GiB
    """RAM for all its processes, /tmp and /dev/shm included (tmpfs pages are charged to the
    container); `--memory-swap` is set equal, so none of it goes to swap. Raise it for models
    whose loading needs more host memory than this."""
    pids: int = 16384
    """Processes and threads (`--pids-limit`): vLLM's workers, compile workers and thread pools
    need a few thousand on a large machine; a fork bomb stops here."""
    file_bytes: int = 2 * GiB
    """Largest file a process may write (`--ulimit fsize`): caches and JIT-built kernels are far
    smaller; it caps any single file, on /tmp and in the relay directory (the host's disk)."""
    tmp_bytes: int = 8 * GiB
    """Size of the private /tmp (`--tmpfs`): HOME and the compile caches, which start empty."""
    shm_bytes: int = 8 * GiB
    """Size of /dev/shm in its own IPC namespace (`--shm-size`): vLLM's and NCCL's shared-memory
    buffers between its processes (docker's default of 64 MiB is too small for several GPUs)."""


DEFAULT_LIMITS = ContainerLimits()


def _hardening(limits: ContainerLimits) -> list[str]:
    """The flags every container gets, whatever runs in it."""
    return [
        "--network",
        "none",
        "--ipc",
        "private",
        "--shm-size",
        str(limits.shm_bytes),
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
        "--user",
        USER,
        "--read-only",
        # exec: triton, torch and FlashInfer load the kernels they compile into their caches
        "--tmpfs",
        f"/tmp:rw,exec,nosuid,nodev,size={limits.tmp_bytes},mode=1777",
        "--pids-limit",
        str(limits.pids),
        "--memory",
        str(limits.memory_bytes),
        "--memory-swap",
        str(limits.memory_bytes),
        "--ulimit",
        f"fsize={limits.file_bytes}",
        "--ulimit",
        "core=0",
        # its output reaches us through the attached client; docker's own log copy on the host's
        # disk would grow without bound while a server from the docs writes
        "--log-driver",
        "none",
    ]


def _env(env: dict[str, str]) -> list[str]:
    """`-e NAME=VALUE` for the caller's variables (minus secrets) and ours over them; a name is
    never passed alone, which would make the docker CLI copy its own value into the container."""
    merged = {**without_secrets(env), **INSIDE_ENV}
    bad = [name for name in merged if not ENV_NAME.match(name)]
    if bad:
        raise ValueError(f"not an environment variable name: {bad}")
    return [a for k, v in merged.items() for a in ("-e", f"{k}={v}")]


def _mounts(dirs: list[str]) -> list[str]:
    return [a for d in sorted(set(dirs)) for a in ("-v", f"{d}:{d}:ro")]


def _gpus(gpu_ids: list[int]) -> list[str]:
    # The CLI reads --gpus as one CSV record, so `device=2,3` would be two fields (device 2 and a
    # count of 3): the double quotes belong to the value, not to a shell (there is none here).
    return ["--gpus", f'"device={",".join(map(str, gpu_ids))}"'] if gpu_ids else ["--gpus", "all"]


def helper_command(
    image: str, model_dirs: list[str], env: dict[str, str], limits: ContainerLimits = DEFAULT_LIMITS
) -> list[str]:
    """`docker run` for the parse/config helper on the image's python3, talking over stdin/stdout."""
    return [
        "docker",
        "run",
        "-i",
        "--rm",
        "--init",
        *_hardening(limits),
        *_env(env),
        *_mounts(model_dirs),
        "-v",
        f"{HELPER.parent}:{INNER}:ro",
        "--entrypoint",
        "python3",
        image,
        INNER_HELPER,
    ]


def server_command(
    image: str,
    name: str,
    serve_argv: list[str],
    env: dict[str, str],
    model_dirs: list[str],
    gpu_ids: list[int],
    *,
    relay_dir: Path,
    port: int,
    limits: ContainerLimits = DEFAULT_LIMITS,
) -> list[str]:
    """`docker run` for the image's `vllm serve`; `serve_argv` = the args after `vllm serve` (which
    bind 127.0.0.1:`port` in the container); `relay_dir` = the caller's UnixRelay(port).dir."""
    return [
        "docker",
        "run",
        "--rm",
        "--init",
        "--name",
        name,
        *_hardening(limits),
        *_gpus(gpu_ids),
        *_env(env),
        *_mounts(model_dirs),
        "-v",
        f"{HELPER.parent}:{INNER}:ro",
        "-v",
        f"{Path(relay_dir).resolve()}:{RELAY_MOUNT}:rw",
        "--entrypoint",
        "python3",
        image,
        INNER_RELAY,
        f"{RELAY_MOUNT}/s",
        str(port),
        "--",
        "vllm",
        "serve",
        *serve_argv,
    ]


def cleanup_command(name: str) -> list[str]:
    return ["docker", "rm", "-f", name]
