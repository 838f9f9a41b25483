"""The few GitHub REST endpoints a doc-fix PR needs, over httpx: the repository (may the token
push?), the token's user and its fork, a branch's protection, list/create/update pull requests,
add labels. The token is sent in the Authorization header only; it never goes into a URL, a
body or an error message (errors quote GitHub's `message`, redacted).

Rate limits follow docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api: a 429,
or a 403 carrying `retry-after` or `x-ratelimit-remaining: 0`, is retried after the wait GitHub
names — a bounded number of times, and only when that wait is short; otherwise the error says
when to try again. Such a refusal means GitHub did not act on the request, so retrying a POST
cannot duplicate it."""

from __future__ import annotations

import email.utils
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import quote

import httpx

from driftmatrix.common.redact import Redactor

API = "https://api.github.com"
MAX_RETRIES = 3
MAX_WAIT_S = 60.0
"""A longer wait is not slept through: the daily job would sit idle; it fails and says when."""
FORK_READY_TRIES = 5


class GitHubError(Exception):
    """A GitHub API call failed: method, path, status, GitHub's message and what it means here."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


@dataclass
class Pull:
    number: int
    html_url: str
    state: str
    title: str
    body: str

    @classmethod
    def of(cls, data: dict) -> Pull:
        return cls(
            data["number"],
            data.get("html_url", ""),
            data.get("state", ""),
            data.get("title", ""),
            data.get("body") or "",
        )


def rate_limit_wait(r: httpx.Response, now: float | None = None) -> float | None:
    """Seconds GitHub asks for before a retry; None when the answer is not a rate limit
    (a 403 without these headers is a permission problem, not worth retrying)."""
    if r.status_code not in (403, 429):
        return None
    after = r.headers.get("retry-after")
    if after:
        if after.strip().isdigit():
            return float(after)
        try:  # the HTTP-date form
            return max(0.0, email.utils.parsedate_to_datetime(after).timestamp() - (now or time.time()))
        except (TypeError, ValueError):
            return MAX_WAIT_S
    if r.headers.get("x-ratelimit-remaining") == "0":
        reset = r.headers.get("x-ratelimit-reset", "")
        return max(0.0, float(reset) - (now or time.time())) if reset.isdigit() else MAX_WAIT_S
    if r.status_code == 429 or "rate limit" in _message(r).lower():
        return MAX_WAIT_S  # GitHub: "wait at least one minute before retrying"
    return None


def _message(r: httpx.Response) -> str:
    try:
        data = r.json()
    except ValueError:
        return r.text[:200]
    if not isinstance(data, dict):
        return ""
    errors = [
        (e.get("message") or f"{e.get('field', '')} {e.get('code', '')}".strip()) if isinstance(e, dict) else str(e)
        for e in data.get("errors") or []
    ]
    return data.get("message", "") + (f" ({'; '.join(errors)})" if errors else "")


def _meaning(status: int, wait: float | None) -> str:
    if wait is not None:
        at = datetime.fromtimestamp(time.time() + wait, UTC).strftime("%H:%M:%S UTC")
        return f"rate limited by GitHub; try again after {at}"
    return {
        401: "the token was not accepted",
        403: "forbidden: the token lacks a permission this needs (contents: write to push, pull-requests: "
        "write to open or edit a PR, issues: write to label it) or the repository does not allow it",
        404: "not found, or not visible to this token",
        422: "GitHub refused the request as invalid",
    }.get(status, "GitHub answered with an error")


class GitHub:
    def __init__(
        self,
        repo: str,
        token: str,
        api: str = API,
        timeout: float = 30.0,
        max_retries: int = MAX_RETRIES,
        max_wait: float = MAX_WAIT_S,
        sleep=time.sleep,
    ):
        self.repo = repo
        self.redact = Redactor(extra=[token])
        self.max_retries, self.max_wait, self.sleep = max_retries, max_wait, sleep
        self.client = httpx.Client(
            base_url=api.rstrip("/"),
            timeout=timeout,
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28",
                "User-Agent": "driftmatrix",
            },
        )

    def request(self, method: str, path: str, missing_ok: bool = False, **kw) -> dict | list | None:
        """One call; rate limits retried within the bounds; `missing_ok`: a 404 is None."""
        for attempt in range(self.max_retries + 1):
            try:
                r = self.client.request(method, path, **kw)
            except httpx.HTTPError as err:
                raise GitHubError(self.redact(f"{method} {path}: {type(err).__name__}: {err}")) from None
            wait = rate_limit_wait(r)
            if wait is None or wait > self.max_wait or attempt == self.max_retries:
                break
            self.sleep(wait)
        if missing_ok and r.status_code == 404:
            return None
        if r.status_code >= 400:
            tries = f" (after {attempt + 1} tries)" if attempt else ""
            raise GitHubError(
                self.redact(
                    f"{method} {path}: HTTP {r.status_code}{tries}: {_message(r)} — {_meaning(r.status_code, wait)}"
                ),
                r.status_code,
            )
        return r.json() if r.content else {}

    def _call(self, method: str, path: str, **kw) -> dict | list:
        return self.request(method, f"/repos/{self.repo}{path}", **kw)

    def repository(self, full_name: str | None = None, missing_ok: bool = False) -> dict | None:
        """GET /repos/{owner}/{repo}: `permissions.push`, `default_branch`, `clone_url`, `fork`, `parent`."""
        return self.request("GET", f"/repos/{full_name or self.repo}", missing_ok=missing_ok)

    def user(self) -> dict:
        return self.request("GET", "/user")

    def branch_protected(self, full_name: str, branch: str) -> bool:
        """GET /repos/{owner}/{repo}/branches/{branch} → `protected`; a branch not there is not."""
        found = self.request("GET", f"/repos/{full_name}/branches/{quote(branch, safe='')}", missing_ok=True)
        return bool(found and found.get("protected"))

    def user_fork(self, upstream: dict, say) -> dict:
        """The token user's fork of `upstream`, created when absent. GitHub forks asynchronously:
        the new fork is polled until it answers (bounded), as its docs ask."""
        login = self.user()["login"]
        name = f"{login}/{upstream['name']}"
        found = self.repository(name, missing_ok=True)
        if found is None:
            say(f"creating {login}'s fork of {upstream['full_name']}")
            created = self.request("POST", f"/repos/{upstream['full_name']}/forks", json={"default_branch_only": True})
            name = created["full_name"]
            for _ in range(FORK_READY_TRIES):
                found = self.repository(name, missing_ok=True)
                if found is not None:
                    break
                self.sleep(2)
            else:
                raise GitHubError(f"the fork {name} was requested but is not ready yet; re-run in a few minutes")
        return check_fork(found, upstream["full_name"])

    def open_pull(self, owner: str, branch: str) -> Pull | None:
        """The open PR whose head is `owner:branch` (a fork's owner in the fork flow), if any."""
        label = f"{owner}:{branch}"
        found = self._call("GET", "/pulls", params={"state": "open", "head": label, "per_page": 100})
        pulls = [Pull.of(p) for p in found if (p.get("head") or {}).get("label") == label]
        return pulls[0] if pulls else None

    def create_pull(self, title: str, head: str, base: str, body: str) -> Pull:
        """`head`: the branch, or `owner:branch` for a branch on a fork."""
        return Pull.of(self._call("POST", "/pulls", json={"title": title, "head": head, "base": base, "body": body}))

    def update_pull(self, number: int, **fields) -> Pull:
        return Pull.of(self._call("PATCH", f"/pulls/{number}", json=fields))

    def add_labels(self, number: int, labels: list[str]) -> None:
        self._call("POST", f"/issues/{number}/labels", json={"labels": labels})

    def close(self) -> None:
        self.client.close()


def check_fork(fork: dict, upstream: str) -> dict:
    """A head on a repository outside the fork network gets a 422 only after the push: refuse first."""
    family = {(fork.get(k) or {}).get("full_name") for k in ("parent", "source")}
    if not fork.get("fork") or upstream not in family:
        raise GitHubError(
            f"{fork.get('full_name')} is not a fork of {upstream}, so a PR cannot come from it; "
            "name the fork to push to with --push-to-fork OWNER/NAME"
        )
    if not (fork.get("permissions") or {}).get("push", True):
        raise GitHubError(f"the token cannot push to the fork {fork.get('full_name')}")
    return fork
