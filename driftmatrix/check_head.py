"""`driftmatrix check` (and the pre-commit hook) inside a vLLM checkout: the pages of a vLLM source
tree are judged against that checkout's own sources, as the docs gate judges a pull request
(driftmatrix/gate_head.py) — a page on vLLM's main branch is written for the code beside it.

The "head" here is the working tree as it is (what pre-commit leaves there is what gets committed),
read with the reader every release is read with and cached under the driftmatrix cache by a hash of
the files the reader keeps (flaghistory/head_sources.py): a second check of an unchanged tree costs a
file read. Each such page's commands are asked about that head only (`--version` still asks what it
names); commands given alone keep today's stable release, and pages of other trees their own
releases: the history with the head appended answers for them exactly as before.
"""

from __future__ import annotations

from pathlib import Path

from driftmatrix.check_inputs import GIVEN, CheckInputError, _page_root


def _vllm_pages(checked: list, docs: str | None) -> tuple[Path | None, list]:
    """The first vLLM source tree among the pages' trees, and the commands of its pages."""
    from driftmatrix.flaghistory.head_sources import is_vllm_worktree

    roots: dict[Path, list] = {}
    page_roots: dict[str, Path] = {}  # a page's root asked of git once, not once per command
    for c in checked:
        if c.where == GIVEN:
            continue
        page = c.where.rsplit(":", 1)[0]
        if page not in page_roots:
            page_roots[page] = _page_root(Path(page), docs)
        root = page_roots[page]
        if is_vllm_worktree(root):
            roots.setdefault(root, []).append(c)
    return next(iter(roots.items()), (None, []))


def against_checkout(history, checked: list, args):
    """The history to check with: `history` with a vLLM checkout's own sources as its newest release
    when the pages belong to one (their commands then asked about it), else `history` itself."""
    from driftmatrix.flaghistory.head import HeadError
    from driftmatrix.flaghistory.head_sources import SourcesError, at_worktree, head_history
    from driftmatrix.runner.settings import cache_dir

    root, pages = _vllm_pages(checked, getattr(args, "docs", None))
    if root is None:
        return history
    try:
        source = at_worktree(root)
        head = head_history(history, source, cache_dir() / "head-reads")
    except (HeadError, SourcesError, OSError) as err:
        raise CheckInputError(f"{root}: its vLLM sources could not be read: {err}") from None
    label = head.releases[-1]
    if not args.version:
        for c in pages:
            c.asked, c.page = [label], True
            c.basis = f"in a vLLM source tree: judged against {source.name}, read as {label}"
    return head
