"""A local fake for the GitHub REST endpoints `driftmatrix pr` uses, answering with the
documented response shapes: pulls (docs.github.com/rest/pulls/pulls), labels, repositories
with the token's `permissions` (rest/repos/repos#get-a-repository), the authenticated user
(rest/users/users), forks (rest/repos/forks: 202, the fork created as a real bare clone of the
upstream's), branches with `protected` (rest/branches/branches#get-a-branch, read from the real
bare repository). It records every request, for the assertions; `fail()` scripts the error
answers GitHub documents (403, 422, 429 and rate-limit headers) for the next matching calls."""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote

DOCS = "https://docs.github.com/rest"


class LocalGitHub:
    def __init__(self, login: str = "driftmatrix-bot", forks_dir: Path | None = None):
        self.pulls: list[dict] = []
        self.requests: list[dict] = []
        self.repos: dict[str, dict] = {}
        self.paths: dict[str, Path] = {}
        self.protected: dict[str, set[str]] = {}
        self.failures: list[dict] = []
        self.login, self.forks_dir = login, forks_dir
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def add_repo(
        self,
        full_name: str,
        path: Path,
        push: bool = True,
        default_branch: str = "main",
        protected: tuple[str, ...] = (),
        parent: str | None = None,
    ) -> dict:
        """A repository backed by the real bare repository at `path` (its `clone_url`)."""
        owner, name = full_name.split("/")
        repo = {
            "id": 5000 + len(self.repos),
            "name": name,
            "full_name": full_name,
            "private": False,
            "owner": {"login": owner, "type": "User"},
            "html_url": f"https://github.com/{full_name}",
            "url": f"{self.url}/repos/{full_name}",
            "clone_url": f"file://{path}",
            "fork": parent is not None,
            "default_branch": default_branch,
            "permissions": {"admin": push, "maintain": push, "push": push, "triage": push, "pull": True},
        }
        if parent:
            repo["parent"] = repo["source"] = {k: v for k, v in self.repos[parent].items() if k != "permissions"}
        self.repos[full_name], self.paths[full_name] = repo, path
        self.protected[full_name] = set(protected)
        return repo

    def fail(
        self,
        method: str,
        path: str,
        status: int,
        message: str,
        headers: dict | None = None,
        errors: list | None = None,
        times: int = 1,
    ) -> None:
        """The next `times` calls of `method` on a path matching the regex `path` get this error."""
        payload = {"message": message, "documentation_url": DOCS}
        if errors:
            payload["errors"] = errors
        self.failures.append(
            {
                "method": method,
                "path": path,
                "status": status,
                "payload": payload,
                "headers": headers or {},
                "times": times,
            }
        )

    def close(self) -> None:
        self.httpd.shutdown()

    # the endpoints: each returns (status, payload)
    def route(self, method: str, path: str, query: dict, body: dict) -> tuple[int, object]:
        if method == "GET" and path == "/user":
            return 200, {"login": self.login, "id": 42, "type": "User", "html_url": f"https://github.com/{self.login}"}
        m = re.match(r"^/repos/([^/]+/[^/]+)(/.*)?$", path)
        if not m or m.group(1) not in self.repos:
            return 404, {"message": "Not Found", "documentation_url": DOCS}
        full, rest = m.group(1), m.group(2) or ""
        if rest == "" and method == "GET":
            return 200, self.repos[full]
        if rest == "/forks" and method == "POST":
            return self._fork(full)
        b = re.match(r"^/branches/(.+)$", rest)
        if b and method == "GET":
            return self._branch(full, unquote(b.group(1)))
        return self._pulls(full, method, rest, query, body)

    def _fork(self, upstream: str) -> tuple[int, object]:
        name = f"{self.login}/{self.repos[upstream]['name']}"
        if name not in self.repos:
            path = self.forks_dir / f"{self.login}-{self.repos[upstream]['name']}.git"
            subprocess.run(["git", "clone", "-q", "--bare", str(self.paths[upstream]), str(path)], check=True)
            self.add_repo(name, path, parent=upstream, default_branch=self.repos[upstream]["default_branch"])
        return 202, self.repos[name]

    def _branch(self, full: str, branch: str) -> tuple[int, object]:
        sha = subprocess.run(
            ["git", "-C", str(self.paths[full]), "rev-parse", "--verify", "-q", f"refs/heads/{branch}"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        if not sha:
            return 404, {"message": "Branch not found", "documentation_url": DOCS}
        protected = branch in self.protected[full]
        return 200, {
            "name": branch,
            "commit": {"sha": sha, "url": f"{self.url}/repos/{full}/commits/{sha}"},
            "protected": protected,
            "protection": {
                "enabled": protected,
                "required_status_checks": {"enforcement_level": "off", "contexts": [], "checks": []},
            },
            "protection_url": f"{self.url}/repos/{full}/branches/{branch}/protection",
        }

    def _pulls(self, full: str, method: str, rest: str, query: dict, body: dict) -> tuple[int, object]:
        m = re.match(r"^/(pulls|issues)(?:/(\d+))?(/labels)?$", rest)
        if not m:
            return 404, {"message": "Not Found", "documentation_url": DOCS}
        kind, number, labels = m.groups()
        if kind == "pulls" and method == "GET" and number is None:
            head = query.get("head", "")
            return 200, [
                p
                for p in self.pulls
                if p["state"] == query.get("state", "open") and (not head or p["head"]["label"] == head)
            ]
        if kind == "pulls" and method == "POST":
            return self._create_pull(full, body)
        if kind == "pulls" and method == "PATCH" and number:
            pull = self.pulls[int(number) - 1]
            pull.update({k: v for k, v in body.items() if k in ("title", "body", "state", "base")})
            return 200, pull
        if kind == "issues" and labels and method == "POST":
            pull = self.pulls[int(number) - 1]
            pull["labels"] += [{"name": name} for name in body["labels"]]
            return 200, pull["labels"]
        return 404, {"message": "Not Found", "documentation_url": DOCS}

    def _create_pull(self, full: str, body: dict) -> tuple[int, object]:
        owner = full.split("/")[0]
        head_owner, _, ref = body["head"].rpartition(":")
        head_owner = head_owner or owner
        label = f"{head_owner}:{ref}"
        if len(body.get("body") or "") > 65536:
            return 422, {
                "message": "Validation Failed",
                "documentation_url": DOCS,
                "errors": [
                    {
                        "resource": "Issue",
                        "code": "custom",
                        "field": "body",
                        "message": "body is too long (maximum is 65536 characters)",
                    }
                ],
            }
        if any(p["state"] == "open" and p["head"]["label"] == label for p in self.pulls):
            return 422, {
                "message": "Validation Failed",
                "documentation_url": DOCS,
                "errors": [
                    {
                        "resource": "PullRequest",
                        "code": "custom",
                        "message": f"A pull request already exists for {label}.",
                    }
                ],
            }
        head_repo = next(
            (
                r
                for r in self.repos.values()
                if r["owner"]["login"] == head_owner
                and (r["full_name"] == full or (r.get("parent") or {}).get("full_name") == full)
            ),
            None,
        )
        n = len(self.pulls) + 1
        pull = {
            "url": f"{self.url}/repos/{full}/pulls/{n}",
            "id": 1000 + n,
            "number": n,
            "html_url": f"https://github.com/{full}/pull/{n}",
            "state": "open",
            "title": body["title"],
            "body": body.get("body"),
            "user": {"login": self.login},
            "labels": [],
            "head": {"label": label, "ref": ref, "repo": head_repo},
            "base": {"label": f"{owner}:{body['base']}", "ref": body["base"], "repo": self.repos[full]},
        }
        self.pulls.append(pull)
        return 201, pull

    def scripted(self, method: str, path: str) -> dict | None:
        with self.lock:
            for rule in self.failures:
                if rule["times"] > 0 and rule["method"] == method and re.search(rule["path"], path):
                    rule["times"] -= 1
                    return rule
        return None


def _handler(server: LocalGitHub):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, status: int, payload, headers: dict | None = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _handle(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length).decode() if length else ""
            server.requests.append(
                {
                    "method": method,
                    "path": self.path,
                    "body": raw,
                    "at": time.monotonic(),
                    "auth": self.headers.get("Authorization", ""),
                }
            )
            if not self.headers.get("Authorization", "").startswith("Bearer "):
                return self._send(401, {"message": "Requires authentication", "documentation_url": DOCS})
            path, _, query = self.path.partition("?")
            rule = server.scripted(method, path)
            if rule:
                return self._send(rule["status"], rule["payload"], rule["headers"])
            params = {k: v[0] for k, v in parse_qs(query).items()}
            status, payload = server.route(method, path, params, json.loads(raw) if raw else {})
            return self._send(status, payload)

        def do_GET(self):
            self._handle("GET")

        def do_POST(self):
            self._handle("POST")

        def do_PATCH(self):
            self._handle("PATCH")

    return Handler
