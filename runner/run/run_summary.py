"""The run's and the plan's summaries for a CI job's page, written through common/step_summary.py
(which escapes, caps and appends them)."""

from __future__ import annotations

from collections import Counter

from driftmatrix.common.inert import code_span, terminal
from driftmatrix.common.step_summary import escape
from driftmatrix.runner.outcomes.outcome_record import Outcome
from driftmatrix.runner.outcomes.vocabulary import VERDICTS


def _counts_per_build(outcomes: list[Outcome]) -> dict[tuple[str, str], Counter]:
    """{(target name, vLLM version): verdict counts}, in the order the builds first appear."""
    rows: dict[tuple[str, str], Counter] = {}
    for o in outcomes:
        rows.setdefault((o.target.name, o.target.version), Counter())[o.verdict] += 1
    return rows


def verdict_table(outcomes: list[Outcome]) -> str:
    """Verdict counts per build (target name and vLLM version)."""
    lines = ["| build | " + " | ".join(VERDICTS) + " |", "|---" * (len(VERDICTS) + 1) + "|"]
    lines += [
        f"| {escape(f'{name} · vLLM {version}')} | " + " | ".join(str(c[v]) for v in VERDICTS) + " |"
        for (name, version), c in _counts_per_build(outcomes).items()
    ]
    return "\n".join(lines)


def print_table(outcomes: list[Outcome], console, tier: str) -> None:
    """The terminal's summary: verdict counts per build, then each ERROR with its reason, so a log
    (a CI job's, a test's failure message) says what went wrong without the outcomes file."""
    from rich.table import Table

    if not outcomes:
        return
    table = Table(title=f"driftmatrix run — tiers up to {tier}")
    table.add_column("target")
    for v in VERDICTS:
        table.add_column(v, justify="right")
    for (name, version), row in _counts_per_build(outcomes).items():
        table.add_row(f"{name} {version}", *(str(row[v]) for v in VERDICTS))
    console.print(table)
    for o in [o for o in outcomes if o.verdict == "ERROR"][:10]:
        at = f" at {o.stage}" if o.stage else ""
        line = f"ERROR {o.snippet_id}{' (' + o.variant + ')' if o.variant else ''} on {o.target.name}{at}: {o.reason}"
        console.print(terminal(line), style="red", soft_wrap=True, markup=False)  # the reason may quote vLLM's log


def run_heading(tier: str, shard: str | None) -> str:
    where = f" · shard {shard}" if shard else ""
    return f"### driftmatrix run{where} · tiers up to {tier}"


def run_markdown(outcomes: list[Outcome], tier: str, reused: int, shard: str | None) -> str:
    head = run_heading(tier, shard) + "\n\n"
    if not outcomes:
        return head + f"Nothing to run: {reused} job(s) already had an outcome for these builds."
    parts = [head + verdict_table(outcomes)]
    if reused:
        parts.append(f"{reused} job(s) reused from the previous run's outcomes.")
    errors = [o for o in outcomes if o.verdict == "ERROR"]
    if errors:
        parts.append(
            f"**{len(errors)} ERROR** (ours or the machine's, not the docs'): this job is red.\n\n"
            + "\n".join(
                f"- {code_span(o.snippet_id)} on {escape(o.target.name)}: {code_span(o.reason or '', 160)}"
                for o in errors[:10]
            )
        )
    fails = [o for o in outcomes if o.verdict == "FAIL"]
    if fails:
        parts.append(
            "FAIL (the publish job judges each against the versions its page is written for):\n\n"
            + "\n".join(
                f"- {code_span(o.snippet_id)}{' (' + escape(o.variant) + ')' if o.variant else ''} on "
                f"{escape(o.target.name)} at {escape(o.stage)}: {code_span(o.reason or '', 160)}"
                for o in fails[:15]
            )
            + (f"\n- … and {len(fails) - 15} more" if len(fails) > 15 else "")
        )
    return "\n\n".join(parts)


def plan_markdown(plan: dict, tier: str, daily_tier: str | None) -> str:
    """The plan step's summary: what runs today, what was left for later, how current the checks are."""
    by_target = ", ".join(f"{k}: {v}" for k, v in plan["by_target"].items())
    lines = [
        f"### Plan\n\n{plan['jobs']} job(s) to run at tiers up to {tier} ({by_target}), {plan['reused']} "
        f"reused from the previous outcomes; {len(plan['runs'])} run leg(s): {', '.join(plan['entries']) or 'none'}"
    ]
    if plan.get("leg_hours"):
        longest = max(plan["planned_hours"].values(), default=0)
        how = ", ".join(f"{n} {k}" for k, n in sorted(plan["estimates"].items()))
        lines.append(
            f"Legs planned under {plan['leg_hours']:g} h each (the longest {longest:.2f} h), times from the "
            f"recorded durations ({how or 'no jobs'})."
        )
    capped = runner_cap(plan)
    if capped:
        lines.append(capped)
    if plan.get("deferred"):
        tiers = ", ".join(f"{n} at {t}" for t, n in sorted(plan["deferred_by_tier"].items()))
        full = plan.get("runners") and len(plan["runs"]) >= plan["leg_cap"]
        lines.append(
            f"**Deferred to the next run: {plan['deferred']} job(s)** ({tiers}), the least recently checked "
            "first then"
            + (f"; legs were capped by {plan['runners']} runner(s) × {plan['queue_hours']:g} h" if full else "")
            + "."
        )
    if daily_tier:
        days = plan.get("rotation_days")
        rate = (
            "every deeper check due has a leg today"
            if days == 0
            else f"at today's rate every command's {tier} check comes round within {days} day(s)"
            if days
            else f"no {tier} check fits today's legs"
        )
        lines.append(f"Every command is checked at {daily_tier} daily; {rate}.")
    if plan.get("oldest_check") is not None:
        oldest = plan["oldest_check"] or "never (some jobs due were never checked this deep)"
        lines.append(f"Least recent check among the jobs due: {oldest}.")
    return "\n\n".join(lines)


def runner_cap(plan: dict) -> str | None:
    """The plan's cap by runners (`plan --runners`), in words; None when it has none."""
    if not plan.get("runners"):
        return None
    per = plan["leg_cap"] // plan["runners"]
    return (
        f"Legs capped at {plan['leg_cap']} over all targets by {plan['runners']} runner(s) × "
        f"{plan['queue_hours']:g} h of queued legs each (at most {per} leg(s) of {plan['leg_hours']:g} h per runner: "
        f"GitHub cancels a job queued 24 h); {len(plan['runs'])} used."
    )
