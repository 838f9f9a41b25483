"""The Hugging Face hub, read before vLLM runs: the configuration and tokenizer files of a model
always, its weights only within a disk budget. Every vLLM process then runs offline
(HF_HUB_OFFLINE=1) on the folder fetched here, so what a tier checks is exactly what was fetched,
and a config-tier check never downloads weights.

The endpoint is `$HF_ENDPOINT` (default https://huggingface.co), the token `$HF_TOKEN` (sent as a
bearer token to the endpoint only, never written anywhere). Model ids come from documentation, so
only `org/name` ids of safe characters are asked for, and only safe relative paths are written.
One folder per model, `hub_dir(cache)/<org>--<name>/`, with `driftmatrix-hub.json` recording the
listing and what was fetched; a folder with that marker is reused as it is.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import re
import shutil
import tempfile
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote, urlsplit

import httpx

from driftmatrix.runner.models import hub_answer
from driftmatrix.runner.outcomes.evidence_record import HubAnswer
from driftmatrix.runner.settings import HUB_REQUEST_S, WEIGHTS_DISK_MARGIN_GB, hub_dir

DEFAULT_ENDPOINT = "https://huggingface.co"
HUB_MARKER = "driftmatrix-hub.json"
OUR_MARKERS = frozenset({HUB_MARKER, "driftmatrix-standin.json"})
"""Never taken from a repo: a file of that name would relabel what the folder is."""
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".ckpt", ".h5", ".msgpack", ".onnx")
BIG_FILE = 50_000_000
"""A file larger than this counts as weights whatever its name (the config fetch stays small)."""
CONFIG_BYTES_MAX = 500_000_000
"""A repo whose non-weight files take more than this is not a model repo we fetch configs from."""
MAX_PAGES = 100
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}")


class HubError(RuntimeError):
    """The hub cannot give this model (the message says why): a twin or a SKIP, never a FAIL (but
    NotLoadable)."""


class NotLoadable(HubError):
    """The hub says the model cannot be loaded as the docs name it (runner/models/hub_answer.py): the
    docs' fault, on every build — the one HubError that is a FAIL, never a twin."""

    def __init__(self, answer: HubAnswer):
        super().__init__(answer.why)
        self.answer = answer


@dataclass(frozen=True)
class RepoFile:
    path: str
    size: int
    sha256: str | None = None
    """An LFS file's content hash from the listing, checked after the download."""

    @property
    def weight(self) -> bool:
        return self.path.lower().endswith(WEIGHT_SUFFIXES) or self.size > BIG_FILE


def endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def shown_endpoint() -> str:
    """The endpoint as notes show it: scheme, host and port only (no credentials in a URL)."""
    parts = urlsplit(endpoint())
    return (
        "the Hugging Face hub"
        if endpoint() == DEFAULT_ENDPOINT
        else f"the hub at {parts.scheme}://{parts.hostname}{f':{parts.port}' if parts.port else ''}"
    )


def auth_headers() -> dict[str, str]:
    token = (os.environ.get("HF_TOKEN") or "").strip()
    return {"Authorization": f"Bearer {token}"} if token else {}


def reachable() -> bool:
    """The hub answers (any status below 500), probed once per process and endpoint;
    `HF_HUB_OFFLINE=1` in our own environment says it is not to be used."""
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        return False
    return _probe(endpoint())


@functools.cache
def _probe(url: str) -> bool:
    try:
        return httpx.head(f"{url}/api/models", timeout=5).status_code < 500
    except httpx.HTTPError:
        return False


def check_id(model_id: str) -> str:
    """`model_id` when it is `org/name` of safe characters; HubError otherwise (a path, a URL,
    `..`: documentation is untrusted input). `--` is refused too: it separates org and name in
    the folder name, so that mapping stays one-to-one."""
    parts = model_id.split("/")
    if len(parts) != 2 or not all(_NAME.fullmatch(p) for p in parts) or ".." in model_id or "--" in model_id:
        raise HubError(f"{model_id!r} is not a hub model id of the form org/name")
    return model_id


def model_dir(model_id: str, cache: Path) -> Path:
    org, name = check_id(model_id).split("/")
    return hub_dir(cache) / f"{org}--{name}"


def _client() -> httpx.Client:
    # httpx drops the Authorization header on a redirect to another origin (the hub's CDN)
    return httpx.Client(headers=auth_headers(), timeout=HUB_REQUEST_S, follow_redirects=True)


def _check(r: httpx.Response) -> httpx.Response:
    if r.status_code in (401, 403):
        who = "HF_TOKEN has no access to it" if auth_headers() else "HF_TOKEN is not set"
        raise HubError(f"the hub refused it ({r.status_code}: gated, private or not there; {who})")
    if r.status_code == 404:
        raise HubError("not on the hub (404)")
    if r.status_code >= 400:
        raise HubError(f"the hub answered {r.status_code}")
    return r


def files(model_id: str) -> list[RepoFile]:
    """The repo's files on `main` with their sizes, from the hub's tree API (pages followed)."""
    url: str | None = f"{endpoint()}/api/models/{check_id(model_id)}/tree/main"
    params: dict | None = {"recursive": "true"}
    found: list[RepoFile] = []
    with _client() as client:
        for page in range(MAX_PAGES):
            try:
                r = client.get(url, params=params)
                if page == 0:  # a later page's answer says nothing of the repository
                    _loadable(model_id, r.status_code, None, r.headers.get("X-Error-Code"))
                r = _check(r)
                data = r.json()
            except httpx.HTTPError as err:
                raise HubError(f"listing its files failed ({type(err).__name__})") from None
            except ValueError:
                raise HubError("the hub's file listing is not JSON") from None
            found += _entries(data)
            url, params = _next_page(r), None
            if url is None:
                return found
    raise HubError(f"its file listing has more than {MAX_PAGES} pages")


def _loadable(model_id: str, status: int, listing: list[RepoFile] | None, error_code: str | None = None) -> None:
    """NotLoadable when the hub's answer says vLLM cannot load the model as named."""
    paths = [f.path for f in listing] if listing is not None else None
    why = hub_answer.unloadable(status, paths)
    if why:
        raise NotLoadable(hub_answer.answer(model_id, status, why, paths or [], shown_endpoint(), error_code))


def _entries(data) -> list[RepoFile]:
    if not isinstance(data, list):
        raise HubError("the hub's file listing is not a list")
    out = []
    for entry in data:
        if not isinstance(entry, dict) or entry.get("type") != "file":
            continue
        lfs = entry.get("lfs") if isinstance(entry.get("lfs"), dict) else {}
        path, size = entry.get("path"), lfs.get("size", entry.get("size"))
        if not isinstance(path, str) or not _safe_path(path) or not isinstance(size, int) or size < 0:
            raise HubError(f"the hub listed an unusable file entry: {str(path)[:100]!r}")
        oid = lfs.get("oid")
        out.append(RepoFile(path, size, oid if isinstance(oid, str) and re.fullmatch(r"[0-9a-f]{64}", oid) else None))
    return out


def _safe_path(path: str) -> bool:
    parts = path.split("/")
    return (
        not path.startswith("/")
        and "\\" not in path
        and "\0" not in path
        and all(p not in ("", ".", "..") for p in parts)
    )


def _next_page(r: httpx.Response) -> str | None:
    """The `Link: <...>; rel="next"` page, always on our endpoint (a mirror may name the main
    hub there; the token goes to the endpoint only)."""
    nxt = r.links.get("next", {}).get("url")
    if not nxt:
        return None
    parts, ours = urlsplit(str(r.url.join(nxt))), urlsplit(endpoint())
    return f"{ours.scheme}://{ours.netloc}{parts.path}" + (f"?{parts.query}" if parts.query else "")


def _download(client: httpx.Client, model_id: str, f: RepoFile, dest: Path) -> None:
    """One file, streamed; its size (and LFS hash) must match the listing."""
    url = f"{endpoint()}/{model_id}/resolve/main/{quote(f.path)}"
    digest, n = hashlib.sha256(), 0
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        with client.stream("GET", url) as r, dest.open("wb") as out:
            _check(r)
            for chunk in r.iter_bytes(1 << 20):
                n += len(chunk)
                if n > f.size:
                    raise HubError(f"{f.path}: more bytes than its listed {f.size}")
                digest.update(chunk)
                out.write(chunk)
    except httpx.HTTPError as err:
        raise HubError(f"downloading {f.path} failed ({type(err).__name__})") from None
    if n != f.size:
        raise HubError(f"{f.path}: {n} bytes, listed as {f.size}")
    if f.sha256 and digest.hexdigest() != f.sha256:
        raise HubError(f"{f.path}: its sha256 differs from the listing's")


@contextmanager
def _locked(path: Path):
    """Across processes and threads (jobs side by side, shards on one runner)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def read_marker(folder: Path) -> dict:
    return json.loads((folder / HUB_MARKER).read_text())


def _write_marker(folder: Path, record: dict) -> None:
    tmp = folder / f".{HUB_MARKER}.tmp"
    tmp.write_text(json.dumps(record, indent=1))
    os.replace(tmp, folder / HUB_MARKER)


def fetch_configs(model_id: str, cache: Path) -> Path:
    """The model's folder holding every file of the repo except weights (fetched once: a folder
    with the marker is reused). Written to a temporary folder and renamed, so a folder with the
    marker is always complete."""
    final = model_dir(model_id, cache)
    with _locked(final.with_name(f"{final.name}.lock")):
        if (final / HUB_MARKER).is_file():
            return final
        for stale in final.parent.glob(f".{final.name}-*"):  # a fetch killed half-way
            shutil.rmtree(stale, ignore_errors=True)
        listing = _loadable_listing(model_id, final)
        wanted = [f for f in listing if not f.weight and f.path.split("/")[-1] not in OUR_MARKERS]
        if not any(f.path in ("config.json", "params.json") for f in wanted):  # GGUF files only
            raise HubError("no config.json at the repo's top level")
        if sum(f.size for f in wanted) > CONFIG_BYTES_MAX:
            raise HubError(f"its non-weight files take more than {CONFIG_BYTES_MAX // 10**6} MB")
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=final.parent))
        try:
            with _client() as client:
                for f in wanted:
                    _download(client, model_id, f, tmp / f.path)
            _write_marker(
                tmp,
                {
                    "model_id": model_id,
                    "endpoint": shown_endpoint(),
                    "revision": "main",
                    "fetched": datetime.now(UTC).isoformat(timespec="seconds"),
                    "listing": [asdict(f) for f in listing],
                    "configs": [f.path for f in wanted],
                    "weights": [],
                },
            )
            shutil.rmtree(final, ignore_errors=True)  # not ours (no marker): replaced
            os.rename(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return final


def _loadable_listing(model_id: str, folder: Path) -> list[RepoFile]:
    """The repo's listing when vLLM can load the model as named; else NotLoadable, its answer kept for
    the run's later steps (hub_answer.keep: the step without the token gets 401 where this one got 404)."""
    found = hub_answer.kept(folder, shown_endpoint())
    if found:
        raise NotLoadable(found)
    try:
        listing = files(model_id)
        _loadable(model_id, 200, listing)
    except NotLoadable as err:
        hub_answer.keep(folder, err.answer)
        raise
    return listing


def weight_files(listing: list[RepoFile], folder: Path) -> list[RepoFile]:
    """What vLLM loads from a folder: the top-level .safetensors (those the index names, when there
    is one), else .bin, else .pt; plus top-level big files that are not weights by name (a huge
    tokenizer.json is still needed)."""
    top = [f for f in listing if "/" not in f.path]
    by_suffix = {s: [f for f in top if f.path.endswith(s)] for s in (".safetensors", ".bin", ".pt")}
    safetensors = by_suffix[".safetensors"]
    index = folder / "model.safetensors.index.json"
    if safetensors and index.is_file():
        try:
            named = set(json.loads(index.read_text()).get("weight_map", {}).values())
        except (OSError, ValueError, AttributeError):
            named = set()
        safetensors = [f for f in safetensors if f.path in named] or safetensors
    loadable = safetensors or by_suffix[".bin"] or by_suffix[".pt"]
    extras = [f for f in top if f.size > BIG_FILE and not f.path.lower().endswith(WEIGHT_SUFFIXES)]
    return loadable + extras if loadable else []


def weights_on_disk(root: Path) -> int:
    """Bytes of weight files under the hub folder (all models): what the budget has spent."""
    total = 0
    for path in root.rglob("*") if root.is_dir() else ():
        try:
            size = path.stat().st_size if path.is_file() else 0
        except OSError:
            continue
        if path.name.lower().endswith(WEIGHT_SUFFIXES) or size > BIG_FILE:
            total += size
    return total


def size_text(n: int | float) -> str:
    if n >= 10e9 or n == 0:
        return f"{n / 1e9:.0f} GB"
    if n >= 1e9:
        return f"{n / 1e9:.1f} GB"
    return f"{n / 1e6:.0f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB"


def fetch_weights(model_id: str, folder: Path, budget_bytes: int, cache: Path) -> str | None:
    """Download the weights into `folder` (made by fetch_configs) when they fit what is left of the
    budget and of the disk; None when they are there, else why not (`weights ...`). One model's
    decision and download at a time, so two jobs cannot both spend the same budget."""
    root = hub_dir(cache)
    with _locked(root / ".weights.lock"):
        for stale in folder.glob(".part-*"):  # a download killed half-way (downloads hold this lock)
            stale.unlink(missing_ok=True)
        record = read_marker(folder)
        chosen = weight_files([RepoFile(**f) for f in record["listing"]], folder)
        if not chosen:
            return "weights: none vLLM can load (.safetensors, .bin, .pt) in the repo"
        todo = [f for f in chosen if not _complete(folder / f.path, f)]
        why = _no_room(chosen, todo, budget_bytes, root)
        if why or not todo:
            return why
        with _client() as client:
            for f in todo:
                part = folder / f".part-{f.path}"
                try:
                    _download(client, model_id, f, part)
                except BaseException:
                    part.unlink(missing_ok=True)
                    raise
                os.replace(part, folder / f.path)
        _write_marker(folder, {**read_marker(folder), "weights": [f.path for f in chosen]})
    return None


def _complete(path: Path, f: RepoFile) -> bool:
    return path.is_file() and path.stat().st_size == f.size


def _no_room(chosen: list[RepoFile], todo: list[RepoFile], budget: int, root: Path) -> str | None:
    total, need = sum(f.size for f in chosen), sum(f.size for f in todo)
    if not todo:
        return None
    used = weights_on_disk(root)
    if need > budget - used:
        others = used - (total - need)  # spent by other models' weights
        taken = f", {size_text(others)} of it taken by weights fetched before" if others > 0 else ""
        return f"weights {size_text(total)} over the {size_text(budget)} budget{taken}"
    margin = int(WEIGHTS_DISK_MARGIN_GB * 1e9)
    free = shutil.disk_usage(root).free
    if need > free - margin:
        return f"weights {size_text(total)} do not fit the disk ({size_text(free)} free, {size_text(margin)} kept free)"
    return None
