"""The init of a sandbox (runner/isolation/sandbox/): pid 1 of its pid namespace, run by bubblewrap with
`--as-pid-1`, stdlib only, by the target's own interpreter (`python -I -S`: no site, so nothing in
the target environment runs before it).

    python -I -S sandbox_init.py --status-fd N --limits JSON [--listen-fd M --port P] [--seed SRC:DEST]...
        [--watch DIR]... [--export DIR --export-fd F]... -- CMD...

It
- copies the compile caches it is given (`--seed`, read-only: the trusted warm-up's, then this
  command's own from its last start) into place before the command starts;
- starts CMD in a pid namespace and /proc of its own, where the init does not exist, without any
  capability (sandbox_nest.py), with the limits that are rlimits (file size, CPU time, no core
  dumps, open files);
- holds each `--watch` folder (a build's output on the runner's disk, a server's cache in its
  private /tmp) to the disk limits, counted in allocated blocks and entries (sandbox_export.py);
- when CMD is gone, kills whatever is left, and writes the `--export` folders as a tar stream into
  `--export-fd` (a file only it holds), or nothing where they are past the disk limits;
- watches the whole namespace every 100 ms: more tasks, more memory (anonymous and shared memory of
  every process plus what the private tmpfs hold: sandbox_memory.py) or a larger log (its stdout and
  stderr files, counted in allocated blocks) than the limits allow, and every process of the
  namespace is killed (`kill(-1, SIGKILL)`); it cannot be killed from inside (the kernel drops
  SIGKILL sent to a namespace's init by its members), nor traced (not dumpable); when the command
  is gone the log is measured once more and what it holds past the limit given back;
- relays the server's port: `--listen-fd` is a listening TCP socket on the runner's loopback,
  handed in; each connection is forwarded to 127.0.0.1:PORT in this (otherwise empty) network
  namespace. No socket file exists that the contained process could replace;
- reports on `--status-fd` (a pipe only this process holds): one JSON line when a limit is hit, and
  `{"exit": status}` last. When it exits the kernel kills whatever is left in the namespace.
"""

import json
import os
import resource
import shutil
import signal
import socket
import stat
import sys
import threading
import time

if not __package__:  # run by path (a target's Python, `-I`): PEP 366, as the package this folder is,
    # so that `from . import sibling` finds the files next to this one (and import-linter sees it)
    sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = os.path.basename(os.path.dirname(os.path.abspath(__file__)))
from . import (
    fork_server,
    sandbox_export,
    sandbox_memory,
    sandbox_nest,
)

TICK_S = 0.1


def parse(argv):
    """({option: value}, the command); `--seed` may be given more than once (a list)."""
    opts, i = {"seed": [], "watch": [], "export": []}, 0
    while argv[i] != "--":
        name, value = argv[i].lstrip("-"), argv[i + 1]
        if name in ("seed", "watch", "export"):
            opts[name].append(value)
        else:
            opts[name] = value
        i += 2
    return opts, argv[i + 1 :]


def seed(src, dest="/tmp"):
    """Copy the warm cache's regular files and folders (a symlink in it is skipped: never followed)."""
    for root, dirs, files in os.walk(src):
        rel = os.path.relpath(root, src)
        target = os.path.join(dest, rel) if rel != "." else dest
        os.makedirs(target, exist_ok=True)
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
        for name in files:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                shutil.copyfile(path, os.path.join(target, name))


def set_rlimits(limits):
    mib = 2**20
    # RLIMIT_NPROC counts this user's tasks in this user namespace — this sandbox's — where the
    # runner is not root (for root the kernel ignores it; a cgroup holds the tasks instead)
    # CPU: SIGXCPU at the soft limit (the exit says which limit), SIGKILL 5 s later
    resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_s"], limits["cpu_s"] + 5))
    for res, value in (
        (resource.RLIMIT_FSIZE, limits["file_mib"] * mib),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NPROC, limits["tasks"]),
    ):
        resource.setrlimit(res, (value, value))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    cap = limits["open_files"] if hard == resource.RLIM_INFINITY else min(hard, limits["open_files"])
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, cap), cap))


def start(cmd, limits, keep_open, report):
    """Fork the command's side (sandbox_nest.py `command_side`: the command in a pid namespace of its
    own where the kernel allows it) and return its pid; its exit status is the command's. The init
    itself holds no capability afterwards (it may make no thread once it unshared a pid namespace,
    so the unsharing is the child's)."""
    pid = os.fork()
    if pid:
        try:
            sandbox_nest.drop_capabilities()
        except OSError as err:
            report({"note": f"the init kept a capability: {err}"})
        return pid
    try:
        sandbox_nest.command_side(cmd, lambda c: run_command(c, limits), keep_open)
    except BaseException as err:
        sys.stderr.write(f"driftmatrix sandbox: cannot start {cmd[0]}: {err}\n")
    os._exit(127)


def run_command(cmd, limits):
    """exec the command with the default signal handlers and the rlimits (never returns)."""
    try:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        set_rlimits(limits)
        os.execvp(cmd[0], cmd)
    except BaseException as err:
        sys.stderr.write(f"driftmatrix sandbox: cannot start {cmd[0]}: {err}\n")
    os._exit(127)


def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    for s in (dst,):
        try:
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def relay(listener, port):
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        try:
            upstream = socket.create_connection(("127.0.0.1", port), timeout=5)
            upstream.settimeout(None)
        except OSError:
            client.close()  # not listening yet: the runner sees a closed connection and retries
            continue
        threading.Thread(target=pump, args=(upstream, client), daemon=True).start()
        threading.Thread(target=pump, args=(client, upstream), daemon=True).start()


LOG_FDS = (1, 2)
"""The log: our stdout and stderr, shared with the command — a server's log file, a helper's stderr
log (its stdout is the protocol pipe), a short command's two output files. Files the runner created on
its disk; the init holds them, so it measures them (no second watcher on the runner's side)."""


def log_files():
    """{(dev, inode): (fd, stat)} of the regular files among our log descriptors (each counted once:
    a server's stdout and stderr are one file)."""
    found = {}
    for fd in LOG_FDS:
        try:
            st = os.fstat(fd)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            found.setdefault((st.st_dev, st.st_ino), (fd, st))
    return found


def log_mib():
    """How much of the runner's disk the log takes: each file's size or its allocated blocks, whichever
    is larger — space reserved with `fallocate(FALLOC_FL_KEEP_SIZE)` has blocks and no size, and no
    file-size limit applies to it (issue 57: 6.1 GiB reserved under a 16 MiB limit passed)."""
    held = sum(max(st.st_size, st.st_blocks * 512) for _, st in log_files().values())
    return held // 2**20


def trim_logs(max_mib):
    """Once every process is gone: give back what the log holds past the limit, and any space reserved
    past its end (growing a file by a byte and shrinking it back frees every block past the end), so a
    command stopped at a limit leaves no reservation on the runner's disk; then write at the end."""
    for fd, st in log_files().values():
        try:
            if st.st_size > max_mib * 2**20:
                os.ftruncate(fd, max_mib * 2**20)
            elif st.st_blocks * 512 > st.st_size:
                os.ftruncate(fd, st.st_size + 1)
                os.ftruncate(fd, st.st_size)
            os.lseek(fd, 0, os.SEEK_END)
        except OSError:
            pass


def watch(child, limits, report, peak, watched=()):
    """Wait for the command; returns its wait status's exit code (negative: the signal). `peak`
    records the most tasks and memory seen; each `watched` folder is held to the disk limits (every
    tick: the walk stops at the limit, so its cost is bounded by it)."""
    while True:
        while True:  # reap: the command, and orphans reparented to us
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return 0
            if pid == 0:
                break
            if pid == child:
                return os.waitstatus_to_exitcode(status)
        tasks, memory = sandbox_memory.usage(limits["memory_mib"], limits["tasks"])
        peak["tasks"], peak["memory_mib"] = max(peak["tasks"], tasks), max(peak["memory_mib"], memory)
        log = log_mib()
        # at the limit is over it: the kernel (cgroup, RLIMIT_NPROC) refuses the next task
        over = (
            ("tasks", tasks, limits["tasks"])
            if tasks >= limits["tasks"]
            else ("memory_mib", memory, limits["memory_mib"])
            if memory > limits["memory_mib"]
            else ("log_mib", log, limits["log_mib"])
            if log > limits["log_mib"]
            else next(filter(None, (sandbox_export.over(w, limits) for w in watched)), None)
        )
        if over:
            report({"limit": over[0], "value": over[1], "max": over[2]})
            os.kill(-1, signal.SIGKILL)
            return -signal.SIGKILL
        time.sleep(TICK_S)


def main():
    opts, cmd = parse(sys.argv[1:])
    limits = json.loads(opts["limits"])
    status = os.fdopen(int(opts["status-fd"]), "w", buffering=1)

    def report(event):
        try:
            status.write(json.dumps(event) + "\n")
        except OSError:
            pass

    fork_server.not_dumpable()  # neither ptrace nor /proc/1/mem for the contained processes
    os.makedirs("/tmp/home", exist_ok=True)
    for spec in opts["seed"]:  # SRC:DEST, in order (the later ones add to the earlier)
        src, _, dest = spec.partition(":")
        try:
            seed(src, dest or "/tmp")
        except OSError as err:
            report({"note": f"compile cache {src} not copied: {err}"})
    keep = [status.fileno()]
    listener = None
    if opts.get("listen-fd"):
        listener = socket.socket(fileno=int(opts["listen-fd"]))
        keep.append(listener.fileno())
    export_fd = int(opts["export-fd"]) if opts.get("export-fd") else None
    if export_fd is not None:
        keep.append(export_fd)
    child = start(cmd, limits, keep, report)
    sandbox_nest.forward_signals(child)
    if listener is not None:
        threading.Thread(target=relay, args=(listener, int(opts["port"])), daemon=True).start()
    peak = {"tasks": 0, "memory_mib": 0}
    stopped = []
    code = watch(child, limits, lambda event: (stopped.append(event), report(event)), peak, opts["watch"])
    end_everything()
    ended(limits, stopped, lambda event: (stopped.append(event), report(event)))
    if stopped:  # a command stopped at a limit leaves nothing behind, whatever its folders hold now
        report({"note": "nothing handed out: the command was stopped at a limit"})
    elif export_fd is not None:
        try:
            sandbox_export.export(opts["export"], export_fd, limits, report)
        except OSError as err:
            report({"note": f"the folders were not handed out: {err}"})
    report({"peak": peak})
    report({"exit": code})
    os._exit(code if code >= 0 else 128 - code)


def ended(limits, stopped, report):
    """Once every process is gone: the log measured once more (a command may reserve its space and exit
    before the next tick), what it holds past the limit given back, and the limit hit said in the log."""
    log = log_mib()
    if not stopped and log > limits["log_mib"]:
        report({"limit": "log_mib", "value": log, "max": limits["log_mib"]})
    trim_logs(limits["log_mib"])
    for hit in stopped[:1]:
        sys.stderr.write(
            f"driftmatrix sandbox: {hit['limit']} {hit['value']} over the limit of {hit['max']}: every process "
            "of this command was killed\n"
        )


def end_everything():
    """Kill every process left in the sandbox and reap them: nothing may still write when the
    folders are handed out."""
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        pass
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return
        except InterruptedError:
            continue


if __name__ == "__main__":
    main()
