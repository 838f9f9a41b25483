"""The few GitHub REST endpoints a doc-fix PR needs, over httpx: list, create and update
pull requests, add labels. The token is sent in the Authorization header only; it never
goes into a URL, a body or an error message (errors quote GitHub's `message`, redacted)."""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from runner.redact import Redactor

API = "https://api.github.com"


class GitHubError(Exception):
    """A GitHub API call failed: method, path, status and GitHub's message."""


@dataclass
class Pull:
    number: int
    html_url: str
    state: str
    head_ref: str
    title: str
    body: str

    @classmethod
    def of(cls, data: dict) -> Pull:
        return cls(data["number"], data.get("html_url", ""), data.get("state", ""),
                   (data.get("head") or {}).get("ref", ""), data.get("title", ""), data.get("body") or "")


class GitHub:
    def __init__(self, repo: str, token: str, api: str = API, timeout: float = 30.0):
        self.repo = repo
        self.redact = Redactor(extra=[token])
        self.client = httpx.Client(base_url=api.rstrip("/"), timeout=timeout, headers={
            "Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28", "User-Agent": "driftmatrix"})

    def _call(self, method: str, path: str, **kw) -> dict | list:
        try:
            r = self.client.request(method, f"/repos/{self.repo}{path}", **kw)
        except httpx.HTTPError as err:
            raise GitHubError(self.redact(f"{method} {path}: {type(err).__name__}: {err}")) from None
        if r.status_code >= 400:
            try:
                message = r.json().get("message", "")
            except ValueError:
                message = r.text[:200]
            raise GitHubError(self.redact(f"{method} {path}: HTTP {r.status_code}: {message}"))
        return r.json()

    def open_pull(self, owner: str, branch: str) -> Pull | None:
        """The open PR whose head is `owner:branch`, if any."""
        found = self._call("GET", "/pulls", params={"state": "open", "head": f"{owner}:{branch}", "per_page": 100})
        pulls = [Pull.of(p) for p in found if (p.get("head") or {}).get("ref") == branch]
        return pulls[0] if pulls else None

    def create_pull(self, title: str, head: str, base: str, body: str) -> Pull:
        return Pull.of(self._call("POST", "/pulls", json={"title": title, "head": head, "base": base, "body": body}))

    def update_pull(self, number: int, **fields) -> Pull:
        return Pull.of(self._call("PATCH", f"/pulls/{number}", json=fields))

    def add_labels(self, number: int, labels: list[str]) -> None:
        self._call("POST", f"/issues/{number}/labels", json={"labels": labels})

    def close(self) -> None:
        self.client.close()
