"""Fetch the docs of any released vLLM: the `vllm==X` sdist from a PyPI-style index.

`pip download` cannot be used (it builds vLLM's metadata), so the index's simple API
(PEP 691 JSON) gives the file URL and sha256; the tarball is checked and only `docs/`,
`recipes/`, `examples/`, `mkdocs.yaml` and `PKG-INFO` are unpacked, into a cache.
"""

from __future__ import annotations

import hashlib
import shutil
import tarfile
from pathlib import Path, PurePosixPath

import httpx

from driftmatrix.common.filelock import exclusive
from driftmatrix.common.package_index import PackageIndexError, download, index_json, index_url

KEEP_DIRS = ("docs", "recipes", "examples")
"""The folders unpacked (the sdist's others are not: extractor/release_files.py checks paths into these only)."""
_KEEP_FILES = ("mkdocs.yaml", "mkdocs.yml", "PKG-INFO")


def find_sdist(version: str, index: str, client: httpx.Client) -> tuple[str, str | None]:
    """(download URL, sha256) of `vllm-<version>.tar.gz` from the index's JSON API."""
    files = index_json(client, index)["files"]
    wanted = f"vllm-{version}.tar.gz"
    for entry in files:
        if entry.get("filename") == wanted:
            url = str(httpx.URL(f"{index}/vllm/").join(entry["url"]))
            return url, (entry.get("hashes") or {}).get("sha256")
    sdists = sorted(e["filename"][5:-7] for e in files if e.get("filename", "").endswith(".tar.gz"))
    raise PackageIndexError(f"{wanted} is not on {index}; sdists there include: {', '.join(sdists[-8:]) or 'none'}")


def _safe_members(tar: tarfile.TarFile, top: str):
    for member in tar.getmembers():
        path = PurePosixPath(member.name)
        if path.is_absolute() or ".." in path.parts or not member.isfile() or len(path.parts) < 2:
            continue
        if path.parts[0] != top:
            continue
        inner = path.parts[1:]
        if (inner[0] in KEEP_DIRS and len(inner) > 1) or (len(inner) == 1 and inner[0] in _KEEP_FILES):
            yield member, PurePosixPath(*inner)


def fetch_docs(version: str, cache_dir: Path, index: str | None = None, timeout: float = 120.0) -> Path:
    """The unpacked docs tree of vllm==`version` (downloaded once, then cached). The index must give
    the file's sha256 and the download must match it; the cache is keyed by version and hash
    (`vllm-<version>-<sha256[:16]>/`), so a tree is only ever what that checksum verified."""
    index = (index or index_url()).rstrip("/")
    with exclusive(cache_dir / f".lock-vllm-{version}"):  # a second fetch waits and finds it cached
        return _fetch_docs(version, cache_dir, index, timeout)


def release_tree(version: str, cache_dir: Path, timeout: float = 30) -> tuple[Path | None, str | None]:
    """(the release's tree, None), or (None, why it could not be had: offline, no sdist, a bad
    download) — for checks that say so and go on rather than fail (the extractor's file check, the
    runner's files from the source tree)."""
    try:
        return fetch_docs(version, cache_dir, timeout=timeout), None
    except (PackageIndexError, httpx.HTTPError, OSError) as err:
        return None, f"{type(err).__name__}: {err}"[:300]


def _fetch_docs(version: str, cache_dir: Path, index: str, timeout: float) -> Path:
    cached = sorted(cache_dir.glob(f"vllm-{version}-*/.complete"))
    if cached:
        return cached[0].parent
    with httpx.Client(timeout=timeout, follow_redirects=True) as client:
        url, sha256 = find_sdist(version, index, client)
        if not sha256:
            raise PackageIndexError(f"{url}: the index gives no sha256 for it; an unverifiable download is refused")
        data = download(client, url)
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise PackageIndexError(f"{url}: sha256 {digest} does not match the index's {sha256}")
    tree = cache_dir / f"vllm-{version}-{digest[:16]}"
    archive = cache_dir / f"vllm-{version}.tar.gz.part"
    archive.write_bytes(data)
    shutil.rmtree(tree, ignore_errors=True)
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for member, inner in _safe_members(tar, f"vllm-{version}"):
                target = tree.joinpath(*inner.parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                if source is not None:
                    with source, target.open("wb") as out:
                        shutil.copyfileobj(source, out)
    except (tarfile.TarError, OSError, EOFError) as err:
        raise PackageIndexError(f"{archive.name}: not a readable sdist ({err})") from None
    finally:
        archive.unlink(missing_ok=True)
    if not (tree / "docs").is_dir():
        raise PackageIndexError(f"vllm-{version}.tar.gz has no docs/ folder")
    (tree / ".complete").write_text(url + "\n")
    return tree
