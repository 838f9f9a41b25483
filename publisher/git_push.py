"""Git for `driftmatrix pr`: pushes that cannot do harm.

The tool's branch is only ever written with `--force-with-lease` against the tip fetched in
this same run ("must not exist" when it had none), so a push never replaces a commit the run
has not seen, and a branch people work on (the base, the remote's default branch, main,
master, release branches, gh-pages) is refused by name before anything is fetched or pushed.
The branch is fetched by name because the workflow's `git clone --depth 50` is a
single-branch clone: a plain `git fetch` never brings it, and "unchanged" was never true.
The token reaches git as an HTTP header through `GIT_CONFIG_*` entries, never argv or
`.git/config`.
"""

from __future__ import annotations

import base64
import fnmatch
import os
import re
import subprocess
from pathlib import Path

from driftmatrix.common.git import run_git

DEFAULT_IDENTITY = "driftmatrix <driftmatrix@users.noreply.github.com>"
PROTECTED = ("main", "master", "release/*", "releases/*", "gh-pages")
"""Never the tool's branch, whatever the repository: vLLM's release branches are `releases/v…`."""
SHALLOW_DEPTH = 50
"""The workflow's `git clone --depth 50`: a fetch into a shallow clone stays as shallow."""


class PrError(Exception):
    """A git or GitHub step failed (the message is redacted)."""


class LeaseRefused(PrError):
    """The branch moved on the remote between this run's fetch and its push: nothing was pushed."""


def identity_env(identity: str) -> dict[str, str]:
    """`NAME <EMAIL>` as author and committer: the committer is who `commit -s` signs off as."""
    m = re.fullmatch(r"\s*([^<>]*[^<>\s])\s*<([^<>\s]+@[^<>\s]+)>\s*", identity)
    if not m:
        raise ValueError(f"--committer must read 'NAME <EMAIL>', not {identity!r}")
    name, email = m.groups()
    return {
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
    }


class Git:
    def __init__(self, checkout: Path, redact, token: str | None, identity: str = DEFAULT_IDENTITY):
        self.checkout, self.redact = checkout, redact
        self.env = {**os.environ, **identity_env(identity), "GIT_TERMINAL_PROMPT": "0"}
        if token:  # an HTTPS remote on github.com: the token as a header, not in argv or .git/config
            basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
            self.env.update(
                {
                    "GIT_CONFIG_COUNT": "1",
                    "GIT_CONFIG_KEY_0": "http.https://github.com/.extraheader",
                    "GIT_CONFIG_VALUE_0": f"AUTHORIZATION: basic {basic}",
                }
            )

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return run_git(self.checkout, *args, env=self.env)

    def __call__(self, *args: str, check: bool = True) -> str:
        proc = self.run(*args)
        if check and proc.returncode:
            raise PrError(self.redact(f"git {' '.join(args)}: {proc.stderr.strip()[-500:]}"))
        return proc.stdout.strip() if proc.returncode == 0 else ""


def local_default(git: Git, remote: str) -> str | None:
    """The remote's default branch as the clone recorded it (no network: usable in a dry run)."""
    ref = git("symbolic-ref", "--short", f"refs/remotes/{remote}/HEAD", check=False)
    return ref.split("/", 1)[1] if "/" in ref else None


def refusal(branch: str, named: dict[str, str]) -> str | None:
    """Why the tool must not write `branch`, or None. `named`: branch name or pattern -> what it is.
    Compared case-blind: a `Main` beside `main` is a mistake, never the tool's branch."""
    if (
        not branch
        or branch.startswith(("refs/", "-"))
        or run_git(None, "check-ref-format", f"refs/heads/{branch}").returncode
    ):
        return f"--branch {branch!r} is not a plain branch name"
    for pattern, what in {**{p: "a protected name" for p in PROTECTED}, **named}.items():
        if pattern and fnmatch.fnmatchcase(branch.casefold(), pattern.casefold()):
            return f"--branch {branch} is {what} ({pattern}); the tool only writes a branch of its own"
    return None


def fetch(git: Git, where: str, branch: str, tracking: str) -> str | None:
    """Fetch `branch` from `where` (a remote's name or a URL) into `tracking`; its tip, or None
    when the remote has no such branch (a stale `tracking` ref is dropped, so it cannot lend a lease)."""
    listed = git("ls-remote", "--heads", where, f"refs/heads/{branch}")
    if not any(line.split("\t")[-1] == f"refs/heads/{branch}" for line in listed.splitlines()):
        git("update-ref", "-d", tracking, check=False)
        return None
    depth = ["--depth", str(SHALLOW_DEPTH)] if git("rev-parse", "--is-shallow-repository") == "true" else []
    git("fetch", "-q", "--no-tags", *depth, where, f"+refs/heads/{branch}:{tracking}")
    return git("rev-parse", "--verify", f"{tracking}^{{commit}}")


def same_tree(git: Git, a: str, b: str | None) -> bool:
    return bool(b) and git("rev-parse", f"{a}^{{tree}}") == git("rev-parse", f"{b}^{{tree}}")


def push(git: Git, where: str, branch: str, new: str | None, expect: str | None) -> None:
    """Set `branch` at `where` to `new` (None: delete it) only if it is still at `expect` (None: absent).
    The lease names the expected value, not a remote-tracking ref, so a fetch in between cannot
    widen it."""
    src = new or ""
    proc = git.run(
        "push",
        "--porcelain",
        f"--force-with-lease=refs/heads/{branch}:{expect or ''}",
        where,
        f"{src}:refs/heads/{branch}",
    )
    if proc.returncode == 0:
        return
    status = "\n".join(line for line in proc.stdout.splitlines() if line.startswith("!"))
    detail = git.redact(f"{status or proc.stderr.strip()[-500:]}")
    if "stale info" in status:
        raise LeaseRefused(detail)
    raise PrError(f"git push to {git.redact(where)} failed: {detail}")
