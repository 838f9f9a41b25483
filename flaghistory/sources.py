"""Each vLLM release's argument sources, from its sdist on a PyPI-style index.

The index's PEP 691 JSON lists every release and its sdist (URL, sha256, size). A sdist is
30–50 MB; only the Python files the option reader may need are kept, in a cache keyed by
version *and* sha256 (a re-uploaded file is a different entry). Nothing is installed or
imported: the reader parses these files with `ast`.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import httpx
from packaging.version import Version

from driftmatrix.common.filelock import exclusive
from driftmatrix.common.package_index import MAX_SDIST_BYTES, PackageIndexError, download, index_json, index_url
from driftmatrix.common.versions import parse_version

KEEP_DIRS = ("vllm/config", "vllm/engine", "vllm/entrypoints", "vllm/utils")
"""Where the serve parser, the engine-args dataclasses and FlexibleArgumentParser live (across
0.6 … 0.34: `vllm/scripts.py`, `vllm/config.py` and `vllm/utils.py` before they became packages)."""
KEEP_TOP = ("vllm/scripts.py", "vllm/config.py", "vllm/utils.py")
KEEP_MARKERS = (b"add_argument", b"@dataclass", b"@config", b"deprecat", b"FlexibleArgumentParser")
"""A file in KEEP_DIRS is kept only when it can hold an argument, a dataclass or a deprecation."""
KEEP_REGISTRY_DIRS = (
    "vllm/tool_parsers",
    "vllm/reasoning",
    "vllm/entrypoints/openai/tool_parsers",
    "vllm/entrypoints/openai/reasoning_parsers",
)
"""Where tool-call and reasoning parsers register their names (decorators or a lazy `*_TO_REGISTER` table)."""
KEEP_REGISTRY_MARKERS = (b"register_module", b"_TO_REGISTER", b"register_lazy_module")
KEEP_VALUE_FILES = (
    "vllm/model_executor/layers/quantization/__init__.py",
    "vllm/model_executor/model_loader/__init__.py",
    "vllm/attention/backends/registry.py",
    "vllm/v1/attention/backends/registry.py",
    "vllm/platforms/interface.py",
    "vllm/attention/selector.py",
    "vllm/entrypoints/chat_utils.py",
    "vllm/transformers_utils/config.py",
    "vllm/renderers/chat_utils.py",
    "vllm/renderers/chat_utils/__init__.py",
    "vllm/renderers/chat_utils/types.py",
    "vllm/tokenizers/registry.py",
    "vllm/distributed/weight_transfer/factory.py",
)
"""The tables behind --quantization, --load-format, --attention-backend, --chat-template-content-format,
--config-format, --tokenizer-mode and --weight-transfer-config's backend (values.py, registries.py)."""
KEEP_RULES = "v4"
"""Named in the cache folder: a tree kept by older rules lacks the registry files, so it is not reused."""


@dataclass(frozen=True)
class Release:
    """One release's sdist as the index lists it."""

    version: str
    url: str | None
    """None: the release has no sdist on the index (wheels only)."""
    sha256: str | None
    size: int | None = None


def list_releases(client: httpx.Client, index: str | None = None, since: str = "0.6.0") -> list[Release]:
    """Every final release ≥ `since`, oldest first (yanked ones left out; pre-releases are nightlies)."""
    index = (index or index_url()).rstrip("/")
    body = index_json(client, index)
    files, versions = body["files"], body.get("versions") or []
    sdists = {}
    for entry in files:
        name = entry.get("filename", "")
        if name.startswith("vllm-") and name.endswith(".tar.gz") and not entry.get("yanked"):
            sdists[name[5:-7]] = entry
    floor = Version(since)
    wanted = {v for v in set(versions) | set(sdists) if (p := parse_version(v)) and not p.is_prerelease and p >= floor}
    releases = []
    for version in sorted(wanted, key=Version):
        entry = sdists.get(version)
        url = str(httpx.URL(f"{index}/vllm/").join(entry["url"])) if entry else None
        sha = (entry.get("hashes") or {}).get("sha256") if entry else None
        releases.append(Release(version, url, sha, entry.get("size") if entry else None))
    return releases


def keep_for_options(inner: PurePosixPath, head: bytes) -> bool:
    """The option reader's files (the default of `fetch_sources`)."""
    path = inner.as_posix()
    if not path.endswith(".py"):
        return False
    if path in KEEP_TOP or path in KEEP_VALUE_FILES:
        return True
    if any(path.startswith(d + "/") for d in KEEP_REGISTRY_DIRS) and any(m in head for m in KEEP_REGISTRY_MARKERS):
        return True
    return any(path.startswith(d + "/") for d in KEEP_DIRS) and any(m in head for m in KEEP_MARKERS)


def _unpack(data: bytes, version: str, keep=keep_for_options) -> dict[str, bytes]:
    """The kept `vllm/**.py` files of an sdist held in memory (path inside the project → bytes)."""
    kept = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar:
            path = PurePosixPath(member.name)
            if not member.isfile() or path.is_absolute() or ".." in path.parts or len(path.parts) < 3:
                continue
            if path.parts[0] != f"vllm-{version}" or path.parts[1] != "vllm":
                continue
            source = tar.extractfile(member)
            if source is None:
                continue
            body = source.read()
            inner = PurePosixPath(*path.parts[1:])
            if keep(inner, body):
                kept[inner.as_posix()] = body
    return kept


def _download(client: httpx.Client, release: Release) -> bytes:
    if release.size and release.size > MAX_SDIST_BYTES:
        raise PackageIndexError(f"{release.url}: {release.size} bytes, over the {MAX_SDIST_BYTES >> 20} MiB cap")
    return download(client, release.url)


def cache_entry(cache: Path, release: Release, rules: str = "") -> Path:
    return cache / f"vllm-{release.version}-{(release.sha256 or 'nosha')[:16]}{rules}"


def fetch_sources(release: Release, cache: Path, client: httpx.Client, keep=keep_for_options) -> Path:
    """The folder holding the release's kept source files (downloaded once, then cached). `keep(path,
    body)` chooses the files; a cache holds one choice (runner/builds/symbol_check.py keeps its own)."""
    tree = cache_entry(cache, release, f"-{KEEP_RULES}" if keep is keep_for_options else "")
    if (tree / ".complete").is_file():
        return tree
    with exclusive(tree.with_name(f".lock-{tree.name}")):  # a second fetch waits and finds it cached
        return _fetch_sources(release, tree, client, keep)


def _fetch_sources(release: Release, tree: Path, client: httpx.Client, keep) -> Path:
    if (tree / ".complete").is_file():
        return tree
    if release.url is None:
        raise PackageIndexError(f"vllm {release.version} has no sdist on the index (wheels only)")
    if not release.sha256:
        raise PackageIndexError(f"{release.url}: the index gives no sha256, so the file cannot be trusted")
    data = _download(client, release)
    digest = hashlib.sha256(data).hexdigest()
    if digest != release.sha256:
        raise PackageIndexError(f"{release.url}: sha256 {digest} does not match the index's {release.sha256}")
    try:
        kept = _unpack(data, release.version, keep)
    except (tarfile.TarError, OSError, EOFError) as err:
        raise PackageIndexError(f"vllm-{release.version}.tar.gz: not a readable sdist ({err})") from None
    if not kept:
        raise PackageIndexError(f"vllm-{release.version}.tar.gz holds no vllm/ Python sources")
    partial = tree.with_name(tree.name + ".part")
    shutil.rmtree(partial, ignore_errors=True)
    for inner, body in kept.items():
        target = partial / inner
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(body)
    (partial / ".complete").write_text(f"{release.url}\n{release.sha256}\n")
    shutil.rmtree(tree, ignore_errors=True)
    os.replace(partial, tree)
    return tree


def read_tree(tree: Path) -> dict[str, str]:
    """Kept files of a cached release: path inside the project → text."""
    return {
        p.relative_to(tree).as_posix(): p.read_text(encoding="utf-8", errors="replace")
        for p in sorted(tree.rglob("*.py"))
    }
