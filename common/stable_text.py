"""Stable text: what changes from one run of the same failure to the next, taken out of vLLM's
messages before they reach a page, a doc warning or a PR, so that a second day's run with unchanged
outcomes changes no byte of them (a rolling PR that churns every day hides the change that matters).

The values come from real outcomes (the rehearsal's and the unseen-docs baseline's): an object's
address in its repr (`<function loads at 0x7f0d04700540>`, argparse's message for a `key=value` given
to a JSON option, different in every process), a process id (`(EngineCore pid=1634)`), a log line's
time (`INFO 12-02 16:43:07`, torch's `W1204 15:46:45.471349342`, ISO times), a measured duration
(`took 3.21 s`, `1.935255 seconds`, tqdm's `[00:06<00:45,  1.04s/it]`), a port the OS picked
(`tcp://192.0.2.2:45927`) and a temporary folder's random name (`tmpk2j3_x9q`, `dm-sandbox-etc-…`).
Each is replaced by `…`, keeping what it was (`pid=…`, `0x…`, `… s`).

What must survive does: a version (`0.34.0`), a source line (`core.py:1136`), a configured limit
(`within 600 s`: a whole number, not a measurement), a port below the OS's ephemeral range (`:8000`)
and every option value the command gave (`keep`: text inside one of its argv tokens is not touched).
Host paths are another rule (publisher/public.py `public_path`), applied before this one.
"""

from __future__ import annotations

import re

EPHEMERAL_PORTS = 32768
"""Linux's default ephemeral range starts here: a port at or above it was picked by the OS (a server's
free port, NCCL's rendezvous), one below it was chosen by someone (`--port 8000`)."""

_RULES: dict[str, str] = {
    # a 64-bit address (9 to 16 hex digits; a 32-bit constant has at most 8), or any after ` at `
    "address": r"\b0x[0-9a-fA-F]{9,16}\b|(?<=\bat )0x[0-9a-fA-F]{4,16}\b",
    "pid": r"\b(?:pid|PID)(?:=|: ?| )\d+\b",
    "iso_time": r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?(?:Z|[+-]\d\d:?\d\d)?(?![\w:])",
    "glog_time": r"\b[IWEF]\d{4} \d\d:\d\d:\d\d(?:\.\d+)?\b",  # torch/c10 and NCCL log lines
    "vllm_time": r"\b\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?\b",  # vLLM's `INFO 12-02 16:43:07`
    "progress": r"\[\d+:\d\d(?::\d\d)?<(?:\d+:\d\d(?::\d\d)?|\?)",  # tqdm's elapsed<remaining
    "clock": r"(?<![\w:.])\d\d:\d\d:\d\d(?:[.,]\d+)?(?![\w:])",
    "duration": r"(?<![\w.])\d+\.\d+(?= ?(?:ms|us|µs|ns|s|secs?|seconds?|min|minutes?|h|hours?)\b|s/it\b| ?it/s\b)",
    "host_port": r"(?<![\w.])(?:(?:\d{1,3}\.){3}\d{1,3}|localhost|\[[0-9a-fA-F:]+\]):\d{5}\b",
    "port": r"(?:(?<=\bport=)|(?<=\bport ))\d{5}\b",
    "temp_name": r"(?<=/)(?:tmp|[\w.-]*[a-z]-)[a-z0-9_]{8}(?=/|$|[\s'\",;:)\]>])",
}
_ANY = re.compile("|".join(f"(?P<{name}>{rule})" for name, rule in _RULES.items()))


def _replacement(m: re.Match) -> str | None:
    """What a match becomes; None: it stays (a port a person chose, a temp name that is a word)."""
    kind, text = m.lastgroup, m.group()
    if kind == "address":
        return "0x…"
    if kind == "pid":
        return re.sub(r"\d+$", "…", text)
    if kind == "glog_time":
        return text[0] + "…"  # the level letter stays
    if kind == "progress":
        return "[…<…"
    if kind in ("port", "host_port"):
        host, _, port = text.rpartition(":")
        return (f"{host}:…" if host else "…") if int(port) >= EPHEMERAL_PORTS else None
    if kind == "temp_name":
        random = text[-8:]
        # tempfile's names are 8 of [a-z0-9_]: a word of 8 letters (`-instruct`) is no temp name
        return text[:-8] + "…" if re.search(r"[0-9_]", random) else None
    return "…"


def _kept(text: str, keep: list[str]) -> list[tuple[int, int]]:
    """Where the command's own tokens are in `text`: spans not to touch."""
    spans = []
    for token in keep:
        if len(token) >= 2:
            spans += [(m.start(), m.end()) for m in re.finditer(re.escape(token), text)]
    return spans


def stable(text: str, keep: list[str] | tuple[str, ...] = ()) -> str:
    """`text` with every volatile value replaced (see above); `keep`: the command's argv, whose
    values stay as written wherever the message quotes them."""
    if not text or not any(ch.isdigit() for ch in text):
        return text
    spans = _kept(text, list(keep))

    def one(m: re.Match) -> str:
        if any(a < m.end() and m.start() < b for a, b in spans):
            return m.group()
        new = _replacement(m)
        return m.group() if new is None else new

    return _ANY.sub(one, text)


def stable_value(value, keep: list[str] | tuple[str, ...] = ()):
    """Any JSON-like value with `stable` applied to every string in it (values only: keys are names)."""
    if isinstance(value, str):
        return stable(value, keep)
    if isinstance(value, dict):
        return {k: stable_value(v, keep) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [stable_value(v, keep) for v in value]
    return value
