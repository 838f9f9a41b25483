"""A local stand-in for the few GitHub REST endpoints `driftmatrix pr` uses (list, create,
update pulls; add labels), answering with the documented response shapes
(docs.github.com/rest/pulls/pulls). It records every request, for the assertions."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs


class GitHubStandIn:
    def __init__(self):
        self.pulls: list[dict] = []
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status: int, payload) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode() if length else ""
                server.requests.append({"method": method, "path": self.path, "body": raw,
                                        "auth": self.headers.get("Authorization", "")})
                if not self.headers.get("Authorization", "").startswith("Bearer "):
                    return self._send(401, {"message": "Requires authentication"})
                m = re.match(r"^/repos/([^/]+)/([^/]+)/(pulls|issues)(?:/(\d+))?(/labels)?(?:\?(.*))?$", self.path)
                if not m:
                    return self._send(404, {"message": "Not Found"})
                owner, repo, kind, number, labels, query = m.groups()
                body = json.loads(raw) if raw else {}
                if kind == "pulls" and method == "GET" and number is None:
                    params = {k: v[0] for k, v in parse_qs(query or "").items()}
                    head = params.get("head", "")
                    found = [p for p in server.pulls if p["state"] == params.get("state", "open")
                             and (not head or p["head"]["label"] == head)]
                    return self._send(200, found)
                if kind == "pulls" and method == "POST":
                    if any(p["state"] == "open" and p["head"]["ref"] == body["head"] for p in server.pulls):
                        return self._send(422, {"message": "Validation Failed", "errors": [
                            {"resource": "PullRequest", "code": "custom", "message": "A pull request already exists"}]})
                    n = len(server.pulls) + 1
                    pull = {"url": f"http://github.test/repos/{owner}/{repo}/pulls/{n}", "id": 1000 + n, "number": n,
                            "html_url": f"https://github.com/{owner}/{repo}/pull/{n}", "state": "open",
                            "title": body["title"], "body": body.get("body"), "user": {"login": "driftmatrix-bot"},
                            "labels": [], "head": {"label": f"{owner}:{body['head']}", "ref": body["head"]},
                            "base": {"label": f"{owner}:{body['base']}", "ref": body["base"]}}
                    server.pulls.append(pull)
                    return self._send(201, pull)
                if kind == "pulls" and method == "PATCH" and number:
                    pull = server.pulls[int(number) - 1]
                    pull.update({k: v for k, v in body.items() if k in ("title", "body", "state", "base")})
                    return self._send(200, pull)
                if kind == "issues" and labels and method == "POST":
                    pull = server.pulls[int(number) - 1]
                    pull["labels"] += [{"name": name} for name in body["labels"]]
                    return self._send(200, pull["labels"])
                return self._send(404, {"message": "Not Found"})

            def do_GET(self):
                self._handle("GET")

            def do_POST(self):
                self._handle("POST")

            def do_PATCH(self):
                self._handle("PATCH")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
