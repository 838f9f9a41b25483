"""Whether code from the docs can be contained on this machine, and whether it must be: the mode
asked for and bubblewrap detected once per process, by running the very options `contain`
(runner/isolation/sandbox/__init__.py) uses.

Modes (`DRIFTMATRIX_SANDBOX`): `auto` (contained where bubblewrap works, plain processes otherwise,
said in every outcome), `required` (no sandbox: an ERROR, nothing runs plainly), `off`.
`--unsandboxed` (run, pipeline, gate) is `off` by request, recorded on every outcome.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from typing import Literal

from driftmatrix.runner.isolation.sandbox import binds
from driftmatrix.runner.isolation.sandbox.files import read_lines
from driftmatrix.runner.isolation.sandbox.limits import for_kind
from driftmatrix.runner.isolation.sandbox.namespaces import namespaces

Mode = Literal["auto", "required", "off"]
_requested: dict[str, str] = {}


def set_mode(mode: Mode, why: str) -> None:
    """Set the mode for this process (`--unsandboxed`: off; `gate`: required), overriding the
    environment; `why` is said in every outcome."""
    _requested.update(mode=mode, why=why)
    detect.cache_clear()


def mode() -> tuple[Mode, str]:
    if _requested:
        return _requested["mode"], _requested["why"]  # type: ignore[return-value]
    raw = os.environ.get("DRIFTMATRIX_SANDBOX", "auto").strip().lower() or "auto"
    return (raw if raw in ("auto", "required", "off") else "required"), f"DRIFTMATRIX_SANDBOX={raw}"  # type: ignore


def bwrap_path() -> str | None:
    """`DRIFTMATRIX_BWRAP` (a path; tests name a missing one to see the refusals), else `bwrap` on PATH."""
    given = os.environ.get("DRIFTMATRIX_BWRAP")
    if given is not None:
        return given if os.access(given, os.X_OK) else None
    return shutil.which("bwrap")


@functools.lru_cache(maxsize=1)
def detect() -> tuple[bool, str]:
    """(contained, how processes from the docs run here) — asked once per process, by running the
    very options `contain()` uses."""
    chosen, why = mode()
    if chosen == "off":
        return False, f"none: {why} (plain processes, by request)"
    bwrap = bwrap_path()
    if not bwrap:
        return False, "none: bubblewrap (bwrap) is not installed (plain processes)"
    bwrap_namespaces, fds = namespaces()
    status_r, status_w = os.pipe()
    init = [
        sys.executable,
        "-I",
        "-S",
        str(binds.INIT),
        "--status-fd",
        str(status_w),
        "--limits",
        for_kind("query").to_json(),
        "--",
        "/usr/bin/env",
        "true",
    ]
    try:
        probe = subprocess.run(
            [
                bwrap,
                *bwrap_namespaces,
                *binds.system_args(gpu=False),
                *binds.readable_args([*binds.python_installation(sys.executable), str(binds.INTARGET)]),
                "--proc",
                "/proc",
                "--dev",
                "/dev",
                "--",
                *init,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            pass_fds=(*fds, status_w),
        )
    finally:
        for fd in (status_w, *fds):
            os.close(fd)
        events = read_lines(status_r)
    if probe.returncode:
        return (
            False,
            f"none: bubblewrap cannot make its namespaces here ({probe.stderr.strip()[-300:]}) (plain processes)",
        )
    version = subprocess.run([bwrap, "--version"], capture_output=True, text=True).stdout.strip()
    nested = next((e for e in events if "nested" in e), {})
    proc = (
        "own pid namespace and /proc for the command (the init not in it)"
        if nested.get("nested")
        else f"the command shares the init's pid namespace ({nested.get('why') or 'not reported'})"
    )
    return True, (
        f"{version or 'bubblewrap'}: unprivileged user without capabilities, no network but loopback, "
        f"own pid/ipc/uts namespaces, {proc}, allow-listed files read-only, private /tmp, limits"
    )


def describe() -> str:
    return detect()[1]


def active() -> bool:
    return detect()[0]


def required_missing() -> str | None:
    """Why nothing may run plainly: a sandbox is required and there is none."""
    usable, how = detect()
    chosen, why = mode()
    if not usable and chosen == "required":
        return (
            f"a sandbox is required ({why}) but {how}; install bubblewrap (`apt-get install bubblewrap`) and allow "
            "it user namespaces (the guide: docs/guide/security.md)"
        )
    return None


def how_to_get() -> str:
    return (
        "install bubblewrap (Debian/Ubuntu: `sudo apt-get install bubblewrap`; Ubuntu 24.04 also needs "
        "an AppArmor profile allowing it user namespaces: the guide, docs/guide/security.md)"
    )
