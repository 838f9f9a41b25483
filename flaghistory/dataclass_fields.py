"""The fields of an engine-args / frontend-args dataclass, read with `ast`, as vLLM's
`get_kwargs(cls)` turns them into options: one `--field-name` per field (bases first), and a
`--no-field-name` twin where the field's type makes it a `BooleanOptionalAction`."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from driftmatrix.flaghistory.pyindex import Index, Module

WRAPPERS = ("Annotated", "InitVar", "SkipValidation")
"""Annotations vLLM's get_type_hints unwraps to their first argument (pydantic's SkipValidation[T]
is Annotated[T, …]; an InitVar is still an option)."""
DATACLASS_DECORATORS = ("dataclass", "config", "dataclasses.dataclass", "pydantic.dataclasses.dataclass")


@dataclass
class FieldInfo:
    name: str
    types: frozenset[str]
    """The names in the field's annotation (`bool | None` → {bool, None})."""
    doc: str
    """The docstring under the field (vLLM's help text)."""
    json_config: bool
    """Its type is itself a config dataclass: a JSON option, never a boolean pair."""
    annotation: ast.AST | None = field(default=None, compare=False, repr=False)
    """The annotation itself: values.py reads Literal / Enum choices from it."""
    module: Module | None = field(default=None, compare=False, repr=False)
    """Where the annotation's names are looked up."""
    fold: str | None = field(default=None, compare=False)
    """"lower"/"upper" where the class's own validator folds the value (config_keys.py)."""


@dataclass
class BoolRule:
    """How one release's `get_kwargs` decides that a field is a boolean pair."""

    boolean_pairs: bool
    """`get_kwargs` gives bool fields `argparse.BooleanOptionalAction` (else store_true or none)."""
    optional_str_exception: bool
    """`bool | str | None` is an optional-valued flag (nargs='?'), not a pair."""

    def pair(self, info: FieldInfo) -> bool:
        if not self.boolean_pairs or "bool" not in info.types or info.json_config:
            return False
        return not (self.optional_str_exception and info.types == {"bool", "str", "None"})


@dataclass
class KwargsOf:
    """The value of `get_kwargs(Cls)`: its fields, and the edits the code made to them."""

    cls: str
    fields: dict[str, FieldInfo]
    overrides: dict[str, dict] = field(default_factory=dict)
    """field → {argparse keyword → value} set by `kwargs["f"]["k"] = v` after get_kwargs."""


@dataclass
class FieldKw:
    """`kwargs["f"]`: one field's argparse keywords, spread with `**` into add_argument."""

    source: KwargsOf
    name: str


def decorated_dataclass(cls: ast.ClassDef) -> bool:
    for deco in cls.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        name = ast.unparse(target)
        if name in DATACLASS_DECORATORS or name.endswith(".dataclass"):
            return True
    return False


def _type_names(annotation: ast.AST | None) -> set[str]:
    names: set[str] = set()
    if annotation is None:
        return names
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            return _type_names(ast.parse(annotation.value, mode="eval").body)
        except SyntaxError:
            return names
    if isinstance(annotation, ast.Constant) and annotation.value is None:
        return {"None"}
    if isinstance(annotation, ast.Name):
        return {annotation.id}
    if isinstance(annotation, ast.Attribute):
        return {annotation.attr}
    if isinstance(annotation, ast.BinOp):
        return _type_names(annotation.left) | _type_names(annotation.right)
    if isinstance(annotation, ast.Subscript):
        head = ast.unparse(annotation.value).split(".")[-1]
        if head in ("Optional", "Union", *WRAPPERS):
            inner = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
            if head in WRAPPERS:
                inner = inner[:1]
            found = set().union(*(_type_names(e) for e in inner))
            return found | ({"None"} if head == "Optional" else set())
        return {head}
    return names


def _fold(cls: ast.ClassDef, name: str) -> str | None:
    """`@field_validator("load_format") … return value.lower()` in the class's own body: the key's value is
    folded before vLLM compares it."""
    for node in cls.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for deco in node.decorator_list:
            if (
                isinstance(deco, ast.Call)
                and ast.unparse(deco.func).endswith("field_validator")
                and any(isinstance(a, ast.Constant) and a.value == name for a in deco.args)
            ):
                text = ast.unparse(node)
                return "lower" if ".lower()" in text else "upper" if ".upper()" in text else None
    return None


def _skipped(annotation: ast.AST) -> bool:
    text = ast.unparse(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar"))  # InitVars are options too (vLLM 0.3x)


def fields_of(index: Index, module: Module, cls: ast.ClassDef, depth: int = 0) -> dict[str, FieldInfo]:
    """Every dataclass field of `cls`, its bases' first (as `dataclasses.fields` orders them)."""
    found: dict[str, FieldInfo] = {}
    if depth > 10:
        return found
    for base_module, base in reversed(index.bases(module, cls)):
        found.update(fields_of(index, base_module, base, depth + 1))
    body = cls.body
    for i, node in enumerate(body):
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)) or _skipped(node.annotation):
            continue
        doc = ""
        if i + 1 < len(body) and isinstance(body[i + 1], ast.Expr) and isinstance(body[i + 1].value, ast.Constant):
            doc = str(body[i + 1].value.value)
        types = _type_names(node.annotation)
        json_config = any(
            (hit := index.lookup_class(module, t)) and decorated_dataclass(hit[1])
            for t in types
            if t not in ("bool", "str", "int", "float", "None", "dict", "list")
        )
        found[node.target.id] = FieldInfo(
            node.target.id,
            frozenset(types),
            doc.strip(),
            json_config,
            node.annotation,
            module,
            _fold(cls, node.target.id),
        )
    return found


def bool_rule(index: Index) -> BoolRule:
    """Read from the release's own `get_kwargs` (and `_compute_kwargs`, its body since 0.2x)."""
    text = "".join(
        ast.unparse(node)
        for module in index.modules.values()
        for name in ("_compute_kwargs", "get_kwargs")
        if isinstance(node := module.defs.get(name), ast.FunctionDef)
    )
    return BoolRule("BooleanOptionalAction" in text, "{bool, str, type(None)}" in text)
