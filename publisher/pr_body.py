"""The doc-fix PR's description: per inserted warning the evidence on the builds the page is
written for, the commands replaced by a verified fix, the vLLM regressions found on the same
pages; cut to fit GitHub's limit on a PR body, with a line pointing to the site for the rest.

Every text from the docs or from vLLM (commands, messages, reasons, page names) is shown as code
(common/inert.py): in a PR body it would otherwise ping teams, load images and show links under
the bot's name. The only links are to the site, from the URL driftmatrix was given."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from driftmatrix.common.inert import code_block, code_span, plain, table_cell, unclosed
from driftmatrix.publisher import annotate as ann
from driftmatrix.publisher import causes, defects, verdict_words
from driftmatrix.publisher.causes import cause
from driftmatrix.publisher.command_view import CommandViews
from driftmatrix.publisher.results import Results
from driftmatrix.runner.outcomes import subcommands

BODY_LIMIT = 65_536
"""GitHub refuses a longer PR body (422 "body is too long (maximum is 65536 characters)")."""
BODY_BUDGET = BODY_LIMIT - 1_024
"""What is sent at most: GitHub may count some characters twice (UTF-16 surrogates, CRLF)."""


def _linker(site_url: str | None):
    """A snippet id as code, linked to its page on the site when there is one (`use_directory_urls:
    false`: `snippets/<id>.html`)."""
    if not site_url:
        return code_span
    return lambda sid: f"[{code_span(sid)}]({site_url.rstrip('/')}/snippets/{quote(str(sid), safe='')}.html)"


def body(commands: CommandViews, annotation: ann.Annotation, site_url: str | None) -> str:
    """The PR description: what was checked and, per inserted warning, the evidence on the builds
    the page is written for; then the vLLM regressions found on the same pages (not doc bugs)."""
    link = _linker(site_url)
    rows = []
    for patch in annotation.patches:
        for ins in patch.inserts:
            view = commands[ins.snippet_id]
            s = view.snippet
            src = next((x for x in s.sources if x.file == patch.file), s.sources[0])
            j = view.at(src)
            where = f"| {link(s.id)} | {table_cell(f'{patch.file}:{src.line}')} | {table_cell(j.written_for.spec)} |"
            rows += _evidence_rows(j, link(s.id), f"{patch.file}:{src.line}")
            for k in j.failing:
                commit = f" {table_cell(k.column.commit)}" if k.column.commit else ""
                rows.append(
                    f"{where} {plain(k.column.label)}{commit} | "
                    f"{plain(k.outcome.verdict)} ({plain(k.outcome.stage)}) | "
                    f"{table_cell(cause(k.outcome, limit=200))} |"
                )
            if not j.failing and not j.defects and j.decided_by != "history":  # no row says why otherwise
                rows.append(f"{where} — | {plain(j.kind)} | {table_cell(j.summary, 200)} |")
    lines = [
        "driftmatrix ran the commands these pages show against these vLLM builds:",
        "",
        *builds(commands.results),
        "",
    ]
    if rows:  # a table with a header and no rows says nothing: left out
        lines += [
            "The commands below do not run as written on a vLLM version their page is written for (a release's "
            "docs: that release line; a recipe: its `min_vllm_version`; otherwise what the page states, or the "
            "current stable release and newer); this PR adds an admonition right after each, between "
            "`<!-- driftmatrix:begin … -->` markers. Failures on versions a page is not written for are not listed.",
            "",
            "| Command | Page | Written for | Build | Verdict | Cause |",
            "|---|---|---|---|---|---|",
            *rows,
            "",
        ]
    lines += fixed_commands(annotation, link)
    lines += ["The next run updates this PR: a warning goes once its command runs.", ""]
    lines += regressions(commands, annotation.tree, link)
    if site_url:
        lines.append(f"Evidence for every command (exception with the raising file:line, logs): {site_url}")
    return "\n".join(lines)


def _evidence_rows(j, command: str, where: str) -> list[str]:
    """The rows of a doc-drift that no build decided: the shell's (or Python's) reading, or the option history."""
    if j.defects:  # one row per kind of defect: where the shell first ends it (the lines after are its own commands)
        shell = [d for d in j.defects if defects.decider_of(d) == "shell"]
        python = [d for d in j.defects if defects.decider_of(d) == "python"]
        tree = [d for d in j.defects if defects.decider_of(d) == "tree"]
        rows = []
        if shell:
            more = [str(d.line) for d in shell[1:]]
            also = f" (likewise line{'s' if len(more) > 1 else ''} {', '.join(more)})" if more else ""
            rows.append(
                f"| {command} | {table_cell(where)} | {table_cell(j.written_for.spec)} | the shell (bash) | "
                f"ends the command on line {defects.ends_on(shell[0])} | "
                f"{table_cell(shell[0].message[:200] + also)} |"
            )
        rows += [
            f"| {command} | {table_cell(where)} | {table_cell(j.written_for.spec)} | Python's parser | "
            f"stops reading the block on line {d.line} | {table_cell(d.message[:200])} |"
            for d in python
        ]
        rows += [
            f"| {command} | {table_cell(where)} | {table_cell(j.written_for.spec)} | the release's tree | "
            f"a file it names is missing (line {d.line}) | {table_cell(d.message[:200])} |"
            for d in tree
        ]
        return rows
    if j.decided_by == "history":
        return [
            f"| {command} | {table_cell(where)} | {table_cell(j.written_for.spec)} | the option history | "
            f"{plain(j.history_why or '')} | {table_cell(note[:200])} |"
            for note in j.option_notes
        ]
    return []


def fixed_commands(annotation: ann.Annotation, link) -> list[str]:
    """A before/after per command this PR fixes, with what the runner checked."""
    fixes = [(p.file, f) for p in annotation.patches for f in p.fixes]
    if not fixes:
        return []
    out = [
        "## Commands fixed",
        "",
        "This PR replaces each command below by a fix that driftmatrix ran and saw working; only the "
        "command's own lines change. Under each: why, and what its run showed.",
        "",
    ]
    for file, f in fixes:
        checked = ", ".join(f"{label}: {how}" for label, _version, how in f.checks)
        out += [
            f"### {code_span(f'{file}:{f.line}')} — {link(f.snippet_id)}",
            "",
            "Before:",
            "",
            code_block(f.before, "bash"),
            "",
            "After:",
            "",
            code_block(f.after, "bash"),
            "",
            *(f"- {code_span(w)}" for w in f.why),
            *([f"- {plain(f.checked)}"] if f.checked else []),
            f"- checked on {plain(checked)}",
            "",
        ]
    return out


def builds(results: Results) -> list[str]:
    """The builds the commands ran against, one line each (name, version, kind, commit)."""
    return [f"- {plain(c.label)}" + (f", commit {code_span(c.commit)}" if c.commit else "") for c in results.columns]


def regressions(commands: CommandViews, tree: Path, link) -> list[str]:
    """A section per vLLM regression on the pages of this docs tree: text to paste into a vLLM issue."""
    out = []
    for view in commands:
        s = view.snippet
        for src, j in zip(s.sources, view.at_sources):
            if j.kind != "vllm-regression" or not (tree / src.file).is_file():
                continue
            good, bad = j.regression
            exc = bad.outcome.evidence.exception
            where = causes.location(exc)
            out += [
                f"### {code_span(subcommands.program(s))} regression: runs on vLLM {plain(good.version)}, fails "
                f"on vLLM {plain(bad.version)}",
                "",
                f"Command ({link(s.id)}, documented at {code_span(f'{src.file}:{src.line}')}):",
                "",
                code_block(view.command, "bash"),
                "",
                f"- vLLM {plain(good.version)} (commit {code_span(good.column.commit or 'unknown')}): "
                f"{verdict_words.depth_text(good.outcome, s)}",
                f"- vLLM {plain(bad.version)} (commit {code_span(bad.column.commit or 'unknown')}): fails at "
                f"{plain(bad.outcome.stage)}: {code_span((exc and exc.type) or bad.outcome.verdict)}: "
                f"{code_span((exc and exc.message) or bad.outcome.reason or '')}"
                + (f" (raised at {code_span(where)})" if where else ""),
                "",
            ]
            if bad.outcome.evidence.log_excerpt:
                out += [
                    "<details><summary>Log excerpt</summary>",
                    "",
                    code_block(bad.outcome.evidence.log_excerpt),
                    "",
                    "</details>",
                    "",
                ]
            break  # one section per command
    if out:
        out = ["## vLLM regressions on these pages (not doc bugs: report upstream, no warning added)", "", *out]
    return out


def fit(text: str, site_url: str | None, reserve: int = 0) -> str:
    """`text`, or as many whole lines of it as fit the budget (less `reserve`, for what the caller
    appends), with what the cut left open closed and a last line saying where the rest is."""
    if len(text) + reserve <= BODY_BUDGET:
        return text
    where = (
        f"every command's evidence is on the site: {site_url}"
        if site_url
        else "`driftmatrix pr` without --apply prints all of it"
    )
    tail = f"*This description is cut at GitHub's {BODY_LIMIT:,}-character limit for a PR body; {where}*"
    room = BODY_BUDGET - reserve - len(tail) - 200  # 200: the closing fence and </details> lines
    kept, size = [], 0
    for line in text.split("\n"):
        if size + len(line) + 1 > room:
            break
        kept.append(line)
        size += len(line) + 1
    cut = "\n".join([*kept, *unclosed(kept), "", tail])
    while kept and len(cut) + reserve > BODY_BUDGET:  # a fence as long as a line of the text: closed, it may not fit
        kept.pop()
        cut = "\n".join([*kept, *unclosed(kept), "", tail])
    return cut
