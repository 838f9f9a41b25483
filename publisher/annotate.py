"""`driftmatrix annotate`: warnings in the docs, right where a reader copies the command.

For each Markdown page of a docs tree with a command judged `doc-drift` (it fails on a build
the page is written for; publisher/judgement.py), an admonition goes right after the command's
code block, at the block's own indentation (so it stays inside its tab or admonition):
`!!! warning "Does not start on vLLM 0.20.1"` with the one-line cause, where it runs (and how
deep that was checked) and the versions the page is written for. Nothing else gets one: a
command that needs a newer vLLM than the page's, or a vLLM regression, is not a doc bug. Marker comments delimit every insertion,
so a re-run first removes what an earlier run inserted: re-running changes nothing, and a
fixed command's warning disappears. Nothing else on the page changes.

The tree is untrusted input: a page is read only where it lies inside the tree and is no symbolic
link (nothing is read, nor written, through a link; a link out of the tree is reported among the
problems, and the page a link inside it points to is annotated under its own path), and only up to
driftmatrix.extractor.bounds.MAX_PAGE_BYTES.
"""

from __future__ import annotations

import difflib
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from driftmatrix.common.inert import code_span, one_line, strip_controls
from driftmatrix.extractor import bounds
from driftmatrix.extractor.corpus import SourceError, detect
from driftmatrix.extractor.markdown_blocks import code_blocks
from driftmatrix.extractor.snippet_record import Source
from driftmatrix.publisher import addresses, causes, defects, escaping, fix_edits, public, verdict_words
from driftmatrix.publisher.command_view import CommandView, CommandViews, views_of
from driftmatrix.publisher.results import Results

BEGIN = "<!-- driftmatrix:begin {} -->"
END = "<!-- driftmatrix:end {} -->"
_BEGIN_RE = re.compile(r"^[ \t]*<!-- driftmatrix:begin (\S+) -->[ \t]*$")
_END_RE = re.compile(r"^[ \t]*<!-- driftmatrix:end (\S+) -->[ \t]*$")
_FENCE_CLOSE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*$")


@dataclass
class Insert:
    """One admonition put after one code block."""

    snippet_id: str
    after_line: int
    """1-based line (of the unannotated page) of the closing fence it follows."""
    kind: str
    """`warning`: the admonition type (only doc-drift is annotated)."""
    block: str
    """The code block's text, for display."""
    admonition: str
    """The admonition as Markdown, unindented."""


@dataclass
class FixApplied:
    """A command replaced by its verified fix (no warning for it)."""

    snippet_id: str
    line: int
    """1-based first line of the command on the unannotated page."""
    before: str
    after: str
    why: list[str]
    checks: list[tuple[str, str, str]]
    """(build label, version, how deep it ran, in words) on every build it was verified on."""
    checked: str = ""
    """What its verification showed, in words true to the fix's kind (publisher/fixes.py)."""


@dataclass
class PagePatch:
    file: str
    """Path relative to the tree root."""
    before: str
    after: str
    inserts: list[Insert] = field(default_factory=list)
    fixes: list[FixApplied] = field(default_factory=list)


@dataclass
class Annotation:
    tree: Path
    patches: list[PagePatch] = field(default_factory=list)
    """Pages whose text changes (annotated, or an old warning removed)."""
    problems: list[str] = field(default_factory=list)
    """Snippets that could not be placed, each with why; nothing else is lost."""

    def diff(self) -> str:
        out = []
        for p in self.patches:
            out += difflib.unified_diff(
                p.before.splitlines(keepends=True), p.after.splitlines(keepends=True), f"a/{p.file}", f"b/{p.file}"
            )
        return "".join(out)


def strip(text: str) -> str:
    """The page without anything an earlier run inserted (its blank line before included)."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        m = _BEGIN_RE.match(lines[i])
        if m:
            end = next(
                (j for j in range(i + 1, len(lines)) if (e := _END_RE.match(lines[j])) and e.group(1) == m.group(1)),
                None,
            )
            if end is not None:
                if out and out[-1].strip() == "":
                    out.pop()
                i = end + 1
                continue
        out.append(lines[i])
        i += 1
    return "\n".join(out)


def decision(view: CommandView, source: Source) -> tuple[str, str, str] | None:
    """(kind, title, body) for a command at one place, or None when the docs need no warning
    there: only `doc-drift` gets one (it fails on a build the page is written for, the shell does not
    run it as written, or the option history says the page's versions lack an option of it)."""
    j = view.at(source)
    if j.kind != "doc-drift":
        return None
    if j.defects:  # the shell (or Python) does not run it as written: the lines where it ends it, first
        title = defects.title(j.defects)
        body = [escaping.md_escape(f"Line {d.line}: {d.message.rstrip('.')}.") for d in j.defects]
    elif j.failing:
        first = j.failing[0].outcome
        title = verdict_words.title("FAIL", first.stage, list(dict.fromkeys(k.version for k in j.failing)))
        body = []
    else:  # the option history: no build of the page's versions was checked
        title = f"Not an option of the vLLM versions this page is written for ({j.history_why})"
        body = []
    why = list(dict.fromkeys(causes.cause(k.outcome) for k in j.failing if causes.cause(k.outcome)))
    # vLLM's own words as code: no link, image, mention or HTML from a message (common/inert.py)
    body += [code_span(c) for c in why[:2]]
    body += [code_span(note) for note in j.option_notes]  # removed when, in vLLM's words
    works = "; ".join(verdict_words.works_on(k.version, k.outcome) for k in j.working)
    if works and j.defects:  # the builds ran the command the author meant, not the one the shell runs
        body.append(escaping.md_escape(f"As meant (on one command line): {works}") + ".")
    elif works:
        body.append(escaping.md_escape(works if works.startswith("vLLM") else works[:1].upper() + works[1:]) + ".")
    elif j.decided_by == "builds":
        body.append("No checked vLLM version that the page is written for runs it as written.")
    body.append(f"The page is written for vLLM `{j.written_for.spec}`: {escaping.md_escape(j.written_for.origin)}.")
    twin_ran = any(causes.documented_twin(k.outcome) for k in j.failing)
    stood = list(dict.fromkeys(p.placeholder for k in j.failing for p in k.outcome.evidence.placeholders))
    checked = (
        "Checked by driftmatrix"
        + (" with a random-weight stand-in of the model" if twin_ran else "")
        + (
            f"{',' if twin_ran else ''} with a stand-in in place of {', '.join(code_span(p) for p in stood)}"
            if stood
            else ""
        )
        + "."
    )
    body.append(
        {
            "shell": "Read as the shell reads it by driftmatrix.",
            "python": "Read by driftmatrix with Python's own parser, as a reader pastes it.",
            "history": "Judged by driftmatrix from the "
            "option history of every vLLM release (no build of the page's versions was checked).",
        }.get(j.decided_by, checked)
    )
    return "warning", title, "\n\n".join(body)


def _first_line(source: Source) -> str:
    return next((ln.strip() for ln in source.text.split("\n") if ln.strip()), "")


def admonition(kind: str, title: str, body: str) -> list[str]:
    """The lines `annotate` inserts: no control character of the docs or of vLLM reaches the page
    (the title quotes versions and stages, the body vLLM's words; common/inert.py)."""
    safe_title = one_line(title).replace('"', "'")
    lines = [f'!!! {kind} "{safe_title}"', ""]
    lines += [f"    {ln}" if ln else "" for ln in strip_controls(body).split("\n")]
    return lines


def _place(lines: list[str], blocks: list, line: int) -> tuple[int, str, str] | None:
    """(closing fence line, indentation, block text) of the code block holding `line`."""
    for block in blocks:
        n = block.text.count("\n")  # markdown-it ends every content line with one
        if block.unclosed or not (block.line <= line < block.line + max(n, 1)):
            continue
        close = block.line + n  # 1-based line of the closing fence
        if close - 1 >= len(lines) or not _FENCE_CLOSE.match(lines[close - 1]):
            return None
        opening = lines[block.line - 2]
        return close, opening[: len(opening) - len(opening.lstrip())], block.text
    return None


def annotate_page(rel: str, text: str, wanted: list[tuple[CommandView, Source]], problems: list[str]) -> PagePatch:
    base = strip(text)
    lines = base.split("\n")
    blocks = list(code_blocks(base))
    inserts: dict[int, list[tuple[str, list[str], Insert]]] = {}
    replaced: dict[int, tuple[list[str], int, FixApplied]] = {}
    done: set[tuple[str, int]] = set()
    for view, source in wanted:
        first = _first_line(source)
        line = _located(lines, source.line, first)
        if line is None or (view.id, line) in done:
            continue  # another version of the page: the snippet is not at this line here
        done.add((view.id, line))
        snippet_id = view.id
        state, found = _fix_lines(lines, line, source, view.fix) if view.fix is not None else ("none", None)
        if state == "apply":
            replaced[line] = found
        if state in ("apply", "applied"):
            continue  # a verified fix replaces the warning
        d = decision(view, source)  # no fix, or the page is not what was checked: warn
        if d is None:
            continue
        place = _place(lines, blocks, line)
        if place is None:
            problems.append(f"{rel}:{line}: {snippet_id} is not in a closed fenced code block here; not annotated")
            continue
        close, indent, block = place
        kind, title, body = d
        adm = admonition(kind, title, body)
        chunk = ["", indent + BEGIN.format(snippet_id), ""]
        chunk += [indent + ln if ln else "" for ln in adm] + ["", indent + END.format(snippet_id)]
        inserts.setdefault(close, []).append(
            (snippet_id, chunk, Insert(snippet_id, close, kind, block, "\n".join(adm)))
        )
    out: list[str] = []
    skip_to = 0
    for n, ln in enumerate(lines, 1):
        if n in replaced:
            new_lines, count, _ = replaced[n]
            out += new_lines
            skip_to = n + count
        if n >= skip_to:
            out.append(ln)
        for _, chunk, _ in inserts.get(n, []):
            out += chunk
    return PagePatch(
        rel,
        text,
        "\n".join(out),
        [i for items in inserts.values() for _, _, i in items],
        [f for _, _, f in replaced.values()],
    )


MOVED = 12
"""How far a fix already on the page (an earlier run's, which moved comments above the command) may
have moved the places after it: a place is looked for there when not at its own line."""


def _located(lines: list[str], line: int, first: str) -> int | None:
    """The page line holding the command's first line: its recorded line, else the nearest within MOVED."""
    for n in sorted(range(line - MOVED, line + MOVED + 1), key=lambda n: abs(n - line)):
        if 0 < n <= len(lines) and first[:60] in lines[n - 1]:
            return n
    return None


def _fix_lines(lines: list[str], line: int, source: Source, fix) -> tuple[str, tuple | None]:
    """("apply", (new lines, how many page lines they replace, the record)) when the page holds
    exactly the command that was checked; ("applied", None) when it already holds the fix;
    ("differs", None) otherwise (the page changed: the fix is not put on what was not checked)."""
    count = source.text.count("\n") + 1
    old = lines[line - 1 : line - 1 + count]
    fixed_text = fix.fix.fix.get("text", "")
    first = _first_line(source)[:60]  # the fix may put lines (the comments it moved) above the command
    lead = next((i for i, ln in enumerate(fixed_text.split("\n")) if first and first in ln), 0)
    start = line - 1 - lead
    if (
        start >= 0
        and textwrap.dedent("\n".join(lines[start : start + fixed_text.count("\n") + 1])).strip("\n") == fixed_text
    ):
        return "applied", None
    if textwrap.dedent("\n".join(old)).strip("\n") != source.text:
        return "differs", None
    new = fix_edits.apply(old, fix.fix.fix["edits"])
    if new is None or new == old:
        return "differs", None
    return "apply", (
        new,
        count,
        FixApplied(fix.fix.id, line, "\n".join(old), "\n".join(new), fix.fix.fix["why"], fix.checks, fix.checked),
    )


def annotate(results: Results, tree: Path) -> Annotation:
    """Patch (in memory) every Markdown page of `tree` that the snippets came from."""
    return annotate_tree(views_of(public.public_results(results)), tree)  # no host path, no text that changes


def annotate_tree(commands: CommandViews, tree: Path) -> Annotation:
    """`annotate` from the commands' views (built from public results: the site's, the PR's)."""
    ann = Annotation(tree)
    try:
        info = detect(tree)
    except SourceError as err:
        ann.problems.append(str(err))
        return ann
    # By file, whatever the tree's folder is called (a copy of 0.33.0 is still 0.33.0): a place
    # counts when the page still has the snippet's first line there (checked per page). When
    # the snippets came from several versions of these docs, the places of this tree's version
    # are taken first: each carries the versions its page is written for.
    wanted: dict[str, list[tuple[CommandView, Source]]] = {}
    for view in commands:
        for src in view.snippet.sources:
            if src.corpus == info.kind and src.file.endswith(".md") and _page(tree, src.file, ann.problems):
                wanted.setdefault(src.file, []).append((view, src))
    for places in wanted.values():
        places.sort(key=lambda p: (p[1].version != info.version, p[1].line))
    for rel in sorted(set(wanted) | _annotated_earlier(tree, set(wanted), ann.problems)):
        text = _read(tree / rel, rel, ann.problems)
        if text is None:
            continue
        patch = annotate_page(rel, text, wanted.get(rel, []), ann.problems)
        if patch.after != patch.before:
            ann.patches.append(patch)
    return ann


def _page(tree: Path, rel: str, problems: list[str]) -> bool:
    """Whether `rel` is a page of the tree that may be read and patched: a file inside it, reached
    through no symbolic link (a link is reported, once)."""
    path = tree / rel
    if not (path.is_file() or path.is_symlink()):
        return False
    inside = bounds.within(tree, path)
    link = next((p for p in [path, *path.parents] if tree in p.parents and p.is_symlink()), None)
    if inside and link is None:
        return path.is_file()
    name = link.relative_to(tree).as_posix() if link is not None else rel
    where = "is a symbolic link inside the tree" if inside else "leads out of the tree"
    note = f"{name}: {where}; not read, not annotated"
    if note not in problems:
        problems.append(note)
    return False


def _annotated_earlier(tree: Path, known: set[str], problems: list[str]) -> set[str]:
    """Pages holding what an earlier run inserted (nothing to say now: the old warnings go); the
    links of the docs that lead out of the tree are reported."""
    found: set[str] = set()
    files, escapes = bounds.walk(tree, tree / "docs") if (tree / "docs").is_dir() else ([], [])
    problems += [
        f"{p.relative_to(tree).as_posix()}: leads out of the tree; not read"
        for p in escapes
        if p.suffix == ".md" or p.is_dir()
    ]
    for path in files:
        rel = path.relative_to(tree).as_posix()
        if path.suffix == ".md" and rel not in known and not path.is_symlink():
            text = _read(path, rel, [])
            if text is not None and "driftmatrix:begin" in text:
                found.add(rel)
    return found


def _read(path: Path, rel: str, problems: list[str]) -> str | None:
    """The page's text (at most MAX_PAGE_BYTES of it), or None with the problem said."""
    try:
        data, size = bounds.read_capped(path)
        if data is None:
            problems.append(
                f"{rel}: {size} bytes, over the {bounds.MAX_PAGE_BYTES}-byte limit for a page; not annotated"
            )
            return None
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as err:
        problems.append(f"{rel}: cannot read ({type(err).__name__}); not annotated")
        return None


def write_tree(ann: Annotation, out: Path) -> None:
    """A copy of the tree with the patched pages (`-o PATCHED_TREE`)."""
    import shutil

    if out.resolve() != ann.tree.resolve():
        shutil.copytree(ann.tree, out, dirs_exist_ok=True, symlinks=True)
    for p in ann.patches:
        target = out / p.file
        if target.is_symlink():
            target.unlink()  # the patched page replaces a link in OUT: nothing is written through it
        if not bounds.within(out, target):
            ann.problems.append(f"{p.file}: a symbolic link in {out} leads it out of the tree; not written")
            continue
        target.write_text(p.after, encoding="utf-8")


def for_site(annotations: list[Annotation]) -> dict:
    """What the site's "annotated pages" section shows."""
    pages = []
    for ann in annotations:
        for p in ann.patches:
            if not p.inserts and not p.fixes:
                continue
            one = Annotation(ann.tree, [p])
            pages.append(
                {
                    "slug": addresses.page_slug(f"{ann.tree.name}/{p.file}"),
                    "file": p.file,
                    "tree": ann.tree.name,
                    "warnings": sum(i.kind == "warning" for i in p.inserts),
                    "fixed": len(p.fixes),
                    "inserts": [vars(i) for i in p.inserts],
                    "fixes": [vars(f) for f in p.fixes],
                    "diff": one.diff(),
                }
            )
    return {"pages": pages, "had_docs": bool(annotations), "problems": [x for a in annotations for x in a.problems]}
