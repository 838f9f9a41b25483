"""A release's kept Python sources as an index the option reader can look names up in.

Modules are parsed with `ast` (never imported); a name is resolved the way Python would at
module level — defined in the module, or imported into it (absolute or relative, followed
through re-exports) — and failing that, by a unique definition anywhere in the release.
Constants are evaluated only where that is certain: literals, string concatenation, f-strings
over known values, `str.replace`/`lower`/`upper`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field


class Unknown:
    """A value the reader cannot know statically."""

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = Unknown()
BOOLEAN_OPTIONAL = "BooleanOptionalAction"
"""Marker for `argparse.BooleanOptionalAction`: the option also exists as `--no-…`."""


@dataclass
class Module:
    name: str
    """Dotted module name, e.g. `vllm.engine.arg_utils`."""
    path: str
    """Path inside the release, e.g. `vllm/engine/arg_utils.py`."""
    tree: ast.Module
    defs: dict[str, ast.AST] = field(default_factory=dict)
    """Top-level classes, functions and assignments by name."""
    imports: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    """Local name → (module, name in it) or (module, None) for `import x as y`."""


def module_name(path: str) -> str:
    parts = path[:-3].split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def absolute_module(module: Module, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.name.split(".")
    if not module.path.endswith("__init__.py"):
        package = package[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _index(module: Module) -> None:
    for node in module.tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            module.defs[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    module.defs[target.id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            module.defs[node.target.id] = node.value
        elif isinstance(node, ast.ImportFrom):
            origin = absolute_module(module, node)
            for alias in node.names:
                module.imports[alias.asname or alias.name] = (origin, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                module.imports[alias.asname or alias.name.split(".")[0]] = (alias.name, None)


class Index:
    """Every parsed module of one release; files that do not parse are listed in `unparsable`."""

    def __init__(self, sources: dict[str, str]):
        self.modules: dict[str, Module] = {}
        self.unparsable: list[str] = []
        for path, text in sources.items():
            try:
                tree = ast.parse(text, filename=path)
            except (SyntaxError, ValueError) as err:
                self.unparsable.append(f"{path}: {err}")
                continue
            module = Module(module_name(path), path, tree)
            _index(module)
            self.modules[module.name] = module
        self._by_name: dict[str, list[tuple[Module, ast.AST]]] = {}
        for module in self.modules.values():
            for name, node in module.defs.items():
                if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                    self._by_name.setdefault(name, []).append((module, node))

    def lookup(self, module: Module, name: str, depth: int = 0) -> tuple[Module, ast.AST] | None:
        """Where `name` as seen from `module` is defined (its module and node)."""
        if name in module.defs:
            return module, module.defs[name]
        if name in module.imports and depth < 8:
            origin, inner = module.imports[name]
            target = self.modules.get(origin)
            if target is not None and inner is not None:
                found = self.lookup(target, inner, depth + 1)
                if found:
                    return found
            elif inner is not None and f"{origin}.{inner}" in self.modules:
                return None  # a module, not a value
        unique = self._by_name.get(name, [])
        return unique[0] if len(unique) == 1 else None

    def lookup_class(self, module: Module, name: str) -> tuple[Module, ast.ClassDef] | None:
        found = self.lookup(module, name)
        return found if found and isinstance(found[1], ast.ClassDef) else None  # type: ignore[return-value]

    def lookup_function(self, module: Module, name: str) -> tuple[Module, ast.FunctionDef] | None:
        found = self.lookup(module, name)
        return found if found and isinstance(found[1], ast.FunctionDef) else None  # type: ignore[return-value]

    def method(self, module: Module, cls: ast.ClassDef, name: str, depth: int = 0):
        """(module, defining class, function) of `cls.name`, searching the bases in order."""
        for node in cls.body:
            if isinstance(node, ast.FunctionDef) and node.name == name:
                return module, cls, node
        for base_module, base in self.bases(module, cls) if depth < 10 else []:
            found = self.method(base_module, base, name, depth + 1)
            if found:
                return found
        return None

    def bases(self, module: Module, cls: ast.ClassDef) -> list[tuple[Module, ast.ClassDef]]:
        found = []
        for base in cls.bases:
            name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None
            hit = self.lookup_class(module, name) if name else None
            if hit:
                found.append(hit)
        return found

    def constant(self, module: Module, name: str, depth: int = 0):
        """The value of a module-level constant, or UNKNOWN."""
        found = self.lookup(module, name) if depth < 6 else None
        if found is None:
            return UNKNOWN
        where, node = found
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            return UNKNOWN
        return evaluate(node, {}, where, self, depth + 1)


def evaluate(node: ast.AST | None, env: dict, module: Module, index: Index, depth: int = 0):
    """The value of an expression when it is certain, else UNKNOWN."""
    if node is None:
        return None
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        if node.id == "BooleanOptionalAction":
            return BOOLEAN_OPTIONAL
        return index.constant(module, node.id, depth)
    if isinstance(node, ast.Attribute):
        return BOOLEAN_OPTIONAL if node.attr == "BooleanOptionalAction" else UNKNOWN
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [evaluate(e, env, module, index, depth) for e in node.elts]  # members may be UNKNOWN
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = evaluate(node.left, env, module, index, depth), evaluate(node.right, env, module, index, depth)
        if isinstance(left, str) and isinstance(right, str):
            return left + right
        if isinstance(left, list) and isinstance(right, list):
            return left + right
        return UNKNOWN
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            part = evaluate(value.value if isinstance(value, ast.FormattedValue) else value, env, module, index, depth)
            if not isinstance(part, (str, int, float)):
                return UNKNOWN
            parts.append(str(part))
        return "".join(parts)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return _string_method(node, env, module, index, depth)
    return UNKNOWN


def _string_method(node: ast.Call, env: dict, module: Module, index: Index, depth: int):
    base = evaluate(node.func.value, env, module, index, depth)  # type: ignore[attr-defined]
    args = [evaluate(a, env, module, index, depth) for a in node.args]
    if not isinstance(base, str) or any(not isinstance(a, str) for a in args):
        return UNKNOWN
    method = node.func.attr  # type: ignore[attr-defined]
    if method == "replace" and len(args) == 2:
        return base.replace(*args)
    if method in ("lower", "upper", "strip") and not args:
        return getattr(base, method)()
    return UNKNOWN
