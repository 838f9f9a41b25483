"""The strings a name or expression stands for, read with `ast` the way vLLM builds its value lists:
`Literal[...]` (nested aliases flattened, as typing does), `list(get_args(X))`, `[*X, None]`, a dict's
keys, an `Enum`'s values or names (`[f.value for f in LoadFormat]`). Anything else is None: a value
list is recorded only when every member is certain."""

from __future__ import annotations

import ast

from driftmatrix.flaghistory.pyindex import Index, Module, absolute_module, evaluate

MAX_DEPTH = 8
WRAPPERS = ("Optional", "Union", "Annotated", "SkipValidation")
ENUM_BASES = ("Enum", "IntEnum", "StrEnum")


def _head(node: ast.Subscript) -> str:
    return ast.unparse(node.value).split(".")[-1]


def _members(node: ast.ClassDef) -> list[tuple[str, ast.expr]]:
    """An Enum's members in order: `NAME = value` (and `NAME = auto()`)."""
    found = []
    for stmt in node.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            if not name.startswith("_"):
                found.append((name, stmt.value))
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            found.append((stmt.target.id, stmt.value))
    return found


def is_enum(node: ast.AST) -> bool:
    return isinstance(node, ast.ClassDef) and any(ast.unparse(b).split(".")[-1] in ENUM_BASES for b in node.bases)


def enum_values(index: Index, module: Module, cls: ast.ClassDef, part: str = "value") -> list[str] | None:
    """`[m.value for m in Cls]` (part="value") or the member names (part="name")."""
    members = _members(cls)
    if part == "name":
        return [name for name, _ in members] or None
    values = [evaluate(value, {}, module, index) for _, value in members]
    return values if values and all(isinstance(v, str) for v in values) else None


def memo(index: Index, key: str, make):
    """One walk of the release's trees per question, kept on the index (a release has ~100 files)."""
    cache = index.__dict__.setdefault("_memo", {})
    if key not in cache:
        cache[key] = make()
    return cache[key]


def nodes(index: Index, kinds: tuple[type, ...]) -> list[tuple[Module, ast.AST]]:
    """Every node of these kinds in the release, with its module."""

    def walk():
        found = []
        for module in index.modules.values():
            found += [(module, n) for n in ast.walk(module.tree) if isinstance(n, kinds)]
        return found

    return memo(index, "nodes:" + ",".join(k.__name__ for k in kinds), walk)


def looked_up_by_name(index: Index, enum: str) -> bool:
    """vLLM's validators turn a string into a member by name: `Enum[value.upper()]` somewhere in the release."""

    def names():
        return {
            n.value.id
            for _, n in nodes(index, (ast.Subscript,))
            if isinstance(n.value, ast.Name) and "upper()" in ast.unparse(n.slice)
        }

    return enum in memo(index, "by-name", names)


def resolve(index: Index, module: Module, name: str, depth: int = 0) -> tuple[Module, ast.AST] | None:
    """A module-level name, including ones bound only under `if TYPE_CHECKING:` / `try:` (vLLM's lazy
    imports) and ones a package re-exports with `from .types import *`, looked up where they come from."""
    found = index.lookup(module, name)
    if found or depth > MAX_DEPTH:
        return found
    for where, node in nodes(index, (ast.ImportFrom,)):
        if where is not module:
            continue
        for alias in node.names:
            if (alias.asname or alias.name) == name or alias.name == "*":
                origin = index.modules.get(absolute_module(module, node))
                hit = (
                    resolve(index, origin, name if alias.name == "*" else alias.name, depth + 1)
                    if origin is not None and origin is not module
                    else None
                )
                if hit:
                    return hit
    return None


def origin(index: Index, module: Module, annotation: ast.AST | None) -> str:
    """The file that defines the Literal / Enum an annotation names (`where` in the history)."""
    for node in ast.walk(annotation) if annotation is not None else []:
        if isinstance(node, ast.Name):
            hit = resolve(index, module, node.id)
            if hit and (is_enum(hit[1]) or isinstance(hit[1], ast.Subscript)):
                return hit[0].path
    return module.path


def strings(index: Index, module: Module, node: ast.AST | None, env: dict | None = None, depth: int = 0):
    """(kind, values) for an expression or annotation naming a set of strings; kind is "literal" or
    "enum" or "choices" (a plain list); None when not certain."""
    if node is None or depth > MAX_DEPTH:
        return None
    env = env or {}
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:  # a string annotation: `"Literal['a']"`
            return strings(index, module, ast.parse(node.value, mode="eval").body, env, depth + 1)
        except SyntaxError:
            return None
    if isinstance(node, ast.Subscript):
        return _subscript(index, module, node, env, depth)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):  # X | None | str
        return _union([node.left, node.right], index, module, env, depth)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return _sequence(index, module, node, env, depth)
    if isinstance(node, ast.Dict):
        keys = [evaluate(k, env, module, index) for k in node.keys if k is not None]
        return ("choices", keys) if keys and all(isinstance(k, str) for k in keys) else None
    if isinstance(node, ast.Name):
        return _name(index, module, node.id, env, depth)
    if isinstance(node, ast.Call):
        return _call(index, module, node, env, depth)
    if isinstance(node, ast.ListComp):
        return _comprehension(index, module, node, depth)
    return None


def _name(index: Index, module: Module, name: str, env: dict, depth: int):
    if name in env:
        value = env[name]
        return (
            ("choices", value) if isinstance(value, list) and value and all(isinstance(v, str) for v in value) else None
        )
    found = resolve(index, module, name)
    if found is None:
        return None
    where, node = found
    if is_enum(node):
        if looked_up_by_name(index, name):  # `AttentionBackendEnum[value.upper()]`: names, any case
            return ("enum-upper", enum_values(index, where, node, "name"))  # type: ignore[arg-type]
        values = enum_values(index, where, node)  # type: ignore[arg-type]
        return ("enum", values) if values else None
    if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    return strings(index, where, node, {}, depth + 1)


def _subscript(index: Index, module: Module, node: ast.Subscript, env: dict, depth: int):
    head = _head(node)
    inner = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    if head == "Literal":
        values: list[str] = []
        for element in inner:
            if isinstance(element, ast.Constant):
                if not isinstance(element.value, str):
                    return None
                values.append(element.value)
                continue
            nested = strings(index, module, element, env, depth + 1)  # Literal["a", OtherLiteral]
            if nested is None:
                return None
            values += nested[1]
        return "literal", values
    if head in WRAPPERS:
        return _union(inner[:1] if head in ("Annotated", "SkipValidation") else inner, index, module, env, depth)
    return None


def _union(parts: list[ast.expr], index: Index, module: Module, env: dict, depth: int):
    """The Literal / Enum members of a union (`QuantizationMethods | str | None`; `Union[BackendV0,
    BackendV1]` merges both lists); None when the members are of different kinds."""
    found = [
        s
        for p in parts
        if not (isinstance(p, ast.Constant) and p.value is None)
        if (s := strings(index, module, p, env, depth + 1))
    ]
    if not found or len({kind for kind, _ in found}) > 1:
        return None
    return found[0][0], [v for _, values in found for v in values]


def _sequence(index: Index, module: Module, node, env: dict, depth: int):
    values: list[str] = []
    kind = "choices"
    for element in node.elts:
        if isinstance(element, ast.Starred):  # [*QUANTIZATION_METHODS, None]
            nested = strings(index, module, element.value, env, depth + 1)
            if nested is None:
                return None
            kind, values = (nested[0] if nested[0] != "choices" else kind), values + nested[1]
            continue
        value = evaluate(element, env, module, index)
        if value is None:  # argparse's `None` choice: the option's default, not a name
            continue
        if not isinstance(value, str):  # `choices=[8, 16, 32]`: numbers, not names
            return None
        values.append(value)
    return (kind, values) if values else None


def _call(index: Index, module: Module, node: ast.Call, env: dict, depth: int):
    name = ast.unparse(node.func).split(".")[-1]
    if name in ("list", "sorted", "tuple", "set", "get_args") and len(node.args) == 1:
        return strings(index, module, node.args[0], env, depth + 1)
    if name == "keys" and isinstance(node.func, ast.Attribute) and not node.args:
        return strings(index, module, node.func.value, env, depth + 1)
    return None


def _comprehension(index: Index, module: Module, node: ast.ListComp, depth: int):
    """`[f.value for f in LoadFormat]`, `[b.name for b in _Backend]`, with `.lower()` / `.upper()`."""
    if len(node.generators) != 1 or node.generators[0].ifs or not isinstance(node.generators[0].iter, ast.Name):
        return None
    element, fold = node.elt, None
    if (
        isinstance(element, ast.Call)
        and isinstance(element.func, ast.Attribute)
        and element.func.attr in ("lower", "upper")
        and not element.args
    ):
        element, fold = element.func.value, element.func.attr
    if not (isinstance(element, ast.Attribute) and element.attr in ("value", "name")):
        return None
    found = resolve(index, module, node.generators[0].iter.id)
    if found is None or not is_enum(found[1]):
        return None
    values = enum_values(index, found[0], found[1], element.attr)  # type: ignore[arg-type]
    if values is None:
        return None
    return "enum", [getattr(v, fold)() for v in values] if fold else values
