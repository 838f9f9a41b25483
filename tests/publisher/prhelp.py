"""Shared by the `driftmatrix pr` tests: real git remotes holding the 0.33.0 docs, shallow clones
as the workflow makes them, `driftmatrix` run in this interpreter."""

from __future__ import annotations

import contextlib
import io
import os
import secrets
import string
import subprocess

BRANCH = "driftmatrix/doc-warnings"
SITE = "https://example.test/dm"
IDENTITY = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.test",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.test",
}


def git(cwd, *args) -> str:
    return subprocess.run(
        ["git", "-C", str(cwd), *args], capture_output=True, text=True, check=True, env={**os.environ, **IDENTITY}
    ).stdout


def tip(remote, branch=BRANCH) -> str | None:
    out = subprocess.run(
        ["git", "-C", str(remote), "rev-parse", "--verify", "-q", f"refs/heads/{branch}"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return out or None


def refs(remote) -> str:
    return git(remote, "for-each-ref", "--format=%(refname) %(objectname)")


def updates(remote, branch=BRANCH) -> int:
    """How many times the branch was written on the remote (its reflog: core.logAllRefUpdates)."""
    proc = subprocess.run(
        ["git", "-C", str(remote), "reflog", "show", "--format=%H", f"refs/heads/{branch}"],
        capture_output=True,
        text=True,
    )
    return len(proc.stdout.split()) if proc.returncode == 0 else 0


def new_token() -> str:
    return "ghp_" + "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(36))


def bare_remote(seed, path):
    git(seed.parent, "clone", "-q", "--bare", str(seed), str(path))
    git(path, "config", "core.logAllRefUpdates", "always")  # the reflog counts the pushes
    return path


def shallow_checkout(remote, path):
    """The workflow's `git clone --depth 50 "https://github.com/$REPO" docs-checkout`."""
    git(path.parent, "clone", "-q", "--depth", "50", f"file://{remote}", str(path))
    assert git(path, "rev-parse", "--is-shallow-repository").strip() == "true"
    return path


def in_process(argv, token) -> tuple[int, str]:
    """`driftmatrix ARGV` in this interpreter (no second start-up per run), GITHUB_TOKEN set."""
    from driftmatrix.cli import main

    buf, old = io.StringIO(), os.environ.get("GITHUB_TOKEN")
    os.environ["GITHUB_TOKEN"] = token
    try:
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            rc = main([str(a) for a in argv])
    finally:
        os.environ.pop("GITHUB_TOKEN") if old is None else os.environ.__setitem__("GITHUB_TOKEN", old)
    return rc, buf.getvalue()


def pr_args(checkout, server, snippets, outcomes, *extra, repo="vllm-project/vllm"):
    return [
        "pr",
        "--repo",
        repo,
        "--checkout",
        checkout,
        "--snippets",
        snippets,
        "--outcomes",
        outcomes,
        "--api-url",
        server.url,
        "--site-url",
        SITE,
        *extra,
    ]


def racing_hook(checkout, remote, marker):
    """Someone else's push to the branch, made the moment this run's checkout rewrites its local
    branch (after its fetch, before its push): a reference-transaction hook in the checkout."""
    intruder = checkout.parent / "intruder"
    git(checkout.parent, "clone", "-q", "--branch", BRANCH, f"file://{remote}", str(intruder))
    (intruder / "INTRUDER.md").write_text("someone else's change\n")
    git(intruder, "add", "-A")
    git(intruder, "commit", "-q", "-m", "someone else's change")
    hooks = checkout.parent / "hooks"
    hooks.mkdir()
    (hooks / "reference-transaction").write_text(f"""#!/bin/sh
input=$(cat)
[ "$1" = committed ] || exit 0
case "$input" in *" refs/heads/{BRANCH}"*) ;; *) exit 0 ;; esac
[ -e "{marker}" ] && exit 0
: > "{marker}"
unset $(git rev-parse --local-env-vars)
git -C "{intruder}" push -q origin HEAD:refs/heads/{BRANCH}
""")
    (hooks / "reference-transaction").chmod(0o755)
    git(checkout, "config", "core.hooksPath", str(hooks))
    return git(intruder, "rev-parse", "HEAD").strip()


def remote_and_checkout(seed, name):
    """A folder for one group of tests: a bare remote holding the docs, and the workflow's shallow
    clone of it (`root, remote, checkout`)."""
    root = seed.parent / name
    root.mkdir()
    remote = bare_remote(seed, root / "remote.git")
    return root, remote, shallow_checkout(remote, root / "checkout")
