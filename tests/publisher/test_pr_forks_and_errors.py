"""`driftmatrix pr` through a fork (a token that may not push upstream) and against GitHub's
refusals: 403/422 roll the push back, 429 with Retry-After is retried, an exhausted rate limit is
not slept through, a body over GitHub's limit is cut with the site link."""

from __future__ import annotations

import json
import re
import time

import pytest
from github_server import LocalGitHub
from prhelp import (
    BRANCH,
    SITE,
    bare_remote,
    git,
    in_process,
    new_token,
    pr_args,
    refs,
    remote_and_checkout,
    shallow_checkout,
    tip,
)


@pytest.fixture(scope="module")
def fork_world(seed, site_inputs, stable_plus):
    """A token that may not push to vllm-project/vllm: its user dm-bot has no fork yet; the first
    POST /pulls is answered 429 with Retry-After: 1."""
    root = seed.parent / "fork"
    root.mkdir()
    upstream = bare_remote(seed, root / "upstream.git")
    checkout = shallow_checkout(upstream, root / "checkout")
    server = LocalGitHub(login="dm-bot", forks_dir=root)
    server.add_repo("vllm-project/vllm", upstream, push=False)
    server.fail(
        "POST",
        r"/pulls$",
        429,
        "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
        headers={"Retry-After": "1"},
    )
    before, token, runs = refs(upstream), new_token(), {}
    for name, extra in (
        ("detected", ["--committer", "Doc Bot <doc-bot@example.test>"]),
        ("explicit", ["--push-to-fork", "dm-bot/vllm"]),
    ):
        asked = len(server.requests)
        runs[name] = in_process(pr_args(checkout, server, stable_plus, site_inputs["parse"], "--apply", *extra), token)
        runs[name] += (server.requests[asked:], tip(root / "dm-bot-vllm.git"))
    yield {
        "root": root,
        "upstream": upstream,
        "before": before,
        "after": refs(upstream),
        "server": server,
        "runs": runs,
    }
    server.close()


def test_fork_flow_pushes_to_the_fork_and_opens_the_pr_from_it(fork_world):
    rc, out, requests, fork_tip = fork_world["runs"]["detected"]
    assert rc == 0, out
    assert "may not push to vllm-project/vllm" in out and "creating dm-bot's fork" in out
    assert [q for q in requests if q["method"] == "POST" and q["path"] == "/repos/vllm-project/vllm/forks"]
    assert fork_world["after"] == fork_world["before"]  # upstream untouched
    assert fork_tip and "driftmatrix:begin" in git(fork_world["root"] / "dm-bot-vllm.git", "diff", "main", fork_tip)
    [pull] = fork_world["server"].pulls
    assert pull["head"]["label"] == f"dm-bot:{BRANCH}" and pull["head"]["repo"]["full_name"] == "dm-bot/vllm"
    sent = [json.loads(q["body"]) for q in requests if q["method"] == "POST" and q["path"].endswith("/pulls")]
    assert sent[-1]["head"] == f"dm-bot:{BRANCH}" and sent[-1]["base"] == "main"


def test_committer_is_configurable_and_signs_off(fork_world):
    _, _, _, fork_tip = fork_world["runs"]["detected"]
    fork = fork_world["root"] / "dm-bot-vllm.git"
    assert git(fork, "log", "-1", "--format=%an <%ae>|%cn <%ce>", fork_tip).strip() == (
        "Doc Bot <doc-bot@example.test>|Doc Bot <doc-bot@example.test>"
    )
    assert "Signed-off-by: Doc Bot <doc-bot@example.test>" in git(fork, "log", "-1", "--format=%(trailers)", fork_tip)


def test_429_with_retry_after_is_retried_once_it_has_waited(fork_world):
    _, out, requests, _ = fork_world["runs"]["detected"]
    posts = [q for q in requests if q["method"] == "POST" and q["path"].endswith("/pulls")]
    assert len(posts) == 2 and posts[1]["at"] - posts[0]["at"] >= 0.9
    assert "opened PR #1" in out and len(fork_world["server"].pulls) == 1


def test_explicit_fork_second_run_updates_and_pushes_nothing(fork_world):
    rc, out, requests, fork_tip = fork_world["runs"]["explicit"]
    assert rc == 0, out
    assert "not pushed" in out and "updated PR #1" in out and "may not push" not in out
    assert fork_tip == fork_world["runs"]["detected"][3]
    assert not [q for q in requests if q["path"].endswith("/forks")]


@pytest.fixture(scope="module")
def failing(seed, site_inputs, stable_plus):
    """The API refusing at each step: nothing must be left half done."""
    root, remote, checkout = remote_and_checkout(seed, "failing")
    server = LocalGitHub()
    server.add_repo("vllm-project/vllm", remote)
    lines = [ln for ln in site_inputs["parse"].read_text().splitlines() if ln.strip()]
    gone = next(json.loads(ln)["snippet_id"] for ln in lines if json.loads(ln)["verdict"] == "FAIL")
    fewer = root / "fewer.jsonl"
    fewer.write_text("".join(ln + "\n" for ln in lines if json.loads(ln)["snippet_id"] != gone))
    token, runs = new_token(), {}

    def pr(name, *fail, outcomes=None):
        if fail:
            server.fail(*fail[:4], **(fail[4] if len(fail) > 4 else {}))
        asked = len(server.requests)
        rc, out = in_process(pr_args(checkout, server, stable_plus, outcomes or site_inputs["parse"], "--apply"), token)
        runs[name] = (rc, out, server.requests[asked:], tip(remote), len(server.pulls))

    pr("403", "POST", r"/pulls$", 403, "Resource not accessible by personal access token")
    pr(
        "422",
        "POST",
        r"/pulls$",
        422,
        "Validation Failed",
        {"errors": [{"resource": "PullRequest", "code": "custom", "message": f"No commits between main and {BRANCH}"}]},
    )
    pr(
        "limit",
        "GET",
        r"^/repos/[^/]+/[^/]+$",
        403,
        "API rate limit exceeded for user ID 42.",
        {"headers": {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(time.time()) + 3600)}},
    )
    pr("opened")
    pr("update-403", "PATCH", r"/pulls/\d+$", 403, "Resource not accessible by personal access token", outcomes=fewer)
    yield {"runs": runs, "remote": remote}
    server.close()


@pytest.mark.parametrize(
    "name, said",
    [
        ("403", r"HTTP 403: Resource not accessible .* forbidden: the token lacks"),
        ("422", rf"HTTP 422: Validation Failed \(No commits between main and {BRANCH}\)"),
    ],
)
def test_opening_the_pr_refused_rolls_the_push_back(failing, name, said):
    rc, out, requests, after, pulls = failing["runs"][name]
    assert rc == 1, out
    assert re.search(r"opening the PR failed: POST /repos/vllm-project/vllm/pulls: " + said, out), out
    assert "pushed " + BRANCH in out and f"rolled back: {BRANCH} on vllm-project/vllm is deleted again" in out
    assert after is None and pulls == 0


def test_rate_limit_exhausted_is_not_slept_through(failing):
    rc, out, requests, after, pulls = failing["runs"]["limit"]
    assert rc == 1, out
    assert "HTTP 403: API rate limit exceeded" in out and "rate limited by GitHub; try again after" in out
    assert len(requests) == 1 and after is None and pulls == 0  # asked once, nothing pushed


def test_updating_the_pr_refused_puts_the_branch_back(failing):
    opened, (rc, out, _, after, pulls) = failing["runs"]["opened"], failing["runs"]["update-403"]
    assert opened[0] == 0 and opened[4] == 1, opened[1]
    assert rc == 1, out
    assert "updating the PR failed" in out and f"is back at {opened[3][:12]}" in out
    assert after == opened[3] and pulls == 1


def test_a_body_over_githubs_limit_is_cut_with_the_site_link():
    from driftmatrix.publisher.pr_body import BODY_LIMIT, fit

    rows = [f"| `s-{i:05d}` | `docs/page.md:{i}` | FAIL (parse) | {'x' * 80} |" for i in range(100)]
    evidence = ["<details><summary>Log excerpt</summary>", "", "````", *("log line " * 12 for _ in range(600))]
    text = "\n".join(["intro", "", *rows, "", *evidence, "````", "", "</details>"])
    assert len(text) > BODY_LIMIT
    cut = fit(text, SITE)
    assert len(cut) <= BODY_LIMIT
    assert cut.startswith("intro\n") and cut.splitlines()[-1].endswith(f"on the site: {SITE}*")
    assert "65,536-character limit" in cut
    assert cut.count("````") % 2 == 0 and cut.count("<details>") == cut.count("</details>")  # nothing left open
    assert fit("short", SITE) == "short"
    assert "without --apply" in fit(text, None)


@pytest.mark.parametrize(
    "status, headers, message, wait",
    [
        (429, {"retry-after": "1"}, "secondary rate limit", 1.0),
        (403, {"retry-after": "7"}, "You have exceeded a secondary rate limit", 7.0),
        (403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1030"}, "API rate limit exceeded", 30.0),
        (403, {"retry-after": "Thu, 01 Jan 1970 00:17:20 GMT"}, "secondary rate limit", 40.0),
        (429, {}, "secondary rate limit", 60.0),
        (403, {}, "Resource not accessible by personal access token", None),
        (422, {"retry-after": "1"}, "Validation Failed", None),
    ],
)
def test_what_counts_as_a_rate_limit(status, headers, message, wait):
    """GitHub's documented signals (retry-after first, then x-ratelimit-remaining: 0 until the
    reset); a 403 without them is a permission problem and is not retried."""
    import httpx

    from driftmatrix.publisher.github_api import rate_limit_wait

    assert rate_limit_wait(httpx.Response(status, headers=headers, json={"message": message}), now=1000.0) == wait
