"""The stream guard: stdout and stderr made inert line by line where a CI log reads them.

`driftmatrix` runs every subcommand inside `guard_stdio()` (driftmatrix/cli.py `main`). A stream
that is not a terminal (a pipe, a file, GitHub's runner reading a step) is wrapped: each line
written through it — by `print`, by rich (after rich wrapped or folded a long text, which can move
a `::` to the start of a line), by a library — leaves with its control characters stripped and its
workflow commands defused (common/inert.py `strip_controls`, `defuse_commands`), as the runner will
split it, and its format characters (bidi controls, zero-width characters) shown escaped
(`inert.shown_invisible`). The texts printed are made inert where they are printed too
(`inert.terminal`, `inert.console_markup`): on a terminal, where the guard stays out of the way of rich's own colours
and live progress, that is what keeps an ESC sequence from the docs off the screen.

driftmatrix's own workflow commands (`inert.workflow_command`) pass the guard through `emit`.
Bytes written to a stream's `.buffer` bypass it: nothing in driftmatrix prints docs text that way.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import TextIO

from driftmatrix.common.inert import WORD_JOINER, defuse_commands, strip_controls


class InertStream:
    """A text stream in front of `raw` that writes every line inert. Nothing is held back but a
    word joiner that ends a piece (the next character decides whether it is driftmatrix's own or
    shown escaped, `inert.shown_invisible`; it is zero-width): a joiner goes right before the
    character that completes `::` or `##[`, so a line can be written in pieces (rich writes a
    line's segments, `print` its newline apart) and flushed at any time."""

    def __init__(self, raw: TextIO):
        self.raw = raw
        self._line = ""
        """The current line as written so far; once its start is decided only its last two characters
        (all that `##[` needs), behind two placeholder ones that cannot start a command."""
        self._tail = ""
        """The last characters written (what decides a word joiner at the start of the next piece)."""
        self._held = ""

    def write(self, text: str) -> int:
        written = len(text)
        text, self._held = self._held + text, ""
        if text.endswith(WORD_JOINER):
            text, self._held = text[:-1], WORD_JOINER
        shown = strip_controls(text, self._tail)
        self._tail = (self._tail + shown)[-4:]
        out = []
        for i, part in enumerate(shown.split("\n")):
            if i:
                out.append("\n")
                self._line = ""
            line = self._line + part
            out.append(defuse_commands(line, len(self._line)))
            self._line = line if len(line.lstrip()) < 2 else "xx" + line[-2:]
        self.raw.write("".join(out))
        return written

    def finish(self) -> None:
        """Write a word joiner still held (nothing came after it: shown escaped)."""
        if self._held:
            self._held, held = "", self._held
            self.raw.write(strip_controls(held, self._tail))
            self._tail = ""

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def own_line(self, line: str) -> None:
        """One of driftmatrix's own lines (a workflow command), as is, on a line of its own."""
        self.finish()
        self.raw.write(("\n" if self._line else "") + line + "\n")
        self._line, self._tail = "", "\n"
        self.raw.flush()

    def flush(self) -> None:
        self.raw.flush()

    def isatty(self) -> bool:
        return False

    def writable(self) -> bool:
        return True

    def __getattr__(self, name: str):
        return getattr(self.raw, name)  # encoding, errors, fileno, …: the stream's own


def guarded(stream: TextIO | None) -> TextIO | None:
    """`stream` behind an `InertStream`, unless it is a terminal (or None, or guarded already)."""
    if stream is None or isinstance(stream, InertStream):
        return stream
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream: guard it
        tty = False
    return stream if tty else InertStream(stream)


@contextlib.contextmanager
def guard_stdio() -> Iterator[None]:
    """sys.stdout and sys.stderr guarded while inside (where they are not terminals), put back after."""
    old = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = guarded(sys.stdout), guarded(sys.stderr)
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                if isinstance(stream, InertStream):
                    stream.finish()
                stream.flush()
        sys.stdout, sys.stderr = old


def emit(command_line: str, stream: TextIO | None = None) -> None:
    """Print one of driftmatrix's own workflow commands (`inert.workflow_command`: escaped, one
    line) to `stream` (default stderr), past the guard, on a line of its own."""
    stream = stream or sys.stderr
    if isinstance(stream, InertStream):
        stream.own_line(command_line)
    else:
        print(command_line, file=stream, flush=True)
