"""The publisher's commands: `driftmatrix publish` (the site + matrix.json) and
`driftmatrix annotate` (warnings in a docs tree)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from urllib.parse import quote

from driftmatrix.common.inert import code_span, console_markup, terminal
from driftmatrix.publisher.run_history import DEFAULT_KEEP_SNAPSHOTS
from driftmatrix.runner.outcomes.retention import DEFAULT_KEEP_NIGHTLIES


def _load(args):
    from driftmatrix.publisher.results import load

    fixes = getattr(args, "fixes", None)
    return load(Path(args.snippets), [Path(p) for p in args.outcomes], Path(fixes) if fixes else None)


def _load_or_say(args, command: str):
    """The results, or None after saying on stderr why the inputs cannot be used."""
    try:
        return _load(args)
    except ValueError as err:
        print(f"driftmatrix {command}: {terminal(err)}", file=sys.stderr)
        return None


def _count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"a whole number from 0, got {text!r}")
    return int(text)


def cmd_fixes(args: argparse.Namespace) -> int:
    from driftmatrix.common.step_summary import escape
    from driftmatrix.extractor.snippet_record import Catalog
    from driftmatrix.publisher.fix_choice import choose
    from driftmatrix.publisher.fixes import candidates

    results = _load_or_say(args, "fixes")
    if results is None:
        return 2
    found = candidates(results)
    chosen = choose(found.fixes, results, args.max_candidates)
    Catalog(snippets=chosen.fixes).write(Path(args.output))
    for line in found.without:  # why a command has no fix: it quotes the command and vLLM
        print(terminal(line), file=sys.stderr)
    print(
        f"{len(chosen.fixes)} fix candidate(s) written to {args.output} ({len(chosen.to_run)} to run, "
        f"{len(chosen.checked)} with outcomes already); run them with `driftmatrix run {args.output} -o OUTCOMES` "
        "(variant fix), then publish/annotate/pr with --fixes"
    )
    if chosen.left_out:
        from driftmatrix.common.step_summary import write

        text = (
            f"{len(chosen.left_out)} more fix candidate(s) left out by --max-candidates {args.max_candidates} "
            f"(the next run ranks them again): {', '.join(f.id for f in chosen.left_out[:20])}"
            + (", …" if len(chosen.left_out) > 20 else "")
        )
        print(text)
        write(
            f"### Fix candidates\n\n{len(chosen.to_run)} to run, {len(chosen.checked)} with outcomes already; "
            f"**{escape(text, 2000)}**."
        )
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    from rich.console import Console

    from driftmatrix.publisher.site import PublishError, build_site

    console = Console(stderr=True)
    try:
        results = _load(args)
    except ValueError as err:
        console.print(f"[red]driftmatrix publish: {console_markup(err)}", soft_wrap=True)
        return 2
    if args.snapshot_only:
        return _snapshot(results, args, console)
    try:
        done = build_site(
            results,
            Path(args.site_dir),
            history_dir=Path(args.run_history) if args.run_history else None,
            docs=[Path(d) for d in args.docs or []],
            unsaved=_unsaved_note(args.state_unsaved),
            keep_snapshots=args.keep_snapshots,
        )
    except PublishError as err:
        console.print(f"[red]driftmatrix publish: {console_markup(err)}", soft_wrap=True)  # mkdocs' words
        return 1
    for problem in done.problems:
        console.print(f"[yellow]{console_markup(problem)}", soft_wrap=True)
    console.print(
        f"{len(results.snippets)} commands x {len(results.columns)} targets: {done.pages} pages built "
        f"into {done.site_dir} (generate {done.timings['generate_s']} s, mkdocs {done.timings['mkdocs_s']} s); "
        f"{len(done.changes)} verdict change(s) since the previous run; matrix.json beside it"
    )
    console.print(f"judgements against the versions each page is written for: {done.judged()}")
    from driftmatrix.common.step_summary import write

    write(publish_summary(done, args.site_url), full=PUBLISH_FULL)
    return 0


def _unsaved_note(path: str | None) -> dict | None:
    """`--state-unsaved FILE`: the note `state save --unsaved-note` wrote (date, run, why); a note that
    is not that JSON is shown as its text, one that cannot be read says so: the site is built either way."""
    if not path:
        return None
    import json

    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        return {"why": f"the note {path} could not be read ({err.strerror or type(err).__name__})"}
    try:
        note = json.loads(text)
    except ValueError:
        note = None
    return note if isinstance(note, dict) else {"why": text}


def _snapshot(results, args: argparse.Namespace, console) -> int:
    """`--snapshot-only`: this run's matrix.json into --run-history, no site."""
    from driftmatrix.publisher.site import snapshot

    if not args.run_history:
        console.print("[red]driftmatrix publish: --snapshot-only needs --run-history DIR", soft_wrap=True)
        return 2
    path = snapshot(results, Path(args.run_history), args.keep_snapshots)
    console.print(
        f"{len(results.snippets)} commands x {len(results.columns)} targets: this run's matrix.json kept "
        f"as {console_markup(path.name)} in the run history (no site built)"
    )
    return 0


PUBLISH_FULL = "the site's overview and matrix, and `merged.jsonl` in this run's `merged` artifact"
"""Where the publish summary, when cut at GitHub's limit, says the whole report is."""


def publish_summary(done, site_url: str | None) -> str:
    """Markdown for the CI job page: the judgements, the doc-drift new since the previous run, changes."""
    from collections import Counter

    from driftmatrix.common.step_summary import escape

    now = done.matrix.get("snippets", {})
    before = (done.previous or {}).get("snippets", {}) if done.previous is not None else None
    new = [
        sid
        for sid, e in now.items()
        if e["judgement"] == "doc-drift" and (before is None or (before.get(sid) or {}).get("judgement") != "doc-drift")
    ]
    base = (site_url or "").rstrip("/")
    lines = [f"### driftmatrix publish\n\n{len(now)} commands: {escape(done.judged())}"]
    if before is None:
        lines.append("First publish: no previous run to compare with.")
    lines.append(
        f"**New doc-drift: {len(new)}**"
        + (
            ""
            if not new
            else "\n\n"
            + "\n".join(f"- {_linked(sid, base)} {_place(now[sid])}" for sid in new[:25])
            + (f"\n- … and {len(new) - 25} more: {PUBLISH_FULL}" if len(new) > 25 else "")
        )
    )
    kinds = Counter(c.kind for c in done.changes)
    if kinds:
        lines.append("Changes since the previous run: " + ", ".join(f"{n} {escape(k)}" for k, n in kinds.items()))
    if base:
        lines.append(f"Site: {base}/")
    return "\n\n".join(lines)


def _linked(sid: str, base: str) -> str:
    """A command's id as code, linked to its page when the site's URL is known (the site has
    `use_directory_urls: false`: `snippets/<id>.html`)."""
    return f"[{code_span(sid)}]({base}/snippets/{quote(sid, safe='')}.html)" if base else code_span(sid)


def _place(entry: dict) -> str:
    """`page:line` of a command's first place: the page's name is docs text, shown as code."""
    first = (entry.get("sources") or [{}])[0]
    return code_span(f"{first.get('file', '')}:{first.get('line', '')}", 300)


def cmd_annotate(args: argparse.Namespace) -> int:
    from driftmatrix.publisher import annotate as ann

    results = _load_or_say(args, "annotate")
    if results is None:
        return 2
    result = ann.annotate(results, Path(args.docs))
    for problem in result.problems:
        print(f"driftmatrix annotate: {terminal(problem)}", file=sys.stderr)
    if args.patch:
        Path(args.patch).write_text(result.diff(), encoding="utf-8")
    if args.output:
        ann.write_tree(result, Path(args.output))
    inserted = sum(len(p.inserts) for p in result.patches)
    fixed = sum(len(p.fixes) for p in result.patches)
    print(
        f"{len(result.patches)} page(s) changed, {inserted} admonition(s) inserted, {fixed} command(s) "
        "replaced by their verified fix"
        + (f"; patched tree in {args.output}" if args.output else "")
        + (f"; patch in {args.patch}" if args.patch else "")
    )
    return 1 if result.problems and not result.patches and not inserted else 0


def cmd_pr(args: argparse.Namespace) -> int:
    import re

    from driftmatrix.publisher.pull_request import PrOptions, run_pr

    try:
        for flag, value in (("--repo", args.repo), ("--push-to-fork", args.push_to_fork)):
            if value is not None and not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", value):
                raise ValueError(f"{flag} must read OWNER/NAME, not {value!r}")
        return run_pr(
            PrOptions(
                repo=args.repo,
                checkout=Path(args.checkout),
                snippets=Path(args.snippets),
                outcomes=[Path(p) for p in args.outcomes],
                apply=args.apply,
                base=args.base,
                branch=args.branch,
                remote=args.remote,
                site_url=args.site_url,
                api=args.api_url,
                label=args.label,
                fixes=Path(args.fixes) if args.fixes else None,
                push_to_fork=args.push_to_fork,
                committer=args.committer,
            )
        )
    except ValueError as err:
        print(f"driftmatrix pr: {terminal(err)}", file=sys.stderr)
        return 2


def cmd_merge(args: argparse.Namespace) -> int:
    """Outcome files (the previous state, every leg's new records) into one, one record per job key,
    compacted: the newest --keep-nightlies nightly builds of each build line, every release and the
    newest verdict of every job on each line (runner/outcomes/retention.py, the one rule). Each record is
    written as it was read."""
    from driftmatrix.runner.outcomes import retention

    paths = [Path(p) for p in args.outcomes]
    merged, problems = retention.merge(paths, args.keep_nightlies)
    for problem in problems:
        print(f"driftmatrix merge: {terminal(problem)}", file=sys.stderr)
    out = Path(args.output)
    retention.write(merged.kept, paths, out)
    dropped = (
        f"; {merged.dropped_records} record(s) of {len(merged.dropped_builds)} superseded nightly build(s) compacted"
        if merged.dropped_records
        else ""
    )
    print(f"{len(merged.kept)} outcome(s) -> {out}{dropped}")
    return 0


def _keep_count(text: str) -> int | None:
    if text == "all":
        return None
    n = _count(text)
    if n < 1:
        raise argparse.ArgumentTypeError("at least 1, or `all`")
    return n


def add_parsers(sub) -> None:
    p = sub.add_parser("publish", help="snippets.json + outcomes -> the support-matrix site and matrix.json")
    p.add_argument("--snippets", required=True, help="snippets.json from `driftmatrix extract`")
    p.add_argument(
        "--outcomes",
        nargs="+",
        required=True,
        metavar="OUT",
        help="outcomes.jsonl files (targets, shards, reruns: merged)",
    )
    p.add_argument(
        "--run-history",
        "--history",
        dest="run_history",
        metavar="DIR",
        help="earlier runs' matrix.json (read; this run's is added). The option history of vLLM's releases "
        "is another thing: `driftmatrix history`. (--history: the old spelling, still read)",
    )
    p.add_argument(
        "--fixes", metavar="FIXES", help="fix candidates (`driftmatrix fixes`); their outcomes in --outcomes"
    )
    p.add_argument(
        "--keep-snapshots",
        type=_count,
        default=DEFAULT_KEEP_SNAPSHOTS,
        metavar="K",
        help="full matrix.json documents kept in --run-history, the newest K; every run keeps its summary "
        "(summary-<stamp>.json.gz: each cell's status and stage), which is all a later run reads of it "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--snapshot-only",
        action="store_true",
        help="only add this run's matrix.json to --run-history, build no site (the workflow's save-state job)",
    )
    p.add_argument("--site-dir", default="site", help="where the built site goes (default: %(default)s)")
    p.add_argument(
        "--state-unsaved",
        metavar="FILE",
        help="this run's state was not saved: the note `driftmatrix state save --unsaved-note` wrote, "
        "said on the front page",
    )
    p.add_argument("--site-url", help="where the site will be served, for links in the CI summary")
    p.add_argument(
        "--docs",
        action="append",
        metavar="DOCS_TREE",
        help="also annotate this docs tree and show its patched pages on the site (repeatable)",
    )
    p.set_defaults(func=cmd_publish)

    a = sub.add_parser("annotate", help="insert warnings after failing commands in a docs tree")
    a.add_argument("--docs", required=True, metavar="DOCS_TREE", help="a vLLM docs tree (docs/ + mkdocs.yaml)")
    a.add_argument("--snippets", required=True, help="snippets.json from `driftmatrix extract`")
    a.add_argument("--outcomes", nargs="+", required=True, metavar="OUT", help="outcomes.jsonl files")
    a.add_argument("--fixes", metavar="FIXES", help="fix candidates: verified ones replace the command lines")
    dest = a.add_mutually_exclusive_group(required=True)
    dest.add_argument("-o", "--output", metavar="PATCHED_TREE", help="write a copy of the tree with the patched pages")
    dest.add_argument("--patch", metavar="FILE", help="write a unified diff instead")
    a.set_defaults(func=cmd_annotate)

    r = sub.add_parser("pr", help="annotate's changes as one rolling doc-fix pull request (dry run unless --apply)")
    r.add_argument("--repo", required=True, metavar="OWNER/NAME", help="the docs repository on GitHub")
    r.add_argument("--checkout", required=True, metavar="DIR", help="a local clone of it (reset to the PR branch)")
    r.add_argument("--snippets", required=True, help="snippets.json from `driftmatrix extract`")
    r.add_argument("--outcomes", nargs="+", required=True, metavar="OUT", help="outcomes.jsonl files")
    r.add_argument("--fixes", metavar="FIXES", help="fix candidates: verified ones replace the command lines")
    r.add_argument("--apply", action="store_true", help="push and open/update the PR (token: GITHUB_TOKEN)")
    r.add_argument("--base", help="base branch (default: the remote's default branch)")
    r.add_argument(
        "--branch",
        default="driftmatrix/doc-warnings",
        help="the tool's branch, never the base, the default branch, main, master, release/*, releases/*, "
        "gh-pages or a branch GitHub protects (default: %(default)s)",
    )
    r.add_argument(
        "--push-to-fork",
        metavar="OWNER/NAME",
        help="push the branch to this fork and open the PR from it (default: the repository itself "
        "when the token may push there, else the token user's fork, created when absent)",
    )
    r.add_argument(
        "--committer",
        metavar="'NAME <EMAIL>'",
        default="driftmatrix <driftmatrix@users.noreply.github.com>",
        help="author, committer and Signed-off-by of the commit (default: %(default)s)",
    )
    r.add_argument("--remote", default="origin", help="git remote of the checkout (default: %(default)s)")
    r.add_argument(
        "--site-url",
        help="the published site, for evidence links in the PR body (and the rest of a "
        "body cut at GitHub's 65,536 characters)",
    )
    r.add_argument("--label", default="driftmatrix", help="label put on a new PR (default: %(default)s)")
    r.add_argument("--api-url", default="https://api.github.com", help="GitHub API root (default: %(default)s)")
    r.set_defaults(func=cmd_pr)

    f = sub.add_parser("fixes", help="fix candidates for failing commands -> a catalog to `driftmatrix run`")
    f.add_argument("--snippets", required=True, help="snippets.json from `driftmatrix extract`")
    f.add_argument("--outcomes", nargs="+", required=True, metavar="OUT", help="outcomes.jsonl files")
    f.add_argument("-o", "--output", default="fixes.json", help="catalog of fixed commands (default: %(default)s)")
    f.add_argument(
        "--max-candidates",
        type=_count,
        metavar="N",
        help="at most N candidates still to run (the most places first, then the shallowest tier, then "
        "the snippets file's order), written first; those with an outcome wherever they must run "
        "are kept beyond N (reused, not run); the rest is left out and said (default: all)",
    )
    f.set_defaults(func=cmd_fixes)
    m = sub.add_parser("merge", help="outcome files -> one, a record per (snippet, variant, build, tier)")
    m.add_argument("outcomes", nargs="+", metavar="OUT", help="outcomes.jsonl files (missing ones are named, skipped)")
    m.add_argument("-o", "--output", required=True, help="the merged file")
    m.add_argument(
        "--keep-nightlies",
        type=_keep_count,
        default=DEFAULT_KEEP_NIGHTLIES,
        metavar="N",
        help="keep the N newest nightly builds of each build line (target, release line), every release, "
        "and the newest verdict of every job on each line; `all`: no compaction (default: %(default)s)",
    )
    m.set_defaults(func=cmd_merge)
