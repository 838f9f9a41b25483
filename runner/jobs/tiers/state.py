"""A job's state as it goes through the tiers, and the one place verdicts are made.

A tier is a function `(JobState) -> Verdict | None`: a Verdict ends the job; None lets the next
tier run. Evidence (exception, warnings, probes, effective config, notes) is written to
`state.outcome.evidence` as it is found; the verdict says what it amounts to.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from driftmatrix.runner.diagnosis import classify, logscan
from driftmatrix.runner.isolation import env_policy, trust
from driftmatrix.runner.isolation.sandbox import limits
from driftmatrix.runner.jobs.job import Job, RunContext
from driftmatrix.runner.jobs.tiers import twin_artefacts
from driftmatrix.runner.models import placeholders
from driftmatrix.runner.outcomes import counts
from driftmatrix.runner.outcomes.evidence_record import (
    FailureSignature,
    HubAnswer,
    RaisedException,
    ServerRun,
    TwinNote,
)
from driftmatrix.runner.outcomes.outcome_record import Outcome
from driftmatrix.runner.outcomes.vocabulary import TIERS, StageName, TierName, VerdictName
from driftmatrix.runner.serve.server import Server


@dataclass(frozen=True)
class Verdict:
    verdict: VerdictName
    reason: str | None = None
    stage: StageName | None = None
    """The stage it was reached at (None: the stage the job got to)."""


@dataclass
class JobState:
    job: Job
    ctx: RunContext
    outcome: Outcome
    gpu_ids: list[int] = field(default_factory=list)
    cpu_ids: list[int] = field(default_factory=list)
    """The cores this job's server binds its worker to, when CPU jobs run side by side
    (settings.cpu_slots); empty: vLLM's own binding."""
    argv: list[str] = field(default_factory=list)
    """The command actually run: the variant applied, models and files substituted."""
    missing: list[str] = field(default_factory=list)
    """Models that could not be had (no model-map entry, no hub, no twin)."""
    why_not: list[str] = field(default_factory=list)
    """Why a twin could not be built, per missing model."""
    skip_at: dict[TierName, str] = field(default_factory=dict)
    """Tier -> why it cannot run here though the tiers before it can (prepare decides: a model the hub
    refused SKIPs config, weights left on the hub without a twin SKIP start)."""
    server: Server | None = None
    """The running server (start tier on), torn down by `close()`."""
    api_key: str | None = None
    leases: list = field(default_factory=list)
    """The twins this job uses, held until `close()` so the cache never drops them mid-job
    (runner/models/twin_cache.py)."""
    stood_in: list = field(default_factory=list)
    """Placeholders replaced for the run (runner/placeholders.StoodIn; prepare decides)."""
    weightless: bool = False
    """The served model is a twin without weights (runner/models/twins.py WEIGHTLESS)."""
    report: Callable[[str], None] = lambda stage: None
    """Progress: called with the stage the job is entering."""
    options: list[str] | None = None
    """The target release's `vllm serve` option strings (its helper's parser): `argv` is spelled with them."""
    foreign: list[str] = field(default_factory=list)
    """The code options (runner/isolation/trust.py) the command asks for, as the parser read it."""
    unloadable: list[HubAnswer] = field(default_factory=list)
    """The hub's answers that a model of the command cannot be loaded as written (prepare decides):
    after the parser, the job FAILs with them (`unloadable`)."""

    def wants(self, tier: TierName) -> bool:
        """The job asked for `tier` (the tiers up to the one requested run)."""
        return TIERS.index(self.job.tier) >= TIERS.index(tier)

    @property
    def placeholders(self) -> list[str]:
        """The placeholders still in the command: those not replaced (runner/models/placeholders.py)."""
        return placeholders.kept(self.job.snippet, self.stood_in)

    def plain_refusal(self) -> str | None:
        """Why, without a sandbox, this command runs no further than argparse (runner/isolation/trust.py:
        only what is known to be inert runs plainly); None: it may run."""
        ours = [*self.outcome.substitutions.values(), *(s.value for s in self.stood_in)]
        return trust.refusal(
            self.argv, self.options, self.foreign, env=literal_env(self.job), version=self.job.target.version, ours=ours
        )

    def close(self) -> None:
        """Stop the server if one runs, read its log into the evidence, and let go of its twins."""
        server, self.server = self.server, None  # one caller stops it (a worker, or an interrupted run)
        if server is not None:
            lines = server.log_lines()  # what it logged while serving (not its shutdown)
            self.outcome.evidence.server = ServerRun.stopped(self.outcome.evidence.server, server.stop())
            read_log(self.outcome, lines)
        leases, self.leases = self.leases, []
        for held in leases:
            held.close()


def literal_env(job: Job) -> dict[str, str]:
    """The snippet's env assignments that are values, not placeholders, and that the env policy
    lets through (runner/isolation/env_policy.py: the docs are untrusted input)."""
    return env_policy.docs_env({k: v for k, v in job.snippet.env.items() if "$" not in v and "<" not in v})[0]


def read_log(out: Outcome, lines: list[str]) -> None:
    """Warnings (with file:line, feature or not) and the effective engine config from a server log."""
    ev = out.evidence
    ev.warnings.extend(classify.warning_records(logscan.warnings(lines)))
    for key, value in {**logscan.engine_config(lines), **logscan.memory_facts(lines)}.items():
        ev.effective_config.setdefault(key, value)


# --- verdicts ---------------------------------------------------------------------------------


def skip(reason: str, stage: StageName | None = None) -> Verdict:
    return Verdict("SKIP", reason, stage)


def error(reason: str, stage: StageName | None = None) -> Verdict:
    """Ours or the machine's fault, never the docs'."""
    return Verdict("ERROR", reason, stage)


def judge_failure(
    twins: list[TwinNote],
    stage: StageName,
    exc: RaisedException | None,
    version: str,
    device: str,
    excerpt: str | None = None,
    frames: str | None = None,
) -> tuple[Verdict, classify.Signature | None]:
    """The verdict on a failure and the signature it matched: raised where vLLM loads the
    twin's own parts it is the twin's (SKIP, runner/jobs/tiers/twin_artefacts.py); a known signature may
    say it is the machine's (ERROR) or something that cannot be had here (SKIP); else FAIL. Pure, so
    a recorded outcome can be judged again by today's rules."""
    twin = twin_artefacts.reason(twins, stage, exc, version, frames)
    if twin:
        return skip(twin, stage), None
    where = exc.location if exc and exc.location and not isinstance(exc.location, str) else None
    raised = f"raised in {where.file} in {where.function}" if where else None  # the frame, when no log shows it
    sig = classify.match_signature(exc.type_and_message() if exc else None, excerpt, raised, device=device)
    line = exception_summary(exc) if exc else "see the log excerpt"
    if sig and sig.blame == "unavailable":
        return skip(f"{sig.explanation} ({line})", stage), sig
    if sig and sig.blame == "infra":
        return error(f"infrastructure: {sig.explanation} ({line})", stage), sig
    return Verdict("FAIL", line, stage), sig


def fail(
    state: JobState,
    stage: StageName,
    exc: RaisedException | None,
    excerpt: str | None = None,
    frames: str | None = None,
) -> Verdict:
    """A failure with its exception, judged by judge_failure and recorded in the evidence."""
    ev = state.outcome.evidence
    verdict, sig = judge_failure(ev.twins, stage, exc, state.job.target.version, state.ctx.device, excerpt, frames)
    ev.exception = exc
    ev.signature = FailureSignature(sig.id, sig.explanation) if sig else None
    return verdict


def unloadable(state: JobState) -> Verdict:
    """A model the hub says cannot be loaded as written (runner/models/hub_answer.py): a FAIL at config,
    the tier that reads the model, whatever tier was asked — the hub's answer is the same for every
    build and no reader can load it, so it is the docs' fault; the answer is the evidence."""
    sig = classify.by_id(classify.MODEL_NOT_FOUND)
    ev = state.outcome.evidence
    ev.hub, ev.signature = list(state.unloadable), FailureSignature(sig.id, sig.explanation)
    said = "; ".join(f"{a.model}: {a.why}" for a in state.unloadable)
    return Verdict("FAIL", f"the model cannot be loaded as written ({said})", "config")


def crashed(state: JobState, stage: StageName, lines: list[str]) -> Verdict | None:
    """A server process that crashed in native code (logscan.native_crash): the crash, not the Python
    tracebacks it caused, is what is judged; None when nothing crashed."""
    crash = logscan.native_crash(lines)
    if crash is None:
        return None
    at, where = crash
    site = f" in {where.file}:{where.line} ({where.function})" if where else ""
    report = logscan.NATIVE_CRASH.search(lines[at])
    exc = RaisedException("NativeCrash", f"{report[0].strip('! ') if report else 'crashed'}{site}", where)
    state.outcome.evidence.log_excerpt = logscan.excerpt(lines, at, before=10, after=15)
    return fail(state, stage, exc, state.outcome.evidence.log_excerpt)


def sandbox_limit(hit: dict) -> str:
    """The reason for a job whose processes the sandbox stopped at one of its limits: ours (a limit of
    this run), not the docs'."""
    return limits.explain(hit)


def finish(out: Outcome) -> Verdict:
    """It ran as far as asked: PASS, or WARN when vLLM logged a warning about a documented feature."""
    return Verdict(*counts.passed(out.evidence.warnings))


def apply(out: Outcome, v: Verdict) -> None:
    out.verdict, out.reason = v.verdict, v.reason
    if v.stage:
        out.stage = v.stage


def exception_summary(exc: RaisedException) -> str:
    """`Type: message` on one line; pydantic's first line only counts errors, so add the next."""
    lines = [ln.strip() for ln in str(exc.message or "").splitlines() if ln.strip()]
    text = " ".join(lines[:2]) if lines and re.match(r"\d+ validation errors? for", lines[0]) else (lines or [""])[0]
    return f"{exc.type}: {text}"[:300]
