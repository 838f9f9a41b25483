"""Contain what the docs make us run: `vllm serve`, the parse/config helper, twin builds and
queries of a target environment execute model repositories' code (`--trust-remote-code`) and
docs-chosen options on machines that hold tokens and push to vLLM.

Where bubblewrap works (detected once per run, with the very options used), each such process runs
in `bwrap` as an unprivileged user of its own user namespace with every capability dropped and no
further namespaces allowed; no network but its own loopback; its own pid, IPC, UTS and cgroup
namespaces; an allow-list of the host's files read-only (runner/isolation/sandbox/binds.py); private
size-limited /tmp and /dev/shm; and a pid-1 init of ours (runner/intarget/sandbox_init.py) that
enforces the limits (runner/isolation/sandbox/limits.py) and relays the server's port.

Nothing a contained process writes is ever followed or trusted by the runner: it can write only
its private tmpfs (gone when it exits) and, for a twin build, one fresh folder that is
checked before it is accepted (runner/isolation/sandbox/output.py). Logs are files the runner opens itself
(runner/isolation/sandbox/files.py) in folders no sandbox sees; the server's port is a listening socket
handed in, not a socket file; the compile cache a job starts with is a trusted warm-up's, copied
into the job's private /tmp (runner/serve/compile_cache.py).

Modes (`DRIFTMATRIX_SANDBOX`): `auto` (contained where bubblewrap works, plain processes otherwise,
said in every outcome), `required` (no sandbox: an ERROR, nothing runs plainly), `off`.
`--unsandboxed` (run, pipeline, gate) is `off` by request, recorded on every outcome.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from driftmatrix.runner.isolation.sandbox import binds, cgroups, output, userns
from driftmatrix.runner.isolation.sandbox.cgroups import Cgroup
from driftmatrix.runner.isolation.sandbox.files import read_lines
from driftmatrix.runner.isolation.sandbox.limits import Kind, Limits, for_kind

Mode = Literal["auto", "required", "off"]
INIT = binds.INTARGET / "sandbox_init.py"
SEED_INSIDE = "/dm-seed"
INSIDE_ENV = {
    "HOME": "/tmp/home",
    "TMPDIR": "/tmp",
    "USER": binds.USER,
    "LOGNAME": binds.USER,
    "XDG_CACHE_HOME": "/tmp/home/.cache",
    "HF_HUB_OFFLINE": "1",
    "HF_MODULES_CACHE": "/tmp/hf-modules",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    "VLLM_CACHE_ROOT": "/tmp/vllm-cache",
    "TORCHINDUCTOR_CACHE_DIR": "/tmp/vllm-cache/torchinductor",
    "TRITON_CACHE_DIR": "/tmp/vllm-cache/triton",
}
"""Inside: home, caches and remote code's module cache in the private /tmp; nothing to download; no
usage reports. Torch keeps its precompiled headers in /tmp/torchinductor_<user> whatever it is told."""
CACHE_DIRS = ("vllm-cache", f"torchinductor_{binds.USER}")
"""The folders of the private /tmp that make a start warm (runner/serve/compile_cache.py)."""
_requested: dict[str, str] = {}
SIGNAL_LIMITS = {-signal.SIGXCPU: "cpu_s", -signal.SIGXFSZ: "file_mib"}
"""The command died of the signal an rlimit sends: which limit it went over."""


class SandboxError(RuntimeError):
    """A sandbox is required and the host cannot provide one (ours, not the docs'): raised by `contain`
    and `run` for every kind of contained process, so no caller can start one plainly by forgetting
    to ask."""


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
    namespaces, fds = _namespaces()
    status_r, status_w = os.pipe()
    init = [
        sys.executable,
        "-I",
        "-S",
        str(INIT),
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
                *namespaces,
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


def _namespaces() -> tuple[list[str], tuple[int, ...]]:
    """bubblewrap's namespace options and the descriptors they name. The init keeps CAP_SYS_ADMIN in
    the sandbox's own user namespace to give the command a pid namespace and /proc of its own; it
    drops it, and the command never has a capability (runner/intarget/sandbox_nest.py). On a root
    runner the user namespace is made beforehand (runner/isolation/sandbox/userns.py)."""
    user = ["--unshare-user", "--disable-userns"]
    fds: tuple[int, ...] = ()
    if os.geteuid() == 0:
        try:
            fd = userns.for_root(binds.UID)
            user, fds = ["--userns", str(fd), "--assert-userns-disabled"], (fd,)
        except OSError:
            pass  # bubblewrap's own: the command then shares the init's /proc (the init says so)
    return (
        [
            *user,
            "--uid",
            str(binds.UID),
            "--gid",
            str(binds.UID),
            "--cap-drop",
            "ALL",
            "--cap-add",
            "CAP_SYS_ADMIN",
            "--unshare-pid",
            "--unshare-net",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--hostname",
            "sandbox",
            "--die-with-parent",
            "--as-pid-1",
        ],
        fds,
    )


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


def contain(
    cmd: list[str],
    *,
    python: str,
    env: dict[str, str],
    kind: Kind,
    jobs: int = 1,
    ranks: int = 1,
    readable: list[str] = (),
    writable: dict[str, str] | None = None,
    gpu: bool = False,
    listen: socket.socket | None = None,
    port: int | None = None,
    seeds: list[tuple[Path, str]] = (),
    watched: list[str] = (),
    export: list[str] = (),
    disk_mib: int | None = None,
    operator_env: Mapping[str, str] | None = None,
) -> Launch:
    """`cmd` (run by the target interpreter `python`) in the sandbox, or plainly where there is none
    (the caller decides whether that is allowed: `driftmatrix.runner.isolation.trust`). `operator_env`: the targets
    file's env of this target (its `[env]` under the target's own), never the docs': the folders its
    PYTHONPATH / PYTHONHOME name hold the interpreter's code too and are bound read-only with its
    installation (binds.python_installation). `readable`: the job's
    inputs; `writable`: host folder -> inside path (a twin build's fresh output: the one folder of
    the runner's disk a contained process may write); `watched`: inside paths the init holds to the
    disk limits (allocated blocks and entries); `export`: folders of its private /tmp the init hands
    out after every process is gone (`Launch.exported`: a server's compile caches); `listen`: a
    listening socket on our loopback that reaches `port` inside; `seeds`: (folder, inside path) its
    init copies in before the command starts, in order (runner/serve/compile_cache.py); `ranks`: a
    server's CPU worker processes (its limits grow); `disk_mib`: the disk limit of what runs nothing of
    the docs (the trusted warm-up's caches), instead of the run's.
    SandboxError where a sandbox is required and there is none: nothing runs plainly then."""
    if not active():
        if refused := required_missing():
            raise SandboxError(f"{kind} not started: {refused}")
        return Launch(cmd, dict(env))
    limits = for_kind(kind, jobs, ranks)
    if disk_mib is not None:
        limits = replace(limits, disk_mib=disk_mib)
    status_r, status_w = os.pipe()
    os.set_inheritable(status_w, True)
    namespaces, userns_fds = _namespaces()
    fds = [status_w, *userns_fds]
    args = [
        bwrap_path() or "bwrap",
        *namespaces,
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        str(limits.tmp_mib * 2**20),
        "--tmpfs",
        "/tmp",
        "--size",
        str(limits.shm_mib * 2**20),
        "--tmpfs",
        "/dev/shm",
        *binds.system_args(gpu),
        *binds.readable_args([*binds.python_installation(python, operator_env), str(binds.INTARGET), *readable]),
    ]
    for host, inside in (writable or {}).items():
        args += ["--bind", host, inside]
    init = [python, "-I", "-S", str(INIT), "--status-fd", str(status_w), "--limits", limits.to_json()]
    for i, (folder, dest) in enumerate(seeds):
        args += ["--ro-bind", str(folder), f"{SEED_INSIDE}-{i}"]
        init += ["--seed", f"{SEED_INSIDE}-{i}:{dest}"]
    for folder in watched:
        init += ["--watch", folder]
    exported = None
    if export:
        exported = tempfile.TemporaryFile()  # on our side only: the init holds its descriptor, the command not
        os.set_inheritable(exported.fileno(), True)
        fds.append(exported.fileno())
        init += [a for folder in export for a in ("--export", folder)] + ["--export-fd", str(exported.fileno())]
    if listen is not None:
        os.set_inheritable(listen.fileno(), True)
        fds.append(listen.fileno())
        init += ["--listen-fd", str(listen.fileno()), "--port", str(port)]
    # bubblewrap's own root and /dev are tmpfs without a size: read-only once everything is mounted
    # (the private /tmp and /dev/shm are mounts of their own, and stay writable)
    argv = [*args, "--remount-ro", "/dev", "--remount-ro", "/", "--chdir", "/tmp", "--", *init, "--", *cmd]
    return Launch(
        argv,
        {**env, **INSIDE_ENV},
        tuple(fds),
        limits,
        cgroups.create(limits),
        status_r,
        [status_w, *userns_fds],
        [listen] if listen is not None else [],
        exported,
    )


def listening_socket(port: int) -> socket.socket:
    """Our loopback port for a contained server (OSError when it is taken): handed to its init."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(256)  # 16 streams connecting at once (the perf tier) must not overflow it
    return sock


def run(
    cmd: list[str],
    *,
    python: str,
    env: dict[str, str],
    kind: Kind,
    timeout: float,
    input: str | None = None,
    readable: list[str] = (),
    writable: dict[str, str] | None = None,
    jobs: int = 1,
    gpu: bool = False,
    watched: list[str] = (),
    operator_env: Mapping[str, str] | None = None,
) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """Run a short contained command to its end (an environment query, a twin build, an option
    history check): (its result with text output, what the sandbox reported). Its output goes to
    anonymous files (the file-size limit bounds them) and is read back within OUTPUT_CAP; a deadline
    is a TimeoutExpired, as with subprocess.run; SandboxError and `operator_env` as for `contain`."""
    launch = contain(
        cmd,
        python=python,
        env=env,
        kind=kind,
        jobs=jobs,
        readable=readable,
        writable=writable,
        gpu=gpu,
        watched=watched,
        operator_env=operator_env,
    )
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            launch.argv,
            env=launch.env,
            pass_fds=launch.pass_fds,
            preexec_fn=launch.preexec,
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
        launch.started()
        try:
            proc.communicate(input.encode() if input is not None else None, timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            launch.finished()
            raise
        events = launch.finished()
        text = [_capped(f) for f in (out, err)]
    return subprocess.CompletedProcess(cmd, proc.returncode, *text), events


OUTPUT_CAP = 16 * 2**20
"""What is read of a short contained command's stdout and stderr (each): its answer is one JSON line."""


def _capped(fh) -> str:
    size = fh.seek(0, os.SEEK_END)
    fh.seek(max(0, size - OUTPUT_CAP))
    return fh.read(OUTPUT_CAP).decode(errors="replace")
