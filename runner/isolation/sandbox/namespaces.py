"""bubblewrap's namespace options: an unprivileged user of its own user namespace with every
capability dropped (but the one its init needs for a moment) and no further namespaces allowed, no
network but its own loopback, its own pid, IPC, UTS and cgroup namespaces."""

from __future__ import annotations

import os

from driftmatrix.runner.isolation.sandbox import binds, userns


def namespaces() -> tuple[list[str], tuple[int, ...]]:
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
