"""The parts of an outcome's evidence, one dataclass each: read from and written to the JSON of
`outcomes.jsonl` (schema 1) unchanged, byte for byte.

Each part is a JSON object whose keys its writer chose: some are left out when there is nothing to
say (`final`, `traceback`, a warning's `process`), some are written as null. `JsonRecord` keeps both
apart: a record read from JSON is written back with the keys it was read with, in their order, keys
this code does not know included (files written by another version keep them); a record built here
writes its fields in declaration order, leaving out an `OPTIONAL` field that is None unless told to
write it (`keep_none`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Self

OPTIONAL = {"optional": True}
"""Field metadata: left out of the JSON when None (unless read so, or kept with `keep_none`)."""


def json_of(value: Any) -> Any:
    """A field's JSON: a record's object, a list's items each so, any other value copied."""
    if isinstance(value, JsonRecord):
        return value.to_json()
    if isinstance(value, list):
        return [json_of(v) for v in value]
    return copy.deepcopy(value)


@dataclass
class JsonRecord:
    """A JSON object with known keys as fields; see the module's docstring for how it is written."""

    NESTED: ClassVar[dict[str, type[JsonRecord]]] = {}
    """Fields holding a record of their own (a JSON object inside this one)."""

    _read_keys: tuple[str, ...] | None = field(default=None, init=False, repr=False, compare=False)
    """The keys of the JSON object it was read from, in their order (None: built here)."""
    _unknown: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)
    """What that object held under keys that are no field here (another version's), written back as read."""
    _kept_none: frozenset[str] = field(default=frozenset(), init=False, repr=False, compare=False)
    """OPTIONAL fields written even when None (`keep_none`)."""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Self:
        """The record of a JSON object; a key it lacks reads as None (readers were tolerant of that
        before these records, and it stays absent when written back); a nested value that is not an
        object is kept as it is."""
        if not isinstance(data, dict):
            raise TypeError(f"{cls.__name__}: a JSON object was expected, not {type(data).__name__}")
        known = {f.name for f in fields(cls) if f.init}
        kw: dict[str, Any] = dict.fromkeys(known)
        for key, value in data.items():
            if key in known:
                nested = cls.NESTED.get(key)
                kw[key] = nested.from_json(value) if nested and isinstance(value, dict) else value
        record = cls(**kw)
        record._read_keys = tuple(data)
        record._unknown = {k: v for k, v in data.items() if k not in known}
        return record

    def keep_none(self, *names: str) -> Self:
        """Write these fields even when None (the writer says "none" rather than leaving it out)."""
        self._kept_none = self._kept_none | set(names)
        return self

    def rewritten(self, rewrite: Callable[[Any], Any]) -> Self:
        """The record read back from its JSON after `rewrite` (redaction, public paths: each maps
        every string in a JSON value)."""
        return type(self).from_json(rewrite(self.to_json()))

    def to_json(self) -> dict[str, Any]:
        """The JSON object (see the module's docstring for which keys, in which order)."""
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.init}
        if self._read_keys is not None:  # as read, then what was set since
            order = [
                *self._read_keys,
                *(k for k, v in values.items() if k not in self._read_keys and (v is not None or k in self._kept_none)),
            ]
        else:
            optional = {f.name for f in fields(self) if f.metadata.get("optional")}
            order = [k for k, v in values.items() if v is not None or k not in optional or k in self._kept_none]
            order += list(self._unknown)
        return {k: json_of(values[k]) if k in values else copy.deepcopy(self._unknown[k]) for k in order}


@dataclass
class CodeLocation(JsonRecord):
    """Where in vLLM's code something happened."""

    file: str | None
    """The file, relative to the vllm package's parent (`vllm/config/model.py`)."""
    line: int | None
    """Its line number."""
    function: str | None
    """The function (or `<module>`) the line is in."""


@dataclass
class RaisedException(JsonRecord):
    """The exception a tier failed with: from the helper (parse, config) or a server's log (start,
    probe; there the root cause of the tracebacks it logged)."""

    NESTED: ClassVar[dict[str, type[JsonRecord]]] = {"location": CodeLocation}

    type: str | None
    """The exception's class name (`ValueError`)."""
    message: str | None
    """Its message, clipped (runner/diagnosis/logscan.py)."""
    location: CodeLocation | str | None
    """Where vLLM raised it (for an exception from a server log, the deepest vLLM frame of the root-cause
    traceback); None when no frame was vLLM's. A string is read and shown as it is (publisher/causes.py
    `location` has always taken one)."""
    traceback: str | None = field(default=None, metadata=OPTIONAL)
    """The helper's traceback text (parse and config tiers; written as null when it sent none)."""
    final: str | None = field(default=None, metadata=OPTIONAL)
    """`Type: message` of the last traceback the server logged when it is not the root cause (start
    tier; written as null when it is)."""

    @classmethod
    def from_helper(cls, err: dict[str, Any]) -> RaisedException:
        """The helper's error answer: its type, message, location and traceback (null when absent)."""
        return cls.from_json({k: err.get(k) for k in ("type", "message", "location", "traceback")})

    def type_and_message(self) -> str:
        """`Type: message`, for matching signatures."""
        return f"{self.type}: {self.message}"


@dataclass
class FailureSignature(JsonRecord):
    """A known failure signature the exception or log matched (runner/data/signatures.yaml)."""

    id: str
    """The signature's id (`unrecognized-arguments`)."""
    explanation: str
    """What it means, in plain words."""


@dataclass
class HubAnswer(JsonRecord):
    """The hub's answer that a model of the command cannot be loaded as written: no such repository, or
    one vLLM reads no model from (runner/models/hub_answer.py decides which answers say so)."""

    model: str
    """The model id as the docs wrote it."""
    status: int
    """The HTTP status of the hub's file listing for it: 404, or 200 with the files below."""
    why: str
    """What the answer means, in plain words."""
    files: list[str]
    """The files the hub listed at the repository's top level (the first few; none for a 404)."""
    endpoint: str
    """The hub asked, as notes show it (scheme, host and port: no credentials)."""
    asked: str
    """When (UTC, ISO 8601)."""
    error_code: str | None = field(default=None, metadata=OPTIONAL)
    """The hub's `X-Error-Code` header (`RepoNotFound`, `RevisionNotFound`), when it sent one."""


@dataclass
class LoggedWarning(JsonRecord):
    """A WARNING line vLLM logged: from the helper's logging (parse, config: `level`, `logger`) or a
    server's log (`process`)."""

    level: str | None = field(default=None, metadata=OPTIONAL)
    """The logging level's name (the helper's warnings)."""
    logger: str | None = field(default=None, metadata=OPTIONAL)
    """The logger's name (the helper's warnings)."""
    file: str | None = None
    """The file of the logging call."""
    line: int | None = None
    """The line of the logging call."""
    message: str | None = None
    """The message (clipped to 2,000 characters from a server log)."""
    process: str | None = field(default=None, metadata=OPTIONAL)
    """The process that logged it (`APIServer`, `EngineCore_DP0`; a server's log only)."""
    feature: bool | None = None
    """It is about a documented feature (turned off, ignored, unsupported): it makes the job WARN."""


@dataclass
class ProbeResult(JsonRecord):
    """One request the probe tier made to the running server (runner/serve/probes.py)."""

    name: str
    """The probe (`models`, `chat`, `json_schema`, `stream`, `tool_call`, `image`, ...)."""
    ok: bool
    """It got the answer it asks for."""
    status: int | None
    """The HTTP status (None: no answer)."""
    detail: dict[str, Any] | None = field(default=None, metadata=OPTIONAL)
    """What the answer held, per probe (`{models}`, `{finish_reason, completion_tokens}`, `{error}`...)."""
    duration_s: float | None = None
    """How long the request took."""


@dataclass
class ThroughputRun(JsonRecord):
    """One batch of the perf tier's requests (runner/serve/throughput.py)."""

    streams: int
    """Requests at once."""
    max_tokens: int
    """Tokens asked for per request."""
    completed: int
    """Requests that finished."""
    errors: list[str]
    """The first few failures' words."""
    tokens: int | None = field(default=None, metadata=OPTIONAL)
    """Tokens generated (the figures below only when a request completed)."""
    wall_s: float | None = field(default=None, metadata=OPTIONAL)
    """From the batch's start to its last completion."""
    throughput_tok_s: float | None = field(default=None, metadata=OPTIONAL)
    """tokens / wall_s."""
    decode_tok_s_median: float | None = field(default=None, metadata=OPTIONAL)
    """The median per-request decode speed."""
    ttft_s_median: float | None = field(default=None, metadata=OPTIONAL)
    """The median time to first token."""


@dataclass
class PerfRun(JsonRecord):
    """The perf tier's measurement on the running server."""

    NESTED: ClassVar[dict[str, type[JsonRecord]]] = {"single": ThroughputRun, "concurrent": ThroughputRun}

    single: ThroughputRun
    """One stream."""
    concurrent: ThroughputRun
    """16 streams at once."""
    spec_decode: dict[str, float] | None
    """Spec-decode counter deltas during these requests (with `acceptance_rate`); None without."""
    device: str | None = field(default=None, metadata=OPTIONAL)
    """`gpu` or `cpu`."""
    gpu_mib_used: list[int] | None = field(default=None, metadata=OPTIONAL)
    """GPU memory in use per GPU while the server held its weights, KV cache and graphs."""


@dataclass
class RankRun(JsonRecord):
    """A server whose command's parallel sizes ran as worker processes on CPU (runner/serve/ranks.py)."""

    count: int
    """Worker processes: tensor x pipeline x data parallel."""
    tensor: int
    """Tensor parallel size."""
    pipeline: int
    """Pipeline parallel size."""
    data: int
    """Data parallel size."""
    expert: int
    """Expert parallel size (1: off)."""
    device: str
    """Where the ranks ran: `cpu`."""
    binding: str | None
    """VLLM_CPU_OMP_THREADS_BIND: each rank's cores, `|`-separated in vLLM's rank order."""


@dataclass
class ServerRun(JsonRecord):
    """The start tier's server: how it started and how it was stopped."""

    NESTED: ClassVar[dict[str, type[JsonRecord]]] = {"ranks": RankRun}

    port: int | None = None
    """The loopback port it served on."""
    ready_s: float | None = None
    """Seconds to /health 200 (None: never)."""
    state: str | None = None
    """`ready`, `exited` or `timeout`."""
    returncode: int | None = field(default=None, metadata=OPTIONAL)
    """Its exit status once stopped."""
    left_processes: int | None = field(default=None, metadata=OPTIONAL)
    """Processes of its group still there after the stop (0 is right)."""
    stop_s: float | None = field(default=None, metadata=OPTIONAL)
    """How long stopping it took."""
    sandbox: list[dict[str, Any]] | None = field(default=None, metadata=OPTIONAL)
    """What the sandbox's init reported (`{peak: {tasks, memory_mib}}`, `{exit: ...}`, a limit hit)."""
    gpu_mib_before: list[int] | None = field(default=None, metadata=OPTIONAL)
    """GPU memory in use before the server started (GPU only)."""
    gpu_mib_after: list[int] | None = field(default=None, metadata=OPTIONAL)
    """... and after it was stopped."""
    gpu_memory_back: bool | None = field(default=None, metadata=OPTIONAL)
    """The memory came back once it stopped."""
    ranks: RankRun | None = field(default=None, metadata=OPTIONAL)
    """Its ranks, where a multi-GPU command ran them as CPU worker processes."""

    @staticmethod
    def stopped(started: ServerRun | None, teardown: dict[str, Any]) -> ServerRun:
        """`started` with what stopping the server said (runner/serve/server.py `Server.stop`), its
        keys after the start's, as one JSON object merged with the other."""
        return ServerRun.from_json({**(started.to_json() if started else {}), **teardown})


@dataclass
class TwinNote(JsonRecord):
    """A twin used for a model (runner/models/twins.py)."""

    model: str
    """The model it stands in for."""
    family: str | None
    """How it was built (the twin family)."""
    served: bool
    """It is the served model (not a draft)."""
    published_architecture: str | None
    """The architecture the real model has (its config, or vLLM's supported-models table)."""
    config_source: str | None
    """Where its configuration came from (`config.json ...` or a configuration class's defaults)."""
    resolved_architecture: str | None = field(default=None, metadata=OPTIONAL)
    """What the target's vLLM resolved the twin to (from the config tier on; served twin only)."""
    counts: bool | None = field(default=None, metadata=OPTIONAL)
    """False when the architectures differ or the failure is the twin's own (then the job SKIPs);
    None when either is unknown."""
    transformers: str | None = field(default=None, metadata=OPTIONAL)
    """The transformers release that wrote the twin's files (its sizes do not depend on it)."""


@dataclass
class PlaceholderReplacement(JsonRecord):
    """A placeholder of the docs replaced for the run (runner/models/placeholders.py)."""

    placeholder: str
    """As the docs write it (`{your model directory}`)."""
    role: str
    """`model` (the served model), `draft model` or `path`."""
    value: str
    """What replaced it in the argv."""
    flags: list[str]
    """The options whose values held it."""
    twin: bool
    """The value is a random-weight twin's folder."""
