"""`driftmatrix pr`: annotate's changes as one rolling doc-fix pull request per repository.

In a local clone of the docs repository the tool's branch is rebuilt from the base branch
plus annotate's patches, committed with a DCO sign-off, pushed only when its content changed
and only with a lease on the tip this run fetched (publisher/git_push.py), and the PR
(`[Doc] …`) is opened through the GitHub REST API — or, when an open PR from that branch
exists, its body is updated instead: never a duplicate. When the token may not push to the
repository, the branch goes to the token user's fork (created when absent) and the PR's head
is `owner:branch`, the push-to-fork model of peter-evans/create-pull-request. When nothing
fails any more the open PR is closed. Everything that can refuse (a protected branch name,
a fork that is not one) is checked before anything is pushed; a PR that cannot be opened or
updated after a push rolls the push back (with a lease), so a failed run leaves the remote as
it found it, or says exactly what is left and how to recover.
Dry-run (no `--apply`) touches nothing and prints what it would do. The token comes only
from `GITHUB_TOKEN`; every line printed, the commit and the PR body go through the redactor,
and every line printed is made inert for a terminal or a CI log (common/inert.py `terminal`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from driftmatrix.common.inert import one_line, terminal
from driftmatrix.common.redact import Redactor
from driftmatrix.publisher import annotate as ann
from driftmatrix.publisher import public
from driftmatrix.publisher.command_view import CommandViews, views_of
from driftmatrix.publisher.git_push import (
    DEFAULT_IDENTITY,
    Git,
    LeaseRefused,
    PrError,
    fetch,
    local_default,
    push,
    refusal,
    same_tree,
)
from driftmatrix.publisher.github_api import API, GitHub, GitHubError, check_fork
from driftmatrix.publisher.pr_body import body, fit
from driftmatrix.publisher.results import load

__all__ = ["Git", "PrError", "PrOptions", "body", "run_pr"]  # state.py and the tests import from here

TITLE = "[Doc] Warn where documented commands do not run (driftmatrix)"
"""vLLM's PR titles start with their category tag; a docs change is `[Doc]`."""
FORK_TRACKING = "refs/remotes/driftmatrix-fork/{branch}"


class Refused(PrError):
    """The branch is one the tool must not write: said before anything is pushed."""


@dataclass
class PrOptions:
    repo: str
    """OWNER/NAME of the docs repository on GitHub."""
    checkout: Path
    """A local clone of it, owned by the tool (its working tree is reset to the branch)."""
    snippets: Path
    outcomes: list[Path]
    apply: bool = False
    base: str | None = None
    """Base branch; default: the repository's default branch."""
    branch: str = "driftmatrix/doc-warnings"
    remote: str = "origin"
    site_url: str | None = None
    """Where the published site is, for the evidence links in the body (and the rest of a cut body)."""
    api: str = API
    label: str = "driftmatrix"
    fixes: Path | None = None
    """Fix candidates (`driftmatrix fixes`): verified ones replace the command in the PR."""
    push_to_fork: str | None = None
    """OWNER/NAME of a fork to push the branch to; default: the repository itself when the token may
    push there, else the token user's fork."""
    committer: str = DEFAULT_IDENTITY
    """`NAME <EMAIL>`: author, committer and the `Signed-off-by` trailer of the commit."""


@dataclass
class PushDestination:
    """Where the branch is pushed: the docs repository itself, or a fork of it."""

    repo: str
    where: str
    """What git pushes to: the remote's name, or the fork's clone URL."""
    tracking: str
    """The local ref the branch's fetched tip is kept in."""
    fork: bool = False
    default: str | None = None
    tip: str | None = field(default=None)
    """The branch's tip as this run fetched it; None: the branch does not exist."""

    @property
    def owner(self) -> str:
        return self.repo.split("/", 1)[0]

    def head(self, branch: str) -> str:
        return f"{self.owner}:{branch}" if self.fork else branch


def _at(tip: str | None) -> str:
    return tip[:12] if tip else "(no branch)"


def _names(base: str | None, *defaults: str | None) -> dict[str, str]:
    named = {d: "the repository's default branch" for d in defaults if d}
    if base:
        named[base] = "the base branch"
    return named


def run_pr(opts: PrOptions, say=print) -> int:
    token = os.environ.get("GITHUB_TOKEN") or None
    redact = Redactor(extra=[token] if token else [])
    out = lambda text: say(terminal(redact(text)))  # noqa: E731 — every line redacted, and inert (common/inert.py)
    git = Git(opts.checkout, redact, token, opts.committer)
    why = refusal(opts.branch, _names(opts.base, local_default(git, opts.remote)))
    if why:  # by name alone, before any network: a dry run refuses what --apply would
        out(f"driftmatrix pr: refused: {why}; nothing was fetched or pushed")
        return 2
    results = public.public_results(load(opts.snippets, opts.outcomes, opts.fixes))  # no host path in a PR
    for problem in results.problems:
        out(f"warning: {problem}")
    commands = views_of(results)  # what the patches and the body both say
    if not opts.apply:
        return _dry_run(opts, commands, out)
    if not token:
        out("driftmatrix pr: --apply needs GITHUB_TOKEN in the environment")
        return 2
    gh = GitHub(opts.repo, token, opts.api)
    try:
        return _apply(opts, commands, git, gh, redact, out)
    except Refused as err:
        out(f"driftmatrix pr: refused: {err}; nothing was pushed")
        return 2
    except (PrError, GitHubError) as err:
        out(f"driftmatrix pr: {err}")
        return 1
    finally:
        gh.close()


def _dry_run(opts: PrOptions, commands: CommandViews, out) -> int:
    annotation = ann.annotate_tree(commands, opts.checkout)
    inserted = sum(len(p.inserts) for p in annotation.patches)
    where = (
        f"the fork {opts.push_to_fork}"
        if opts.push_to_fork
        else f"{opts.repo} (or its fork, if the token may not push)"
    )
    out(
        f"dry run (no --apply): would rebuild branch {opts.branch} on {where} with {len(annotation.patches)} "
        f"page(s) changed, {inserted} warning(s); then open it as a PR or update the open one."
    )
    for p in annotation.patches:
        out(f"  {p.file}: +{sum(1 for _ in p.inserts)} admonition(s)")
    out(f"PR title: {TITLE}")
    out("PR body:\n" + fit(body(commands, annotation, opts.site_url), opts.site_url))
    return 0


def _apply(opts: PrOptions, commands: CommandViews, git: Git, gh: GitHub, redact, out) -> int:
    base, destination = _prepare(opts, git, gh, out)
    git("checkout", "-q", "-f", "-B", opts.branch, f"refs/remotes/{opts.remote}/{base}")
    annotation = ann.annotate_tree(commands, opts.checkout)
    ann.write_tree(annotation, opts.checkout)
    pull = gh.open_pull(destination.owner, opts.branch)
    if not annotation.patches:
        return _close(opts, gh, pull, base, redact, out)
    sha = _commit(git, annotation, redact)
    pushed = _push(git, opts, destination, sha, out)
    text = redact(fit(body(commands, annotation, opts.site_url), opts.site_url))
    try:
        pull = _open_or_update(opts, gh, pull, destination, base, text, out)
    except GitHubError as err:
        step = "updating" if pull else "opening"
        return _undo(opts, git, destination, base, sha, pushed, f"{step} the PR failed: {err}", out)
    return 0


def _prepare(opts: PrOptions, git: Git, gh: GitHub, out) -> tuple[str, PushDestination]:
    """Everything that can refuse, before anything is written: where the branch goes, the base,
    the names it must not have (and GitHub's own protection of it there); then both branches
    fetched by name (the workflow's clone is shallow and single-branch)."""
    upstream = gh.repository()
    base = opts.base or upstream.get("default_branch") or local_default(git, opts.remote) or "main"
    why = refusal(opts.branch, _names(base, upstream.get("default_branch")))
    if why:  # before a fork is created for it
        raise Refused(why)
    destination = _destination(opts, gh, upstream, out)
    why = refusal(opts.branch, _names(None, destination.default))
    if not why and gh.branch_protected(destination.repo, opts.branch):
        why = f"--branch {opts.branch} is a protected branch of {destination.repo} (GitHub reports `protected: true`)"
    if why:
        raise Refused(why)
    if fetch(git, opts.remote, base, f"refs/remotes/{opts.remote}/{base}") is None:
        raise PrError(f"the base branch {base} is not on {opts.remote}")
    destination.tip = fetch(git, destination.where, opts.branch, destination.tracking)
    return base, destination


def _destination(opts: PrOptions, gh: GitHub, upstream: dict, out) -> PushDestination:
    upstream_name = upstream.get("full_name") or opts.repo
    if opts.push_to_fork:
        fork = check_fork(gh.repository(opts.push_to_fork), upstream_name)
    elif (upstream.get("permissions") or {}).get("push", True):  # not said: try, git tells if not
        return PushDestination(
            opts.repo, opts.remote, f"refs/remotes/{opts.remote}/{opts.branch}", default=upstream.get("default_branch")
        )
    else:
        out(f"the token may not push to {upstream_name}: the branch goes to the token user's fork")
        fork = gh.user_fork(upstream, out)
    return PushDestination(
        fork["full_name"],
        fork["clone_url"],
        FORK_TRACKING.format(branch=opts.branch),
        fork=True,
        default=fork.get("default_branch"),
    )


def _commit(git: Git, annotation: ann.Annotation, redact) -> str:
    git("add", "-A", "--", *[p.file for p in annotation.patches])
    inserted = sum(len(p.inserts) for p in annotation.patches)
    message = redact(
        f"docs: warn where {inserted} documented command(s) do not run\n\n"
        + "\n".join(f"- {one_line(p.file)}: {len(p.inserts)} warning(s)" for p in annotation.patches)
        + "\n\nGenerated by driftmatrix from its run outcomes."
    )
    git("commit", "-q", "--signoff", "-m", message)  # vLLM requires a DCO sign-off: the committer's
    return git("rev-parse", "HEAD")


def _push(git: Git, opts: PrOptions, destination: PushDestination, sha: str, out) -> bool:
    """Push unless the fetched tip has the same tree; True when something was pushed."""
    if same_tree(git, sha, destination.tip):
        out(f"branch {opts.branch}: same content as on {destination.repo}, not pushed")
        return False
    try:
        push(git, destination.where, opts.branch, sha, destination.tip)
    except LeaseRefused as err:
        raise PrError(
            f"push refused: {opts.branch} on {destination.repo} is no longer at {_at(destination.tip)}, where this "
            f"run fetched it: someone else pushed to it ({err}). Nothing was pushed and no PR was opened or "
            "edited; look at that push, then re-run (a re-run rebuilds the branch and replaces it)"
        ) from None
    out(
        f"pushed {opts.branch} to {destination.repo}: {_at(destination.tip)} -> {sha[:12]}, leased on {_at(destination.tip)}"
    )
    return True


def _open_or_update(opts: PrOptions, gh: GitHub, pull, destination: PushDestination, base: str, text: str, out):
    if pull:
        gh.update_pull(pull.number, title=TITLE, body=text)
        out(f"updated PR #{pull.number} ({pull.html_url})")
        return pull
    pull = gh.create_pull(TITLE, destination.head(opts.branch), base, text)
    out(f"opened PR #{pull.number} ({pull.html_url})")
    if opts.label:
        try:  # the PR stands without its label: say so, keep it
            gh.add_labels(pull.number, [opts.label])
        except GitHubError as err:
            out(f"warning: PR #{pull.number} is open but labelling it failed: {err}")
    return pull


def _undo(
    opts: PrOptions, git: Git, destination: PushDestination, base: str, sha: str, pushed: bool, what: str, out
) -> int:
    """After a push, the PR step failed: put the branch back where it was (a lease on this run's
    push, so a newer push by someone else is never undone), or say what is left and how to recover."""
    out(f"driftmatrix pr: {what}")
    if not pushed:
        out("nothing was pushed by this run: the branch and the PR are as they were")
        return 1
    try:
        push(git, destination.where, opts.branch, destination.tip, sha)
    except PrError as again:
        compare = f"https://github.com/{opts.repo}/compare/{base}...{destination.head(opts.branch)}"
        out(
            f"rolling the push back failed too ({again}): {opts.branch} on {destination.repo} holds {sha[:12]} without "
            "its PR. Re-run `driftmatrix pr --apply` once the cause is fixed (it finds the branch unchanged and only "
            f"opens or updates the PR), or open it by hand: {compare}"
        )
        return 1
    back = f"back at {destination.tip[:12]}" if destination.tip else "deleted again"
    out(
        f"rolled back: {opts.branch} on {destination.repo} is {back}; the remote is as this run found it. "
        "Re-run once the cause is fixed."
    )
    return 1


def _close(opts: PrOptions, gh: GitHub, pull, base: str, redact, out) -> int:
    out(f"no page needs a warning on {base}")
    if pull:
        note = "\n\nClosed by driftmatrix: every command now runs."
        gh.update_pull(pull.number, state="closed", body=redact(fit(pull.body, opts.site_url, len(note)) + note))
        out(f"closed PR #{pull.number} ({pull.html_url})")
    return 0
