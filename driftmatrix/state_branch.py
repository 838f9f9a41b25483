"""`driftmatrix state load|save`: the outcomes and history a scheduled run builds on, kept on a
branch of the repository (`driftmatrix-state`), outside the Actions cache.

The Actions cache holds 10 GB per repository and evicts the least recently used entry; the CPU
environments alone are 11 GB, so a state entry there is lost within days and with it every
previous outcome and the history. A branch is never evicted, is versioned (a bad run is one
revert away) and needs only `contents: write` on the publishing job.

Each save is one commit on top of the state it started from, pushed without force: a push that
is not a fast-forward (another run saved meanwhile) is refused, never overwritten. Only a branch
named `driftmatrix-…` that is not the remote's default branch can be written.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from driftmatrix.common.redact import Redactor
from driftmatrix.publisher.git_push import Git, PrError

BRANCH = "driftmatrix-state"
FILES = ("outcomes.jsonl", "history")
"""What a state holds: every outcome so far, and the per-run history the site's pages show."""
_SAFE_BRANCH = re.compile(r"^driftmatrix-[A-Za-z0-9._-]+$")


class StateError(RuntimeError):
    """The state could not be read or written (the message says which step and why)."""


def _git(workdir: Path) -> Git:
    return Git(workdir, Redactor(), os.environ.get("GITHUB_TOKEN"))


def _remote_default(git: Git, remote: str) -> str | None:
    out = git("ls-remote", "--symref", remote, "HEAD", check=False)
    m = re.search(r"^ref: refs/heads/(\S+)\s+HEAD", out, re.M)
    return m.group(1) if m else None


def load(remote: str, branch: str, dest: Path) -> str:
    """Fill `dest` with the state on the branch; 'first run' when the branch does not exist yet."""
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        git = _git(Path(tmp))
        try:  # an unreachable remote is an error, not a first run (that would redo every job)
            heads = git("ls-remote", "--heads", remote, f"refs/heads/{branch}")
        except PrError as err:
            raise StateError(f"cannot reach the state remote: {err}") from None
        if not heads:
            (dest / "history").mkdir(exist_ok=True)
            (dest / "outcomes.jsonl").touch()
            (dest / ".state-commit").write_text("")  # none: a save must then find no branch either
            return "first run: no state branch yet"
        try:
            git("clone", "--quiet", "--depth", "1", "--single-branch", "--branch", branch, remote, "clone")
        except PrError as err:
            raise StateError(f"cannot fetch {branch}: {err}") from None
        clone = Path(tmp) / "clone"
        for name in FILES:
            src, dst = clone / name, dest / name
            if dst.exists():
                shutil.rmtree(dst) if dst.is_dir() else dst.unlink()
            if src.is_dir():
                shutil.copytree(src, dst)
            elif src.exists():
                shutil.copy2(src, dst)
        (dest / "history").mkdir(exist_ok=True)
        (dest / "outcomes.jsonl").touch()
        head = _git(clone)("rev-parse", "HEAD")
        (dest / ".state-commit").write_text(head + "\n")
        return f"state of {branch} at {head[:12]}"


def save(remote: str, branch: str, source: Path, message: str) -> str:
    """Commit `source`'s state files on top of the branch (or as its first commit) and push."""
    if not _SAFE_BRANCH.match(branch):
        raise StateError(f"refusing to write branch {branch!r}: state branches are named driftmatrix-…")
    with tempfile.TemporaryDirectory() as tmp:
        git = _git(Path(tmp))
        if _remote_default(git, remote) == branch:
            raise StateError(f"refusing to write {branch!r}: it is the remote's default branch")
        clone = Path(tmp) / "clone"
        if git("ls-remote", "--heads", remote, f"refs/heads/{branch}", check=False):
            git("clone", "--quiet", "--depth", "1", "--single-branch", "--branch", branch, remote, "clone")
            marker = source / ".state-commit"
            started = marker.read_text().strip() if marker.exists() else None
            head = _git(clone)("rev-parse", "HEAD")
            if started is not None and started != head:
                raise StateError(
                    f"{branch} moved since this run loaded it ({started[:12] or 'no branch'} -> "
                    f"{head[:12]}): not overwriting another run's state"
                )
        else:
            clone.mkdir()
            _git(clone)("init", "--quiet", "-b", branch)
            _git(clone)("remote", "add", "origin", remote)
        for name in FILES:
            dst = clone / name
            if dst.exists():
                shutil.rmtree(dst) if dst.is_dir() else dst.unlink()
            src = source / name
            if src.is_dir():
                shutil.copytree(src, dst)
            elif src.exists():
                shutil.copy2(src, dst)
        (clone / "README.md").write_text(
            "# driftmatrix state\n\nOutcomes and history of the scheduled runs, "
            "written by `driftmatrix state save`. Not for humans to edit.\n"
        )
        c = _git(clone)
        c("add", "-A")
        if not c("status", "--porcelain"):
            return f"{branch}: unchanged"
        c("commit", "--quiet", "-m", message)
        c("push", "--quiet", "origin", f"HEAD:refs/heads/{branch}")  # no force: a fast-forward or nothing
        return f"{branch}: saved {c('rev-parse', 'HEAD')[:12]}"


def cmd_state(args: argparse.Namespace) -> int:
    try:
        if args.action == "load":
            print(load(args.remote, args.branch, Path(args.dir)))
        else:
            when = datetime.now(UTC).strftime("%Y-%m-%dT%H:%MZ")
            run = os.environ.get("GITHUB_RUN_ID")
            print(
                save(
                    args.remote,
                    args.branch,
                    Path(args.dir),
                    f"driftmatrix state {when}" + (f" (run {run})" if run else ""),
                )
            )
    except (StateError, PrError) as err:
        from driftmatrix.common.inert import terminal

        print(f"driftmatrix state {args.action}: {terminal(err)}", file=sys.stderr)  # git's words
        return 1
    return 0


def add_parser(sub) -> None:
    st = sub.add_parser("state", help="load or save the outcomes and history kept on a state branch")
    st.add_argument("action", choices=["load", "save"])
    st.add_argument("--remote", required=True, help="the repository (URL or path) holding the state branch")
    st.add_argument("--branch", default=BRANCH, help="state branch, named driftmatrix-… (default: %(default)s)")
    st.add_argument("-d", "--dir", default="state", help="local state directory (default: %(default)s)")
    st.set_defaults(func=cmd_state)
