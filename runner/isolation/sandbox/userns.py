"""The user namespace a root runner's sandboxes live in.

Run by root, bubblewrap builds the sandbox's mount namespace from the host's side, and a mount
namespace made inside it (the command's own, for a /proc where the init does not exist:
runner/intarget/sandbox_nest.py) then holds locked mounts, and the kernel refuses it a fresh /proc.
So on a root runner the sandbox is given a user namespace made here instead (`bwrap --userns FD`),
in which bubblewrap builds everything:

    host ── U1 (root → root; it may hold one user namespace more) ── U2 (the sandbox's user → U1's root)

U2 maps the sandbox's user (binds.UID) to the host's root, as `--unshare-user --uid` does; U1's
`user.max_user_namespaces` is 1 and U2 uses it, so nothing inside can make another user namespace —
what `--disable-userns` does for bubblewrap's own (it cannot be combined with `--userns`;
`--assert-userns-disabled` checks it instead). Made afresh for every sandbox (a few milliseconds):
the kernel counts RLIMIT_NPROC per user and user namespace, so sandboxes sharing one would share
their task limit. The descriptor keeps it until bubblewrap has joined it.
"""

from __future__ import annotations

import ctypes
import os
import time

CLONE_NEWUSER = 0x10000000
_LIBC = ctypes.CDLL(None, use_errno=True)
"""Loaded before any fork: a forked child of a threaded runner must not take the loader's lock."""


def _unshare_user() -> None:
    if _LIBC.unshare(CLONE_NEWUSER) != 0:
        os._exit(10 + ctypes.get_errno() % 100)


def _map(pid: int, inside: int, outside: int) -> None:
    with open(f"/proc/{pid}/uid_map", "w") as fh:
        fh.write(f"{inside} {outside} 1\n")
    with open(f"/proc/{pid}/setgroups", "w") as fh:
        fh.write("deny")
    with open(f"/proc/{pid}/gid_map", "w") as fh:
        fh.write(f"{inside} {outside} 1\n")


def _inner(uid: int, go_r: int, ready_w: int) -> None:
    """The first child: U1, then a child of its own in U2, whose maps it writes (U2's parent is U1)."""
    _unshare_user()
    os.read(go_r, 1)  # the runner wrote U1's maps
    with open("/proc/sys/user/max_user_namespaces", "w") as fh:
        fh.write("1")
    made_r, made_w = os.pipe()
    hold_r, hold_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(hold_w)
        os.close(made_r)
        _unshare_user()
        os.write(made_w, b"x")
        os.read(hold_r, 1)  # until U2 is held by the runner and the first child lets go
        os._exit(0)
    os.close(hold_r)
    os.close(made_w)
    os.read(made_r, 1)
    _map(pid, uid, 0)
    os.write(ready_w, str(pid).encode())
    os.read(go_r, 1)  # the runner holds U2 now
    os.close(hold_w)
    os.waitpid(pid, 0)
    os._exit(0)


def for_root(uid: int) -> int:
    """A descriptor of U2 (see above), whose `uid` is the host's root; OSError where it cannot be made."""
    go_r, go_w = os.pipe()
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(go_w)
            os.close(ready_r)
            _inner(uid, go_r, ready_w)
        finally:
            os._exit(1)
    os.close(go_r)
    os.close(ready_w)
    try:
        _wait_unshared(pid)
        _map(pid, 0, 0)
        os.write(go_w, b"x")
        got = os.read(ready_r, 32)
        if not got:
            raise OSError("the user namespaces for the sandbox could not be made")
        fd = os.open(f"/proc/{int(got)}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
        os.write(go_w, b"x")
        return fd
    finally:
        os.close(go_w)
        os.close(ready_r)
        os.waitpid(pid, 0)


def _wait_unshared(pid: int) -> None:
    """Until the child is in a user namespace of its own (its maps can be written only then)."""
    own = os.readlink("/proc/self/ns/user")
    for _ in range(500):
        try:
            if os.readlink(f"/proc/{pid}/ns/user") != own:
                return
        except OSError:
            break
        time.sleep(0.002)
    raise OSError("the sandbox's user namespace was not made")
