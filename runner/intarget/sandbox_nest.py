"""The command's own pid namespace and /proc inside the sandbox, and no capability for it — run by the
sandbox's init (sandbox_init.py), stdlib only (ctypes for the three system calls Python 3.11 lacks).

Why: the init is pid 1 of the sandbox and holds what the command must not touch — the status pipe,
the server's listening socket, the compile-cache export file. On a root runner the command's user is
the host's root, so it could list the init's /proc/1/fd. So the init's child (`command_side`) lets go of
everything the init holds and unshares a pid namespace (the init itself could then make no thread);
the first process of that namespace (`reaper`) mounts a fresh /proc in a mount namespace of its own —
there the init does not exist — starts the command, forwards signals to it, reaps orphans and hands
the command's exit status back, and the init's child ends as the command ended.

The init needs CAP_SYS_ADMIN in the sandbox's user namespace for that (bubblewrap `--cap-add`); the
command never has a capability: the reaper clears every capability set before it starts it, and
checks. Where the kernel refuses the namespace (an AppArmor profile that denies capabilities in user
namespaces), the command runs beside the init as before, still without capabilities, and the init
says so (`{"nested": false, "why": …}`).
"""

import ctypes
import json
import os
import signal

CLONE_NEWNS, CLONE_NEWPID = 0x00020000, 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
CAPABILITY_V3 = 0x20080522
PROC_COVERED = ("sys", "sysrq-trigger", "irq", "bus")
"""What bubblewrap makes read-only in the /proc it mounts: made so again in the command's own."""
_libc = ctypes.CDLL(None, use_errno=True)


def _call(what, result):
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def new_pid_namespace():
    """The next child of the caller is pid 1 of a new pid namespace (OSError where refused)."""
    _call("unshare(CLONE_NEWPID)", _libc.unshare(CLONE_NEWPID))


def own_proc():
    """In the new namespace's first process: a mount namespace of its own and a /proc that shows only
    this pid namespace (the covers bubblewrap made, made again)."""
    _call("unshare(CLONE_NEWNS)", _libc.unshare(CLONE_NEWNS))
    _call("make mounts private", _libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None))
    _call("mount /proc", _libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None))
    for name in PROC_COVERED:
        path = f"/proc/{name}".encode()
        if os.path.exists(path):
            _call(f"bind {name}", _libc.mount(path, path, None, MS_BIND | MS_REC, None))
            _call(
                f"read-only {name}",
                _libc.mount(
                    path, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, None
                ),
            )


def drop_capabilities():
    """Clear the bounding (where allowed), ambient, permitted, effective and inheritable sets, then
    check: OSError unless this process holds no capability at all."""
    for cap in range(64):
        _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # needs CAP_SETPCAP; without it the set stays, unusable
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(CAPABILITY_V3, 0)
    _call("capset", _libc.capset(header, (ctypes.c_uint32 * 6)()))
    with open("/proc/self/status") as fh:
        held = {k: v.strip() for k, _, v in (line.partition(":") for line in fh) if k in ("CapPrm", "CapEff", "CapAmb")}
    if any(int(v, 16) for v in held.values()):
        raise OSError(f"capabilities still held: {held}")


def command_side(cmd, exec_command, keep_open):
    """The init's child (never returns): says on the init's status pipe (`keep_open[0]`) whether the
    command gets a pid namespace of its own, lets go of what the init holds, then either becomes the
    command (no namespace: still without capabilities) or starts the namespace's reaper, forwards
    signals to it and ends as the command ended — the same exit code or the same signal."""
    try:
        new_pid_namespace()
        why = None
    except OSError as err:
        why = str(err)
    os.write(keep_open[0], (json.dumps({"nested": why is None, **({"why": why} if why else {})}) + "\n").encode())
    for fd in keep_open:
        os.close(fd)
    if why is not None:
        drop_capabilities()
        exec_command(cmd)
    code_r, code_w = os.pipe()
    first = os.fork()
    if first == 0:
        os.close(code_r)
        own_proc()
        drop_capabilities()
        reaper(cmd, exec_command, code_w)
    os.close(code_w)
    drop_capabilities()
    forward_signals(first)
    while True:
        try:
            _, status = os.waitpid(first, 0)
            break
        except InterruptedError:
            continue
    text = os.read(code_r, 64).decode()
    _end_as(int(text) if text.lstrip("-").isdigit() else os.waitstatus_to_exitcode(status))


def forward_signals(pid):
    """What stops the sandbox (SIGTERM, SIGINT, SIGHUP) is passed on to `pid`."""

    def forward(sig, _frame):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, forward)


def _end_as(code):
    """Exit with the command's code, or die of its signal (the init reads which limit an rlimit's
    signal was), without a core file."""
    if code >= 0:
        os._exit(code)
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
    os._exit(128 - code)


def reaper(cmd, exec_command, status_w):
    """Pid 1 of the command's namespace (never returns): start the command, forward the signals the
    init forwards, reap every orphan, and when the command ends write its exit code (negative: the
    signal) to `status_w` and exit — the kernel then kills what is left in the namespace."""
    child = os.fork()
    if child == 0:
        os.close(status_w)  # the command cannot say what its own exit was
        exec_command(cmd)  # never returns

    forward_signals(child)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(0)
        except InterruptedError:
            continue
        if pid == child:
            os.write(status_w, str(os.waitstatus_to_exitcode(status)).encode())
            os._exit(0)
