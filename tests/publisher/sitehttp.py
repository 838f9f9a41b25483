"""A built site served over real HTTP on loopback (a module, not conftest: test modules import it
by name, and `conftest` is also the name of the runner tests' fixtures module)."""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path


def serve_dir(root: Path):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}"
