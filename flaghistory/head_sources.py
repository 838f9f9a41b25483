"""A vLLM checkout's own option sources — a commit's (the docs gate: a pull request's head) or the
working tree's (`driftmatrix check` in a checkout) — read by the reader every release is read with,
and the history with that read as its newest release (flaghistory/head.py).

The repository is untrusted (a pull request from anyone): git runs with argv lists only, the files
come from the object store (`ls-tree` + `cat-file --batch`, not `git archive`, which obeys the
archived tree's own `.gitattributes`: a change could `export-ignore` the very file that removes an
option), nothing is checked out or run, and only the files `sources.keep_for_options` keeps from a
release's sdist are read — by path first, so a clone without blobs (`--filter=blob:none`) fetches
those few hundred files, in one batch, not vLLM's whole tree. A read is cached under the driftmatrix
cache by what it was read from (the git tree of `vllm/`, or a hash of the kept files) and the
reader's own code, so the second run on the same sources costs a file read.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath

from driftmatrix.common.git import prefetch, run_git
from driftmatrix.flaghistory.build import ReleaseRead, read_sources, reader_key
from driftmatrix.flaghistory.head import head_label, with_head
from driftmatrix.flaghistory.history import FlagHistory
from driftmatrix.flaghistory.sources import (
    KEEP_DIRS,
    KEEP_REGISTRY_DIRS,
    KEEP_TOP,
    KEEP_VALUE_FILES,
    keep_for_options,
)

ENTRY_FILES = ("vllm/engine/arg_utils.py", "vllm/entrypoints/cli/serve.py", "vllm/scripts.py")
"""Where the reader starts (or what it reads first): a tree holding one is a vLLM source tree."""
MAX_FILE_BYTES = 4 << 20
"""A kept file larger than this is not read (vLLM's largest argument file is ~100 KB): an untrusted
tree cannot make the reader hold gigabytes."""
GIT_TIMEOUT = 300


class SourcesError(RuntimeError):
    """The sources could not be had (a bad revision, git failing)."""


@dataclass
class HeadSources:
    """What a head's sources are, and how to say so."""

    kind: str
    """`head` (a commit's) or `worktree` (a checkout's files as they are)."""
    ident: str
    """The commit's short sha, or the kept files' hash."""
    key: str
    """The cache key: the git tree of `vllm/`, or the kept files' full hash."""
    name: str
    """For people: `the head's sources (vllm/ at 1a2b3c4)`."""
    commit: str | None = None
    files: dict[str, str] | None = None
    """Path → text of the kept files; None until needed (a cached read does not need them)."""


def candidate(path: str) -> bool:
    """Could `keep_for_options` keep this file? (by its path alone: a blob is read only then)."""
    if not path.endswith(".py"):
        return False
    return (
        path in KEEP_TOP
        or path in KEEP_VALUE_FILES
        or any(path.startswith(d + "/") for d in (*KEEP_DIRS, *KEEP_REGISTRY_DIRS))
    )


def _git(repo: Path, *args: str, data: bytes | None = None, text: bool = True):
    proc = run_git(repo, *args, input=data, text=text, timeout=GIT_TIMEOUT)
    if proc.returncode:
        err = proc.stderr if text else proc.stderr.decode(errors="replace")
        raise SourcesError(f"git {' '.join(args[:3])}: {err.strip()[-400:]}")
    return proc.stdout


# -- a commit's sources -------------------------------------------------------------------------
def is_vllm_commit(repo: Path, rev: str) -> bool:
    """Does the commit hold a vLLM source tree (one of the reader's entry files)?"""
    listing = run_git(repo, "ls-tree", "-z", "--full-tree", rev, "--", *ENTRY_FILES, timeout=GIT_TIMEOUT)
    return listing.returncode == 0 and any(" blob " in e for e in listing.stdout.split("\0") if e)


def at_commit(repo: Path, rev: str) -> HeadSources:
    commit = _git(repo, "rev-parse", "--verify", "--end-of-options", f"{rev}^{{commit}}").strip()
    tree = _git(repo, "rev-parse", "--verify", "--end-of-options", f"{commit}:vllm").strip()
    return HeadSources("head", commit[:7], f"tree-{tree}", f"the head's sources (vllm/ at {commit[:7]})", commit)


def _blobs(repo: Path, commit: str) -> list[tuple[str, str]]:
    """(sha, path) of the candidate files at the commit (regular blobs), by path alone: `ls-tree -l`
    would fetch every blob of `vllm/` one by one in a partial clone, to tell its size."""
    listing = _git(repo, "ls-tree", "-r", "-z", "--full-tree", commit, "--", "vllm")
    found = []
    for entry in filter(None, listing.split("\0")):
        meta, path = entry.split("\t", 1)
        mode, kind, sha = meta.split()
        if kind == "blob" and mode in ("100644", "100755") and candidate(path):
            found.append((sha, path))
    return found


def _small(repo: Path, blobs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The blobs not over MAX_FILE_BYTES (sizes from the object store, after the prefetch); one git
    cannot have (`<sha> missing`) is left out, as one too large is."""
    sizes = _git(repo, "cat-file", "--batch-check=%(objectsize)", data="".join(f"{sha}\n" for sha, _ in blobs))
    return [b for b, size in zip(blobs, sizes.splitlines()) if size.isdigit() and int(size) <= MAX_FILE_BYTES]


def commit_files(repo: Path, source: HeadSources) -> dict[str, str]:
    """The kept files at the commit, from the object store (path → text, as `sources.read_tree`)."""
    blobs = _blobs(repo, source.commit)
    prefetch(repo, source.commit, [p for _, p in blobs], GIT_TIMEOUT)
    blobs = _small(repo, blobs)
    data = _git(repo, "cat-file", "--batch", data="".join(f"{sha}\n" for sha, _ in blobs).encode(), text=False)
    files, at = {}, 0
    for _, path in blobs:
        header_end = data.index(b"\n", at)
        size = int(data[at:header_end].split()[2])
        body = data[header_end + 1 : header_end + 1 + size]
        at = header_end + 1 + size + 1
        if keep_for_options(PurePosixPath(path), body):
            files[path] = body.decode("utf-8", errors="replace")
    return dict(sorted(files.items()))


# -- a working tree's sources -------------------------------------------------------------------
def is_vllm_worktree(root: Path) -> bool:
    return any((root / f).is_file() and not (root / f).is_symlink() for f in ENTRY_FILES)


def worktree_files(root: Path) -> dict[str, str]:
    """The kept files under `root/vllm` as they are on disk (no link followed)."""
    files = {}
    for folder, dirs, names in os.walk(root / "vllm"):
        dirs[:] = [d for d in dirs if not (Path(folder) / d).is_symlink()]
        for name in names:
            path = Path(folder) / name
            inner = path.relative_to(root).as_posix()
            if not candidate(inner) or path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
                continue
            body = path.read_bytes()
            if keep_for_options(PurePosixPath(inner), body):
                files[inner] = body.decode("utf-8", errors="replace")
    return dict(sorted(files.items()))


def at_worktree(root: Path) -> HeadSources:
    files = worktree_files(root)
    digest = hashlib.sha256()
    for path, text in files.items():
        digest.update(f"{path}\0{len(text)}\0".encode() + text.encode())
    ident = digest.hexdigest()
    return HeadSources(
        "worktree",
        ident[:10],
        f"files-{ident[:32]}",
        "this checkout's sources (vllm/ in the working tree)",
        files=files,
    )


# -- the read and the history -------------------------------------------------------------------
def read_head(source: HeadSources, label: str, cache: Path | None, repo: Path | None = None) -> ReleaseRead:
    """The reader's read of the head's sources, cached by what they are and the reader's code."""
    entry = cache / f"{source.key}-{reader_key()}.json" if cache else None
    if entry and entry.is_file():
        try:
            return ReleaseRead(**{**json.loads(entry.read_text()), "version": label})
        except (ValueError, TypeError):
            pass  # a damaged entry: read again
    files = source.files if source.files is not None else commit_files(repo, source)
    read = read_sources(label, files)
    if entry:
        entry.parent.mkdir(parents=True, exist_ok=True)
        partial = entry.with_name(f".{entry.name}.{os.getpid()}")
        partial.write_text(json.dumps(asdict(read)))
        os.replace(partial, entry)
    return read


def head_history(base: FlagHistory, source: HeadSources, cache: Path | None, repo: Path | None = None) -> FlagHistory:
    """`base` (the shipped history) with the head's read as its newest release."""
    label = head_label(base.data, source.kind, source.ident)
    read = read_head(source, label, cache, repo)
    about = {"kind": source.kind, "name": source.name, "commit": source.commit, "key": source.key}
    return FlagHistory(with_head(base.data, read, label, about), base.path)
