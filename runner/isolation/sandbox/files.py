"""Reading what a contained process gives back, and writing where it cannot reach, without trusting
it: every read has a deadline and a size cap; every file the runner writes for it is created
afresh, never through a link.

- `open_new(path)`: a log or report file, created with O_EXCL|O_NOFOLLOW (a stale one from an
  earlier run in the same folder is unlinked first: unlink never follows a link) in a folder the
  runner made and no sandbox sees;
- `read_line(fd, deadline, cap)`: one protocol line from a pipe, within a deadline and a size —
  a half line or a silent process is an error for that job, never a hung run;
- `read_lines(fd)`: what an init's status pipe holds now, without blocking.
"""

from __future__ import annotations

import json
import os
import select
import time
from pathlib import Path

LINE_CAP = 64 * 2**20
"""The longest protocol line accepted from a helper (an answer with warnings and a traceback is
KBs; a flood is a protocol error)."""
STATUS_CAP = 64 * 2**10
"""What is read from an init's status pipe (a few short JSON lines)."""


class ProtocolError(RuntimeError):
    """A contained process did not answer within the deadline, sent too much, or not a line."""


def open_new(path: Path) -> int:
    """A fresh file for the runner to write (O_EXCL|O_NOFOLLOW, 0600): returns the descriptor."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


def read_tail(path: Path, max_bytes: int) -> bytes:
    """The last `max_bytes` of a file the runner wrote (a log), opened without following a link."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        size = os.fstat(fd).st_size
        os.lseek(fd, max(0, size - max_bytes), os.SEEK_SET)
        chunks, left = [], max_bytes
        while left > 0 and (chunk := os.read(fd, min(left, 2**20))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


class LineReader:
    """Lines from a pipe, each within a deadline and a size; keeps what followed a line."""

    def __init__(self, fd: int, cap: int = LINE_CAP):
        self.fd, self.cap, self.buffer = fd, cap, b""

    def read_line(self, timeout: float) -> bytes:
        end = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = end - time.monotonic()
            if left <= 0:
                raise ProtocolError(
                    f"no whole line within {timeout:.0f} s"
                    + (f" (a partial line of {len(self.buffer)} bytes)" if self.buffer else "")
                )
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                raise EOFError("the process closed its end" + (" after a partial line" if self.buffer else ""))
            self.buffer += chunk
            if len(self.buffer) > self.cap and b"\n" not in self.buffer:
                raise ProtocolError(f"a line longer than {self.cap} bytes")
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line


def read_lines(fd: int) -> list[dict]:
    """The JSON lines an init's status pipe holds (it has exited or is about to), then close it."""
    data = b""
    try:
        os.set_blocking(fd, False)
        end = time.monotonic() + 2
        while len(data) < STATUS_CAP and time.monotonic() < end:
            ready, _, _ = select.select([fd], [], [], max(0.0, end - time.monotonic()))
            if not ready:
                break
            try:
                chunk = os.read(fd, STATUS_CAP - len(data))
            except BlockingIOError:
                break
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    events = []
    for line in data.decode(errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events
