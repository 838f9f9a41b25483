"""`driftmatrix pr`: annotate's changes as one rolling doc-fix pull request per repository.

In a local clone of the docs repository the tool's branch is rebuilt from the base branch
plus annotate's patches, committed, pushed (only when its content changed), and the PR is
opened through the GitHub REST API — or, when an open PR from that branch exists, its body
is updated instead: never a duplicate. When nothing fails any more the open PR is closed.
Dry-run (no `--apply`) touches nothing and prints what it would do. The token comes only
from `GITHUB_TOKEN`; every line printed, the commit and the PR body go through the redactor.
"""

from __future__ import annotations

import base64
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from publisher import annotate as ann
from publisher import views
from publisher.github_api import API, GitHub, GitHubError
from publisher.judgement import Judge
from publisher.results import Results, load
from publisher.views import cause
from runner.redact import Redactor

TITLE = "docs: warn where documented commands do not run (driftmatrix)"
AUTHOR = {"GIT_AUTHOR_NAME": "driftmatrix", "GIT_AUTHOR_EMAIL": "driftmatrix@users.noreply.github.com",
          "GIT_COMMITTER_NAME": "driftmatrix", "GIT_COMMITTER_EMAIL": "driftmatrix@users.noreply.github.com"}


class PrError(Exception):
    """A git or GitHub step failed (the message is redacted)."""


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
    """Base branch; default: the remote's default branch."""
    branch: str = "driftmatrix/doc-warnings"
    remote: str = "origin"
    site_url: str | None = None
    """Where the published site is, for the evidence links in the body."""
    api: str = API
    label: str = "driftmatrix"
    fixes: Path | None = None
    """Fix candidates (`driftmatrix fixes`): verified ones replace the command in the PR."""


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def body(results: Results, annotation: ann.Annotation, site_url: str | None) -> str:
    """The PR description: what was checked and, per inserted warning, the evidence on the builds
    the page is written for; then the vLLM regressions found on the same pages (not doc bugs)."""
    judge = Judge(results)
    link = (lambda sid: f"[`{sid}`]({site_url.rstrip('/')}/snippets/{sid}.html)") if site_url else (lambda sid: f"`{sid}`")
    rows = []
    for patch in annotation.patches:
        for ins in patch.inserts:
            s = next(x for x in results.snippets if x.id == ins.snippet_id)
            src = next((x for x in s.sources if x.file == patch.file), s.sources[0])
            j = judge.of_source(s, src)
            for k in j.failing:
                rows.append(f"| {link(s.id)} | `{patch.file}:{src.line}` | `{j.written_for.spec}` | "
                            f"{_cell(k.column.label)}{f' `{k.column.commit}`' if k.column.commit else ''} | "
                            f"{k.outcome.verdict} ({k.outcome.stage}) | "
                            f"{_cell(cause(k.outcome, limit=200))} |")
    lines = [
        "driftmatrix ran the commands these pages show against the vLLM builds below. The ones listed "
        "fail on a vLLM version their page is written for (a release's docs: that release line; a "
        "recipe: its `min_vllm_version`; otherwise what the page states, or the current stable release "
        "and newer); this PR replaces a command by its fix where driftmatrix has one that it ran and saw "
        "working (\"Commands fixed\" below), and otherwise adds an admonition right after the command, between "
        "`<!-- driftmatrix:begin … -->` markers. Failures on versions a page is not written for are not listed. The next run updates "
        "this PR, and removes a warning once its command runs.", "",
        "| Command | Page | Written for | Build | Verdict | Cause |", "|---|---|---|---|---|---|", *rows, ""]
    lines += fixed_commands(annotation, link)
    lines += regressions(results, judge, annotation.tree, link)
    if site_url:
        lines.append(f"Evidence for every command (exception with the raising file:line, logs): {site_url}")
    return "\n".join(lines)


def fixed_commands(annotation: ann.Annotation, link) -> list[str]:
    """A before/after per command this PR fixes, with what the runner checked."""
    fixes = [(p.file, f) for p in annotation.patches for f in p.fixes]
    if not fixes:
        return []
    out = ["## Commands fixed", "",
           "Each fix below was run by driftmatrix through the same checks as the failing original, and at "
           "least as deep, on every build listed; only the command's own lines change.", ""]
    for file, f in fixes:
        checked = ", ".join(f"{label}: {how}" for label, _version, how in f.checks)
        out += [f"### `{file}:{f.line}` — {link(f.snippet_id)}", "", "Before:", "", "```bash", f.before, "```", "",
                "After:", "", "```bash", f.after, "```", "", *(f"- {_cell(w)}" for w in f.why),
                f"- checked on {_cell(checked)}", ""]
    return out


def regressions(results: Results, judge: Judge, tree: Path, link) -> list[str]:
    """A section per vLLM regression on the pages of this docs tree: text to paste into a vLLM issue."""
    out = []
    for s in results.snippets:
        for src in s.sources:
            j = judge.of_source(s, src)
            if j.kind != "vllm-regression" or not (tree / src.file).is_file():
                continue
            good, bad = j.regression
            exc = bad.outcome.evidence.exception or {}
            out += [f"### `vllm serve` regression: runs on vLLM {good.version}, fails on vLLM {bad.version}", "",
                    f"Command ({link(s.id)}, documented at `{src.file}:{src.line}`):", "",
                    views.fence(views.command(s), "bash"), "",
                    f"- vLLM {good.version} (commit `{good.column.commit or 'unknown'}`): {views.depth_text(good.outcome)}",
                    f"- vLLM {bad.version} (commit `{bad.column.commit or 'unknown'}`): fails at {bad.outcome.stage}: "
                    f"`{_cell(exc.get('type') or bad.outcome.verdict)}`: {_cell(exc.get('message') or bad.outcome.reason or '')}"
                    + (f" (raised at `{views.location(exc)}`)" if views.location(exc) else ""), ""]
            if bad.outcome.evidence.log_excerpt:
                out += ["<details><summary>Log excerpt</summary>", "", views.fence(bad.outcome.evidence.log_excerpt), "",
                        "</details>", ""]
            break  # one section per command
    if out:
        out = ["## vLLM regressions on these pages (not doc bugs: report upstream, no warning added)", "", *out]
    return out


class Git:
    def __init__(self, checkout: Path, redact: Redactor, token: str | None):
        self.checkout, self.redact = checkout, redact
        self.env = {**os.environ, **AUTHOR, "GIT_TERMINAL_PROMPT": "0"}
        if token:  # an HTTPS remote on github.com: the token as a header, not in argv or .git/config
            basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
            self.env.update({"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "http.https://github.com/.extraheader",
                             "GIT_CONFIG_VALUE_0": f"AUTHORIZATION: basic {basic}"})

    def __call__(self, *args: str, check: bool = True) -> str:
        proc = subprocess.run(["git", "-C", str(self.checkout), *args], capture_output=True, text=True, env=self.env)
        if check and proc.returncode:
            raise PrError(self.redact(f"git {' '.join(args)}: {proc.stderr.strip()[-500:]}"))
        return proc.stdout.strip() if proc.returncode == 0 else ""


def _default_branch(git: Git, remote: str) -> str:
    ref = git("symbolic-ref", "--short", f"refs/remotes/{remote}/HEAD", check=False)
    if ref:
        return ref.split("/", 1)[1]
    shown = git("remote", "show", remote, check=False)
    for line in shown.splitlines():
        if "HEAD branch:" in line:
            return line.split(":", 1)[1].strip()
    return "main"


def run_pr(opts: PrOptions, say=print) -> int:
    token = os.environ.get("GITHUB_TOKEN") or None
    redact = Redactor(extra=[token] if token else [])
    out = lambda text: say(redact(text))  # noqa: E731 — every line goes through the redactor
    results = load(opts.snippets, opts.outcomes, opts.fixes)
    for problem in results.problems:
        out(f"warning: {problem}")
    if not opts.apply:
        annotation = ann.annotate(results, opts.checkout)
        inserted = sum(len(p.inserts) for p in annotation.patches)
        out(f"dry run (no --apply): would rebuild branch {opts.branch} of {opts.repo} with {len(annotation.patches)} "
            f"page(s) changed, {inserted} warning(s); then open it as a PR or update the open one.")
        for p in annotation.patches:
            out(f"  {p.file}: +{sum(1 for _ in p.inserts)} admonition(s)")
        out("PR body:\n" + body(results, annotation, opts.site_url))
        return 0
    if not token:
        out("driftmatrix pr: --apply needs GITHUB_TOKEN in the environment")
        return 2
    git = Git(opts.checkout, redact, token)
    gh = GitHub(opts.repo, token, opts.api)
    try:
        git("fetch", opts.remote)
        base = opts.base or _default_branch(git, opts.remote)
        remote_branch = git("rev-parse", "--verify", "-q", f"refs/remotes/{opts.remote}/{opts.branch}", check=False)
        git("checkout", "-q", "-f", "-B", opts.branch, f"{opts.remote}/{base}")
        annotation = ann.annotate(results, opts.checkout)
        ann.write_tree(annotation, opts.checkout)
        owner = opts.repo.split("/", 1)[0]
        pull = gh.open_pull(owner, opts.branch)
        if not annotation.patches:
            out(f"no page needs a warning on {base}")
            if pull:
                gh.update_pull(pull.number, state="closed",
                               body=redact(pull.body + "\n\nClosed by driftmatrix: every command now runs."))
                out(f"closed PR #{pull.number} ({pull.html_url})")
            return 0
        git("add", "-A", "--", *[p.file for p in annotation.patches])
        inserted = sum(len(p.inserts) for p in annotation.patches)
        message = redact(f"docs: warn where {inserted} documented command(s) do not run\n\n"
                         + "\n".join(f"- {p.file}: {len(p.inserts)} warning(s)" for p in annotation.patches)
                         + "\n\nGenerated by driftmatrix from its run outcomes.")
        git("commit", "-q", "-m", message)
        unchanged = bool(remote_branch) and git("rev-parse", "HEAD^{tree}") == git(
            "rev-parse", f"refs/remotes/{opts.remote}/{opts.branch}^{{tree}}", check=False)
        if unchanged:
            out(f"branch {opts.branch}: same content as on {opts.remote}, not pushed")
        else:
            git("push", "-q", "--force", opts.remote, f"{opts.branch}:refs/heads/{opts.branch}")
            out(f"pushed {opts.branch} ({len(annotation.patches)} page(s), {inserted} warning(s))")
        text = redact(body(results, annotation, opts.site_url))
        if pull:
            gh.update_pull(pull.number, title=TITLE, body=text)
            out(f"updated PR #{pull.number} ({pull.html_url})")
        else:
            pull = gh.create_pull(TITLE, opts.branch, base, text)
            if opts.label:
                gh.add_labels(pull.number, [opts.label])
            out(f"opened PR #{pull.number} ({pull.html_url})")
        return 0
    except (PrError, GitHubError) as err:
        out(f"driftmatrix pr: {err}")
        return 1
    finally:
        gh.close()
