"""How one contained process is started and what is read back once it exited: which limit stopped
it, if one did (its init's report, an rlimit's signal, the kernel's memory limit), and the folders
its init handed out (runner/isolation/sandbox/output.py)."""

from __future__ import annotations

import os
import signal
import socket
from dataclasses import dataclass, field
from pathlib import Path

from driftmatrix.runner.isolation.sandbox import output
from driftmatrix.runner.isolation.sandbox.cgroups import Cgroup
from driftmatrix.runner.isolation.sandbox.files import read_lines
from driftmatrix.runner.isolation.sandbox.limits import Limits

SIGNAL_LIMITS = {-signal.SIGXCPU: "cpu_s", -signal.SIGXFSZ: "file_mib"}
"""The command died of the signal an rlimit sends: which limit it went over."""


@dataclass
class Launch:
    """How to start one contained process: `subprocess.Popen(argv, env=env, pass_fds=pass_fds)`,
    then `started()`; `status()` after it exited says which limit stopped it, if one did."""

    argv: list[str]
    env: dict[str, str]
    pass_fds: tuple[int, ...] = ()
    limits: Limits | None = None
    """None: a plain process (no sandbox)."""
    cgroup: Cgroup | None = None
    """Where the kernel holds its tasks and memory (runner/isolation/sandbox/cgroups.py), when one could be made."""
    _status_r: int | None = None
    _closing: list[int] = field(default_factory=list)
    _sockets: list[socket.socket] = field(default_factory=list)
    export_file: object | None = None
    """Where its init writes the `export` folders (a tar stream) once every process is gone."""

    def preexec(self) -> None:
        """In the child before exec (Popen's preexec_fn): join the cgroup."""
        if self.cgroup is not None:
            self.cgroup.join()

    def started(self) -> None:
        """Close our copies of what was handed in (the init's status pipe, the listening socket)."""
        for fd in self._closing:
            try:
                os.close(fd)
            except OSError:
                pass
        for sock in self._sockets:
            sock.close()
        self._closing.clear()
        self._sockets.clear()

    def finished(self) -> list[dict]:
        """After the process exited: what the init reported (a limit hit, the command's exit) and the
        kernel's memory limit if it struck; the cgroup is removed. Once; later calls return []."""
        events = read_lines(self._status_r) if self._status_r is not None else []
        self._status_r = None
        for event in list(events):  # an rlimit's signal: the exit says which limit it was
            if event.get("exit") in SIGNAL_LIMITS and not any("limit" in e for e in events) and self.limits:
                name = SIGNAL_LIMITS[event["exit"]]
                events.append({"limit": name, "value": None, "max": getattr(self.limits, name)})
        if self.cgroup is not None:
            if self.cgroup.oom_killed() and not any("limit" in e for e in events):
                events.append(
                    {
                        "limit": "memory_mib",
                        "value": None,
                        "max": self.limits.memory_mib if self.limits else None,
                        "by": "kernel",
                    }
                )
            self.cgroup.remove()
            self.cgroup = None
        return events

    def exported(self, dest: Path, max_bytes: int) -> bool:
        """After `finished()`: unpack what the init handed out into the fresh folder `dest` (True), or
        False where it handed out nothing (a limit, no folder) or something that is not plain files
        and folders (runner/isolation/sandbox/output.py `unpack`)."""
        exported, self.export_file = self.export_file, None
        if exported is None:
            return False
        with exported:
            if exported.seek(0, os.SEEK_END) == 0:
                return False
            exported.seek(0)
            try:
                output.unpack(exported, dest, max_bytes)
            except output.UntrustedOutput:
                return False
        return True
