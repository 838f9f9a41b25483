"""Bounded input: docs pages are untrusted, so every read of a docs tree is bounded in size and
stays inside the tree. The caps on input are defined here, once each.

Symbolic links: a link whose target resolves outside the tree is never read nor descended (the
reader reports it as an `outside-tree` diagnostic); a linked file whose target stays inside the
tree is read under the link's own path (as mkdocs serves it); a linked directory is never
descended (its target, when inside the tree, is read under its own path).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import NamedTuple

MAX_PAGE_BYTES = 5 * 1024 * 1024
"""A docs page (Markdown, recipe YAML, included example, saved HTML) larger than this is not read
(`too-large`). The largest real page is ~100 kB (recipes' Kimi-K3.yaml): 50x that is no docs page,
and it bounds the time and memory one page can cost (extraction is linear in a page's size)."""

MAX_LINE_CHARS = 64 * 1024
"""A line of a Markdown page, recipe or included example longer than this is left out of it
(`line-too-long`; the rest of the page is read; a saved HTML page, often one long line, is exempt).
The longest real line is ~3.8 kB (a recipe's speculative-config JSON): 17x that is no command a
reader copies, and it bounds what one line of a page can put into a command or a snippets.json."""

MAX_COMMANDS_PER_LINE = 32
"""Commands one line (or one span of lines) of a page may hold (`a; b; c`): each command's record
carries the text of its lines for annotate, so N commands on a line of L characters would write N x L
into snippets.json (a 0.1 MB page of `vllm serve m1; vllm serve m2; …` made 302 MB). The real pages
hold at most 2 on a line. The rest of such a line is left out, said in a lint of the last one kept."""

MAX_RECIPE_WORDS = 50_000
"""Words one recipe's composed commands may hold together: every command of a recipe carries the
default features' arguments, so F opt-in features x D default arguments grow as F x D from a file
of F + D lines. The real recipes compose at most ~1,500. Past it the recipe is a `recipe-shape`
diagnostic, not read."""

MAX_HEADING_CHARS = 1000
"""Only this much of a heading is read for its anchor and text (the longest real heading is ~200
characters): inline Markdown markup is matched with regexes that may be quadratic in a heading's
length, and a page may hold many headings."""

MAX_YAML_ALIAS_GROWTH = 100_000
"""What YAML aliases may add to a document, in nodes plus scalar characters, once expanded: a
"billion laughs" (aliases of aliases, x9 per level) is refused (`yaml-alias-expansion`) before it
is constructed or read. The real recipes' aliases (hardware overrides, a compilation config reused)
add at most ~4,600 (DeepSeek-V4.1-Flash.yaml)."""

MAX_PROBE_BYTES = 64 * 1024
"""How much of a file is read to tell what it is (a model card's front matter, an sdist's
PKG-INFO): the facts sit at its start."""

LEFT_OUT = "\ue001"
"""A private-use character (no real page holds one): it marks where a line was left out."""

LONG_LINE_MARK = f"{LEFT_OUT}line-left-out-as-too-long{LEFT_OUT}"
"""What replaces a line over MAX_LINE_CHARS (one shell word): a command that held it is dropped,
never extracted cut short."""


class Listing(NamedTuple):
    files: list[Path]
    """Regular files (and links to files inside the tree), in path order."""
    escapes: list[Path]
    """Links (to files or directories) that resolve outside the tree: reported, never read."""


def within(root: Path, path: Path) -> bool:
    """True when `path`, every link followed, is `root` or lies under it."""
    real, base = os.path.realpath(path), _real_root(os.path.abspath(root))
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


_real_root = functools.lru_cache(maxsize=64)(os.path.realpath)
"""A tree's own real path (asked for each of its files)."""


def walk(root: Path, top: Path | None = None, skip: set[str] | frozenset[str] = frozenset()) -> Listing:
    """The files under `top` (default `root`), never leaving `root`: links out of it are listed as
    escapes, linked directories are not descended, and names in `skip` are left out."""
    top = top or root
    if not within(root, top):
        return Listing([], [top])
    files: list[Path] = []
    escapes: list[Path] = []
    stack = [top]
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                found = sorted(entries, key=lambda e: e.name)
        except OSError:
            continue
        for entry in found:
            if entry.name in skip:
                continue
            path = Path(entry.path)
            link = entry.is_symlink()
            if link and not within(root, path):
                escapes.append(path)
            elif entry.is_dir(follow_symlinks=False):
                stack.append(path)
            elif entry.is_file():
                files.append(path)
    return Listing(sorted(files), sorted(escapes))


def read_head(path: Path, root: Path | None = None, limit: int = MAX_PROBE_BYTES) -> str | None:
    """The first `limit` bytes of a file as text (None when it cannot be read, or resolves outside `root`)."""
    if root is not None and not within(root, path):
        return None
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode("utf-8", errors="replace")
    except OSError:
        return None


def read_capped(path: Path) -> tuple[bytes | None, int]:
    """(the file's bytes, or None when it is over MAX_PAGE_BYTES; its size). Reads at most the cap
    plus one byte, whatever the file claims. Raises OSError."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > MAX_PAGE_BYTES:
            return None, size
        data = f.read(MAX_PAGE_BYTES + 1)
    return (None, max(size, len(data))) if len(data) > MAX_PAGE_BYTES else (data, len(data))


def cap_lines(text: str) -> tuple[str, list[tuple[int, int]]]:
    """The text with each line over MAX_LINE_CHARS replaced by its indentation and LONG_LINE_MARK,
    and the (1-based line, length) of each line replaced."""
    if len(text) <= MAX_LINE_CHARS:
        return text, []
    lines = text.split("\n")
    long = [(n, line) for n, line in enumerate(lines) if len(line) > MAX_LINE_CHARS]
    for n, line in long:
        indent = line[: len(line) - len(line.lstrip(" \t"))][:64]
        lines[n] = indent + LONG_LINE_MARK
    return ("\n".join(lines), [(n + 1, len(line)) for n, line in long]) if long else (text, [])
