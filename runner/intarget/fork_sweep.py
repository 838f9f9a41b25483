"""What the fork server (fork_server.py) sweeps after each command's process, inside a sandbox of the
helper's own: every other process of its pid namespace, SysV shared memory, and the private /tmp and
/dev/shm put back as they were. Stdlib only, run in the target environment."""

import os
import shutil
import signal
import stat
import time

SCRATCH = ("/tmp", "/dev/shm")
"""What a contained child may write: the sandbox's private tmpfs mounts."""
SNAPSHOT_MAX = 256 * 2**20
"""The most the parent holds in memory to put the scratch back (a warm vLLM cache is a few MB)."""


def reap():
    """Collect every child that ended (the parent may be a namespace's reaper of orphans); a child
    collected here before its own wait() is answered for there."""
    while True:
        try:
            done, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if not done:
            return


def ancestors():
    found, pid = {os.getpid()}, os.getpid()
    while pid > 1:
        try:
            with open(f"/proc/{pid}/status") as fh:
                pid = next(int(ln.split()[1]) for ln in fh if ln.startswith("PPid:"))
        except (OSError, StopIteration, ValueError):
            break
        found.add(pid)
    return found | {1}


def kill_all_but_us(spare=frozenset()):
    """Every process of the sandbox's pid namespace but the parent, its ancestors and `spare` (a daemon
    a child left, whatever group or session it made), and wait (at most 2 s) until each has ended: a
    killed process may still be exiting — it runs nothing more, but its writes are not over."""
    keep = ancestors() | set(spare)
    victims = [int(name) for name in os.listdir("/proc") if name.isdigit() and int(name) not in keep]
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + 2
    while victims and time.monotonic() < deadline:
        reap()
        victims = [pid for pid in victims if running(pid)]
        if victims:
            time.sleep(0.005)


def running(pid):
    """Not yet ended: neither gone nor a zombie (the state field of /proc/PID/stat)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def remove_shm_segments():
    """SysV shared memory outlives its processes in the sandbox's own IPC namespace: remove it all."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        with open("/proc/sysvipc/shm") as fh:
            ids = [int(ln.split()[1]) for ln in list(fh)[1:] if ln.strip()]
    except (OSError, ValueError, IndexError):
        return
    for shmid in ids:
        libc.shmctl(shmid, 0, None)  # IPC_RMID


def changes(before, now):
    """A few of the paths that differ (for the log)."""
    paths = sorted(p for p in before.keys() | now.keys() if before.get(p) != now.get(p))
    return ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")


def fingerprint():
    """What the scratch holds, by path: (kind, mode, size, mtime) — any change a child makes shows."""
    prints = {}
    for top in SCRATCH:
        for root, dirs, files in os.walk(top):
            for name in dirs + files:
                path = os.path.join(root, name)
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                prints[path] = (stat.S_IFMT(st.st_mode), st.st_mode, st.st_size, st.st_mtime_ns)
    return prints


class Snapshot:
    """The scratch as the parent left it, in the parent's memory (no child can reach it)."""

    def __init__(self, entries, prints):
        self.entries, self.prints = entries, prints

    def restore(self):
        for top in SCRATCH:
            for name in os.listdir(top):
                path = os.path.join(top, name)
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    try:
                        os.unlink(path)
                    except OSError:
                        pass
        for path, (kind, _, content) in self.entries:
            if kind == "dir":
                os.makedirs(path, mode=0o700, exist_ok=True)
            elif kind == "link":
                os.symlink(content, path)
            else:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
                with os.fdopen(fd, "wb") as fh:
                    fh.write(content)
        for path, (kind, mode, _) in reversed(self.entries):  # a folder's own mode last: it may forbid writing
            if kind != "link":
                os.chmod(path, stat.S_IMODE(mode), follow_symlinks=False)
        self.prints = fingerprint()  # mtimes are new: what the next child must leave as it found


def snapshot():
    """The scratch now, or None where it is too large to hold (then it is not put back)."""
    entries, size = [], 0
    for top in SCRATCH:
        for root, dirs, files in os.walk(top):
            for name in sorted(dirs) + sorted(files):
                path = os.path.join(root, name)
                st = os.lstat(path)
                if stat.S_ISLNK(st.st_mode):
                    entries.append((path, ("link", st.st_mode, os.readlink(path))))
                elif stat.S_ISDIR(st.st_mode):
                    entries.append((path, ("dir", st.st_mode, None)))
                elif stat.S_ISREG(st.st_mode):
                    size += st.st_size
                    if size > SNAPSHOT_MAX:
                        return None
                    with open(path, "rb") as fh:
                        entries.append((path, ("file", st.st_mode, fh.read())))
    entries.sort(key=lambda e: e[0].count("/"))  # folders before what they hold
    return Snapshot(entries, fingerprint())
