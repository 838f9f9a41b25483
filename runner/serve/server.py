"""One real `vllm serve` process: its own process group, a free loopback port, a deadline.

Ready when GET /health answers 200; dead when the process exits first.  `stop()` always
kills the whole group (SIGTERM, then SIGKILL), waits, and checks that no process of the
group or session is left; on GPU it also waits for the GPU memory to come back. Its log is a
file the runner creates afresh (never through a link) and reads back only in part: the head and
the tail (runner/logscan.read_lines).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from driftmatrix.runner.argv.edit import without_options
from driftmatrix.runner.diagnosis.logscan import read_lines
from driftmatrix.runner.isolation.sandbox import spawner
from driftmatrix.runner.isolation.sandbox.files import open_new
from driftmatrix.runner.isolation.sandbox.launch import Launch
from driftmatrix.runner.settings import STOP_GRACE_S

HOST_FLAGS = {"--host", "--port", "--uds"}


def _die_with_parent() -> None:
    """In the child: get SIGKILL when the runner dies, even by SIGKILL (Linux prctl)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


# A watchdog per server, in its own session: it blocks on a pipe from the runner; EOF
# without "done" means the runner died (even by SIGKILL), and it then kills every process
# of the server's session — vLLM's engine core outlives a killed API server otherwise.
REAPER = r"""
import os, signal, sys, time
sid = int(sys.argv[1])
if "done" in sys.stdin.read():
    sys.exit(0)
def members():
    out = []
    for e in os.listdir("/proc"):
        if e.isdigit():
            try:
                f = open(f"/proc/{e}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if f[0] != "Z" and (int(f[2]) == sid or int(f[3]) == sid):
                out.append(int(e))
    return out
for sig in (signal.SIGTERM, signal.SIGKILL):
    for pid in members():
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
    end = time.time() + 5
    while members() and time.time() < end:
        time.sleep(0.2)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_args(argv: list[str], port: int) -> list[str]:
    """The snippet's arguments with its own host/port replaced by ours (loopback)."""
    return [*without_options(argv, HOST_FLAGS.__contains__), "--host", "127.0.0.1", "--port", str(port)]


def group_members(pgid: int) -> list[int]:
    """Live processes whose process group or session is `pgid` (zombies excluded)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        state, pgrp, session = fields[0], int(fields[2]), int(fields[3])
        if state != "Z" and (pgrp == pgid or session == pgid):
            found.append(int(entry))
    return found


def gpu_memory_used(devices: list[int]) -> list[int] | None:
    """MiB in use per GPU, or None without nvidia-smi."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=index,memory.used", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    used = {int(i): int(m) for i, m in (line.split(",") for line in out.stdout.strip().splitlines() if "," in line)}
    return [used.get(d, 0) for d in devices]


@dataclass
class Server:
    cmd: list[str]
    env: dict[str, str]
    log_path: Path
    port: int
    gpus: list[int] = field(default_factory=list)
    proc: subprocess.Popen | None = None
    started_at: float = 0.0
    ready_s: float | None = None
    teardown: dict = field(default_factory=dict)
    cleanup: list[str] | None = None
    """A command run after the group is gone (docker: remove the container)."""
    relay: Any = None
    """A docker target's port relay (runner/isolation/unix_relay.py), closed with the server."""
    launch: Launch | None = None
    """How the sandbox starts it (runner/sandbox): handed-in descriptors, its cgroup, the init's report."""
    sandbox_events: list[dict] = field(default_factory=list)
    """What the sandbox's init reported once it exited: a limit hit, the command's exit."""
    after_stop: Any = None
    """Called once everything of it is gone (its own compile cache kept: runner/serve/compile_cache.py)."""
    shared_gpu: bool = False
    """Other servers run on the same GPU (`run --share-gpu`): its memory after teardown says nothing
    about this one, so only the process group is checked."""

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._baseline = gpu_memory_used(self.gpus) if self.gpus and not self.shared_gpu else None
        self._log = open_new(self.log_path)
        self.started_at = time.monotonic()
        launch = self.launch

        def preexec() -> None:
            _die_with_parent()
            if launch is not None:
                launch.preexec()

        # An argv list, never a shell: `;`, `&&`, `$(...)` in a snippet stay literal arguments.
        self.proc = spawner.spawn(  # forked by a thread that outlives a job's (runner/isolation/sandbox/spawner.py)
            self.cmd,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=self.env,
            start_new_session=True,
            cwd=self.log_path.parent,
            preexec_fn=preexec,
            pass_fds=launch.pass_fds if launch else (),
        )
        if launch is not None:
            launch.started()
        self._reaper = subprocess.Popen(
            [sys.executable, "-c", REAPER, str(self.proc.pid)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait_ready(self, deadline_s: float, poll_s: float = 0.25) -> str:
        """`ready`, `exited` or `timeout`."""
        url = f"http://127.0.0.1:{self.port}/health"
        with httpx.Client(timeout=5) as client:
            while True:
                if not self.alive():
                    return "exited"
                try:
                    if client.get(url).status_code == 200:
                        self.ready_s = time.monotonic() - self.started_at
                        return "ready"
                except httpx.HTTPError:
                    pass
                if time.monotonic() - self.started_at > deadline_s:
                    return "timeout"
                time.sleep(poll_s)

    def stop(self, grace_s: float = STOP_GRACE_S) -> dict:
        if self.proc is None:
            return {}
        pgid = self.proc.pid
        t0 = time.monotonic()
        # contained: SIGTERM to the sandbox's init, which passes it to the server and, once it has
        # exited, reports (its limits, its peak use) and ends; bubblewrap itself would die of it at once
        init = _first_child(pgid) if self.launch is not None and self.launch.limits is not None else None
        for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 10.0)):
            try:
                os.kill(init, sig) if init and sig == signal.SIGTERM else os.killpg(pgid, sig)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                continue
            end = time.monotonic() + wait
            while group_members(pgid) and time.monotonic() < end:
                time.sleep(0.2)
            if not group_members(pgid):
                break
        for pid in group_members(pgid):  # stragglers that left the group's signal path
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        left = group_members(pgid)
        if self.cleanup:
            subprocess.run(self.cleanup, capture_output=True, timeout=60)
        if self.relay is not None:
            self.relay.close()
        if self.launch is not None:
            self.sandbox_events = self.launch.finished()
        if self.after_stop is not None:
            self.after_stop()
        os.close(self._log)
        try:
            self._reaper.communicate(b"done", timeout=10)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            self._reaper.kill()
        self.teardown = {
            "returncode": self.proc.returncode,
            "left_processes": len(left),
            "stop_s": round(time.monotonic() - t0, 2),
        }
        if self.sandbox_events:
            self.teardown["sandbox"] = self.sandbox_events
        if self.gpus and self._baseline is not None:
            self.teardown.update(self._gpu_back())
        return self.teardown

    def _gpu_back(self, within_s: float = 60.0) -> dict:
        end = time.monotonic() + within_s
        now = gpu_memory_used(self.gpus)
        while now and any(n > b + 512 for n, b in zip(now, self._baseline)) and time.monotonic() < end:
            time.sleep(1)
            now = gpu_memory_used(self.gpus)
        return {
            "gpu_mib_before": self._baseline,
            "gpu_mib_after": now,
            "gpu_memory_back": bool(now) and all(n <= b + 512 for n, b in zip(now, self._baseline)),
        }

    def log_lines(self) -> list[str]:
        """The log's head and tail (runner/logscan.read_lines: a flood of GBs is never read whole)."""
        return read_lines(self.log_path)

    def limit_hit(self) -> dict | None:
        """The sandbox limit that stopped it (after stop()), if one did."""
        return next((e for e in self.sandbox_events if "limit" in e), None)


def _first_child(pid: int) -> int | None:
    """bubblewrap's child (the sandbox's init), from /proc/PID/task/PID/children."""
    try:
        found = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return None
    return int(found[0]) if found else None
