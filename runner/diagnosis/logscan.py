"""Reading a `vllm serve` log: WARNING lines, tracebacks, and the engine config line.

vLLM's log format is `[(Proc pid=N) ]LEVEL MM-DD HH:MM:SS [file.py:line] message`; lines
printed by child processes (engine core, workers) carry the `(Proc pid=N)` prefix, also
on traceback lines, which is stripped before tracebacks are read.

A log is untrusted text (vLLM echoes the docs' arguments into it): every pattern here is applied to
at most the first MAX_LINE_SCAN characters of a line, none can backtrack catastrophically, messages
are kept to MAX_MESSAGE_CHARS, and `read_lines` reads only a log's head and tail.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from driftmatrix.runner.intarget.vllm_paths import relative
from driftmatrix.runner.outcomes.evidence_record import CodeLocation

MAX_LINE_SCAN = 16 * 1024
"""Only this much of each log line is examined (the longest real line, the engine's config, is
~4.5 kB): the patterns cost at most this per line, whatever a line echoed from the docs holds."""

MAX_MESSAGE_CHARS = 4096
"""A message (an exception's, a warning's) longer than this is kept cut, with a marker saying how
much was left out (the longest real exception message is ~1.2 kB)."""

LOG_HEAD_BYTES = 4 * 1024 * 1024
"""How much of a log's start `read_lines` reads (the engine config and memory facts are logged early)."""

LOG_TAIL_BYTES = 4 * 1024 * 1024
"""How much of a log's end `read_lines` reads (the failure and its traceback are at the end). Real
server logs are under 100 kB; a log of many GB costs no more than these two."""

LOG_LINE = re.compile(
    r"^(?:\((?P<proc>[^)]*)\)\s+)?(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+"
    r"\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+\[(?P<file>[^\]:]+):(?P<line>\d+)\]\s?(?P<msg>.*)$"
)
# What precedes a traceback line: the process tag, and for logger.exception() output the
# whole log-record header as well.
LINE_PREFIX = re.compile(
    r"^(?:\([^)]*\bpid=\d+\)\s?)?(?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+"
    r"\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+\[[^\]]+\]\s?)?"
)
CHAINED = ("During handling of the above exception", "The above exception was the direct cause")
FRAME = re.compile(r'^\s+File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<func>.+)$')
# An exception line `Type: message`: the type is a dotted name ending in one of EXC_SUFFIXES, or
# holding `Error` with no dot after it (`ExceptionGroupErrors`); read by `parse_exception_line`, in linear time.
EXC_TYPE = re.compile(r"[A-Za-z_][\w.]*")
EXC_SUFFIXES = ("Error", "Exception", "Exit", "Interrupt", "Warning", "Failure")
# `[^()]*`, not `[^)]*`: a scan for the version stops at the next `(`, so repeated headers cost linear time
ENGINE_CONFIG = re.compile(r"Initializing a V1 LLM engine \((?P<version>[^()]*)\) with config: (?P<cfg>.*)$")
# how much memory the weights and the KV cache took (what a reader sizing a GPU wants to know)
MEMORY_FACTS = {
    "model_memory_gib": re.compile(r"Model loading took (?P<v>[\d.]+) ?GiB"),
    "kv_cache_memory_gib": re.compile(r"Available KV cache memory: (?P<v>[\d.]+) ?GiB"),
}


@dataclass
class LogLine:
    level: str
    file: str
    line: int
    message: str
    proc: str | None = None
    index: int = 0
    """0-based line number in the log."""


@dataclass
class Traceback:
    type: str
    message: str
    frames: list[dict] = field(default_factory=list)
    """`{path, line, function}` outermost first."""
    start: int = 0
    end: int = 0
    chained: bool = False
    """True when this exception was raised while handling the previous one (same chain)."""

    def vllm_frame(self) -> dict | None:
        """The deepest frame inside the vllm package: where vLLM raised."""
        inside = [f for f in self.frames if "/vllm/" in f["path"]]
        return inside[-1] if inside else (self.frames[-1] if self.frames else None)

    def location(self) -> CodeLocation | None:
        frame = self.vllm_frame()
        if not frame:
            return None
        return CodeLocation(relative(frame["path"]), frame["line"], frame["function"])


def clip(text: str, limit: int = MAX_MESSAGE_CHARS, total: int | None = None) -> str:
    """`text` cut to `limit` characters, with a marker saying how many of `total` (its length by
    default; more when `text` is itself the examined head of a longer line) were left out."""
    total = len(text) if total is None else total
    return text if total <= limit else f"{text[:limit]} … [{total - limit} more characters]"


def head(line: str) -> str:
    """The part of a log line that is examined."""
    return line[:MAX_LINE_SCAN]


def strip(line: str) -> str:
    return LINE_PREFIX.sub("", head(line), count=1)


def log_lines(lines: list[str]) -> list[LogLine]:
    out = []
    for i, raw in enumerate(lines):
        m = LOG_LINE.match(head(raw))
        if m:
            message = clip(m["msg"], total=len(m["msg"]) + len(raw) - len(head(raw)))
            out.append(LogLine(m["level"], m["file"], int(m["line"]), message, m["proc"], i))
    return out


def parse_exception_line(text: str, cut: int = 0) -> tuple[str, str] | None:
    """(type, message) when `text` (a stripped traceback line; `cut` characters of it not examined)
    is an exception line `Type: message` or a bare `Type`; its message clipped. Linear time."""
    name, colon, rest = text.partition(":")
    if (not colon and cut) or not EXC_TYPE.fullmatch(name):
        return None  # a type name runs past what is examined: no type is that long
    error_at = name.rfind("Error")
    if not (
        any(name.endswith(s) and len(name) > len(s) for s in EXC_SUFFIXES)
        or (error_at >= 1 and "." not in name[error_at:])
    ):
        return None
    message = rest[1:] if rest[:1].isspace() else rest
    return name, clip(message, total=len(message) + cut)


def warnings(lines: list[str]) -> list[LogLine]:
    """WARNING lines, one per distinct (file, line, message): workers repeat each other."""
    seen, out = set(), []
    for ll in log_lines(lines):
        if ll.level == "WARNING" and (ll.file, ll.line, ll.message) not in seen:
            seen.add((ll.file, ll.line, ll.message))
            out.append(ll)
    return out


NATIVE_CRASH = re.compile(
    r"!{3,} Segfault encountered !{3,}|Fatal Python error: (Segmentation fault|Aborted|Bus error)"
)
"""A process of the server died in native code: torch's signal handler's report, or Python's."""
NATIVE_FRAME = re.compile(r'File "[^"]*?(?P<path>csrc/[^"]+)", line (?P<line>\d+), in (?P<func>.+)$')
FUNCTION = re.compile(r"([A-Za-z_][\w:]*)(?:<|\()")
HEADER = (".h", ".hpp", ".cuh")


def native_crash(lines: list[str]) -> tuple[int, CodeLocation | None] | None:
    """Where a server's process crashed in native code, if it did: the report's line, and the kernel
    that crashed — the first of its frames in vLLM's own C++ sources (`csrc/...`) that is not a header
    (vector helpers such as `cpu_types_x86.hpp` serve every kernel), else the first in `csrc/`. Such a
    crash is the root cause: the Python tracebacks after it (`RuntimeError: cancelled`, the engine
    dead) are its consequences."""
    for i, line in enumerate(lines):
        if NATIVE_CRASH.search(line):
            frames = [m for frame in lines[i + 1 : i + 40] if (m := NATIVE_FRAME.search(frame))]
            kernel = next((m for m in frames if not m["path"].endswith(HEADER)), frames[0] if frames else None)
            if kernel is None:
                return i, None
            name = FUNCTION.search(kernel["func"])
            return i, CodeLocation(
                kernel["path"], int(kernel["line"]), name[1].split("::")[-1] if name else kernel["func"].strip()[:80]
            )
    return None


def tracebacks(lines: list[str]) -> list[Traceback]:
    """Every Python traceback in the log, in order (chained causes are separate entries)."""
    out: list[Traceback] = []
    i, n = 0, len(lines)
    while i < n:
        if strip(lines[i]).rstrip().endswith("Traceback (most recent call last):"):
            start, frames, i = i, [], i + 1
            while i < n:
                text = strip(lines[i]).rstrip("\n")
                m = FRAME.match(text)
                if m:
                    frames.append({"path": m["path"], "line": int(m["line"]), "function": m["func"].strip()})
                    i += 1
                    continue
                if text.startswith((" ", "\t")) or not text.strip() or set(text.strip()) <= set("^~ "):
                    i += 1  # source line, caret markers, blank
                    continue
                exc = parse_exception_line(text.strip(), len(lines[i]) - len(head(lines[i])))
                if exc:
                    between = " ".join(strip(x) for x in lines[out[-1].end + 1 : start]) if out else ""
                    out.append(Traceback(*exc, frames, start, i, any(c in between for c in CHAINED)))
                    break
                # something else (a line from another process interleaved): keep scanning
                i += 1
        i += 1
    return out


def _split_top(text: str) -> list[str]:
    """Split `a=1, b=X(c=2, d=[3, 4]), e='x, y'` at top-level commas."""
    parts, depth, quote, cur = [], 0, None, []
    for ch in text:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = None
            continue
        if ch in "'\"":
            quote = ch
        elif ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    if cur:
        parts.append("".join(cur).strip())
    return parts


def _value(raw: str):
    raw = raw.strip()
    if raw in ("True", "False"):
        return raw == "True"
    if raw == "None":
        return None
    if re.fullmatch(r"-?\d+", raw):
        return int(raw)
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1]
    return raw


ENGINE_KEYS = {
    "speculative_config": "speculative_config",
    "dtype": "dtype",
    "max_seq_len": "max_model_len",
    "enable_prefix_caching": "prefix_caching",
    "enable_chunked_prefill": "chunked_prefill",
    "chunked_prefill_enabled": "chunked_prefill",
    "async_scheduling": "async_scheduling",
    "tensor_parallel_size": "tensor_parallel_size",
    "enforce_eager": "enforce_eager",
    "kv_cache_dtype": "kv_cache_dtype",
    "device_config": "device",
    "quantization": "quantization",
}


def memory_facts(lines: list[str]) -> dict:
    """{model_memory_gib, kv_cache_memory_gib} as the engine core logs them (first of each)."""
    out: dict = {}
    for raw in lines:
        for key, pattern in MEMORY_FACTS.items():
            m = pattern.search(head(raw))
            if m and key not in out:
                out[key] = float(m["v"])
    return out


def engine_config(lines: list[str]) -> dict:
    """The settings the engine core says it was initialised with."""
    for raw in lines:
        m = ENGINE_CONFIG.search(head(raw))
        if not m:
            continue
        out = {"engine_version": m["version"]}
        for part in _split_top(m["cfg"]):
            key, _, raw_value = part.partition("=")
            if key.strip() in ENGINE_KEYS:
                out[ENGINE_KEYS[key.strip()]] = _value(raw_value)
        spec = out.get("speculative_config")
        if isinstance(spec, str) and spec.startswith("SpeculativeConfig("):
            inner = dict(p.partition("=")[::2] for p in _split_top(spec[len("SpeculativeConfig(") : -1]))
            out["speculative_method"] = _value(inner.get("method", "None"))
            if "num_spec_tokens" in inner:
                out["num_speculative_tokens"] = _value(inner["num_spec_tokens"])
        return out
    return {}


def excerpt(lines: list[str], around: int | None = None, before: int = 25, after: int = 10, tail: int = 40) -> str:
    if around is None:
        chosen = lines[-tail:]
    else:
        chosen = lines[max(0, around - before) : around + after]
    return "\n".join(line.rstrip("\n")[:1000] for line in chosen)


def read_lines(path: Path, head_bytes: int = LOG_HEAD_BYTES, tail_bytes: int = LOG_TAIL_BYTES) -> list[str]:
    """A log's lines, reading at most its first `head_bytes` and last `tail_bytes` (whole lines):
    a longer log gets a line saying how much between them was not read. [] when unreadable."""
    try:  # never through a link (the runner's own logs are created O_EXCL|O_NOFOLLOW anyway)
        with open(path, "rb", opener=lambda p, flags: os.open(p, flags | os.O_NOFOLLOW)) as f:
            size = os.fstat(f.fileno()).st_size
            if size <= head_bytes + tail_bytes:
                return f.read(head_bytes + tail_bytes).decode("utf-8", errors="replace").splitlines()
            first = f.read(head_bytes)
            f.seek(size - tail_bytes)
            last = f.read(tail_bytes)
    except OSError:
        return []
    first = first[: first.rfind(b"\n") + 1] or first  # whole lines only
    last = last[last.find(b"\n") + 1 :] if b"\n" in last else last
    skipped = size - len(first) - len(last)
    note = f"[driftmatrix: {skipped} bytes of this {size}-byte log were not read: only its first and last lines are]"
    return [
        *first.decode("utf-8", errors="replace").splitlines(),
        note,
        *last.decode("utf-8", errors="replace").splitlines(),
    ]
