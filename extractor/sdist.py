"""Fetch the docs of any released vLLM: the `vllm==X` sdist from a PyPI-style index.

`pip download` cannot be used (it builds vLLM's metadata), so the index's simple API
(PEP 691 JSON) gives the file URL and sha256; the tarball is checked and only `docs/`,
`recipes/`, `examples/`, `mkdocs.yaml` and `PKG-INFO` are unpacked, into a cache.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
from pathlib import Path, PurePosixPath

import httpx

from common.filelock import exclusive

DEFAULT_INDEX = "https://pypi.org/simple"
KEEP_DIRS = ("docs", "recipes", "examples")
"""The folders unpacked (the sdist's others are not: extractor/release_files.py checks paths into these only)."""
_KEEP_FILES = ("mkdocs.yaml", "mkdocs.yml", "PKG-INFO")


class SdistError(RuntimeError):
    """The sdist could not be found, downloaded or verified."""


def index_url() -> str:
    return os.environ.get("DRIFTMATRIX_INDEX_URL", DEFAULT_INDEX).rstrip("/")


def index_json(client: httpx.Client, index: str, project: str = "vllm") -> dict:
    """The index's PEP 691 JSON page for a project: {"files": [...], "versions": [...]}."""
    response = client.get(f"{index}/{project}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    if response.status_code != 200:
        raise SdistError(f"{index}/{project}/: HTTP {response.status_code}")
    try:
        body = response.json()
        body["files"]
    except (ValueError, KeyError, TypeError) as err:
        raise SdistError(f"{index}/{project}/ did not answer with PEP 691 JSON ({err})") from None
    return body


def find_sdist(version: str, index: str, client: httpx.Client) -> tuple[str, str | None]:
    """(download URL, sha256) of `vllm-<version>.tar.gz` from the index's JSON API."""
    files = index_json(client, index)["files"]
    wanted = f"vllm-{version}.tar.gz"
    for entry in files:
        if entry.get("filename") == wanted:
            url = str(httpx.URL(f"{index}/vllm/").join(entry["url"]))
            return url, (entry.get("hashes") or {}).get("sha256")
    sdists = sorted(e["filename"][5:-7] for e in files if e.get("filename", "").endswith(".tar.gz"))
    raise SdistError(f"{wanted} is not on {index}; sdists there include: {', '.join(sdists[-8:]) or 'none'}")


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


DOWNLOAD_ATTEMPTS = 3
MAX_SDIST_BYTES = 200 << 20
"""A vLLM sdist is ≤ 60 MB today; anything far larger is refused rather than read."""


def download(client: httpx.Client, url: str, max_bytes: int = MAX_SDIST_BYTES) -> bytes:
    """The file at `url`, in memory; a stalled transfer is retried (afresh), a larger one refused."""
    for attempt in range(1, DOWNLOAD_ATTEMPTS + 1):
        try:
            buffer = bytearray()
            with client.stream("GET", url) as response:
                if response.status_code != 200:
                    raise SdistError(f"{url}: HTTP {response.status_code}")
                for chunk in response.iter_bytes(1 << 20):
                    buffer += chunk
                    if len(buffer) > max_bytes:
                        raise SdistError(f"{url}: larger than {max_bytes >> 20} MiB")
            return bytes(buffer)
        except httpx.TransportError as err:
            if attempt == DOWNLOAD_ATTEMPTS:
                raise SdistError(f"{url}: {type(err).__name__} after {attempt} attempts") from None
    raise AssertionError("unreachable")


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
    except (SdistError, httpx.HTTPError, OSError) as err:
        return None, f"{type(err).__name__}: {err}"[:300]


def _fetch_docs(version: str, cache_dir: Path, index: str, timeout: float) -> Path:
    cached = sorted(cache_dir.glob(f"vllm-{version}-*/.complete"))
    if cached:
        return cached[0].parent
    with httpx.Client(timeout=timeout, follow_redirects=True) as client:
        url, sha256 = find_sdist(version, index, client)
        if not sha256:
            raise SdistError(f"{url}: the index gives no sha256 for it; an unverifiable download is refused")
        data = download(client, url)
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise SdistError(f"{url}: sha256 {digest} does not match the index's {sha256}")
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
        raise SdistError(f"{archive.name}: not a readable sdist ({err})") from None
    finally:
        archive.unlink(missing_ok=True)
    if not (tree / "docs").is_dir():
        raise SdistError(f"vllm-{version}.tar.gz has no docs/ folder")
    (tree / ".complete").write_text(url + "\n")
    return tree
