"""Does every vLLM symbol the in-target scripts import resolve in a release, through the one table
of where each lives (runner/intarget/vllm_symbols.py)? Answered from the release's own sources, read
with `ast` (never installed, never imported), so every release the option history reads is checked,
not only the few installed here.

Sources come from each release's sdist on the index as flaghistory/sources.py fetches them (sha256
checked), keeping only the packages the table can point into; they are cached under
`<cache>/intarget-sources/`, so a second check is offline.
"""

from __future__ import annotations

import ast
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath

import httpx

from driftmatrix.flaghistory.sources import Release, fetch_sources, list_releases, read_tree
from driftmatrix.runner.intarget import vllm_symbols  # stdlib only: the same file the target's Python imports

KEEP_DIRS = ("vllm/config", "vllm/utils", "vllm/engine", "vllm/entrypoints", "vllm/platforms", "vllm/usage")
KEEP_FILES = (
    "vllm/model_executor/__init__.py",
    "vllm/model_executor/models/__init__.py",
    "vllm/model_executor/models/registry.py",
)


def keep(inner: PurePosixPath, _head: bytes) -> bool:
    """Every file the table's modules can be in or re-export from: the packages it names, whole (a
    symbol is often re-exported by a package's __init__ from a sibling), and vLLM's top-level files."""
    path = inner.as_posix()
    if not path.endswith(".py"):
        return False
    if len(inner.parts) == 2 or path in KEEP_FILES:
        return True
    return any(path.startswith(d + "/") for d in KEEP_DIRS)


def sources_cache(cache_dir: Path) -> Path:
    return cache_dir / "intarget-sources"


def release_sources(release: Release, cache_dir: Path, client: httpx.Client) -> dict[str, str]:
    return read_tree(fetch_sources(release, sources_cache(cache_dir), client, keep))


@dataclass
class Found:
    """Where one release keeps each KEY of the table."""

    version: str
    homes: dict[str, str] = field(default_factory=dict)
    """KEY -> the home it resolved in (`module` or `module:name`), or `absent`."""
    problems: list[str] = field(default_factory=list)
    """Keys the release needs and the table does not find: the scripts would fail there."""

    def fallbacks(self) -> dict[str, str]:
        """The keys this release finds somewhere other than their newest home."""
        return {k: h for k, h in self.homes.items() if h != vllm_symbols.TABLE[k].homes[0]}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _statements(body: list[ast.stmt]):
    """A module's statements that run when it is imported: its top level, into `if`/`try`/`with`
    blocks, but not under `if TYPE_CHECKING:` (never run)."""
    for node in body:
        yield node
        if isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from _statements(node.body)
            yield from _statements(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, *(h.body for h in node.handlers), node.orelse, node.finalbody):
                yield from _statements(block)
        elif isinstance(node, ast.With):
            yield from _statements(node.body)


class Tree:
    """One release's kept sources, resolved the way `import` and `getattr` would, never guessed."""

    def __init__(self, sources: dict[str, str]):
        self.files = {p[:-3].replace("/__init__", "").replace("/", "."): (p, text) for p, text in sources.items()}
        self._parsed: dict[str, ast.Module | None] = {}

    def module(self, name: str) -> ast.Module | None:
        if name not in self._parsed:
            entry = self.files.get(name)
            try:
                self._parsed[name] = ast.parse(entry[1]) if entry else None
            except SyntaxError:
                self._parsed[name] = None
        return self._parsed[name]

    def has(self, module: str, name: str | None, depth: int = 0) -> bool:
        tree = self.module(module)
        if tree is None or depth > 8:
            return False
        if name is None:
            return True
        package = module if self.files[module][0].endswith("__init__.py") else module.rpartition(".")[0]
        for node in _statements(tree.body):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
                return True
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                return True
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
                return True
            if isinstance(node, ast.Import) and any((a.asname or a.name.split(".")[0]) == name for a in node.names):
                return True
            if isinstance(node, ast.ImportFrom):
                origin = node.module or ""
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    origin = ".".join(base + ([node.module] if node.module else []))
                for alias in node.names:
                    if alias.name == "*" and self.has(origin, name, depth + 1):
                        return True
                    if (alias.asname or alias.name) != name:
                        continue
                    if f"{origin}.{alias.name}" in self.files or origin not in self.files:
                        return True  # a submodule, or a module outside the kept files (it imports or fails)
                    return self.has(origin, alias.name, depth + 1)
        # vllm/__init__.py-style lazy `__getattr__`: the name must be spelled in the module's text
        lazy = any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in tree.body)
        return lazy and (f'"{name}"' in self.files[module][1] or f"'{name}'" in self.files[module][1])


def check(version: str, sources: dict[str, str]) -> Found:
    """Where this release keeps each KEY, through the table, and what it would lack."""
    tree, found = Tree(sources), Found(version)
    for key, where in vllm_symbols.TABLE.items():
        home = next((h for h in where.homes if tree.has(*vllm_symbols.split(h, key))), None)
        found.homes[key] = home or "absent"
    for key, where in vllm_symbols.TABLE.items():
        if found.homes[key] != "absent":
            continue
        if where.instead_of is not None:
            if found.homes[where.instead_of] == "absent":
                found.problems.append(f"{key}: needed without {where.instead_of}, in none of {', '.join(where.homes)}")
        elif where.absent is None:
            found.problems.append(f"{key}: in none of {', '.join(where.homes)}")
    return found


def releases(client: httpx.Client, cache_dir: Path) -> list[Release]:
    """The releases the option history reads (driftmatrix.flaghistory.sources.list_releases: every final release
    since 0.6.0 that has a sdist), as the index lists them now; the last list read when the index
    cannot be reached, so that a second check is offline."""
    saved = sources_cache(cache_dir) / "releases.json"
    try:
        found = [r for r in list_releases(client) if r.url]
    except httpx.HTTPError:
        if not saved.is_file():
            raise
        return [Release(**r) for r in json.loads(saved.read_text())]
    saved.parent.mkdir(parents=True, exist_ok=True)
    saved.write_text(json.dumps([asdict(r) for r in found]))
    return found


def vllm_imports(path: Path) -> list[str]:
    """`file:line module` of every vLLM import an in-target script writes itself (they must go
    through vllm_symbols.find instead)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        names = (
            [node.module or ""]
            if isinstance(node, ast.ImportFrom) and not node.level
            else [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else []
        )
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", None) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            names = [str(node.args[0].value)]
        found += [f"{path.name}:{node.lineno} {n}" for n in names if n == "vllm" or n.startswith("vllm.")]
    return found
