"""vLLM's own files (examples/, docs/) for a target's version, for commands that name them.

Docs name files relative to a vLLM checkout (`--chat-template examples/tool_chat_template_gemma4.jinja`),
as a reader working in a checkout of that release would have them.  The runner substitutes the
file from the target version's `vllm==X` sdist on PyPI (only docs/, examples/, recipes/ unpacked,
cached), like a model id by its local dir, and records the substitution.  Where the sdist cannot
be had (offline, a dev build) or lacks the file, the path stays and the command SKIPs with the
`file-from-source-tree` signature. Whether the release the page is written for has the file is the
extractor's check (extractor/release_files.py: the `file-not-in-release` lint).
"""

from __future__ import annotations

import functools
from pathlib import Path

from driftmatrix.extractor.release_files import option_values

DIRS = ("examples/", "docs/")  # argv values that name files of a vLLM checkout


def names_source_files(argv: list[str]) -> bool:
    return any(v.startswith(DIRS) for v in option_values(argv))


@functools.cache
def release_source(version: str | None, cache_dir: Path) -> tuple[Path | None, str | None]:
    """(the build's release tree, None) or (None, why it could not be had: said in the outcome that
    needed it); asked once per version and cache in a process."""
    from driftmatrix.extractor.sdist import release_tree

    release = (version or "").split("+")[0]
    if not release:
        return None, None
    return release_tree(release, cache_dir / "sdists")


def source_tree(version: str | None, cache_dir: Path) -> Path | None:
    return release_source(version, cache_dir)[0]


def files_named(argv: list[str], tree: Path | None) -> dict[str, str]:
    """{relative path in argv: the file in `tree`} for those the tree has."""
    if tree is None:
        return {}
    return {
        v: str(tree / v) for v in option_values(argv) if v.startswith(DIRS) and ".." not in v and (tree / v).is_file()
    }
