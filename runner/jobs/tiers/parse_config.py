"""The parse tier (the target's own `vllm serve` parser and its validation) and the config tier
(`create_engine_config`: speculative method resolution, cross-feature checks), in one request to
the target's long-lived helper. The config tier needs every model's config.json: a placeholder
(not replaced, runner/models/placeholders.py) or a model that cannot be had SKIPs it, after the
parser has checked the flags; a model the hub says cannot be loaded as written FAILs it, whatever tier
the job asked for (runner/models/hub_answer.py).

A `subcommand` snippet (`vllm bench throughput …`, `vllm run-batch …`) is parsed by that
subcommand's own parser (and its validate()); it is not a server, so every tier after parse SKIPs
with the reason (runner/outcomes/subcommands.py).

A CUDA build on a machine without a device answers the config tier "no device": the command is then
asked again of the target's declared-device helper (runner/intarget/declared_device.py), which builds
the engine config over a declared CUDA device (RunContext.declared_device) and either gives a verdict
— its depth noted: "config built with a declared CUDA device 9.0 (...), no device present" — or SKIPs
with what, for this command, the missing device or the declaration decided."""

from __future__ import annotations

from driftmatrix.runner.diagnosis import classify
from driftmatrix.runner.isolation import trust
from driftmatrix.runner.jobs.tiers import plugins, twin_artefacts
from driftmatrix.runner.jobs.tiers.state import JobState, Verdict, fail, literal_env, skip, unloadable
from driftmatrix.runner.models import placeholders
from driftmatrix.runner.outcomes import subcommands
from driftmatrix.runner.outcomes.evidence_record import LoggedWarning, RaisedException
from driftmatrix.runner.serve.helper_client import HelperAnswer


def parse_config(state: JobState) -> Verdict | None:
    job, out = state.job, state.outcome
    sub = subcommands.words(job.snippet)
    docker = bool(job.target.target.docker)  # a container keeps the same promises
    if not docker and (unread := trust.parse_refusal(state.argv)):
        return skip(unread, "parse")  # no sandbox: not even the parser reads a file the docs name
    if (unsafe := state.plain_refusal()) and not docker:
        state.skip_at.setdefault("config", unsafe)  # no sandbox: only what is known to be inert runs plainly
    if refused := plugins.refusal(job.snippet, state.argv, job.target.target):
        tier, why = refused  # a plugin's value: this build does not decide it
        if tier == "parse":
            return skip(why, "parse")
        state.skip_at.setdefault("config", why)
    want_config = (
        state.wants("config")
        and not state.placeholders
        and not state.missing
        and not state.unloadable
        and "config" not in state.skip_at
        and sub is None
    )
    state.report("config" if want_config else "parse")
    answer = _ask(state, "config" if want_config else "parse", sub)
    # the helper's warnings as it sent them (JSON from its process), each judged feature or not here
    out.evidence.warnings.extend(
        LoggedWarning.from_json({**w, "feature": _feature(state, w["message"])}) for w in answer.warnings
    )
    if answer.warnings_left_out:
        out.evidence.notes.append(f"{answer.warnings_left_out} more warnings of vLLM's left out")
    out.evidence.effective_config.update(answer.effective_config)
    if answer.depth:
        out.evidence.notes.append(answer.depth)
    if answer.import_probes:
        out.evidence.notes.append(
            "vLLM's modules asked torch about the device at import and were answered "
            f'"none" (what they set from it is as on a machine without a GPU): '
            f"{'; '.join(answer.import_probes[:6])}"
        )
    out.stage = answer.stage
    if answer.result == "skipped":
        return skip(answer.skip or "the helper could not check it here", answer.stage)
    if answer.result == "failed":
        return _failed(state, answer.stage, answer.error)
    if state.unloadable:  # the parser took its options; no reader can load its model (asked even at parse)
        return unloadable(state)
    if answer.stage == "config":
        mismatch = twin_artefacts.resolved_mismatch(state)
        if mismatch:
            return skip(mismatch, "config")
    if not state.wants("config"):
        return None
    if state.placeholders:
        return skip(f"placeholder {', '.join(state.placeholders)} must be filled in", "config")
    if sub is not None:  # not a server: nothing after its parser applies
        return skip(subcommands.reason(sub), "config")
    if "config" in state.skip_at and not state.missing:
        return skip(state.skip_at["config"], "config")
    if state.missing:
        why = f"; no stand-in: {'; '.join(state.why_not)}" if state.why_not else ""
        return skip(
            state.skip_at.get("config")
            or f"model {', '.join(state.missing)} not available here (no "
            f"model-map entry, Hugging Face hub unreachable{why})",
            "config",
        )
    return None


def _feature(state: JobState, message: str) -> bool:
    """A warning about a documented feature, unless it names a placeholder's replacement (runner/models/placeholders.py)."""
    return classify.is_feature_warning(message) and not placeholders.blamed(message, state.stood_in, flags=False)


def _ask(state: JobState, tier: str, sub: list[str] | None) -> HelperAnswer:
    """The helper's answer, from a process of this command's own forked by the target's fork server
    (runner/intarget/fork_server.py): whatever the command loads dies with it. Without a sandbox, a
    command not known to be inert — by its argv, or by what the parser read (a code option no token
    spells) — gets argparse only (runner/isolation/trust.py)."""
    job, ctx = state.job, state.ctx
    spelled = trust.foreign_code(state.argv, state.options)
    plain = bool(state.plain_refusal()) and not job.target.target.docker  # argparse only, nothing after it
    if spelled and tier == "config" and not plain:  # its code runs while its config is built: what stops
        state.outcome.stage = "config"  # its process (a limit, a hang) stops that tier
    warm = state.outcome.substitutions.get(job.snippet.model or "")  # a folder we resolved, never one the docs name
    answer = ctx.helper(job.target).ask(
        state.argv,
        tier,
        env=literal_env(job),
        subcommand=sub,
        argparse_only=plain,
        warm=warm,
        entry=job.snippet.entry_point,
    )
    state.foreign = sorted({*spelled, *answer.foreign})
    if unseen := sorted(set(answer.foreign) - set(spelled)):
        state.outcome.evidence.notes.append(
            f"vLLM's parser read {', '.join(unseen)} where no option of the command spells it"
        )
    unsafe = None if job.target.target.docker else state.plain_refusal()  # with what the parser read too
    if unsafe:
        earlier = state.skip_at.get("config", unsafe)
        state.skip_at["config"] = unsafe if earlier.startswith(trust.NOT_RUN) else earlier
        state.outcome.evidence.notes.append(
            "parsed by argparse only: vLLM's own validation of a command not known to be inert runs in a sandbox only"
        )
        return answer
    return _with_device(state, tier, sub, answer, lambda declared: ctx.helper(job.target, declared=declared))


def _with_device(state: JobState, tier: str, sub: list[str] | None, answer: HelperAnswer, helper_for) -> HelperAnswer:
    """`answer`; a CUDA build's config tier without a device is asked again of `helper_for(True)`, over
    the declared device."""
    if not (answer.no_device and tier == "config"):
        return answer
    if why := _no_declaration(state):
        return HelperAnswer(
            "skipped", "config", skip=why, warnings=answer.warnings, warnings_left_out=answer.warnings_left_out
        )
    entry = state.job.snippet.entry_point
    return helper_for(True).ask(state.argv, tier, env=literal_env(state.job), subcommand=sub, entry=entry)


def _no_declaration(state: JobState) -> str | None:
    """Why a CUDA build's config cannot be built over a declared device here, or None."""
    if state.job.target.target.docker:
        return (
            "a CUDA build without a device: its engine config is built over a declared device only in a target "
            "environment, not in a Docker image"
        )
    if not state.ctx.declared_device:
        return "a CUDA build without a device, and no device declared (run --declared-device)"
    return None


def _failed(state: JobState, stage: str, err: dict) -> Verdict:
    message = err.get("message") or ""
    kept = state.placeholders
    unknown_flag = "unrecognized arguments" in message and not any(p in message for p in kept)
    if kept and not unknown_flag:  # a value we had to leave unfilled may be the cause
        return skip(f"placeholder {', '.join(kept)} must be filled in (parse error on it: {message})", stage)
    # a replacement's failure is no finding: one it names, and any config built on one (runner/models/placeholders.py)
    stood = placeholders.blamed(message, state.stood_in) or (
        state.stood_in[0] if stage == "config" and state.stood_in else None
    )
    if stood:
        return skip(
            f"placeholder {stood.placeholder} must be filled in: the {stage} tier failed with a stand-in in "
            f"its place, which may be the cause ({message})",
            stage,
        )
    return fail(state, stage, RaisedException.from_helper(err) if err else None)
