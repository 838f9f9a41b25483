"""A zygote: a child of the fork server that has built the engine config of one model of the run's own
(the model alone, no option of any command) and forks the processes of that model's commands. Stdlib
only, run in the target environment.

Why: what vLLM and transformers load for a model — its tokenizer (0.3-0.6 s for a Llama 3 or a
Qwen2.5-VL), its processor, its config — was loaded again by every command's process, where the old
long-lived helper loaded it once per model (at the price of sharing everything else between commands).
A zygote holds only what the model's own files give: the runner chose the folder (a twin, a model-map
entry, a fetched model), no command's option reached it, and a model whose config needs its own code
gets no zygote (its warm-up, without --trust-remote-code, fails). Each command still runs in a fresh
child, and what it changes dies with it.

This is the fork server's side of the pipe pair it shares with one zygote: a request line written, one
answer line read, and after each answer a notice of the child the zygote forked for the next command
(the fork server spares it when it sweeps)."""

import json
import os
import select
import signal
import time

LINE_MAX = 64 * 2**20 + 4096
"""The longest line a zygote writes: an answer it relayed (the fork server's ANSWER_MAX) and its envelope."""
NOTICE_S = 30.0
"""How long the fork server waits for a zygote's notice after an answer (a fork and a reap)."""


class Zygote:
    """The fork server's handle on one zygote: its pid, the pipe its requests go down and the pipe its
    lines come back on."""

    def __init__(self, pid, request_fd, answer_fd):
        self.pid, self.request_fd, self.answer_fd = pid, request_fd, answer_fd
        self.buf, self.waiting, self.pending = bytearray(), None, False

    def ready(self, timeout):
        """Whether its warm-up succeeded (its first line), waiting at most `timeout` seconds."""
        line = self.line(timeout)
        try:
            ready = json.loads(line).get("ready") is True if line else False
        except ValueError:
            ready = False
        return ready and self.settle()

    def ask(self, line):
        """Its answer line for the request `line`, or None when it is gone (killed, crashed) before
        giving one: the fork server then asks a child of its own."""
        try:
            os.write(self.request_fd, line.encode() if isinstance(line, str) else line)
        except OSError:
            return None
        self.pending = True
        return self.line(None)

    def settle(self):
        """Read the notice of the child it forked for its next command (False: it is gone or broken)."""
        if not self.pending and self.waiting is not None:
            return True
        line = self.line(NOTICE_S)
        try:
            waiting = json.loads(line).get("waiting") if line else None
        except ValueError:
            waiting = None
        self.pending, self.waiting = False, waiting if isinstance(waiting, int) else None
        return self.waiting is not None

    def spared(self):
        """The processes the fork server's sweep leaves alive: the zygote and its waiting child."""
        return {self.pid} | ({self.waiting} if self.waiting else set())

    def line(self, timeout):
        """One line it wrote (without the newline), or None at end of file, past LINE_MAX or after
        `timeout` seconds (None: no deadline, as for the fork server's own children)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self.buf:
            if len(self.buf) > LINE_MAX:
                return None
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return None
            if not select.select([self.answer_fd], [], [], left)[0]:
                continue
            chunk = os.read(self.answer_fd, 1 << 16)
            if not chunk:
                return None
            self.buf += chunk
        line, _, rest = bytes(self.buf).partition(b"\n")
        self.buf = bytearray(rest)
        return line

    def stop(self):
        """Killed with the child it was keeping for its next command, and collected."""
        for pid in self.spared():
            try:
                os.killpg(pid, signal.SIGKILL)  # each is the leader of a group of its own
            except (ProcessLookupError, PermissionError):
                pass
        for fd in (self.request_fd, self.answer_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
