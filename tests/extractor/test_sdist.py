"""`--vllm-version X`: the sdist from a PEP 691 index, checked and unpacked."""

import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from driftmatrix.common.package_index import PackageIndexError
from driftmatrix.extractor.catalog import extract
from driftmatrix.extractor.sdist import fetch_docs
from driftmatrix.runner.builds.resolve import stable_pin
from driftmatrix.runner.builds.targets import SEED_CPU


def _sdist(corpus: Path, out: Path, version: str = "0.20.1") -> bytes:
    top = f"vllm-{version}"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(corpus / "vllm-docs" / version / "docs", arcname=f"{top}/docs")
        tar.add(corpus / "vllm-docs" / version / "mkdocs.yaml", arcname=f"{top}/mkdocs.yaml")
        for name, data in [
            (f"{top}/PKG-INFO", f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n"),
            (f"{top}/vllm/__init__.py", "print('not docs')\n"),
            ("../evil.md", "escape"),
        ]:
            info = tarfile.TarInfo(name)
            info.size = len(data.encode())
            tar.addfile(info, io.BytesIO(data.encode()))
        link = tarfile.TarInfo(f"{top}/docs/link.md")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
    (out / "files").mkdir(parents=True, exist_ok=True)
    (out / "files" / f"{top}.tar.gz").write_bytes(buf.getvalue())
    return buf.getvalue()


@pytest.fixture()
def index(tmp_path, corpus):
    """A local PEP 691 index serving a vllm-0.20.1 sdist built from the corpus docs."""
    root = tmp_path / "index"
    data = _sdist(corpus, root)
    page = {
        "meta": {"api-version": "1.0"},
        "name": "vllm",
        "files": [
            {
                "filename": "vllm-0.20.1.tar.gz",
                "url": "../../files/vllm-0.20.1.tar.gz",
                "hashes": {"sha256": hashlib.sha256(data).hexdigest()},
            },
            {"filename": "vllm-0.19.0.tar.gz", "url": "../../files/vllm-0.19.0.tar.gz", "hashes": {}},
        ],
    }
    (root / "simple" / "vllm").mkdir(parents=True)
    (root / "simple" / "vllm" / "index.html").write_text(json.dumps(page))
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(SimpleHTTPRequestHandler, directory=str(root)))
    server.RequestHandlerClass.log_message = lambda *a: None
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/simple", root
    server.shutdown()


def test_fetched_docs_extract_like_the_tree(index, tmp_path, corpus):
    url, _ = index
    tree = fetch_docs("0.20.1", tmp_path / "cache", index=url)
    assert (tree / "PKG-INFO").is_file() and not (tree / "vllm").exists()
    assert not (tree / "docs" / "link.md").exists() and not (tmp_path / "evil.md").exists()
    fetched, _ = extract(stable=stable_pin(SEED_CPU), sources=[tree])
    direct, _ = extract(stable=stable_pin(SEED_CPU), sources=[corpus / "vllm-docs" / "0.20.1"])
    assert (fetched.corpora[0].version, fetched.corpora[0].layout) == ("0.20.1", "sdist")
    assert direct.corpora[0].layout == "docs-tree"

    def key(c):
        return {(s.id, src.file, src.line) for s in c.snippets for src in s.sources}

    assert key(fetched) == key(direct) and len(key(direct)) > 100
    assert fetch_docs("0.20.1", tmp_path / "cache", index="http://127.0.0.1:9/unused") == tree  # cached


def test_checksum_mismatch_and_unknown_version(index, tmp_path):
    url, root = index
    with pytest.raises(PackageIndexError, match="vllm-0.99.0.tar.gz is not on .* include: 0.19.0, 0.20.1"):
        fetch_docs("0.99.0", tmp_path / "c1", index=url)
    archive = root / "files" / "vllm-0.20.1.tar.gz"
    archive.write_bytes(archive.read_bytes() + b"tampered")
    with pytest.raises(PackageIndexError, match="sha256 .* does not match"):
        fetch_docs("0.20.1", tmp_path / "c2", index=url)
    assert not list((tmp_path / "c2").glob("vllm-0.20.1*"))
    with pytest.raises(PackageIndexError, match="no sha256"):  # the index lists 0.19.0 without a hash: not fetched
        fetch_docs("0.19.0", tmp_path / "c3", index=url)


def test_the_cache_is_keyed_by_version_and_hash(index, tmp_path):
    url, _ = index
    tree = fetch_docs("0.20.1", tmp_path / "cache", index=url)
    assert re.fullmatch(r"vllm-0\.20\.1-[0-9a-f]{16}", tree.name)


def test_cli_vllm_version(index, tmp_path):
    url, _ = index
    out = tmp_path / "s.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "driftmatrix.cli",
            "extract",
            "--vllm-version",
            "0.20.1",
            "-q",
            "-o",
            str(out),
            "--cache-dir",
            str(tmp_path / "cache"),
        ],
        env=os.environ | {"DRIFTMATRIX_INDEX_URL": url},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert data["corpora"][0]["version"] == "0.20.1" and len(data["snippets"]) > 100


@pytest.mark.network
def test_real_pypi_sdist_matches_the_corpus(tmp_path, corpus):
    try:
        httpx.head("https://pypi.org/simple/vllm/", timeout=10)
    except httpx.HTTPError as err:
        pytest.skip(f"PyPI not reachable: {err}")
    tree = fetch_docs("0.20.1", tmp_path / "cache")
    fetched, _ = extract(stable=stable_pin(SEED_CPU), sources=[tree])
    direct, _ = extract(stable=stable_pin(SEED_CPU), sources=[corpus / "vllm-docs" / "0.20.1"])
    assert {s.id for s in direct.snippets} <= {s.id for s in fetched.snippets}
    assert (tree / "examples").is_dir()


def test_fetches_side_by_side_leave_one_whole_tree(index, tmp_path):
    """Test workers, shards and the runner fetch the same release into one cache at once: each gets
    the whole tree (unlocked, one unpacking deleted the files of another, and the runner then
    found no examples/*.jinja in a tree marked complete)."""
    url, _ = index
    alone = fetch_docs("0.20.1", tmp_path / "alone", index=url)
    files = sorted(str(p.relative_to(alone)) for p in alone.rglob("*"))
    code = (
        "import sys; from pathlib import Path; from driftmatrix.extractor.sdist import fetch_docs; "
        "print(fetch_docs('0.20.1', Path(sys.argv[1]), index=sys.argv[2]))"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(tmp_path / "shared"), url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    trees = set()
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        trees.add(out.strip())
    assert len(trees) == 1
    (tree,) = trees
    assert sorted(str(p.relative_to(tree)) for p in Path(tree).rglob("*")) == files


def test_source_fetches_side_by_side_leave_one_whole_tree(index, tmp_path):
    """The same for the release sources the option history and the in-target check keep."""
    url, root = index
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:  # a source tree of 400 vllm/ modules
        for i in range(400):
            body = f"X_{i} = {i}\n".encode() * 200
            info = tarfile.TarInfo(f"vllm-0.20.1/vllm/m{i % 20}/mod_{i}.py")
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    (root / "files" / "src").mkdir()
    (root / "files" / "src" / "vllm-0.20.1.tar.gz").write_bytes(buf.getvalue())
    release = [f"{url}/../files/src/vllm-0.20.1.tar.gz", hashlib.sha256(buf.getvalue()).hexdigest()]
    code = (
        "import sys, httpx; from pathlib import Path; from driftmatrix.flaghistory.sources import Release, fetch_sources; "
        "keep = lambda inner, head: True; "
        "print(fetch_sources(Release('0.20.1', sys.argv[2], sys.argv[3]), Path(sys.argv[1]), "
        "httpx.Client(follow_redirects=True), keep=keep))"
    )
    alone = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "alone"), *release], capture_output=True, text=True, timeout=300
    )
    assert alone.returncode == 0, alone.stderr
    files = sorted(str(p.relative_to(alone.stdout.strip())) for p in Path(alone.stdout.strip()).rglob("*"))
    assert len(files) > 100
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(tmp_path / "shared"), *release],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    trees = set()
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        trees.add(out.strip())
    (tree,) = trees
    assert sorted(str(p.relative_to(tree)) for p in Path(tree).rglob("*")) == files
