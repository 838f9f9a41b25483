"""`driftmatrix history` end to end: real sdists from PyPI for the pinned releases, and a local
PEP 691 index (served over real HTTP) whose broken releases each get a diagnostic while the
others are still read."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
import tarfile
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from flaghistory.build import build
from flaghistory.history import SHIPPED, FlagHistory
from runner.settings import cache_dir

REPO = Path(__file__).resolve().parents[2]
PINNED = ["0.20.1", "0.32.0"]


@pytest.mark.network
def test_a_fresh_read_matches_the_shipped_history():
    fresh = build(cache_dir() / "flag-history", only=PINNED)
    assert fresh["releases"] == PINNED and not fresh["diagnostics"]
    ours, shipped = FlagHistory(fresh), FlagHistory.load(SHIPPED)
    for release in PINNED:
        assert ours.options(release) == shipped.options(release)
    assert fresh["flags"]["--disable-cascade-attn"]["deprecated"] == "0.32.0"  # vLLM's own words, read again
    assert "is deprecated" in fresh["flags"]["--disable-cascade-attn"]["deprecation"]


def _sdist(version: str, files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"vllm-{version}/{path}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


SERVE = '''
class ServeSubcommand:
    def subparser_init(self, subparsers):
        serve_parser = subparsers.add_parser("serve")
        serve_parser.add_argument("model_tag", nargs="?")
        serve_parser.add_argument("--port", type=int)
        serve_parser.add_argument(compute_the_name(), type=int)
        return serve_parser
'''


@pytest.fixture
def local_index(tmp_path):
    """An index with 9.0.0 (good), 9.1.0 (truncated), 9.2.0 (wrong sha256), 9.3.0 (no sdist),
    9.4.0 (an option name the reader cannot evaluate: read, with a diagnostic)."""
    root = tmp_path / "index"
    (root / "vllm").mkdir(parents=True)
    good = _sdist("9.0.0", {"vllm/entrypoints/cli/serve.py": SERVE.replace("compute_the_name()", '"--host"')})
    odd = _sdist("9.4.0", {"vllm/entrypoints/cli/serve.py": SERVE})
    broken = _sdist("9.1.0", {"vllm/entrypoints/cli/serve.py": SERVE})[:200]
    files = []
    for version, data, sha in [("9.0.0", good, None), ("9.1.0", broken, None), ("9.2.0", good, "0" * 64),
                               ("9.4.0", odd, None)]:
        name = f"vllm-{version}.tar.gz"
        (root / name).write_bytes(data)
        files.append({"filename": name, "url": f"../{name}", "hashes": {"sha256": sha or hashlib.sha256(data).hexdigest()}})
    (root / "vllm" / "index.html").write_text(json.dumps({"files": files, "versions": ["9.0.0", "9.1.0", "9.2.0",
                                                                                       "9.3.0", "9.4.0"]}))
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(SimpleHTTPRequestHandler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_bad_releases_are_diagnosed_and_the_others_read(local_index, tmp_path):
    out = tmp_path / "h.json"
    done = subprocess.run([sys.executable, "-m", "driftmatrix.cli", "history", "--since", "9.0.0", "-o", str(out),
                           "--cache-dir", str(tmp_path / "cache")], capture_output=True, text=True, cwd=REPO,
                          env={"DRIFTMATRIX_INDEX_URL": local_index, "PATH": "/usr/bin:/bin"}, timeout=300)
    assert done.returncode == 0, done.stderr
    history = json.loads(out.read_text())
    assert history["releases"] == ["9.0.0", "9.4.0"]
    assert history["flags"]["--host"] == {"added": "9.0.0", "removed": "9.4.0", "deprecated": None,
                                          "deprecation": None, "replacement": None}
    diagnostics = history["diagnostics"]
    assert "not a readable sdist" in diagnostics["9.1.0"][0]
    assert "does not match the index's" in diagnostics["9.2.0"][0]
    assert "no sdist" in diagnostics["9.3.0"][0]
    assert "option name not readable: compute_the_name()" in diagnostics["9.4.0"][0]
    assert not list((tmp_path / "cache").rglob("*.part"))  # nothing half-written left in the cache
