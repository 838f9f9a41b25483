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

Whether there is a sandbox here and whether one is required (the modes): detection.py; bubblewrap's
namespace options: namespaces.py; one contained process, started and read back: launch.py. Here:
`contain` (how to start one) and `run` (a short one, to its end).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from driftmatrix.runner.isolation.sandbox import binds, cgroups, detection
from driftmatrix.runner.isolation.sandbox.launch import Launch
from driftmatrix.runner.isolation.sandbox.limits import Kind, for_kind
from driftmatrix.runner.isolation.sandbox.namespaces import namespaces

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
    "DRIFTMATRIX_CONTAINED": "1",
    "TORCHINDUCTOR_CACHE_DIR": "/tmp/vllm-cache/torchinductor",
    "TRITON_CACHE_DIR": "/tmp/vllm-cache/triton",
}
"""Inside: home, caches and remote code's module cache in the private /tmp; nothing to download; no
usage reports; DRIFTMATRIX_CONTAINED tells the helper's fork server (runner/intarget/fork_server.py) that
its pid, IPC and scratch are the sandbox's own to sweep. Torch keeps its precompiled headers in /tmp/torchinductor_<user> whatever it is told."""
CACHE_DIRS = ("vllm-cache", f"torchinductor_{binds.USER}")
"""The folders of the private /tmp that make a start warm (runner/serve/compile_cache.py)."""


class SandboxError(RuntimeError):
    """A sandbox is required and the host cannot provide one (ours, not the docs'): raised by `contain`
    and `run` for every kind of contained process, so no caller can start one plainly by forgetting
    to ask."""


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
    if not detection.active():
        if refused := detection.required_missing():
            raise SandboxError(f"{kind} not started: {refused}")
        return Launch(cmd, dict(env))
    limits = for_kind(kind, jobs, ranks)
    if disk_mib is not None:
        limits = replace(limits, disk_mib=disk_mib)
    status_r, status_w = os.pipe()
    os.set_inheritable(status_w, True)
    bwrap_namespaces, userns_fds = namespaces()
    fds = [status_w, *userns_fds]
    args = [
        detection.bwrap_path() or "bwrap",
        *bwrap_namespaces,
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
    init = [python, "-I", "-S", str(binds.INIT), "--status-fd", str(status_w), "--limits", limits.to_json()]
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
