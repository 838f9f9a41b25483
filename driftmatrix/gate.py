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

import io
import json
import subprocess
import tarfile
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

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

    @property
    def new_drift(self) -> list[Finding]:
        return [f for f in self.findings if f.new]


def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if proc.returncode:
        raise GateError(f"git {' '.join(args)}: {proc.stderr.strip()[-400:]}")
    return proc.stdout


def changed_files(repo: Path, base: str, head: str, paths: list[str]) -> dict[str, str | None]:
    """Head path -> its path on the base (None: added) for changed docs files under `paths`."""
    out = _git(repo, "diff", "--name-status", "-M", f"{base}...{head}", "--", *paths)
    changed: dict[str, str | None] = {}
    for line in out.splitlines():
        parts = line.split("\t")
        status, names = parts[0], parts[1:]
        if status.startswith("D") or not names[-1].endswith(DOC_SUFFIXES):
            continue
        changed[names[-1]] = None if status.startswith("A") else names[0]
    return changed


def export_tree(repo: Path, rev: str, paths: list[str], dest: Path) -> Path:
    """The files under `paths` (and the mkdocs config) at `rev`, written under `dest`."""
    present = [p for p in [*paths, "mkdocs.yaml", "mkdocs.yml"]
               if _git(repo, "ls-tree", "--name-only", rev, "--", p).strip()]
    data = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", rev, "--", *present],
                          capture_output=True, check=False)
    if data.returncode:
        raise GateError(f"git archive {rev}: {data.stderr.decode(errors='replace')[-400:]}")
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data.stdout)) as tar:
        tar.extractall(dest, filter="data")  # no links out of the tree, no absolute paths
    return dest


def _extract(tree: Path, out: Path, written_for: str | None, stable: str | None):
    from extractor.catalog import extract
    from extractor.written_for import override
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


def judge_change(head_snippets: Path, base_snippets: Path, outcomes: Path, changed: dict[str, str | None]) -> list[Finding]:
    """Every (command, changed page) judgement; doc-drift marked new unless the base page has it."""
    from publisher.judgement import Judge
    from publisher.results import load
    from publisher.views import command
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
                was = [base_judge.of_source(old, b).kind for b in old.sources if b.file == changed.get(src.file)] \
                    if old else []
                new = "doc-drift" not in was
            findings.append(Finding(s.id, src.file, src.line, command(s), j.kind, new, j.summary))
    return findings


def run_gate(repo: Path, base: str, head: str, paths: list[str], targets: Path | None, tier: str, work: Path,
             written_for: str | None = None, stable: str | None = None, cache_dir: Path | None = None) -> GateResult:
    from runner.main import RunOptions, run
    from runner.settings import cache_dir as default_cache
    result = GateResult()
    changed = changed_files(repo, base, head, paths)
    result.changed = sorted(changed)
    work.mkdir(parents=True, exist_ok=True)
    if not changed:
        return result
    with tempfile.TemporaryDirectory() as tmp:
        head_tree = export_tree(repo, head, paths, Path(tmp) / "head")
        base_tree = export_tree(repo, _git(repo, "merge-base", base, head).strip(), paths, Path(tmp) / "base")
        head_cat = _only(_extract(head_tree, work / "head-all.json", written_for, stable), set(changed))
        base_cat = _only(_extract(base_tree, work / "base-all.json", written_for, stable),
                         {b for b in changed.values() if b})
    head_cat.write(work / "head.json")
    base_cat.write(work / "base.json")
    result.commands = len(head_cat.snippets)
    outcomes = work / "outcomes.jsonl"
    if head_cat.snippets:
        result.run_exit = run(RunOptions(snippets=work / "head.json", output=outcomes, targets=targets, tier=tier,
                                         cache_dir=cache_dir or default_cache(), summary=str(work / "run.md")))
    outcomes.touch()
    result.findings = judge_change(work / "head.json", work / "base.json", outcomes, changed)
    (work / "gate.json").write_text(json.dumps(asdict(result), indent=1) + "\n", encoding="utf-8")
    return result


def markdown(result: GateResult, tier: str) -> str:
    from runner.step_summary import escape
    lines = [f"### driftmatrix docs gate · parse{' + config' if tier != 'parse' else ''} on CPU builds",
             f"{len(result.changed)} changed docs file(s), {result.commands} command(s) on them."]
    new = result.new_drift
    old = [f for f in result.findings if f.judgement == "doc-drift" and not f.new]
    if new:
        lines.append(f"**{len(new)} new doc-drift** (this change makes a documented command fail on a version "
                     "its page is written for):\n\n" + "\n".join(
                         f"- {escape(f.file)}:{f.line} `{escape(f.command, 200)}` — {escape(f.why, 300)}" for f in new))
    else:
        lines.append("No new doc-drift.")
    if old:
        lines.append(f"{len(old)} doc-drift already on the base branch (not this change's): "
                     + ", ".join(f"{escape(f.file)}:{f.line}" for f in old[:10]))
    if result.run_exit:
        lines.append("Some checks ended in ERROR (ours or the machine's): see the run log.")
    return "\n\n".join(lines)


def cmd_gate(args) -> int:
    import sys

    from runner.step_summary import write
    try:
        result = run_gate(Path(args.repo), args.base, args.head, args.paths, Path(args.targets) if args.targets else None,
                          args.tier, Path(args.workdir), args.written_for, args.stable,
                          Path(args.cache_dir) if args.cache_dir else None)
    except GateError as err:
        print(f"driftmatrix gate: {err}", file=sys.stderr)
        return 2
    text = markdown(result, args.tier)
    print(text)
    write(text, args.summary)
    return 1 if result.new_drift else 0


def add_parser(sub) -> None:
    g = sub.add_parser("gate", help="check a docs change: new doc-drift on the changed pages fails (parse + config)")
    g.add_argument("--repo", default=".", help="the docs repository's clone (default: %(default)s)")
    g.add_argument("--base", required=True, help="the base branch or commit of the change")
    g.add_argument("--head", default="HEAD", help="the change's commit (default: %(default)s)")
    g.add_argument("--paths", nargs="+", default=["docs", "examples", "models", "recipes"],
                   help="docs paths to look at (default: %(default)s)")
    g.add_argument("--targets", help="targets TOML (default: the shipped CPU builds of the pinned versions)")
    g.add_argument("--tier", choices=["parse", "config"], default="config")
    g.add_argument("--written-for", metavar="SPEC", help="versions every changed page is written for (override)")
    g.add_argument("--stable", metavar="X", help="the stable release (default: the targets file's stable pin)")
    g.add_argument("--workdir", default="driftmatrix-gate", help="catalogs, outcomes, gate.json (default: %(default)s)")
    g.add_argument("--cache-dir", help="target environments (default: the driftmatrix cache)")
    g.add_argument("--summary", metavar="FILE", help="append the Markdown here (default: $GITHUB_STEP_SUMMARY when set)")
    g.set_defaults(func=cmd_gate)
