"""A Hugging Face hub for tests, on a real loopback port: the shapes runner/models/hub.py reads, served
from local folders (one per model id).

- `HEAD/GET /api/models`: 200 (the reachability probe);
- `GET /api/models/<org>/<name>/tree/main?recursive=true`: the hub's listing — `{type, oid, size,
  path}` per file and folder, plus `lfs: {oid (sha256), size, pointerSize}` for weight files — in
  pages of `page_size` entries linked by `Link: <...>; rel="next"`, as the hub paginates;
- `GET /<org>/<name>/resolve/main/<path>`: the file; weight (LFS) files answer with a 302 to
  `/cdn/...`, another path, as the hub redirects to its CDN.

With `token`, the API and resolve paths answer 401 without `Authorization: Bearer <token>` (a
gated repo); the repos in `gated` answer 401 to every request (a gated repo the token has no access
to), those in `down` 503 (the hub's trouble). `downloads` lists the repo paths whose bytes were
served, `asked` every request's path but the reachability probe's; `extra[model]` adds raw listing
entries (e.g. a hostile path)."""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote, urlsplit

LFS = (".safetensors", ".bin", ".pt", ".gguf")


class HubServer:
    def __init__(
        self,
        repos: dict[str, Path],
        token: str | None = None,
        page_size: int = 1000,
        extra: dict[str, list[dict]] | None = None,
        gated: set[str] | None = None,
        down: set[str] | None = None,
    ):
        self.repos, self.token, self.page_size = repos, token, page_size
        self.extra, self.gated, self.down = extra or {}, gated or set(), down or set()
        self.downloads: list[str] = []
        self.asked: list[str] = []
        self.auth_seen: list[str | None] = []
        self._http: ThreadingHTTPServer | None = None

    def __enter__(self) -> HubServer:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def do_HEAD(self):
                hub._answer(self, body=False)

            def do_GET(self):
                hub._answer(self, body=True)

            def log_message(self, *args):  # quiet
                pass

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._http.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        assert self._http
        self._http.shutdown()
        self._http.server_close()

    @property
    def url(self) -> str:
        assert self._http
        return f"http://127.0.0.1:{self._http.server_address[1]}"

    # --- the routes ---------------------------------------------------------------------------

    def _answer(self, req: BaseHTTPRequestHandler, body: bool) -> None:
        parts = urlsplit(req.path)
        path, query = unquote(parts.path), parse_qs(parts.query)
        if path == "/api/models":
            return _send(req, 200, b"[]", body=body)
        if path.startswith("/cdn/"):
            return self._file(req, path[len("/cdn/") :], body)
        self.auth_seen.append(req.headers.get("Authorization"))
        self.asked.append(path)
        repo = "/".join(path.removeprefix("/api/models/").lstrip("/").split("/")[:2])
        if repo in self.down:
            return _send(req, 503, b'{"error": "Service unavailable"}', body=body)
        if (self.token and req.headers.get("Authorization") != f"Bearer {self.token}") or repo in self.gated:
            return _send(req, 401, b'{"error": "Access to model is restricted."}', body=body)
        if path.startswith("/api/models/") and "/tree/main" in path:
            model = path[len("/api/models/") : path.index("/tree/main")]
            return self._tree(req, model, int(query.get("cursor", ["0"])[0]), body)
        if "/resolve/main/" in path:
            model, _, file = path[1:].partition("/resolve/main/")
            if file.endswith(LFS):
                return _send(req, 302, b"", {"Location": f"/cdn/{model}/{quote(file)}"}, body=body)
            return self._file(req, f"{model}/{file}", body)
        return _send(req, 404, b'{"error": "Repository not found"}', body=body)

    def _tree(self, req, model: str, cursor: int, body: bool) -> None:
        folder = self.repos.get(model)
        if folder is None:
            return _send(req, 404, b'{"error": "Repository not found"}', body=body)
        entries = _listing(folder) + self.extra.get(model, [])
        page, headers = entries[cursor : cursor + self.page_size], {}
        if cursor + self.page_size < len(entries):
            nxt = f"{self.url}/api/models/{model}/tree/main?recursive=true&cursor={cursor + self.page_size}"
            headers["Link"] = f'<{nxt}>; rel="next"'
        _send(req, 200, json.dumps(page).encode(), headers, body=body)

    def _file(self, req, rest: str, body: bool) -> None:
        org, name, file = rest.split("/", 2)
        folder = self.repos.get(f"{org}/{name}")
        target = folder / file if folder else None
        if target is None or ".." in file.split("/") or not target.is_file():
            return _send(req, 404, b'{"error": "Entry not found"}', body=body)
        if body:
            self.downloads.append(file)
        _send(req, 200, target.read_bytes(), body=body)


def _listing(folder: Path) -> list[dict]:
    out = []
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder).as_posix()
        if p.is_dir():
            out.append({"type": "directory", "oid": "0" * 40, "size": 0, "path": rel})
            continue
        data = p.read_bytes()
        entry = {"type": "file", "oid": hashlib.sha1(data).hexdigest(), "size": len(data), "path": rel}
        if rel.endswith(LFS):
            entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
        out.append(entry)
    return out


def _send(req, status: int, data: bytes, headers: dict | None = None, body: bool = True) -> None:
    req.send_response(status)
    req.send_header("Content-Type", "application/json" if data[:1] in (b"[", b"{") else "application/octet-stream")
    req.send_header("Content-Length", str(len(data)))
    for k, v in (headers or {}).items():
        req.send_header(k, v)
    req.end_headers()
    if body:
        req.wfile.write(data)
