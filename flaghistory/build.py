"""`driftmatrix history`: every release's serve options → one flag-history.json (schema 1).

Per release: fetch its sources (cached), read them (the result cached beside them, keyed by
the reader's own code, so a changed reader re-reads and an unchanged one costs nothing), and
then fold the per-release option sets into one record per option: when it was added, removed,
deprecated, and what vLLM said about it. A release that cannot be fetched or read is a
diagnostic in the output; the others are still read.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx

from driftmatrix.common.package_index import PackageIndexError, index_url
from driftmatrix.flaghistory.deprecations import deprecations
from driftmatrix.flaghistory.pyindex import Index
from driftmatrix.flaghistory.reader import Reader
from driftmatrix.flaghistory.sources import Release, fetch_sources, list_releases, read_tree
from driftmatrix.flaghistory.value_history import fold_args, fold_keys, fold_values
from driftmatrix.flaghistory.values import option_keys, option_values

SCHEMA = 1
READER_FILES = (
    "pyindex.py",
    "reader.py",
    "action_pairs.py",
    "arg_types.py",
    "dataclass_fields.py",
    "deprecations.py",
    "wording.py",
    "build.py",
    "literals.py",
    "registries.py",
    "config_keys.py",
    "values.py",
    "value_history.py",
)
FETCH_JOBS = 4
"""Downloads at once: sdists are 30–50 MB and PyPI's CDN is not the bottleneck."""


@dataclass
class ReleaseRead:
    """What one release's sources say (cached per release and reader)."""

    version: str
    options: list[str] = field(default_factory=list)
    deprecations: dict[str, dict] = field(default_factory=dict)
    """option → {"text": what vLLM says, "replacement": option or None}."""
    syntax: list[str] = field(default_factory=list)
    """What its FlexibleArgumentParser rewrites before argparse: `--x.key` (dotted), `-O<n>`."""
    diagnostics: list[str] = field(default_factory=list)
    values: dict[str, dict] | None = None
    """option (or `--json-option.key`) → its value names and where they came from (values.py);
    None: a read made before values were read."""
    keys: dict[str, dict] | None = None
    """JSON option → its config class's keys (config_keys.py)."""
    aliases: dict[str, str] = field(default_factory=dict)
    """Short option string → its long option (`-cc` → `--compilation-config`), from one add_argument call."""
    args: dict[str, str] | None = None
    """option → what it takes after it (flaghistory/arg_types.py: `one:int`, `none`, `unknown`); None: a
    read made before arguments were read."""


def reader_key() -> str:
    here = Path(__file__).resolve().parent
    digest = hashlib.sha256(b"".join((here / name).read_bytes() for name in READER_FILES))
    return digest.hexdigest()[:16]


def _syntax(index: Index) -> list[str]:
    for module in index.modules.values():
        parser = module.defs.get("FlexibleArgumentParser")
        if isinstance(parser, ast.ClassDef):
            text = ast.unparse(parser)
            found = []
            if "'.' in" in text:
                found.append("--option.key")
            if "startswith('-O')" in text:
                found.append("-O<level>")
            return found
    return []


def read_sources(version: str, sources: dict[str, str]) -> ReleaseRead:
    index = Index(sources)
    found = Reader(index, version).read()
    said = deprecations(index, found)
    values, value_notes = option_values(index, found)
    keys, key_values, key_notes = option_keys(index, found)
    return ReleaseRead(
        version,
        sorted(found.options),
        {k: asdict(v) for k, v in sorted(said.items())},
        _syntax(index),
        found.diagnostics + value_notes + key_notes,
        values | key_values,
        keys,
        dict(sorted(found.aliases.items())),
        {k: v.arg or "unknown" for k, v in sorted(found.options.items())},
    )


def read_release(release: Release, cache: Path, client: httpx.Client) -> ReleaseRead:
    try:
        tree = fetch_sources(release, cache, client)
    except PackageIndexError as err:
        return ReleaseRead(release.version, diagnostics=[str(err)])
    result = tree / f"options-{reader_key()}.json"
    if result.is_file():
        return ReleaseRead(**json.loads(result.read_text()))
    try:
        read = read_sources(release.version, read_tree(tree))
    except Exception as err:  # noqa: BLE001 - sources it cannot follow: that release's diagnostic, never a crash
        return ReleaseRead(release.version, diagnostics=[f"reader failed: {type(err).__name__}: {err}"])
    for stale in tree.glob("options-*.json"):  # what an older reader made
        if stale != result:
            stale.unlink(missing_ok=True)
    # whole or not at all: another process (a test worker beside this one) may read it meanwhile
    partial = result.with_name(f"{result.name}.{os.getpid()}.part")
    partial.write_text(json.dumps(asdict(read)))
    os.replace(partial, result)
    return read


def read_all(
    releases: list[Release], cache: Path, client: httpx.Client, progress: Callable[[ReleaseRead], None] | None = None
) -> list[ReleaseRead]:
    with ThreadPoolExecutor(FETCH_JOBS) as pool:
        reads = []
        for read in pool.map(lambda r: read_release(r, cache, client), releases):
            reads.append(read)
            if progress:
                progress(read)
    return reads


def _spans(present: list[bool], releases: list[str]) -> dict:
    first = present.index(True)
    last = len(present) - 1 - present[::-1].index(True)
    gaps, start = [], None
    for i in range(first, last + 1):
        if not present[i] and start is None:
            start = i
        if present[i] and start is not None:
            gaps.append([releases[start], releases[i - 1]])
            start = None
    record = {"added": releases[first], "removed": releases[last + 1] if last + 1 < len(releases) else None}
    if gaps:
        record["gaps"] = gaps
    return record


def _deprecation(name: str, reads: list[ReleaseRead]) -> dict:
    said = [(r.version, r.deprecations[name]) for r in reads if name in r.deprecations]
    if not said:
        return {"deprecated": None, "deprecation": None, "replacement": None}
    # the latest text that names a replacement says the most; else the latest text
    best = next((d for _, d in reversed(said) if d["replacement"]), said[-1][1])
    return {"deprecated": said[0][0], "deprecation": best["text"], "replacement": best["replacement"]}


def assemble(reads: list[ReleaseRead], source: str) -> dict:
    """The schema-1 history of every option over the releases that could be read."""
    usable = [r for r in reads if r.options]
    releases = [r.version for r in usable]
    sets = [set(r.options) for r in usable]
    flags = {}
    for name in sorted(set().union(*sets)) if sets else []:
        record = _spans([name in s for s in sets], releases)
        record.update(_deprecation(name, usable))
        flags[name] = record
    syntax = {}
    for feature in sorted({f for r in usable for f in r.syntax}):
        syntax[feature] = _spans([feature in r.syntax for r in usable], releases)
    aliases: dict[str, str] = {}
    for read in usable:  # oldest first: the newest release's pairing wins
        aliases.update({a: o for a, o in read.aliases.items() if a in read.options and o in read.options})
    return {
        "schema": SCHEMA,
        "source": source,
        "releases": releases,
        "flags": flags,
        "syntax": syntax,
        "aliases": dict(sorted(aliases.items())),
        "values": fold_values(usable, _spans),
        "keys": fold_keys(usable, _spans),
        "args": fold_args(usable, _spans),
        "diagnostics": {r.version: r.diagnostics for r in reads if r.diagnostics},
    }


def build(
    cache: Path,
    since: str = "0.6.0",
    index: str | None = None,
    only: list[str] | None = None,
    progress: Callable[[ReleaseRead], None] | None = None,
    timeout: float = 120.0,
) -> dict:
    index = (index or index_url()).rstrip("/")
    with httpx.Client(timeout=timeout, follow_redirects=True) as client:
        releases = list_releases(client, index, since)
        if only:
            releases = [r for r in releases if r.version in only]
        reads = read_all(releases, cache, client, progress)
    return assemble(reads, f"{index}/vllm/")
