"""Turning raw results into evidence: signatures, feature warnings, root-cause tracebacks.

The signature patterns (runner/data/signatures.yaml) are searched in log text the docs can put
anything into, and some (`a.*b`) cost time quadratic or worse in what they search: they see at most
MAX_MATCH_LINE characters of each line and MAX_MATCH_CHARS in all (`examined`)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from driftmatrix import runner
from driftmatrix.runner.diagnosis import logscan
from driftmatrix.runner.outcomes.evidence_record import LoggedWarning

SIGNATURES = runner.DATA / "signatures.yaml"
MAX_MATCH_LINE = 4096
"""Characters of each line a signature is searched in: a real exception message is under 1.5 kB,
and an excerpt's lines are cut at 1000 (logscan.excerpt)."""
MAX_MATCH_CHARS = 40_000
"""Characters of a text a signature is searched in: a whole excerpt (35 lines of at most 1000). The
slowest signature (`(ImportError|…): .*(package .*is required|…)`) takes well under a second on this
much adversarial text; on an unbounded text it took minutes."""
# Exceptions that only report that something else failed; the root cause is elsewhere.
WRAPPERS = re.compile(
    r"Engine core initialization failed|Engine process failed to start|"
    r"EngineDeadError|WorkerProc initialization failed|See root cause above|"
    # a rank's failure re-raised by the engine core, the rank's traceback above it
    r"Worker failed with error|check the stack trace above for the root cause|"
    # printed by 0.20.1's CPU build at every shutdown: never the cause
    r"Found no NVIDIA driver"
)


MODEL_NOT_FOUND = "model-not-found"
"""The signature of a model the hub says cannot be loaded as written (runner/models/hub_answer.py): given
by the runner from the hub's answer, never matched in vLLM's words (offline, vLLM says the same of a
model that exists)."""


@dataclass
class Signature:
    id: str
    pattern: re.Pattern | None
    """None: given by the runner (`by_id`), never matched."""
    explanation: str
    blame: str = "docs"
    only_on: str | None = None
    """"cpu" or "gpu": the signature means this only on that kind of run."""


@functools.lru_cache(maxsize=4)
def load(path: Path = SIGNATURES) -> tuple[list[Signature], list[re.Pattern], list[re.Pattern]]:
    data = yaml.safe_load(path.read_text())
    sigs = [
        Signature(
            s["id"],
            re.compile(s["pattern"]) if "pattern" in s else None,
            s["explanation"],
            s.get("blame", "docs"),
            s.get("only_on"),
        )
        for s in data.get("failures", [])
    ]
    warn = data.get("warnings", {})
    return sigs, [re.compile(p) for p in warn.get("benign", [])], [re.compile(p) for p in warn.get("feature", [])]


def examined(text: str) -> str:
    """The part of `text` the patterns search: each line's first MAX_MATCH_LINE characters, up to
    MAX_MATCH_CHARS in all."""
    if len(text) <= MAX_MATCH_LINE:
        return text
    out, size, pos = [], 0, 0
    while pos <= len(text) and size < MAX_MATCH_CHARS:
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        out.append(text[pos : min(end, pos + MAX_MATCH_LINE)])
        size, pos = size + len(out[-1]) + 1, end + 1
    return "\n".join(out)[:MAX_MATCH_CHARS]


def match_signature(*texts: str | None, device: str = "cpu") -> Signature | None:
    sigs, _, _ = load()
    for text in texts:
        if not text:
            continue
        text = examined(text)
        for sig in sigs:
            if sig.pattern and sig.only_on in (None, device) and sig.pattern.search(text):
                return sig
    return None


def by_id(sig_id: str) -> Signature:
    """A signature of signatures.yaml by its id (one the runner gives rather than matches)."""
    return next(sig for sig in load()[0] if sig.id == sig_id)


def is_feature_warning(message: str) -> bool:
    _, benign, feature = load()
    message = examined(message)
    if any(p.search(message) for p in benign):
        return False
    return any(p.search(message) for p in feature)


def root_cause(tracebacks: list[logscan.Traceback]) -> logscan.Traceback | None:
    """Where it went wrong first: in the first exception chain that holds a real error, the
    last exception of it that is not a wrapper (e.g. vLLM's LoRAAdapterNotFoundError, not
    the FileNotFoundError it was raised from, nor "Engine core initialization failed")."""
    chains: list[list[logscan.Traceback]] = []
    for tb in tracebacks:
        if tb.chained and chains:
            chains[-1].append(tb)
        else:
            chains.append([tb])
    for chain in chains:
        real = [tb for tb in chain if not WRAPPERS.search(examined(f"{tb.type}: {tb.message}"))]
        if real:
            return real[-1]
    return tracebacks[0] if tracebacks else None


def warning_records(lines: list[logscan.LogLine]) -> list[LoggedWarning]:
    return [
        LoggedWarning(
            file=w.file, line=w.line, message=w.message[:2000], process=w.proc, feature=is_feature_warning(w.message)
        ).keep_none("process")
        for w in lines
    ]
