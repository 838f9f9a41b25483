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

from driftmatrix.flaghistory.build import build
from driftmatrix.flaghistory.history import SHIPPED, FlagHistory
from driftmatrix.runner.settings import cache_dir

REPO = Path(__file__).resolve().parents[2]
PINNED = ["0.20.1", "0.32.0"]


@pytest.mark.network
def test_a_fresh_read_matches_the_shipped_history():
    fresh = build(cache_dir() / "flag-history", only=PINNED)
    # the one thing not read: choices that depend on the platform vLLM runs on
    assert fresh["releases"] == PINNED and fresh["diagnostics"] == {
        "0.32.0": [
            "values of --mm-processor-device: choices not readable: ['auto', 'cpu'] + ([current_platform.device_type] "
            "if current_platform.device_type not in ('', 'cpu') else [])"
        ]
    }
    ours, shipped = FlagHistory(fresh), FlagHistory.load(SHIPPED)
    for release in PINNED:
        assert ours.options(release) == shipped.options(release)
    saved = json.loads(SHIPPED.read_text())
    for kind in ("values", "keys"):  # the same names per release as the shipped file
        for option, fresh_record in fresh[kind].items():
            for release in PINNED:
                assert _members(fresh_record, release, fresh["releases"]) == _members(
                    saved[kind][option], release, saved["releases"]
                ), (option, release)
    assert fresh["flags"]["--disable-cascade-attn"]["deprecated"] == "0.32.0"  # vLLM's own words, read again
    assert "is deprecated" in fresh["flags"]["--disable-cascade-attn"]["deprecation"]


def _within(span: dict, release: str, releases: list[str]) -> bool:
    i, end = releases.index(release), releases.index(span["removed"]) if span["removed"] else len(releases)
    return releases.index(span["added"]) <= i < end and not any(
        releases.index(a) <= i <= releases.index(b) for a, b in span.get("gaps", [])
    )


def _members(record: dict, release: str, releases: list[str]) -> set[str] | None:
    """The value names (or keys) a history gives one release, None where it did not read them."""
    if not _within(record["read"], release, releases):
        return None
    members = record["values"] if "values" in record else record["keys"]
    return {name for name, span in members.items() if _within(span, release, releases)}


def _sdist(version: str, files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"vllm-{version}/{path}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


SERVE = """
class ServeSubcommand:
    def subparser_init(self, subparsers):
        serve_parser = subparsers.add_parser("serve")
        serve_parser.add_argument("model_tag", nargs="?")
        serve_parser.add_argument("--port", type=int)
        serve_parser.add_argument(compute_the_name(), type=int)
        serve_parser.add_argument("--tool-call-parser", type=str)
        return serve_parser
"""
REGISTRY = """
_TOOL_PARSERS_TO_REGISTER = {"hermes": ("hermes_tool_parser", "Hermes2ProToolParser")}
"""
UNREADABLE_REGISTRY = """
_TOOL_PARSERS_TO_REGISTER = make_the_table()
"""


@pytest.fixture
def local_index(tmp_path):
    """An index with 9.0.0 (good), 9.1.0 (truncated), 9.2.0 (wrong sha256), 9.3.0 (no sdist),
    9.4.0 (an option name the reader cannot evaluate, and a tool-parser table it cannot read: read,
    with a diagnostic for each)."""
    root = tmp_path / "index"
    (root / "vllm").mkdir(parents=True)
    good = _sdist(
        "9.0.0",
        {
            "vllm/entrypoints/cli/serve.py": SERVE.replace("compute_the_name()", '"--host"'),
            "vllm/tool_parsers/__init__.py": REGISTRY,
        },
    )
    odd = _sdist(
        "9.4.0", {"vllm/entrypoints/cli/serve.py": SERVE, "vllm/tool_parsers/__init__.py": UNREADABLE_REGISTRY}
    )
    broken = _sdist("9.1.0", {"vllm/entrypoints/cli/serve.py": SERVE})[:200]
    files = []
    for version, data, sha in [
        ("9.0.0", good, None),
        ("9.1.0", broken, None),
        ("9.2.0", good, "0" * 64),
        ("9.4.0", odd, None),
    ]:
        name = f"vllm-{version}.tar.gz"
        (root / name).write_bytes(data)
        files.append(
            {"filename": name, "url": f"../{name}", "hashes": {"sha256": sha or hashlib.sha256(data).hexdigest()}}
        )
    (root / "vllm" / "index.html").write_text(
        json.dumps({"files": files, "versions": ["9.0.0", "9.1.0", "9.2.0", "9.3.0", "9.4.0"]})
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(SimpleHTTPRequestHandler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_bad_releases_are_diagnosed_and_the_others_read(local_index, tmp_path):
    out = tmp_path / "h.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "driftmatrix.cli",
            "history",
            "--since",
            "9.0.0",
            "-o",
            str(out),
            "--cache-dir",
            str(tmp_path / "cache"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"DRIFTMATRIX_INDEX_URL": local_index, "PATH": "/usr/bin:/bin"},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    history = json.loads(out.read_text())
    assert history["releases"] == ["9.0.0", "9.4.0"]
    assert history["flags"]["--host"] == {
        "added": "9.0.0",
        "removed": "9.4.0",
        "deprecated": None,
        "deprecation": None,
        "replacement": None,
    }
    diagnostics = history["diagnostics"]
    assert "not a readable sdist" in diagnostics["9.1.0"][0]
    assert "does not match the index's" in diagnostics["9.2.0"][0]
    assert "no sdist" in diagnostics["9.3.0"][0]
    assert "option name not readable: compute_the_name()" in diagnostics["9.4.0"][0]
    assert diagnostics["9.4.0"][1] == "values of --tool-call-parser: its registry rule found no names in this release"
    parsers = history["values"]["--tool-call-parser"]  # read where the table could be read, unknown elsewhere
    assert (parsers["read"], parsers["values"]) == (
        {"added": "9.0.0", "removed": "9.4.0"},
        {"hermes": {"added": "9.0.0", "removed": None}},
    )
    assert parsers["where"] == "vllm/tool_parsers/__init__.py" and history["keys"] == {}
    assert not list((tmp_path / "cache").rglob("*.part"))  # nothing half-written left in the cache
