"""`driftmatrix check`: one command (or every command of some pages) against the option history,
in well under a second and with no vLLM installed — on which releases each option, value and key
exists, where the whole command parses, what vLLM deprecated in its own words; with `--matrix`,
the verdicts the published matrix recorded for this exact command; with `--run`, a real build
through the tiers.

Inputs: a command (`vllm serve …`, a `docker run …`, or just its options), `-` for stdin,
`PAGE:LINE` (the command at that line of a docs page), or PAGE (every command on it: what the
pre-commit hook passes). The releases asked: `--version X`, else the versions a page is written
for, else today's stable release. Exit status: 0 parses on every release asked (a page's command: on
at least one of the page's releases — only some refusing it is a warning), 1 does not (or a --run
failed), 2 an input could not be read or a release asked is not in the history.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from driftmatrix.check_inputs import GIVEN, Checked, CheckInputError, gather, shipped_history
from driftmatrix.runner.outcomes.vocabulary import TIERS
from driftmatrix.sandbox_cli import add_unsandboxed


# -- judging ------------------------------------------------------------------------------------
def rejected_everywhere(c: Checked) -> list:
    """The uses none of the asked releases takes (the hook fails on these: the page's versions all lack them)."""
    return [a for a in c.check.uses if c.asked and all(a.on.get(r) is False for r in c.asked)]


def parses_nowhere(c: Checked) -> bool:
    """No asked release the history read parses the whole command — each lacks some part of it, not
    necessarily the same part (an option gone in 0.17.0 beside one added in 0.20.0: every release of a
    `>=0.10.0` page refuses the command, though each option exists on some of them)."""
    read = [r for r in c.asked if r not in c.check.unread]
    return bool(read) and all(c.check.parses_on(r) is False for r in read)


def page_fails(c: Checked) -> bool:
    """The hook's rule for a page's command: an error when it works on none of the releases the page is
    written for (its reader runs one of them, and it fails there whichever); a warning when only some
    refuse it (the reader may run one that takes it)."""
    return bool(rejected_everywhere(c)) or parses_nowhere(c)


def failed(c: Checked) -> bool:
    """A page's command fails when it parses on none of the page's releases; a command given alone,
    when it does not parse on every release asked."""
    return page_fails(c) if c.page else not c.check.ok


def rejected(c: Checked) -> bool:
    """A release asked rejects part of it (not merely: the history read no such release)."""
    return page_fails(c) if c.page else any(c.check.parses_on(r) is False for r in c.asked)


def finding(c: Checked) -> bool:
    """Something to look at: a release asked rejects part of it, or vLLM deprecated part of it."""
    return any(False in a.on.values() or a.deprecated for a in c.check.uses)


def unanswered(c: Checked) -> list[str]:
    """What of the command the history cannot judge on a release asked (a value whose type it did not
    read, a placeholder, a plugin's value): said beside a ✓, never hidden under it."""
    refused = {
        a.use.option
        for a in c.check.uses
        if a.use.kind == "option" and c.asked and all(a.on.get(r) is False for r in c.asked)
    }  # an option no asked release has: its word says nothing
    return [
        a.use.text()
        for a in c.check.uses
        if a.use.kind != "option"
        and c.asked
        and not (a.use.kind == "argument" and a.use.option in refused)
        and any(a.on.get(r) is None for r in c.asked if r not in c.check.unread)
    ]


def fix_for(history, answer) -> str | None:
    """vLLM's own replacement for what the release rejects, where its text names one."""
    from driftmatrix.flaghistory.commands import record_of

    use = answer.use
    replacement = (record_of(history, use) or {}).get("replacement")
    if not replacement:
        return None
    if use.kind == "key":
        return f"use the key `{replacement}` of {use.option} (vLLM's text names it instead of `{use.key}`)"
    if use.kind == "value":
        return f"use `{use.written} {replacement}` (vLLM's text names it instead of {use.value})"
    return f"use {replacement} (vLLM's text names it instead of {use.written})"


# -- what the matrix recorded -------------------------------------------------------------------
def load_matrix(where: str) -> dict:
    if re.match(r"^https?://", where):
        import httpx

        response = httpx.get(where, timeout=30, follow_redirects=True)
        response.raise_for_status()
        return response.json()
    import json

    return json.loads(Path(where).read_text())


def recorded(matrix: dict, snippet) -> list[dict]:
    """The matrix's verdicts for this exact command (its id: the same command reads the same)."""
    entry = (matrix.get("snippets") or {}).get(snippet.id)
    if entry is None:
        return []
    targets = matrix.get("targets") or {}
    rows = [
        {
            "target": key,
            "label": (targets.get(key) or {}).get("label") or key,
            "version": (targets.get(key) or {}).get("version"),
            "status": cell.get("status"),
            "depth": cell.get("depth"),
            "retired": bool(cell.get("retired")),
        }
        for key, cell in (entry.get("support") or {}).items()
    ]
    return [
        {
            "judgement": entry.get("judgement"),
            "summary": next((j.get("summary") for j in entry.get("judgements") or []), None),
            "cells": rows,
        }
    ]


# -- a real build -------------------------------------------------------------------------------
def run_on_target(c: Checked, args: argparse.Namespace) -> list[dict]:
    """The command through the tiers on a real build (`driftmatrix run` on a one-command catalog)."""
    import tempfile

    from driftmatrix.extractor.snippet_record import Catalog
    from driftmatrix.runner.outcomes import store
    from driftmatrix.runner.run.loop import run
    from driftmatrix.runner.run.selection import RunOptions

    with tempfile.TemporaryDirectory(prefix="driftmatrix-check-") as tmp:
        snippets, outcomes = Path(tmp) / "snippets.json", Path(tmp) / "outcomes.jsonl"
        Catalog(snippets=[c.snippet]).write(snippets)
        run(
            RunOptions(
                snippets=snippets,
                output=outcomes,
                targets=Path(args.targets) if args.targets else None,
                tier=args.tier,
                target_names=[args.run],
                stand_ins=args.stand_ins,
                summary=str(Path(tmp) / "summary.md"),
            )
        )
        found, _ = store.read(outcomes) if outcomes.is_file() else ([], [])
    return [
        {
            "target": o.target.name,
            "version": o.target.version,
            "verdict": o.verdict,
            "stage": o.stage,
            "tier": o.tier,
            "reason": o.reason,
        }
        for o in found
    ]


# -- output -------------------------------------------------------------------------------------
def _runs(runs: list[list[str]]) -> str:
    return ", ".join(a if a == b else f"{a}–{b}" for a, b in runs) or "none"


def _listed(releases: list[str], every: list[str]) -> str:
    """The releases as runs of the history's releases (`0.20.1–0.34.0`); others named as given."""
    from driftmatrix.flaghistory.command_check import runs_of

    known = set(releases)
    runs = _runs(runs_of(every, [r in known for r in every]))
    other = [r for r in releases if r not in set(every)]
    return ", ".join(x for x in [runs if known & set(every) else "", *other] if x)


def _grouped(why: dict[str, str], every: list[str]) -> list[tuple[str, str]]:
    """The same reason for consecutive releases said once: (`0.20.1–0.34.0`, reason)."""
    groups: list[tuple[list[str], str]] = []
    for release, text in why.items():
        if groups and groups[-1][1] == text:
            groups[-1][0].append(release)
        else:
            groups.append(([release], text))
    return [(_listed(rs, every), text) for rs, text in groups]


def as_json(c: Checked, history) -> dict:
    from driftmatrix.extractor.snippet_builder import shell_text

    body = c.check.as_json()
    body.update(
        where=c.where,
        basis=c.basis,
        command=shell_text(c.snippet.argv, c.snippet.env),
        snippet_id=c.snippet.id,
        failed=failed(c),
        fixes={a.use.text(): f for a in c.check.uses if (f := fix_for(history, a))},
    )
    if c.recorded:
        body["recorded"] = c.recorded
    return body


def render(console, c: Checked, history) -> None:
    from driftmatrix.common.inert import (
        console_markup as escape,  # docs and vLLM text: no control code, markup or command
    )
    from driftmatrix.extractor.snippet_builder import shell_text

    check = c.check
    some = any(c.check.parses_on(r) is False for r in c.asked)
    mark = (
        "[red]✗ does not parse on"
        if rejected(c)
        else "[yellow]? cannot say whether it parses on"
        if failed(c) or not c.asked
        else "[yellow]⚠ parses on some, not all, of"
        if some
        else "[green]✓ parses on"
    )
    console.print(f"[bold]{escape(c.where)}[/]: {escape(shell_text(c.snippet.argv, c.snippet.env))}", soft_wrap=True)
    unsure = unanswered(c)
    unsure_text = f" [yellow]— cannot say for {escape(', '.join(unsure))}[/]" if unsure and not rejected(c) else ""
    console.print(
        f"  {mark}[/] {escape(_listed(c.asked, check.releases) or 'no release the history read')} "
        f"[dim]({escape(c.basis)})[/]{unsure_text}",
        soft_wrap=True,
    )
    if check.unread:
        console.print(
            f"  [red]cannot say for {escape(', '.join(check.unread))}: the history read releases "
            f"{escape(check.releases[0])} to {escape(check.releases[-1])}",
            soft_wrap=True,
        )
    whole = f"{check.oldest} (oldest) … {check.newest} (newest): {_runs(check.parses)}" if check.parses else "none"
    console.print(f"  whole command parses on: {escape(whole)}", soft_wrap=True)
    for a in check.uses:
        if a.use.kind == "argument" and not a.why and a.use.text() not in unsure:
            continue  # a well-formed value: the option's own line says the rest
        unknown = f" [dim](cannot say for {escape(_runs(a.unanswered))})[/]" if a.unanswered else ""
        what = " [dim](the word after the option)[/]" if a.use.kind == "argument" else ""
        console.print(f"    {escape(a.use.text())}{what}: {escape(_runs(a.accepted))}{unknown}", soft_wrap=True)
        for releases, why in _grouped(a.why, check.releases):
            console.print(f"      [red]{escape(releases)}: {escape(why)}", soft_wrap=True)
        if (fix := fix_for(history, a)) and a.why:
            console.print(f"      [cyan]fix: {escape(fix)}", soft_wrap=True)
        if a.deprecated and not a.why:  # a rejection already quotes vLLM's deprecation
            d = a.deprecated
            console.print(
                f"      [yellow]deprecated since vLLM {escape(d['since'])}: “{escape(d['text'] or '')}”"
                + (f" → {escape(d['replacement'])}" if d.get("replacement") else ""),
                soft_wrap=True,
            )
        if a.plugin:
            console.print(f"      [yellow]{escape(a.plugin)}", soft_wrap=True)
        if a.model_dependent and any(a.on.values()):
            console.print(f"      [dim]depends on the model: {escape(a.model_dependent)} (runs decide)", soft_wrap=True)
    for r in c.recorded:
        console.print(
            f"  recorded in the matrix: {escape(str(r.get('judgement')))}"
            + (f" — {escape(r['summary'])}" if r.get("summary") else ""),
            soft_wrap=True,
        )
        for cell in r["cells"]:
            console.print(
                f"    {escape(cell['label'])}: {escape(str(cell['status']))} ({escape(str(cell['depth']))})"
                + (" [dim]retired" if cell["retired"] else ""),
                soft_wrap=True,
            )


def cmd_check(args: argparse.Namespace) -> int:
    from rich.console import Console

    from driftmatrix.check_head import against_checkout
    from driftmatrix.common.inert import console_markup, log_json, terminal
    from driftmatrix.common.vllm_plugins import plugins_of
    from driftmatrix.flaghistory.command_check import check_argv
    from driftmatrix.release_pins import todays_stable

    console = Console(stderr=False, highlight=False)
    errors = Console(stderr=True, highlight=False)
    try:
        history = shipped_history()
        checked, problems = gather(args, history, todays_stable())
        history = against_checkout(history, checked, args)  # a vLLM checkout's pages: its own sources
        matrix = load_matrix(args.matrix) if args.matrix else None
    except (CheckInputError, OSError, ValueError) as err:
        errors.print(f"[red]driftmatrix check: {console_markup(err)}", soft_wrap=True)
        return 2
    for problem in problems:  # a problem names the page and quotes it
        errors.print(f"[red]driftmatrix check: {console_markup(problem)}", soft_wrap=True)
    for c in checked:
        c.check = check_argv(history, list(c.snippet.argv or []), c.asked, plugins_of(c.snippet))
        c.recorded = recorded(matrix, c.snippet) if matrix else []
    if args.run:
        from driftmatrix.sandbox_cli import banner

        errors.print(f"driftmatrix check --run: {banner()}", soft_wrap=True)
    runs = {c.where: run_on_target(c, args) for c in checked} if args.run else {}
    if args.json:
        print(
            log_json(
                [{**as_json(c, history), **({"ran": runs[c.where]} if args.run else {})} for c in checked], indent=1
            )
        )
    else:
        for c in checked:
            if c.where != GIVEN and not args.verbose and not finding(c):
                continue  # the hook's output: only what a writer has to look at
            render(console, c, history)
            for o in runs.get(c.where, []):
                console.print(
                    f"  ran on {o['target']} ({o['version']}): {o['verdict']} at {o['stage']}"
                    + (f" — {terminal(o['reason'])}" if o["reason"] else ""),
                    soft_wrap=True,
                    markup=False,
                )
        if any(c.where != GIVEN for c in checked):
            pages = {c.where.rsplit(":", 1)[0] for c in checked}
            console.print(
                f"{len(checked)} commands on {len(pages)} pages checked against the versions each page is "
                f"written for: {sum(failed(c) for c in checked)} fail, "
                f"{sum(finding(c) and not failed(c) for c in checked)} with a warning",
                soft_wrap=True,
            )
    if problems and not checked:
        return 2
    bad_run = any(o["verdict"] == "FAIL" for ran in runs.values() for o in ran)
    if any(rejected(c) for c in checked) or bad_run:
        return 1
    return 2 if problems or any(failed(c) for c in checked) else 0  # failed, not rejected: a release not read


def add_parser(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser(
        "check",
        help="one command against every vLLM release's options and values (no vLLM needed)",
        description=__doc__.split("\n\n")[0].replace("`", ""),
    )
    c.add_argument(
        "input",
        nargs="*",
        metavar="COMMAND|PAGE[:LINE]|-",
        help="a command (`vllm serve …` or its options), a docs page, PAGE:LINE, or - for stdin",
    )
    c.add_argument("--version", action="append", metavar="X", help="ask about this release (repeatable)")
    c.add_argument("--docs", metavar="ROOT", help="the docs tree pages belong to (default: their git checkout)")
    c.add_argument("--matrix", metavar="FILE|URL", help="the published matrix.json: the verdicts it recorded")
    c.add_argument("--run", metavar="TARGET", help="also run it on this target (a real build) through the tiers")
    c.add_argument("--tier", choices=TIERS, default="parse", help="with --run: the last tier (default: %(default)s)")
    c.add_argument(
        "--stand-ins",
        nargs="?",
        const="tiny",
        choices=["tiny", "full"],
        metavar="SIZE",
        help="with --run: twins for models that cannot be had",
    )
    c.add_argument(
        "--targets", help="with --run: targets TOML (default: this machine's: today's stable and the newest CPU build)"
    )
    c.add_argument(
        "--changed",
        nargs="?",
        const="HEAD",
        metavar="REV",
        help="every page changed against REV (default HEAD: your uncommitted changes)",
    )
    c.add_argument("-v", "--verbose", action="store_true", help="pages: every command, not only those with a finding")
    c.add_argument("--json", action="store_true", help="JSON on stdout")
    add_unsandboxed(c)  # --run starts the command's code as `driftmatrix run` does: contained, or by request not
    c.set_defaults(func=cmd_check)
