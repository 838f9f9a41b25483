"""The parse tier (the target's own `vllm serve` parser and its validation) and the config tier
(`create_engine_config`: speculative method resolution, cross-feature checks), in one request to
the target's long-lived helper. The config tier needs every model's config.json: a placeholder
or a model that cannot be had SKIPs it, after the parser has checked the flags.

A `subcommand` snippet (`vllm bench throughput …`, `vllm run-batch …`) is parsed by that
subcommand's own parser (and its validate()); it is not a server, so every tier after parse SKIPs
with the reason (runner/subcommands.py)."""

from __future__ import annotations

from runner import classify, subcommands
from runner.tiers import twin_artefacts
from runner.tiers.state import JobState, Verdict, fail, literal_env, skip


def parse_config(state: JobState) -> Verdict | None:
    job, out = state.job, state.outcome
    sub = subcommands.words(job.snippet)
    want_config = state.wants("config") and not state.placeholders and not state.missing \
        and "config" not in state.skip_at and sub is None
    state.report("config" if want_config else "parse")
    answer = state.ctx.helper(job.target).ask(state.argv, "config" if want_config else "parse",
                                              env=literal_env(job), subcommand=sub)
    out.evidence.warnings.extend({**w, "feature": classify.is_feature_warning(w["message"])} for w in answer.warnings)
    out.evidence.effective_config.update(answer.effective_config)
    out.stage = answer.stage
    if answer.result == "skipped":
        return skip(answer.skip or "the helper could not check it here", answer.stage)
    if answer.result == "failed":
        return _failed(state, answer.stage, answer.error)
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
        return skip(state.skip_at.get("config") or f"model {', '.join(state.missing)} not available here (no "
                    f"model-map entry, Hugging Face hub unreachable{why})", "config")
    return None


def _failed(state: JobState, stage: str, err: dict) -> Verdict:
    message = err.get("message") or ""
    placeholders = state.placeholders
    unknown_flag = "unrecognized arguments" in message and not any(p in message for p in placeholders)
    if placeholders and not unknown_flag:  # a value we had to leave unfilled may be the cause
        return skip(f"placeholder {', '.join(placeholders)} must be filled in (parse error on it: {message})", stage)
    exc = {k: err.get(k) for k in ("type", "message", "location", "traceback")} if err else None
    return fail(state, stage, exc)
