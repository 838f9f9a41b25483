"""What stands in front of a vLLM command on a shell line: environment assignments and wrapper
programs (`nohup`, `sudo -E`, `env -u X`, `timeout -s KILL 600`, `numactl --cpunodebind=0`,
`nsys profile -o report --trace=cuda`, `uv run --with vllm`, `kubectl exec pod --`, …).

A wrapper is recorded with the snippet (the reader sees it) and never run: the runner runs the
vLLM command alone. Wrappers are found two ways: the common ones by their own syntax (so their
option values are never mistaken for the command), and any other program by where the vLLM
entry point starts in the line (`vllm serve`, `vllm bench …`, `python -m vllm.entrypoints…`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from driftmatrix.extractor.shell_lexer import Word

_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_PYTHON = re.compile(r"^(\S*/)?python[0-9.]*$")
# Wrappers whose options never take a separate value: skip every `-…` word after them.
_FLAG_ONLY = (
    "sudo",
    "nohup",
    "exec",
    "time",
    "command",
    "nice",
    "numactl",
    "taskset",
    "stdbuf",
    "setsid",
    "chrt",
    "ionice",
    "unbuffer",
)
# Programs that match text or processes: `vllm serve` among their arguments is what they look for
# (`pgrep -f "vllm serve"`, `ps aux | grep 'vllm serve'`, `pkill -f vllm serve`), never a command they run.
_PATTERN_PROGRAMS = {
    "grep",
    "egrep",
    "fgrep",
    "zgrep",
    "rg",
    "ag",
    "ack",
    "pgrep",
    "pkill",
    "killall",
    "pidof",
    "ps",
    "awk",
    "gawk",
    "sed",
}
# Programs whose arguments are data, not a command to run: `echo vllm serve x` runs nothing.
_NOT_WRAPPERS = {
    "echo",
    "printf",
    "git",
    "pip",
    "pip3",
    "uv",
    "cat",
    "alias",
    "which",
    "type",
    "man",
    "apt",
    "apt-get",
    "conda",
    "brew",
    "curl",
    "wget",
    "tee",
    "export",
} | _PATTERN_PROGRAMS


def searches_text(command: list[Word]) -> bool:
    """Whether `command` (wrappers peeled) is a pattern program: none of its words is a command."""
    return bool(command) and command[0].text.rsplit("/", 1)[-1] in _PATTERN_PROGRAMS


@dataclass
class Peeled:
    """A simple command split into what runs and what stands in front of it."""

    env: list[Word] = field(default_factory=list)
    """`NAME=value` assignments (before the command, or inside `env …`)."""
    wrapper: list[Word] = field(default_factory=list)
    """Wrapper programs with their options and values, in order."""
    command: list[Word] = field(default_factory=list)
    """The command itself, from its program name on."""


def peel(words: list[Word]) -> Peeled:
    """Assignments and the wrappers known by their syntax; the rest is the command."""
    out = Peeled()
    i = 0
    while i < len(words):
        t = words[i].text
        start = i
        if _ASSIGNMENT.match(t):
            out.env.append(words[i])
            i += 1
            continue
        if t in _FLAG_ONLY:
            i += 1
            while i < len(words) and words[i].text.startswith("-"):
                i += 1
        elif t == "env":
            i += 1
            while i < len(words) and words[i].text.startswith("-"):
                i += 2 if words[i].text in ("-u", "--unset", "-C", "--chdir") else 1
        elif t == "timeout":  # timeout [-s SIG] [-k DURATION] [--foreground] DURATION
            i += 1
            while i < len(words) and words[i].text.startswith("-"):
                i += 2 if words[i].text in ("-s", "--signal", "-k", "--kill-after") else 1
            i += 1
        elif t == "uv" and i + 1 < len(words) and words[i + 1].text == "run":
            i += 2
            while i < len(words) and words[i].text.startswith("-"):
                i += 2 if words[i].text in ("--with", "--python", "-p", "--project", "--directory") else 1
        else:
            break
        out.wrapper += words[start:i]
    out.command = words[i:]
    return out


def vllm_entry(words: list[Word], start: int = 0) -> int | None:
    """How many words name the vLLM CLI at `words[start]` (`vllm` → 1, `python -m
    vllm.entrypoints.cli.main` → 3, `python -m vllm.entrypoints.openai.api_server` → 3), or None."""
    texts = [w.text for w in words[start : start + 3]]
    if texts[:1] == ["vllm"] or (texts and texts[0].endswith("/bin/vllm")):
        return 1
    if (
        len(texts) == 3
        and _PYTHON.match(texts[0])
        and texts[1] == "-m"
        and texts[2] in ("vllm.entrypoints.cli.main", "vllm.entrypoints.openai.api_server")
    ):
        return 3
    return None


def split_at_vllm(peeled: Peeled, runs: Callable[[list[Word], int], bool]) -> Peeled:
    """For a command that is not itself vLLM (`nsys profile -o x vllm serve …`, `kubectl exec p --
    vllm serve …`): everything before the first place where `runs(command, k)` says a vLLM command
    starts at `command[k]` becomes wrapper; assignments just before it (`sudo HF_HOME=/x vllm serve`)
    are environment. Unchanged when there is none. Places are indices, never copies of the rest: a
    copy per word made a long command cost its square."""
    command = peeled.command
    if not command or vllm_entry(command) is not None or command[0].text in _NOT_WRAPPERS:
        return peeled
    for k in range(1, len(command)):
        if vllm_entry(command, k) is None or not runs(command, k):
            continue
        head = command[:k]
        tail_env = len(head)
        while tail_env > 0 and _ASSIGNMENT.match(head[tail_env - 1].text):
            tail_env -= 1
        return Peeled(peeled.env + head[tail_env:], peeled.wrapper + head[:tail_env], command[k:])
    return peeled


def texts(words: list[Word]) -> list[str]:
    return [w.text for w in words]
