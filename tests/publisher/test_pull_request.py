"""`driftmatrix pr` with real git (a local bare repository as the remote, holding a copy of
the real vLLM 0.33.0 docs) and the GitHub API through a local server speaking its
documented shapes: dry-run touches nothing, --apply opens one PR, a second run updates it
instead of opening another, a run where everything passes closes it, and the token in the
environment is in no byte the tool writes."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import string
import subprocess
import sys

import pytest

from github_server import GitHubStandIn

BRANCH = "driftmatrix/doc-warnings"
IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.test",
            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.test"}


def git(cwd, *args) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, check=True,
                          env={**os.environ, **IDENTITY}).stdout


@pytest.fixture(scope="module")
def world(corpus, tmp_path_factory, site_inputs, stable_plus):
    root = tmp_path_factory.mktemp("pr")
    seed = root / "seed"
    shutil.copytree(corpus / "vllm-docs" / "0.33.0", seed)
    git(root, "init", "-q", "-b", "main", str(seed))
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", "docs as of 0.33.0")
    git(root, "clone", "-q", "--bare", str(seed), str(root / "remote.git"))
    git(root, "clone", "-q", str(root / "remote.git"), str(root / "checkout"))
    token = "ghp_" + "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(36))
    server = GitHubStandIn()
    # a later run where every command checked runs (the nightly's PASSes)
    nightly = root / "passing.jsonl"
    nightly.write_text("".join(ln + "\n" for ln in site_inputs["parse"].read_text().splitlines()
                               if ln.strip() and json.loads(ln)["target"]["name"] == "nightly"
                               and json.loads(ln)["verdict"] == "PASS"))
    runs = {}

    def pr(name, *extra, outcomes=None):
        cmd = [sys.executable, "-m", "driftmatrix.cli", "pr", "--repo", "vllm-project/vllm", "--checkout",
               str(root / "checkout"), "--snippets", str(stable_plus), "--outcomes",
               str(outcomes or site_inputs["parse"]), "--api-url", server.url, "--site-url", "https://example.test/dm", *extra]
        before = len(server.requests)
        runs[name] = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "GITHUB_TOKEN": token})
        runs[name].requests = server.requests[before:]
        return runs[name]

    pr("dry")
    pr("first", "--apply")
    pr("second", "--apply")
    tip_after_second = git(root / "remote.git", "rev-parse", BRANCH)
    pr("fixed", "--apply", outcomes=nightly)
    yield {"root": root, "token": token, "server": server, "runs": runs, "tip2": tip_after_second}
    server.close()


def test_dry_run_touches_nothing(world):
    r = world["runs"]["dry"]
    assert r.returncode == 0, r.stderr
    assert "dry run" in r.stdout and "| Command | Page |" in r.stdout
    assert r.requests == []


def test_apply_opens_one_pr_with_the_evidence(world):
    r = world["runs"]["first"]
    assert r.returncode == 0, r.stdout + r.stderr
    assert "opened PR #1" in r.stdout
    pull = world["server"].pulls[0]
    assert pull["head"]["ref"] == BRANCH and pull["base"]["ref"] == "main"
    assert pull["labels"] == [{"name": "driftmatrix"}]
    rows = [ln for ln in pull["body"].splitlines() if ln.startswith("| [`s-")]
    assert rows and all("https://example.test/dm/snippets/s-" in ln and ".md:" in ln for ln in rows)
    assert all("FAIL (parse)" in ln and ".py:" in ln and "| `>=0.20.1` |" in ln for ln in rows)
    remote = world["root"] / "remote.git"
    diff = git(remote, "diff", "main", BRANCH)
    changed = [ln for ln in diff.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    assert changed and all(ln.startswith("+") for ln in changed)  # only the inserted lines
    assert "driftmatrix:begin" in diff
    assert "docs: warn where" in git(remote, "log", "-1", "--format=%B", BRANCH)


def test_second_run_updates_instead_of_opening(world):
    r = world["runs"]["second"]
    assert r.returncode == 0, r.stdout + r.stderr
    assert "updated PR #1" in r.stdout and "not pushed" in r.stdout
    assert len(world["server"].pulls) == 1
    assert not [q for q in r.requests if q["method"] == "POST" and q["path"].endswith("/pulls")]
    assert [q for q in r.requests if q["method"] == "PATCH"]


def test_everything_fixed_closes_the_pr(world):
    r = world["runs"]["fixed"]
    assert r.returncode == 0, r.stdout + r.stderr
    assert "closed PR #1" in r.stdout
    assert world["server"].pulls[0]["state"] == "closed"
    assert git(world["root"] / "remote.git", "rev-parse", BRANCH) == world["tip2"]  # nothing pushed


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
        objects = subprocess.run(["git", "-C", str(repo), "cat-file", "--batch-all-objects", "--batch"],
                                 capture_output=True, check=True).stdout
        assert token.encode() not in objects
    for path in (root / "checkout").rglob("*"):
        if path.is_file():
            assert token.encode() not in path.read_bytes(), path
