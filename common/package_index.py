"""The package index (PyPI or a mirror, `DRIFTMATRIX_INDEX_URL`): its PEP 691 JSON pages and its
files, for every stage — the docs' sdists (extractor/sdist.py), the option history's release sources
(flaghistory/sources.py), the targets' newest releases (runner/builds/resolve.py)."""

from __future__ import annotations

import os

import httpx

DEFAULT_INDEX = "https://pypi.org/simple"


class PackageIndexError(RuntimeError):
    """The index could not be read, or a file on it found, downloaded or verified."""


def index_url() -> str:
    return os.environ.get("DRIFTMATRIX_INDEX_URL", DEFAULT_INDEX).rstrip("/")


def index_json(client: httpx.Client, index: str, project: str = "vllm") -> dict:
    """The index's PEP 691 JSON page for a project: {"files": [...], "versions": [...]}."""
    response = client.get(f"{index}/{project}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    if response.status_code != 200:
        raise PackageIndexError(f"{index}/{project}/: HTTP {response.status_code}")
    try:
        body = response.json()
        body["files"]
    except (ValueError, KeyError, TypeError) as err:
        raise PackageIndexError(f"{index}/{project}/ did not answer with PEP 691 JSON ({err})") from None
    return body


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
                    raise PackageIndexError(f"{url}: HTTP {response.status_code}")
                for chunk in response.iter_bytes(1 << 20):
                    buffer += chunk
                    if len(buffer) > max_bytes:
                        raise PackageIndexError(f"{url}: larger than {max_bytes >> 20} MiB")
            return bytes(buffer)
        except httpx.TransportError as err:
            if attempt == DOWNLOAD_ATTEMPTS:
                raise PackageIndexError(f"{url}: {type(err).__name__} after {attempt} attempts") from None
    raise AssertionError("unreachable")
