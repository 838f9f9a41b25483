"""The doc-fix PR's description: per inserted warning the evidence on the builds the page is
written for, the commands replaced by a verified fix, the vLLM regressions found on the same
pages; cut to fit GitHub's limit on a PR body, with a line pointing to the site for the rest."""

from __future__ import annotations

import re
from pathlib import Path

from publisher import annotate as ann
from publisher import views
from publisher.judgement import Judge
from publisher.results import Results
from publisher.views import cause
from runner import subcommands

BODY_LIMIT = 65_536
"""GitHub refuses a longer PR body (422 "body is too long (maximum is 65536 characters)")."""
BODY_BUDGET = BODY_LIMIT - 1_024
"""What is sent at most: GitHub may count some characters twice (UTF-16 surrogates, CRLF)."""
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})(.*)$")

def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def body(results: Results, annotation: ann.Annotation, site_url: str | None) -> str:
    """The PR description: what was checked and, per inserted warning, the evidence on the builds
    the page is written for; then the vLLM regressions found on the same pages (not doc bugs)."""
    judge = Judge(results)
    link = (lambda sid: f"[`{sid}`]({site_url.rstrip('/')}/snippets/{sid}.html)") if site_url else (lambda sid: f"`{sid}`")
    rows = []
    for patch in annotation.patches:
        for ins in patch.inserts:
            s = next(x for x in results.snippets if x.id == ins.snippet_id)
            src = next((x for x in s.sources if x.file == patch.file), s.sources[0])
            j = judge.of_source(s, src)
            for k in j.failing:
                rows.append(f"| {link(s.id)} | `{patch.file}:{src.line}` | `{j.written_for.spec}` | "
                            f"{_cell(k.column.label)}{f' `{k.column.commit}`' if k.column.commit else ''} | "
                            f"{k.outcome.verdict} ({k.outcome.stage}) | "
                            f"{_cell(cause(k.outcome, limit=200))} |")
    lines = [
        "driftmatrix ran the commands these pages show against the vLLM builds below. The ones listed "
        "fail on a vLLM version their page is written for (a release's docs: that release line; a "
        "recipe: its `min_vllm_version`; otherwise what the page states, or the current stable release "
        "and newer); this PR replaces a command by its fix where driftmatrix has one that it ran and saw "
        "working (\"Commands fixed\" below), and otherwise adds an admonition right after the command, between "
        "`<!-- driftmatrix:begin … -->` markers. Failures on versions a page is not written for are not listed. The next run updates "
        "this PR, and removes a warning once its command runs.", "",
        "| Command | Page | Written for | Build | Verdict | Cause |", "|---|---|---|---|---|---|", *rows, ""]
    lines += fixed_commands(annotation, link)
    lines += regressions(results, judge, annotation.tree, link)
    if site_url:
        lines.append(f"Evidence for every command (exception with the raising file:line, logs): {site_url}")
    return "\n".join(lines)


def fixed_commands(annotation: ann.Annotation, link) -> list[str]:
    """A before/after per command this PR fixes, with what the runner checked."""
    fixes = [(p.file, f) for p in annotation.patches for f in p.fixes]
    if not fixes:
        return []
    out = ["## Commands fixed", "",
           "Each fix below was run by driftmatrix through the same checks as the failing original, and at "
           "least as deep, on every build listed; only the command's own lines change.", ""]
    for file, f in fixes:
        checked = ", ".join(f"{label}: {how}" for label, _version, how in f.checks)
        out += [f"### `{file}:{f.line}` — {link(f.snippet_id)}", "", "Before:", "", "```bash", f.before, "```", "",
                "After:", "", "```bash", f.after, "```", "", *(f"- {_cell(w)}" for w in f.why),
                f"- checked on {_cell(checked)}", ""]
    return out


def regressions(results: Results, judge: Judge, tree: Path, link) -> list[str]:
    """A section per vLLM regression on the pages of this docs tree: text to paste into a vLLM issue."""
    out = []
    for s in results.snippets:
        for src in s.sources:
            j = judge.of_source(s, src)
            if j.kind != "vllm-regression" or not (tree / src.file).is_file():
                continue
            good, bad = j.regression
            exc = bad.outcome.evidence.exception or {}
            out += [f"### `{subcommands.program(s)}` regression: runs on vLLM {good.version}, fails on vLLM "
                    f"{bad.version}", "",
                    f"Command ({link(s.id)}, documented at `{src.file}:{src.line}`):", "",
                    views.fence(views.command(s), "bash"), "",
                    f"- vLLM {good.version} (commit `{good.column.commit or 'unknown'}`): "
                    f"{views.depth_text(good.outcome, s)}",
                    f"- vLLM {bad.version} (commit `{bad.column.commit or 'unknown'}`): fails at {bad.outcome.stage}: "
                    f"`{_cell(exc.get('type') or bad.outcome.verdict)}`: {_cell(exc.get('message') or bad.outcome.reason or '')}"
                    + (f" (raised at `{views.location(exc)}`)" if views.location(exc) else ""), ""]
            if bad.outcome.evidence.log_excerpt:
                out += ["<details><summary>Log excerpt</summary>", "", views.fence(bad.outcome.evidence.log_excerpt), "",
                        "</details>", ""]
            break  # one section per command
    if out:
        out = ["## vLLM regressions on these pages (not doc bugs: report upstream, no warning added)", "", *out]
    return out


def _unclosed(lines: list[str]) -> list[str]:
    """The lines that close what a cut left open: a code fence, `<details>` blocks."""
    bar, details = None, 0
    for line in lines:
        m = _FENCE.match(line)
        if bar is None and m:
            bar = m.group(1)
        elif bar is not None and m and m.group(1).startswith(bar) and not m.group(2).strip():
            bar = None  # a closing fence: the same character, at least as long, no info string
        elif bar is None:
            details += line.count("<details>") - line.count("</details>")
    return ([bar] if bar else []) + ["</details>"] * max(0, details)


def fit(text: str, site_url: str | None, reserve: int = 0) -> str:
    """`text`, or as many whole lines of it as fit the budget (less `reserve`, for what the caller
    appends), with what the cut left open closed and a last line saying where the rest is."""
    if len(text) + reserve <= BODY_BUDGET:
        return text
    where = (f"every command's evidence is on the site: {site_url}" if site_url
             else "`driftmatrix pr` without --apply prints all of it")
    tail = f"*This description is cut at GitHub's {BODY_LIMIT:,}-character limit for a PR body; {where}*"
    room = BODY_BUDGET - reserve - len(tail) - 200  # 200: the closing fence and </details> lines
    kept, size = [], 0
    for line in text.split("\n"):
        if size + len(line) + 1 > room:
            break
        kept.append(line)
        size += len(line) + 1
    return "\n".join([*kept, *_unclosed(kept), "", tail])
