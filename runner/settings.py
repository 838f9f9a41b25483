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


def cache_dir() -> Path:
    """Target environments, sdists, twins, configs: `$DRIFTMATRIX_CACHE`, else
    `$XDG_CACHE_HOME/driftmatrix`, else `~/.cache/driftmatrix`."""
    base = os.environ.get("DRIFTMATRIX_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "driftmatrix")
    return Path(base)
