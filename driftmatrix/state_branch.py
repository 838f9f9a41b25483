"""`driftmatrix state load|save`: the outcomes and history a scheduled run builds on, kept on a
branch of the repository (`driftmatrix-state`), outside the Actions cache.

The Actions cache holds 10 GB per repository and evicts the least recently used entry; the CPU
environments alone are 11 GB, so a state entry there is lost within days and with it every
previous outcome and the history. A branch is never evicted, is versioned (a bad run is one
revert away) and needs only `contents: write` on the publishing job.

Each save is one commit on top of the state it started from, pushed without force: a push that
is not a fast-forward (another run saved meanwhile) is refused, never overwritten. Only a branch
named `driftmatrix-…` that is not the remote's default branch can be written.

Each commit names its run (the trailer `Driftmatrix-Run: <GITHUB_RUN_ID>`). A branch that moved
since the run loaded it is written only when its head is that same run's own earlier save ("Re-run
failed jobs" keeps attempt 1's `state` artifact, whose commit is where the run started, while
attempt 1 already saved): the save is then merged onto it, the outcomes one record per job (the
one that counts, as `driftmatrix merge` keeps) and the history files of both, so nothing either
attempt merged is lost. A head saved by another run (or by no run) is refused: runs are not
ordered by the merge, so an older run's outcomes could replace a newer run's.
"""

from __future__ import annotations

import argparse
import json
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
RUN_TRAILER = "Driftmatrix-Run"
"""The trailer of a save's commit message naming the workflow run that made it."""
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


def save(remote: str, branch: str, source: Path, message: str, run_id: str | None = None) -> str:
    """Commit `source`'s state files on top of the branch (or as its first commit) and push; merged
    onto the branch's head instead when the branch moved since `source` was loaded and that head is
    run `run_id`'s own earlier save (a re-run of the same workflow run)."""
    if not _SAFE_BRANCH.match(branch):
        raise StateError(f"refusing to write branch {branch!r}: state branches are named driftmatrix-…")
    if run_id and not re.fullmatch(r"[A-Za-z0-9._-]{1,100}", run_id):
        raise StateError(f"refusing run id {run_id!r}: a workflow run id is a number")
    with tempfile.TemporaryDirectory() as tmp:
        git = _git(Path(tmp))
        if _remote_default(git, remote) == branch:
            raise StateError(f"refusing to write {branch!r}: it is the remote's default branch")
        clone = Path(tmp) / "clone"
        onto_own = False
        if git("ls-remote", "--heads", remote, f"refs/heads/{branch}", check=False):
            git("clone", "--quiet", "--depth", "1", "--single-branch", "--branch", branch, remote, "clone")
            marker = source / ".state-commit"
            started = marker.read_text().strip() if marker.exists() else None
            head = _git(clone)("rev-parse", "HEAD")
            if started is not None and started != head:
                saved_by = _run_of(clone)
                if not run_id or saved_by != run_id:
                    raise StateError(
                        f"{branch} moved since this run loaded it ({started[:12] or 'no branch'} -> "
                        f"{head[:12]}, saved by {f'run {saved_by}' if saved_by else 'no workflow run'}): "
                        "not overwriting another run's state"
                    )
                onto_own = True  # this run's own earlier attempt saved: merge onto it
        else:
            clone.mkdir()
            _git(clone)("init", "--quiet", "-b", branch)
            _git(clone)("remote", "add", "origin", remote)
        if onto_own:
            _merge_onto(clone, source)
        else:
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
            return f"{branch}: unchanged" + (" (this run's earlier save holds it all)" if onto_own else "")
        if run_id:
            message = f"{message}\n\n{RUN_TRAILER}: {run_id}"
        c("commit", "--quiet", "-m", message)
        c("push", "--quiet", "origin", f"HEAD:refs/heads/{branch}")  # no force: a fast-forward or nothing
        merged = " (merged onto this run's earlier save)" if onto_own else ""
        return f"{branch}: saved {c('rev-parse', 'HEAD')[:12]}{merged}"


def _run_of(clone: Path) -> str | None:
    """The run that made the clone's head commit (its `Driftmatrix-Run` trailer), None when it names none."""
    out = _git(clone)("log", "-1", f"--format=%(trailers:key={RUN_TRAILER},valueonly,separator=%x20)", check=False)
    return out.split()[-1] if out and out.split() else None


def _merge_onto(clone: Path, source: Path) -> None:
    """`source`'s state merged into the branch's (this run's earlier save): every history file of both
    (the same name: `source`'s), the outcomes one per job, the one that counts (a tie: `source`'s)."""
    from driftmatrix.runner.outcomes import counts, store

    if (source / "history").is_dir():
        shutil.copytree(source / "history", clone / "history", dirs_exist_ok=True)
    jobs: dict = {}
    for path in (clone / "outcomes.jsonl", source / "outcomes.jsonl"):
        for o in store.read(path)[0]:
            jobs.setdefault(o.key(), []).append(o)
    (clone / "outcomes.jsonl").write_text(
        "".join(
            json.dumps(counts.best(found).to_dict(), ensure_ascii=False, default=str) + "\n" for found in jobs.values()
        ),
        encoding="utf-8",
    )


def cmd_state(args: argparse.Namespace) -> int:
    from driftmatrix.common.inert import terminal

    when = datetime.now(UTC)
    run = args.run_id if args.action == "save" else None
    try:
        if args.action == "load":
            print(load(args.remote, args.branch, Path(args.dir)))
        else:
            message = f"driftmatrix state {when.strftime('%Y-%m-%dT%H:%MZ')}" + (f" (run {run})" if run else "")
            done = save(args.remote, args.branch, Path(args.dir), message, run_id=run or None)
            print(done)
            _summary(f"### State saved\n\n{_escape(done)}")
    except (StateError, PrError) as err:
        print(f"driftmatrix state {args.action}: {terminal(err)}", file=sys.stderr)  # git's words
        if args.action == "save":
            _unsaved(args, when, run, str(err))
        return 1
    return 0


def _escape(text: str) -> str:
    from driftmatrix.common.step_summary import escape

    return escape(text, 2000)


def _summary(markdown: str) -> None:
    from driftmatrix.common.step_summary import write

    write(markdown)


def _unsaved(args: argparse.Namespace, when: datetime, run: str | None, why: str) -> None:
    """Why the state was not saved: in the step's summary, and as a note (`--unsaved-note`) the site
    shows on its front page (`driftmatrix publish --state-unsaved`)."""
    from driftmatrix.common.inert import one_line

    why = one_line(why)[:2000]
    _summary(
        f"### The state was not saved\n\n{_escape(why)}\n\nThe next run starts from the state before this "
        "one; this run's site says so on its front page."
    )
    if args.unsaved_note:
        note = Path(args.unsaved_note)
        note.parent.mkdir(parents=True, exist_ok=True)
        note.write_text(json.dumps({"date": when.strftime("%Y-%m-%d"), "run": run or "", "why": why}) + "\n")


def add_parser(sub) -> None:
    st = sub.add_parser("state", help="load or save the outcomes and history kept on a state branch")
    st.add_argument("action", choices=["load", "save"])
    st.add_argument("--remote", required=True, help="the repository (URL or path) holding the state branch")
    st.add_argument("--branch", default=BRANCH, help="state branch, named driftmatrix-… (default: %(default)s)")
    st.add_argument("-d", "--dir", default="state", help="local state directory (default: %(default)s)")
    st.add_argument(
        "--run-id",
        default=os.environ.get("GITHUB_RUN_ID", ""),
        help="save: the workflow run saving (default: $GITHUB_RUN_ID), named in the commit; a branch whose head "
        "is this run's own earlier save is merged onto, not refused",
    )
    st.add_argument(
        "--unsaved-note",
        metavar="FILE",
        help="save: when the state is not saved, write why (JSON: date, run, why) here, for "
        "`driftmatrix publish --state-unsaved`",
    )
    st.set_defaults(func=cmd_state)
