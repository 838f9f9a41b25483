"""`driftmatrix pr` with real git (local bare repositories as the remotes, holding a copy of the
real vLLM 0.33.0 docs, cloned `--depth 50` exactly as the workflow's pull-requests job does)
and the GitHub API through a local server speaking its documented shapes: dry-run touches
nothing, --apply opens one `[Doc]` PR from a signed-off commit, a second run with the same
content pushes nothing and updates the PR instead of opening another, a changed run moves the
branch with a lease, someone else's push between fetch and push is refused, a run where
everything passes closes the PR, protected branch names are refused with the remote
untouched, a token that may not push goes through its user's fork, 403/422/429 answers are
reported (a failed PR step rolls the push back, a 429 is retried), a body over GitHub's limit
is cut with the site link, and the token in the environment is in no byte the tool writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types

import pytest
from github_server import LocalGitHub
from prhelp import (
    BRANCH,
    bare_remote,
    git,
    in_process,
    new_token,
    pr_args,
    racing_hook,
    refs,
    remote_and_checkout,
    tip,
    updates,
)

from driftmatrix.extractor.snippet_record import BREAKING_LINTS, Catalog


@pytest.fixture(scope="module")
def world(seed, site_inputs, stable_plus):
    root, remote, checkout = remote_and_checkout(seed, "main")
    token = new_token()
    server = LocalGitHub()
    server.add_repo("vllm-project/vllm", remote)
    lines = [ln for ln in site_inputs["parse"].read_text().splitlines() if ln.strip()]
    # a later run where every command checked runs (the nightly's PASSes)
    nightly = root / "passing.jsonl"
    nightly.write_text(
        "".join(
            ln + "\n"
            for ln in lines
            if json.loads(ln)["target"]["name"] == "nightly" and json.loads(ln)["verdict"] == "PASS"
        )
    )
    # a run where one command that failed runs again: one warning fewer, other content
    gone = next(json.loads(ln)["snippet_id"] for ln in lines if json.loads(ln)["verdict"] == "FAIL")
    fewer = root / "fewer.jsonl"
    fewer.write_text("".join(ln + "\n" for ln in lines if json.loads(ln)["snippet_id"] != gone))
    # the commands builds judge: a page the shell does not run as written (expert_parallel_deployment.md's
    # `\` + comment) keeps its warning whatever the builds say (tests/publisher/test_reader_runs.py),
    # so "everything passes" below would never close the PR
    catalog = Catalog.read(stable_plus)
    catalog.snippets = [s for s in catalog.snippets if not any(lint.code in BREAKING_LINTS for lint in s.lints)]
    snippets = root / "builds-judged.json"
    catalog.write(snippets)
    runs, tips, writes = {}, {}, {}

    def pr(name, *extra, outcomes=None):
        args = pr_args(checkout, server, snippets, outcomes or site_inputs["parse"], *extra)
        before = len(server.requests)
        if name == "dry":  # once through the real entry point, in its own process
            runs[name] = subprocess.run(
                [sys.executable, "-m", "driftmatrix.cli", *map(str, args)],
                capture_output=True,
                text=True,
                env={**os.environ, "GITHUB_TOKEN": token},
            )
        else:
            rc, out = in_process(args, token)
            runs[name] = types.SimpleNamespace(returncode=rc, stdout=out, stderr="")
        runs[name].requests = server.requests[before:]
        tips[name], writes[name] = tip(remote), updates(remote)
        return runs[name]

    pr("dry")
    pr("first", "--apply")
    pr("second", "--apply")
    pr("changed", "--apply", outcomes=fewer)
    intruder = racing_hook(checkout, remote, root / "raced-once")
    pr("raced", "--apply")
    git(checkout, "config", "--unset", "core.hooksPath")
    pr("fixed", "--apply", outcomes=nightly)
    yield {
        "root": root,
        "remote": remote,
        "token": token,
        "server": server,
        "runs": runs,
        "tips": tips,
        "writes": writes,
        "intruder": intruder,
    }
    server.close()


def test_dry_run_touches_nothing(world):
    r = world["runs"]["dry"]
    assert r.returncode == 0, r.stderr
    assert "dry run" in r.stdout and "| Command | Page |" in r.stdout and "PR title: [Doc] " in r.stdout
    assert r.requests == []
    assert world["tips"]["dry"] is None


def test_apply_opens_one_pr_with_the_evidence(world):
    r = world["runs"]["first"]
    assert r.returncode == 0, r.stdout + r.stderr
    assert "opened PR #1" in r.stdout and "leased on (no branch)" in r.stdout
    pull = world["server"].pulls[0]
    assert pull["title"].startswith("[Doc] ")
    assert pull["head"]["label"] == f"vllm-project:{BRANCH}" and pull["base"]["ref"] == "main"
    assert pull["labels"] == [{"name": "driftmatrix"}]
    rows = [ln for ln in pull["body"].splitlines() if ln.startswith("| [`s-")]
    assert rows and all("https://example.test/dm/snippets/s-" in ln and ".md:" in ln for ln in rows)
    assert all("FAIL (parse)" in ln and ".py:" in ln and "| `>=0.20.1` |" in ln for ln in rows)
    remote = world["remote"]
    diff = git(remote, "diff", "main", world["tips"]["first"])
    changed = [ln for ln in diff.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    assert changed and all(ln.startswith("+") for ln in changed)  # only the inserted lines
    assert "driftmatrix:begin" in diff
    assert git(remote, "rev-parse", f"{world['tips']['first']}^").strip() == git(remote, "rev-parse", "main").strip()


def test_commit_is_signed_off_by_the_committer(world):
    remote, sha = world["remote"], world["tips"]["first"]
    message = git(remote, "log", "-1", "--format=%B", sha)
    assert "docs: warn where" in message
    who = git(remote, "log", "-1", "--format=%cn <%ce>|%an <%ae>", sha).strip()
    assert (
        who == "driftmatrix <driftmatrix@users.noreply.github.com>|driftmatrix <driftmatrix@users.noreply.github.com>"
    )
    assert message.strip().splitlines()[-1] == "Signed-off-by: driftmatrix <driftmatrix@users.noreply.github.com>"


def test_second_run_with_the_same_content_pushes_nothing(world):
    r = world["runs"]["second"]
    assert r.returncode == 0, r.stdout + r.stderr
    assert "updated PR #1" in r.stdout and "not pushed" in r.stdout and "pushed " + BRANCH not in r.stdout
    assert world["tips"]["second"] == world["tips"]["first"]
    assert world["writes"]["second"] == world["writes"]["first"] == 1  # the branch was written once, ever
    assert len(world["server"].pulls) == 1
    assert not [q for q in r.requests if q["method"] == "POST" and q["path"].endswith("/pulls")]
    assert [q for q in r.requests if q["method"] == "PATCH"]


def test_changed_run_moves_the_tip_with_a_lease(world):
    r, tips = world["runs"]["changed"], world["tips"]
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{tips['first'][:12]} -> {tips['changed'][:12]}, leased on {tips['first'][:12]}" in r.stdout
    assert tips["changed"] != tips["first"] and world["writes"]["changed"] == 2
    remote = world["remote"]  # rebuilt on the base, not stacked on the old tip
    assert git(remote, "rev-parse", f"{tips['changed']}^").strip() == git(remote, "rev-parse", "main").strip()
    assert "updated PR #1" in r.stdout and len(world["server"].pulls) == 1


def test_someone_elses_push_between_fetch_and_push_is_refused(world):
    r = world["runs"]["raced"]
    assert r.returncode == 1, r.stdout + r.stderr
    assert "push refused" in r.stdout and "someone else pushed" in r.stdout and "stale info" in r.stdout
    assert world["tips"]["raced"] == world["intruder"]  # their commit stays
    assert not [q for q in r.requests if q["method"] in ("POST", "PATCH")]  # no PR opened or edited


def test_everything_fixed_closes_the_pr(world):
    r = world["runs"]["fixed"]
    assert r.returncode == 0, r.stdout + r.stderr
    assert "closed PR #1" in r.stdout
    assert world["server"].pulls[0]["state"] == "closed"
    assert world["tips"]["fixed"] == world["intruder"]  # nothing pushed


def test_token_is_in_no_byte_written(world):
    token = world["token"]
    for name, r in world["runs"].items():
        assert token not in r.stdout and token not in r.stderr, name
        for q in r.requests:
            assert token not in q["body"] and token not in q["path"], (name, q["path"])
            assert q["auth"] == f"Bearer {token}"  # it was used, in the header only
    for pull in world["server"].pulls:
        assert token not in json.dumps(pull)
    root = world["root"]
    for repo in (root / "checkout", root / "remote.git"):
        objects = subprocess.run(
            ["git", "-C", str(repo), "cat-file", "--batch-all-objects", "--batch"], capture_output=True, check=True
        ).stdout
        assert token.encode() not in objects
    for path in (root / "checkout").rglob("*"):
        if path.is_file():
            assert token.encode() not in path.read_bytes(), path


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A tiny docs repository whose default branch is `trunk`, with a branch GitHub protects."""
    root = tmp_path_factory.mktemp("pr-small")
    seed = root / "seed"
    git(root, "init", "-q", "-b", "trunk", str(seed))
    (seed / "README.md").write_text("docs\n")
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", "docs")
    for name in ("main", "docs/locked"):
        git(seed, "branch", name)
    remote = bare_remote(seed, root / "remote.git")
    checkout = root / "checkout"
    git(root, "clone", "-q", "--depth", "50", f"file://{remote}", str(checkout))
    server = LocalGitHub()
    server.add_repo("o/docs", remote, default_branch="trunk", protected=("docs/locked",))
    yield {"remote": remote, "checkout": checkout, "server": server}
    server.close()


@pytest.mark.parametrize(
    "extra, api",
    [
        (["--branch", "main", "--apply"], False),
        (["--branch", "trunk", "--apply"], False),
        (["--branch", "Master", "--apply"], False),
        (["--branch", "release/v0.9", "--apply"], False),
        (["--branch", "releases/v0.9.1", "--apply"], False),
        (["--branch", "gh-pages", "--apply"], False),
        (["--base", "docs/x", "--branch", "docs/x", "--apply"], False),
        (["--branch", "main"], False),
        (["--branch", "docs/locked", "--apply"], True),
    ],
)
def test_protected_branches_are_refused_with_the_remote_untouched(small, site_inputs, stable_plus, extra, api):
    server, before = small["server"], refs(small["remote"])
    asked = len(server.requests)
    rc, out = in_process(
        pr_args(small["checkout"], server, stable_plus, site_inputs["parse"], *extra, repo="o/docs"), new_token()
    )
    assert rc == 2, out
    assert "refused" in out and "nothing was" in out
    assert ("protected branch of o/docs" in out) == api
    assert refs(small["remote"]) == before
    assert all(q["method"] == "GET" for q in server.requests[asked:])
    assert bool(server.requests[asked:]) == api  # by name alone: not even the API is asked
