"""git, run one way for every stage: an argv list (never a shell), output captured, the caller
deciding what a failure means (the extractor's source refs, the docs gate's trees, the PR pushes)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def run_git(
    repo: Path | None,
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
    input: str | bytes | None = None,
    text: bool = True,
) -> subprocess.CompletedProcess:
    """`git -C repo ARGS…` (`repo` None: no repository, e.g. `check-ref-format`)."""
    argv = ["git", *(["-C", str(repo)] if repo is not None else []), *args]
    return subprocess.run(argv, capture_output=True, text=text, env=env, timeout=timeout, input=input)


def prefetch(repo: Path, rev: str, paths: list[str], timeout: float | None = 300) -> None:
    """In a partial clone (`--filter=blob:none`, as the docs gate clones), fetch the blobs of `paths`
    at `rev` in one batch before they are read: `git diff` prefetches what it compares, while
    `cat-file --batch` (or `ls-tree -l`) fetches each missing blob on its own — a fetch per file,
    minutes for a few hundred. Where every blob is already here, nothing is fetched; a failure
    here is left to the read that follows (it fetches one by one, or says why it cannot)."""
    promisor = run_git(repo, "config", "--get-regexp", r"^remote\..*\.promisor$|^extensions\.partialclone$", timeout=30)
    if promisor.returncode or not promisor.stdout.strip() or not paths:
        return
    empty = run_git(repo, "hash-object", "-t", "tree", "--stdin", input="", timeout=30).stdout.strip()
    for at in range(0, len(paths), PREFETCH_BATCH):  # argv stays far below the system's limit
        try:
            run_git(
                repo,
                "--literal-pathspecs",
                "-c",
                "diff.renames=false",
                "diff",
                "--numstat",
                empty,
                rev,
                "--",
                *paths[at : at + PREFETCH_BATCH],
                timeout=timeout,
            )
        except (OSError, subprocess.TimeoutExpired):
            return


PREFETCH_BATCH = 1000
