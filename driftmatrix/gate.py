"""`driftmatrix gate`: check a docs pull request — only the pages it changes, at the parse and
config tiers on CPU builds — and fail on doc-drift the change brings in, not on drift already
on the base branch.

1. The changed files under the docs paths (`git diff --name-status -M base...head`, renames
   followed), the trees at base and head exported with `git archive` (argv only; no checkout of
   untrusted refs is run).
2. Both trees extracted; head's commands on the changed pages run on the targets.
3. Each (command, changed page) judged as the publisher judges it (against the versions the page
   is written for). Doc-drift is *new* unless the base version of that page has the same command
   (commands are identified by their content) and judging it there — with the same outcomes, as it
   is the same command on the same builds — gives doc-drift too. So the base needs no run at all.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from driftmatrix.common.git import prefetch, run_git
from driftmatrix.common.inert import STEP_SUMMARY_CAP, cap, code_span, terminal
from driftmatrix.extractor.bounds import read_capped, walk
from driftmatrix.sandbox_cli import add_unsandboxed

DOC_SUFFIXES = (".md", ".markdown", ".yaml", ".yml", ".html", ".htm")


class GateError(RuntimeError):
    """The change could not be read (a bad ref, not a git repository)."""


@dataclass
class Finding:
    snippet_id: str
    file: str
    line: int
    command: str
    judgement: str
    new: bool
    """doc-drift the change brings in (False: the base branch has it too)."""
    why: str = ""


@dataclass
class GateResult:
    changed: list[str] = field(default_factory=list)
    commands: int = 0
    findings: list[Finding] = field(default_factory=list)
    run_exit: int = 0
    static: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    """{target: {command id: why}}: not started on that build, as the option history says it rejects them."""
    mode: str = "builds"
    """`builds`: run on the targets' builds; `head`: read against the change's own vLLM sources (gate_head.py)."""
    judged: str = ""
    """What the commands were judged against, when not the CPU builds (head mode: which commit)."""
    notes: list[str] = field(default_factory=list)

    @property
    def new_drift(self) -> list[Finding]:
        return [f for f in self.findings if f.new]


def _git(repo: Path, *args: str) -> str:
    proc = run_git(repo, *args)
    if proc.returncode:
        raise GateError(f"git {' '.join(args)}: {proc.stderr.strip()[-400:]}")
    return proc.stdout


def changed_files(repo: Path, base: str, head: str, paths: list[str]) -> dict[str, str | None]:
    """Head path -> its path on the base (None: added) for files changed under `paths` (-z: any
    file name, unquoted)."""
    fields = _git(repo, "diff", "-z", "--name-status", "-M", f"{base}...{head}", "--", *paths).split("\0")
    changed: dict[str, str | None] = {}
    i = 0
    while i < len(fields) - 1:
        status = fields[i]
        names = fields[i + 1 : i + 3] if status[:1] in "RC" else fields[i + 1 : i + 2]
        i += 1 + len(names)
        if not status.startswith("D"):
            changed[names[-1]] = None if status.startswith("A") else names[0]
    return changed


def export_tree(repo: Path, rev: str, paths: list[str], dest: Path) -> Path:
    """The regular files under `paths` (and the mkdocs config) at `rev`, written under `dest` from
    the object store: not `git archive`, which obeys the archived tree's own `.gitattributes` (a
    change could `export-ignore` the very page it breaks). Links and submodules are left out."""
    listing = _git(repo, "ls-tree", "-r", "-z", "--full-tree", rev, "--", *paths, "mkdocs.yaml", "mkdocs.yml")
    blobs = []
    for entry in filter(None, listing.split("\0")):
        meta, path = entry.split("\t", 1)
        mode, kind, sha = meta.split()
        parts = Path(path).parts
        if kind == "blob" and mode in ("100644", "100755") and ".." not in parts and not Path(path).is_absolute():
            blobs.append((sha, path))
    prefetch(repo, rev, [path for _, path in blobs])  # a clone without blobs: one fetch, not one per page
    batch = run_git(repo, "cat-file", "--batch", input="".join(f"{sha}\n" for sha, _ in blobs).encode(), text=False)
    if batch.returncode:
        raise GateError(f"git cat-file {rev}: {batch.stderr.decode(errors='replace')[-400:]}")
    data, at = batch.stdout, 0
    for _, path in blobs:
        header_end = data.index(b"\n", at)
        size = int(data[at:header_end].split()[2])
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data[header_end + 1 : header_end + 1 + size])
        at = header_end + 1 + size + 1
    return dest


def pages_including(tree: Path, changed: set[str]) -> set[str]:
    """Doc pages that pull a changed non-page file in (`--8<-- "examples/x.py"`): their commands change too."""
    names = {c for c in changed if not c.endswith(DOC_SUFFIXES)}
    if not names:
        return set()
    found = set()
    for page in (p for p in walk(tree).files if p.suffix == ".md"):
        data, _ = read_capped(page)  # an oversized page is the extractor's diagnostic, not read here
        text = (data or b"").decode("utf-8", errors="replace")
        if "--8<--" in text and any(name in text or Path(name).name in text for name in names):
            found.add(page.relative_to(tree).as_posix())
    return found


def _extract(tree: Path, out: Path, written_for: str | None, stable: str | None):
    from driftmatrix.extractor.catalog import extract
    from driftmatrix.extractor.written_for import override

    catalog, _ = extract([tree], stable=stable, written_for=override(written_for) if written_for else None)
    catalog.write(out)
    return catalog


def _only(catalog, files: set[str]):
    """The catalog's commands that appear on these files, with only those sources."""
    from dataclasses import replace

    kept = []
    for s in catalog.snippets:
        sources = [src for src in s.sources if src.file in files]
        if sources:
            kept.append(replace(s, sources=sources))
    return replace(catalog, snippets=kept)


def changed_catalogs(
    repo: Path,
    merge_base: str,
    head: str,
    paths: list[str],
    changed: dict[str, str | None],
    work: Path,
    written_for: str | None,
    stable: str,
    result: GateResult,
):
    """(changed docs pages, head's catalog of them, base's) — written to `work` as head.json and
    base.json — with the pages that include a changed file counted as changed; None: no docs page changed.
    Sets `result.changed` and `result.commands`. Both gate modes read the change this way."""
    with tempfile.TemporaryDirectory() as tmp:
        head_tree = export_tree(repo, head, paths, Path(tmp) / "head")
        base_tree = export_tree(repo, merge_base, paths, Path(tmp) / "base")
        for page in pages_including(head_tree, set(changed)):
            changed.setdefault(page, page)
        changed = {k: v for k, v in changed.items() if k.endswith(DOC_SUFFIXES)}
        result.changed = sorted(changed)
        if not changed:
            return None
        head_cat = _only(_extract(head_tree, work / "head-all.json", written_for, stable), set(changed))
        base_cat = _only(
            _extract(base_tree, work / "base-all.json", written_for, stable), {b for b in changed.values() if b}
        )
    head_cat.write(work / "head.json")
    base_cat.write(work / "base.json")
    result.commands = len(head_cat.snippets)
    return changed, head_cat, base_cat


def judge_change(
    head_snippets: Path, base_snippets: Path, outcomes: Path, changed: dict[str, str | None]
) -> list[Finding]:
    """Every (command, changed page) judgement; doc-drift marked new unless the base page has it."""
    from driftmatrix.publisher.command_text import command
    from driftmatrix.publisher.judgement import Judge
    from driftmatrix.publisher.results import load

    head, base = load(head_snippets, [outcomes]), load(base_snippets, [outcomes])
    head_judge, base_judge = Judge(head), Judge(base)
    base_by_id = {s.id: s for s in base.snippets}
    findings = []
    for s in head.snippets:
        for src in s.sources:
            j = head_judge.of_source(s, src)
            new = False
            if j.kind == "doc-drift":
                old = base_by_id.get(s.id)
                was = (
                    [base_judge.of_source(old, b).kind for b in old.sources if b.file == changed.get(src.file)]
                    if old
                    else []
                )
                new = "doc-drift" not in was
            findings.append(Finding(s.id, src.file, src.line, command(s), j.kind, new, j.summary))
    return findings


def run_gate(
    repo: Path,
    base: str,
    head: str,
    paths: list[str],
    targets: Path | None,
    tier: str,
    work: Path,
    written_for: str | None = None,
    stable: str | None = None,
    cache_dir: Path | None = None,
) -> GateResult:
    from driftmatrix.runner.run.loop import run
    from driftmatrix.runner.run.selection import RunOptions
    from driftmatrix.runner.settings import cache_dir as default_cache

    result = GateResult()
    changed = changed_files(repo, base, head, paths)
    work.mkdir(parents=True, exist_ok=True)
    if stable is None:  # pages without versions of their own: the stable of the builds checked
        from driftmatrix.runner.builds.resolve import stable_pin
        from driftmatrix.runner.builds.targets import default_path

        stable = stable_pin(targets or default_path())
    found = changed_catalogs(
        repo, _git(repo, "merge-base", base, head).strip(), head, paths, changed, work, written_for, stable, result
    )
    if found is None:
        return _saved(result, work)
    changed, head_cat, _ = found
    outcomes = work / "outcomes.jsonl"
    from driftmatrix.runner.builds.resolve import pinned_at_start

    builds = pinned_at_start(targets)[0].targets
    result.static = static_rejections(head_cat.snippets, builds)
    for target in builds:
        started = [s.id for s in head_cat.snippets if s.id not in result.static.get(target.name, {})]
        if started:  # each build runs only what the history does not already say it rejects
            result.run_exit |= run(
                RunOptions(
                    snippets=work / "head.json",
                    output=outcomes,
                    targets=targets,
                    tier=tier,
                    only=started,
                    target_names=[target.name],
                    cache_dir=cache_dir or default_cache(),
                    summary=str(work / f"run-{target.name}.md"),
                )
            )
    outcomes.touch()
    result.findings = judge_change(work / "head.json", work / "base.json", outcomes, changed)
    return _saved(result, work)


def static_rejections(snippets: list, targets: list) -> dict[str, dict[str, list[str]]]:
    """{target: {snippet id: why}} for the commands the option history says a build rejects — an
    option, value or key that release no longer or not yet has, in vLLM's words — which then are
    not started there (the judgement reads the history for them, as for any build not checked). A
    name no release ever had is left to the build (the history may have missed a way vLLM takes it)."""
    from driftmatrix.flaghistory.commands import explain_use, record_of, shipped
    from driftmatrix.flaghistory.uses import uses_of
    from driftmatrix.publisher.option_verdict import JUDGED_KINDS

    history = shipped()
    found: dict[str, dict[str, list[str]]] = {}
    if history is None:
        return found
    for target in targets:
        version = target.pinned_version()
        if version is None or history.release_for(version) is None:
            continue
        for s in snippets:
            if s.kind not in JUDGED_KINDS:
                continue
            uses = uses_of(history, list(s.argv or []))
            given = frozenset(u.option for u in uses)
            why = [
                text
                for u in uses
                if record_of(history, u)
                and history.accepts_use(u, version, given) is False
                and (text := explain_use(history, u, version))
            ]
            if why:
                found.setdefault(target.name, {})[s.id] = why
    return found


def _saved(result: GateResult, work: Path) -> GateResult:
    (work / "gate.json").write_text(json.dumps(asdict(result), indent=1) + "\n", encoding="utf-8")
    return result


def markdown(result: GateResult, tier: str, full: str = "`gate.json` in the gate's `--workdir`") -> str:
    """The gate's summary. Commands, page names and causes are docs and vLLM text: code spans only
    (common/inert.py). The list of new drift comes last, so that a summary cut at GitHub's limit
    (`STEP_SUMMARY_CAP`, at a row, saying where the `full` list is) still says everything else."""
    depth = result.judged or f"parse{' + config' if tier != 'parse' else ''} on CPU builds"
    lines = [
        f"### driftmatrix docs gate · {depth}",
        f"{len(result.changed)} changed docs file(s), {result.commands} command(s) on them.",
        *result.notes,
    ]
    new = result.new_drift
    old = [f for f in result.findings if f.judgement == "doc-drift" and not f.new]
    if result.run_exit:
        lines.append("Some checks ended in ERROR (ours or the machine's): see the run log.")
    for target, skipped in result.static.items():
        lines.append(
            f"{len(skipped)} command(s) not started on {code_span(target)}: the option history says that "
            "release rejects them — "
            + "; ".join(code_span(w, 200) for why in list(skipped.values())[:5] for w in why[:1])
        )
    if old:
        lines.append(
            f"{len(old)} doc-drift already on the base branch (not this change's): "
            + ", ".join(code_span(f"{f.file}:{f.line}") for f in old[:10])
        )
    if new:
        lines.append(
            f"**{len(new)} new doc-drift** (this change makes a documented command fail on a version "
            "its page is written for):\n\n"
            + "\n".join(
                f"- {code_span(f'{f.file}:{f.line}')} {code_span(f.command, 200)} — {code_span(f.why, 300)}"
                for f in new
            )
        )
    else:
        lines.append("No new doc-drift.")
    return cap("\n\n".join(lines), full, STEP_SUMMARY_CAP)


def cmd_gate(args) -> int:
    import sys

    from driftmatrix.common.step_summary import write
    from driftmatrix.runner.isolation.sandbox import detection

    # a docs pull request is code from anyone: its commands run contained or not at all
    if not args.unsandboxed:
        detection.set_mode("required", "driftmatrix gate")
    if refused := detection.required_missing():
        print(
            f"driftmatrix gate: refused: {refused}; or run it with --unsandboxed (recorded in the outcomes)",
            file=sys.stderr,
        )
        return 2
    try:
        result = run_gate(
            Path(args.repo),
            args.base,
            args.head,
            args.paths,
            Path(args.targets) if args.targets else None,
            args.tier,
            Path(args.workdir),
            args.written_for,
            args.stable,
            Path(args.cache_dir) if args.cache_dir else None,
        )
    except GateError as err:
        print(f"driftmatrix gate: {terminal(err)}", file=sys.stderr)  # git's words: file names of the change
        return 2
    except Exception as err:  # noqa: BLE001 — a crash is ours: never the exit status of new doc-drift
        print(f"driftmatrix gate: internal error ({type(err).__name__}: {terminal(err)})", file=sys.stderr)
        return 2
    if advisory := getattr(args, "advisory", ""):  # builds in a vLLM source tree: said, not failed
        result.notes.append(advisory)
        _saved(result, Path(args.workdir))
    full = code_span(Path(args.workdir) / "gate.json")
    text = markdown(result, args.tier, full)
    print(terminal(text))  # the Markdown's code spans hold the docs' and vLLM's words
    write(text, args.summary, full)
    return 1 if result.new_drift and not advisory else 0


def add_parser(sub) -> None:
    g = sub.add_parser("gate", help="check a docs change: new doc-drift on the changed pages fails (parse + config)")
    g.add_argument("--repo", default=".", help="the docs repository's clone (default: %(default)s)")
    g.add_argument("--base", required=True, help="the base branch or commit of the change")
    g.add_argument("--head", default="HEAD", help="the change's commit (default: %(default)s)")
    g.add_argument(
        "--paths",
        nargs="+",
        default=["docs", "examples", "models", "recipes"],
        help="docs paths to look at (default: %(default)s)",
    )
    g.add_argument(
        "--targets",
        help="targets TOML (default: this machine's: today's stable and the newest CPU build, pinned at the start)",
    )
    g.add_argument("--tier", choices=["parse", "config"], default="config")
    g.add_argument("--written-for", metavar="SPEC", help="versions every changed page is written for (override)")
    g.add_argument("--stable", metavar="X", help="the stable release (default: the targets file's stable pin)")
    g.add_argument("--workdir", default="driftmatrix-gate", help="catalogs, outcomes, gate.json (default: %(default)s)")
    g.add_argument("--cache-dir", help="target environments (default: the driftmatrix cache)")
    g.add_argument(
        "--summary", metavar="FILE", help="append the Markdown here (default: $GITHUB_STEP_SUMMARY when set)"
    )
    add_unsandboxed(g)
    g.set_defaults(func=cmd_gate)
