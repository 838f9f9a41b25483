"""Short Markdown summaries for a CI job's page (`$GITHUB_STEP_SUMMARY`), one per command.

Text from the docs (snippet reasons, exception messages) is untrusted: it is cut short and
escaped so that it cannot open HTML, links or table cells in the summary.
"""

from __future__ import annotations

import html
import os
from collections import Counter
from pathlib import Path

from runner.records import VERDICTS, Outcome


def escape(text: object, limit: int = 160) -> str:
    """One line of untrusted text, safe in Markdown and in a table cell."""
    one = " ".join(str(text).split())
    one = one if len(one) <= limit else one[: limit - 1] + "…"
    one = html.escape(one, quote=False)  # < > &: no HTML; quotes stay as typed
    for ch in "\\`*_[]|!":
        one = one.replace(ch, "\\" + ch)
    return one


def write(markdown: str, path: str | os.PathLike | None = None) -> bool:
    """Append to `path`, else to `$GITHUB_STEP_SUMMARY` when set; False when there is nowhere to write."""
    target = path or os.environ.get("GITHUB_STEP_SUMMARY")
    if not target or not markdown:
        return False
    with Path(target).open("a", encoding="utf-8") as fh:
        fh.write(markdown.rstrip() + "\n\n")
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
                     + "\n".join(f"- `{o.snippet_id}` on {escape(o.target.name)}: {escape(o.reason or '')}"
                                 for o in errors[:10]))
    fails = [o for o in outcomes if o.verdict == "FAIL"]
    if fails:
        parts.append("FAIL (the publish job judges each against the versions its page is written for):\n\n"
                     + "\n".join(f"- `{o.snippet_id}`{' (' + o.variant + ')' if o.variant else ''} on "
                                 f"{escape(o.target.name)} at {o.stage}: {escape(o.reason or '')}" for o in fails[:15])
                     + (f"\n- … and {len(fails) - 15} more" if len(fails) > 15 else ""))
    return "\n\n".join(parts)
