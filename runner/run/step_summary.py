"""Short Markdown summaries for a CI job's page (`$GITHUB_STEP_SUMMARY`), one per command.

Text from the docs and from vLLM (snippet reasons, exception messages) is untrusted: it is cut
short and shown as code (common/inert.py), so that it cannot open HTML, links, images or table
cells, nor mention anyone. Every summary goes through `write`, which keeps a step under GitHub's
limit (`common.inert.STEP_SUMMARY_CAP`).
"""

from __future__ import annotations

import argparse
import os
from collections import Counter
from pathlib import Path

from common.inert import STEP_SUMMARY_CAP, cap, clip, code_block, code_span, plain
from runner.outcomes.records import VERDICTS, Outcome

FULL_LIST = "the job's outcomes file (`outcomes.jsonl`, uploaded as its artifact)"
"""Where a summary cut at the cap says the rest is, unless its writer says better."""


def escape(text: object, limit: int = 160) -> str:
    """One line of text for a prose position or a table cell: escaped and defused
    (`common.inert.plain`). Docs and vLLM text goes in `code_span` instead."""
    return plain(text, limit)


def write(markdown: str, path: str | os.PathLike | None = None, full: str = FULL_LIST) -> bool:
    """Append to `path`, else to `$GITHUB_STEP_SUMMARY` when set; False when there is nowhere to
    write, or no room. What this step's summary already holds counts: together they stay within
    `STEP_SUMMARY_CAP`, a longer text cut at a row with a line saying where the `full` list is."""
    target = path or os.environ.get("GITHUB_STEP_SUMMARY")
    if not target or not markdown:
        return False
    held = Path(target).stat().st_size if Path(target).is_file() else 0
    text = cap(markdown.rstrip(), full, STEP_SUMMARY_CAP - held - 2)  # 2: the blank line after it
    if not text:
        return False
    with Path(target).open("a", encoding="utf-8") as fh:
        fh.write(text + "\n\n")
    return True


def verdict_table(outcomes: list[Outcome]) -> str:
    """Verdict counts per build (target name and vLLM version)."""
    rows: dict[str, Counter] = {}
    for o in outcomes:
        rows.setdefault(f"{o.target.name} · vLLM {o.target.version}", Counter())[o.verdict] += 1
    lines = ["| build | " + " | ".join(VERDICTS) + " |", "|---" * (len(VERDICTS) + 1) + "|"]
    lines += [f"| {escape(name)} | " + " | ".join(str(c[v]) for v in VERDICTS) + " |" for name, c in rows.items()]
    return "\n".join(lines)


def run_markdown(outcomes: list[Outcome], tier: str, reused: int, shard: str | None) -> str:
    where = f" · shard {shard}" if shard else ""
    head = f"### driftmatrix run{where} · tiers up to {tier}\n\n"
    if not outcomes:
        return head + f"Nothing to run: {reused} job(s) already had an outcome for these builds."
    parts = [head + verdict_table(outcomes)]
    if reused:
        parts.append(f"{reused} job(s) reused from the previous run's outcomes.")
    errors = [o for o in outcomes if o.verdict == "ERROR"]
    if errors:
        parts.append(f"**{len(errors)} ERROR** (ours or the machine's, not the docs'): this job is red.\n\n"
                     + "\n".join(f"- {code_span(o.snippet_id)} on {escape(o.target.name)}: "
                                 f"{code_span(o.reason or '', 160)}" for o in errors[:10]))
    fails = [o for o in outcomes if o.verdict == "FAIL"]
    if fails:
        parts.append("FAIL (the publish job judges each against the versions its page is written for):\n\n"
                     + "\n".join(f"- {code_span(o.snippet_id)}{' (' + escape(o.variant) + ')' if o.variant else ''} on "
                                 f"{escape(o.target.name)} at {escape(o.stage)}: {code_span(o.reason or '', 160)}"
                                 for o in fails[:15])
                     + (f"\n- … and {len(fails) - 15} more" if len(fails) > 15 else ""))
    return "\n\n".join(parts)


def plan_markdown(plan: dict, tier: str, daily_tier: str | None) -> str:
    """The plan step's summary: what runs today, what was left for later, how current the checks are."""
    by_target = ", ".join(f"{k}: {v}" for k, v in plan["by_target"].items())
    lines = [f"### Plan\n\n{plan['jobs']} job(s) to run at tiers up to {tier} ({by_target}), {plan['reused']} "
             f"reused from the previous outcomes; {len(plan['runs'])} run leg(s): {', '.join(plan['entries']) or 'none'}"]
    if plan.get("leg_hours"):
        longest = max(plan["planned_hours"].values(), default=0)
        how = ", ".join(f"{n} {k}" for k, n in sorted(plan["estimates"].items()))
        lines.append(f"Legs planned under {plan['leg_hours']:g} h each (the longest {longest:.2f} h), times from the "
                     f"recorded durations ({how or 'no jobs'}).")
    if plan.get("deferred"):
        tiers = ", ".join(f"{n} at {t}" for t, n in sorted(plan["deferred_by_tier"].items()))
        lines.append(f"**Deferred to the next run: {plan['deferred']} job(s)** ({tiers}), the least recently checked "
                     "first then.")
    if daily_tier:
        days = plan.get("rotation_days")
        rate = ("every deeper check due has a leg today" if days == 0 else
                f"at today's rate every command's {tier} check comes round within {days} day(s)" if days else
                f"no {tier} check fits today's legs")
        lines.append(f"Every command is checked at {daily_tier} daily; {rate}.")
    if plan.get("oldest_check") is not None:
        oldest = plan["oldest_check"] or "never (some jobs due were never checked this deep)"
        lines.append(f"Least recent check among the jobs due: {oldest}.")
    return "\n\n".join(lines)


def log_tail(title: str, log: Path, lines: int = 20) -> str:
    """A heading (`title`: the workflow's words, escaped) and the last `lines` lines of `log` as one
    code block that no line of it can close, each line cut at 2,000 characters (the end of a log is
    what explains a failure, and the cap would keep a block's first lines); a missing log says so."""
    if not log.is_file():
        return f"### {plain(title, 300)}\n\nNo log: {code_span(log.name)} was not written."
    tail = [clip(line, 2000) for line in log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]]
    return f"### {plain(title, 300)}\n\n" + code_block("\n".join(tail))


def main(argv: list[str] | None = None) -> int:
    """`python -m runner.run.step_summary --title T --log FILE`: a log's tail into this step's summary,
    capped like every summary (a workflow step that has only bash and driftmatrix's Python)."""
    p = argparse.ArgumentParser(prog="python -m runner.run.step_summary")
    p.add_argument("--title", required=True)
    p.add_argument("--log", required=True, type=Path)
    p.add_argument("--lines", type=int, default=20)
    p.add_argument("--full", default="this job's log", help="where the whole log is (said when the summary is cut)")
    p.add_argument("--summary", help="append here (default: $GITHUB_STEP_SUMMARY)")
    args = p.parse_args(argv)
    write(log_tail(args.title, args.log, args.lines), args.summary, args.full)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
