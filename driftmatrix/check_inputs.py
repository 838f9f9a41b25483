"""What `driftmatrix check` is asked about: a command given (argument or stdin), a page's commands, the
command at a page's line, the pages changed against a git revision; and the releases each is asked
about (`--version`, the versions its page is written for, or today's stable release). Pages are read by
the extractor exactly as a pipeline run reads them, so a command's id is the matrix's."""

from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

PAGE_LINE = re.compile(r"^(?P<page>.+\.(?:md|markdown|ya?ml)):(?P<line>\d+)$", re.I)
PAGE_SUFFIXES = (".md", ".markdown", ".yaml", ".yml")


GIVEN = "the command given"


class CheckInputError(ValueError):
    """An input that is neither a command nor a readable page."""


@dataclass
class Checked:
    """One command to check and the releases it is asked about."""

    snippet: object
    """The extractor's Snippet (the same reading as a pipeline run: its id is the matrix's)."""
    where: str
    """`docs/serve.md:42`, or `the command given`."""
    asked: list[str]
    basis: str
    """Why these releases: `--version 0.20.1`, `docs/x.md is written for >=0.20,<0.21`, `today's stable`."""
    page: bool = False
    """From a page, asked about the page's own releases (the hook's rule: fail only what none of
    them takes); False for a command given alone or any command asked with --version."""
    check: object = None
    recorded: list[dict] = field(default_factory=list)


def shipped_history():
    from driftmatrix.flaghistory.commands import shipped

    history = shipped()
    if history is None:
        raise CheckInputError("no usable flag history (the shipped copy or DRIFTMATRIX_FLAG_HISTORY)")
    return history


def _command_snippets(text: str, stable: str) -> list:
    from driftmatrix.extractor.snippet_builder import Place, from_shell_text

    place = Place("check", stable, "<command>", 1)
    # options alone (`--max-model-len 4096 …`) are read as `vllm serve`'s
    for candidate in (text, *([f"vllm serve {text}"] if text.lstrip().startswith("-") else [])):
        found = from_shell_text(candidate, place)
        if found:
            return found
    raise CheckInputError(f"no vllm command in {text[:120]!r}")


def _as_written(path: Path) -> Path:
    """`path` absolute, its links not followed."""
    return Path(os.path.abspath(path))


def _tree_as_written(page: Path, docs: str | None) -> Path:
    """The tree the page belongs to, found from its path as written (a link on the way is not
    followed: git, asked inside a linked folder, would answer for the folder's target): --docs, else
    the nearest folder above it, not itself a link, that is a git checkout, else the nearest that is
    a docs tree or a project's repository (extractor/sites.py), else its own folder."""
    if docs:
        return _as_written(Path(docs))
    above = [folder for folder in _as_written(page).parents if not folder.is_symlink()]
    for folder in above:
        if (folder / ".git").exists():  # a checkout's folder, or a worktree's or submodule's file
            return folder
    from driftmatrix.extractor.sites import MKDOCS_CONFIGS, is_repository

    for folder in above:
        if any((folder / n).is_file() for n in MKDOCS_CONFIGS) or is_repository(folder):
            return folder
    return _as_written(page).parent


def _page_root(page: Path, docs: str | None) -> Path:
    """The root of the tree the page belongs to (`_tree_as_written`), its links resolved."""
    return _tree_as_written(page, docs).resolve()


def _out_of_tree(page: Path, docs: str | None) -> str | None:
    """Why a page is not read, or None: it is not a file, or it resolves outside the tree it belongs
    to (a link out of the tree, a page reached through a linked folder, a page outside --docs). The
    page is named relative to its tree, or by its file name: no host path in the message."""
    tree = _tree_as_written(page, docs)
    try:
        shown = _as_written(page).relative_to(tree).as_posix()
    except ValueError:
        shown = page.name
    try:
        if not page.is_file():
            return f"{shown}: not read: not a readable page (a link to nothing, or a link loop?)"
        page.resolve(strict=True).relative_to(tree.resolve(strict=True))
    except ValueError:
        return (
            f"{shown}: not read: it resolves outside the tree it belongs to (a link out of the tree, "
            "or a page reached through a linked folder)"
        )
    except (OSError, RuntimeError):  # a link loop (RuntimeError before Python 3.13), a folder gone
        return f"{shown}: not read: its path cannot be resolved (a link loop?)"
    return None


def _page_snippets(roots: dict[Path, Path], stable: str) -> tuple[list, list[str]]:
    """Every page's commands, each tree read once (`roots`: page -> its tree's root)."""
    from driftmatrix.extractor.catalog import extract_pages
    from driftmatrix.extractor.corpus import SourceError

    snippets, problems = [], []
    by_root: dict[Path, list[Path]] = {}
    for page, root in roots.items():
        by_root.setdefault(root, []).append(page)
    for root, group in by_root.items():
        try:
            found, diagnostics = extract_pages(root, group, stable=stable)
        except SourceError as err:
            problems.append(str(err))
            continue
        snippets += found
        problems += [f"{d.file}:{d.line or 1}: {d.message}" for d in diagnostics if d.severity == "error"]
    return snippets, problems


def _page_releases(history, source) -> tuple[list[str], str]:
    from driftmatrix.publisher.judgement import written_for
    from driftmatrix.publisher.option_verdict import releases_written_for

    claim = written_for(source)
    releases = releases_written_for(history, claim.spec)
    return releases, f"{source.file} is written for {claim.spec or 'every release'} ({claim.origin})"


def _at_line(here: list[tuple], page: Path, line: int) -> list[tuple]:
    """The command whose text holds the page's line (the nearest one starting at or before it)."""
    holding = [(src, s) for src, s in here if src.line <= line < src.line + max(1, src.text.count("\n") + 1)]
    if not holding:
        raise CheckInputError(f"{page}:{line}: no vllm command at that line")
    return [max(holding, key=lambda pair: pair[0].line)]


def gather(args: argparse.Namespace, history, stable: str) -> tuple[list[Checked], list[str]]:
    """What to check, in the order given, and the inputs that could not be read (each said, the others
    still checked). The pages are read together: each tree once."""
    changed = changed_pages(args.changed) if args.changed else []
    inputs = [*args.input, *changed] if args.changed else list(args.input) or ["-"]
    read: list[list[Checked] | tuple[Path, int | None]] = []
    problems: list[str] = []
    for text in inputs:
        try:
            if text == "-":
                text = _stdin()
            page = _page_input(text, text in changed)
            if page and (why := _out_of_tree(page[0], args.docs)):
                raise CheckInputError(why)  # this page only: the others are still checked
            read.append(
                page
                if page
                else [
                    Checked(s, GIVEN, [stable], f"today's stable release ({stable})")
                    for s in _command_snippets(text, stable)
                ]
            )
        except CheckInputError as err:
            problems.append(str(err))
    roots = {p.resolve(): _page_root(p, args.docs) for p, _ in (x for x in read if isinstance(x, tuple))}
    snippets, unread = _page_snippets(roots, stable) if roots else ([], [])
    problems += unread
    checked: list[Checked] = []
    for item in read:
        try:
            checked += item if isinstance(item, list) else _page_commands(item, roots, snippets, history)
        except CheckInputError as err:
            problems.append(str(err))
    if args.version:
        for c in checked:
            c.asked, c.basis, c.page = list(args.version), "--version " + ", ".join(args.version), False
    return checked, problems


def changed_pages(rev: str) -> list[str]:
    """The doc writer's mode: the pages changed against REV (the working tree, staged or not)."""
    from driftmatrix.common.git import run_git

    done = run_git(Path.cwd(), "diff", "--name-only", "--diff-filter=ACMR", "-z", rev, "--", ".", timeout=30)
    if done.returncode != 0:
        raise CheckInputError(f"git diff {rev}: {done.stderr.strip()[:300]}")
    top = run_git(Path.cwd(), "rev-parse", "--show-toplevel", timeout=10).stdout.strip()
    names = [n for n in done.stdout.split("\0") if n]
    return [str(Path(top) / n) for n in names if Path(n).suffix.lower() in PAGE_SUFFIXES]


def _stdin() -> str:
    text = sys.stdin.read()
    if not text.strip():
        raise CheckInputError("nothing on stdin")
    return text


def _page_input(text: str, changed: bool = False) -> tuple[Path, int | None] | None:
    """(page, line or None) for PAGE or PAGE:LINE, or a page `--changed` found; None for a command."""
    found = PAGE_LINE.match(text)
    page = Path(found["page"] if found else text)
    if changed:
        return page, None  # a page even when it is no file (a link to nothing): `_out_of_tree` says so
    if not (found or (page.suffix.lower() in PAGE_SUFFIXES and page.is_file())):
        return None
    if not page.is_file():
        raise CheckInputError(f"{page}: no such page")
    return page, int(found["line"]) if found else None


def _page_commands(item: tuple[Path, int | None], roots: dict[Path, Path], snippets: list, history) -> list[Checked]:
    """The page's commands (or the one at its line), each asked about the releases the page is written for."""
    page, line = item
    path = page.resolve()
    # a command the page gives twice is one command: its first place there
    here = list(
        {
            s.id: (src, s)
            for s in snippets
            for src in reversed(s.sources)
            if (roots[path] / src.file).resolve() == path
        }.values()
    )
    if line is not None:
        here = _at_line(here, page, line)
    result = []
    for src, s in here:
        releases, basis = _page_releases(history, src)
        result.append(Checked(s, f"{page}:{src.line}", releases, basis, page=True))
    return result
