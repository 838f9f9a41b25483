"""What one option of one release's serve parser takes after it — nothing, one word, an optional word,
several — and which type turns that word into a value (`int`, `human_readable_int`, JSON …), read
statically like the options themselves.

Two sources, as vLLM's own code has them:
- a literal `add_argument("--x", type=int, nargs="?", action="store_true")`: its keywords;
- an option `get_kwargs(SomeConfig)` made from a dataclass field: the release's own `get_kwargs` /
  `_compute_kwargs` if-chain, interpreted for the field's annotation (`contains_type(type_hints, int)`,
  `name in human_readable_int_args`, `dataclass_cls is not None` …), then the edits the code made to
  that field's keywords afterwards (`kwargs["speculative_config"]["type"] = optional_type(json.loads)`).

The result is a short spec string, folded per release into the history like values are:
`none` (a flag), `one:int`, `one:int?` (optional_type: `None` and "" also pass), `optional:str`,
`many`, `one:json`, `one:json{}` (a config class: a `{…}` value must be JSON, another word is the
class's business), `one:dict|str` (a `{…}` value is JSON, any other word a string), `one:hint[kmgKMG]`
(human_readable_int with the release's own suffixes), `one:choice`, `one:str`. Anything the reader does
not follow is `unknown` (arity) or `one:?` (type): the history then cannot say, never "yes".
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from driftmatrix.flaghistory.dataclass_fields import FieldInfo
from driftmatrix.flaghistory.literals import resolve
from driftmatrix.flaghistory.pyindex import BOOLEAN_OPTIONAL, Index

BUILTIN = {"bool", "str", "int", "float", "None", "dict", "list", "tuple", "set"}
"""The types whose `__module__` is `builtins` (vLLM's `is_not_builtin`); `Literal`, `Any` are typing's."""
NO_VALUE_ACTIONS = {"store_true", "store_false", "store_const", "count", "help", "version", BOOLEAN_OPTIONAL}
UNKNOWN_SPEC = "unknown"


@dataclass(frozen=True)
class TypeText:
    """A `type=` (or `action=`) expression as written (`optional_type(json.loads)`): kept as text,
    since a function cannot be evaluated statically."""

    text: str


# -- one type expression → its kind --------------------------------------------------------------
def type_kind(text: str, index: Index | None = None) -> str:
    """`int` → `int`; `optional_type(int)` → `int?`; `parse_type(json.loads)` → `json`; unknown → `?`."""
    text = text.strip().replace("argparse_utils.", "").replace("utils.", "")
    if text.startswith("optional_type(") and text.endswith(")"):
        inner = type_kind(text[len("optional_type(") : -1], index)
        return inner if inner in ("?", "str", "choice") else inner.rstrip("?") + "?"
    if text.startswith("parse_type(") and text.endswith(")"):
        return type_kind(text[len("parse_type(") : -1], index)
    if text in ("int", "float", "str"):
        return text
    if text in ("json.loads", "loads"):
        return "json"
    if text == "union_dict_and_str":
        return "dict|str"
    if text == "parse_dataclass" or text.endswith(".from_cli"):
        return "json{}"
    if text in ("human_readable_int", "human_readable_int_or_auto"):
        suffixes = _suffixes(index, text) if index is not None else None
        auto = "|auto" if text.endswith("_or_auto") else ""
        return f"hint[{suffixes}]{auto}" if suffixes else "?"
    return "?"


def _suffixes(index: Index, name: str) -> str | None:
    """The suffix letters the release's human_readable_int turns into multipliers (its dict literals)."""
    found = next(
        (f for m in index.modules.values() if isinstance(f := m.defs.get("human_readable_int"), ast.FunctionDef)), None
    )
    if found is None:
        return None
    letters = [
        k.value
        for node in ast.walk(found)
        if isinstance(node, ast.Dict)
        for k in node.keys
        if isinstance(k, ast.Constant) and isinstance(k.value, str) and len(k.value) == 1
    ]
    return "".join(sorted(set(letters))) or None


def spec_from_keywords(action: str | None, nargs, kind: str) -> str:
    """The spec of an add_argument call from its `action`, `nargs` and type kind."""
    if action in NO_VALUE_ACTIONS or nargs == 0:
        return "none"
    if action not in (None, "store", "append"):
        return UNKNOWN_SPEC  # a custom Action (vLLM's StoreBoolean …): what it takes is its own
    if nargs is None:
        return f"one:{kind}"
    if nargs == "?":
        return f"optional:{kind}"
    if nargs in ("+", "*", "...", "A...") or isinstance(nargs, int):
        return "many"
    return UNKNOWN_SPEC


# -- the release's get_kwargs rule, interpreted for one field ------------------------------------
@dataclass
class FieldKeywords:
    type: str | None = None
    """The `type=` text the rule gives (`int`, `human_readable_int`, `parse_dataclass`)."""
    action: str | None = None
    nargs: object = None
    choice: bool = False
    unknown: bool = False
    """The rule took a branch (or tested a condition) the interpreter does not follow."""


class TypeRule:
    """One release's `get_kwargs` / `_compute_kwargs` loop body, run for a field's annotation."""

    def __init__(self, index: Index):
        self.index = index
        self.body = _loop_body(index)
        self.dict_subclasses = self.body is not None and "is_dict_subclass" in "".join(
            ast.unparse(n) for n in self.body
        )
        """The release maps a dict subclass (MultiModalDummyOptions) to `dict` before its chain (0.3x)."""

    def keywords(self, info: FieldInfo) -> FieldKeywords:
        found = FieldKeywords()
        names = self._hints(info)
        if self.body is None or names is None:
            found.unknown = True
            return found
        env = {"type_hints": names, "name": info.name, "dataclass_cls": info.json_config}
        self._run(self.body, env, found)
        return found

    def _hints(self, info: FieldInfo) -> set[str] | None:
        """The field's type names as `get_type_hints` flattens them (aliases followed); None: unresolved."""
        names: set[str] = set()
        for name in info.types:
            if name in BUILTIN or name in ("Literal", "Any"):
                names.add(name)
                continue
            hit = resolve(self.index, info.module, name) if info.module is not None else None
            if hit is None:
                return None
            node = hit[1]
            if isinstance(node, ast.ClassDef):
                dict_base = any(
                    ast.unparse(b.value if isinstance(b, ast.Subscript) else b).split(".")[-1] in ("dict", "Dict")
                    for b in node.bases
                )
                names.add("dict" if dict_base and self.dict_subclasses else f"class:{name}")
            elif isinstance(node, ast.Subscript) and ast.unparse(node.value).split(".")[-1] == "Literal":
                names.add("Literal")
            else:
                return None  # an alias of something else: not followed
        return names

    def _run(self, body: list[ast.stmt], env: dict, found: FieldKeywords) -> None:
        for stmt in body:
            if found.unknown:
                return
            if isinstance(stmt, ast.If):
                self._branch(stmt, env, found)
            elif isinstance(stmt, ast.Assign):
                self._assign(stmt, env, found)
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                self._update(stmt.value, found)
            elif isinstance(stmt, ast.Raise):
                found.unknown = True

    def _branch(self, stmt: ast.If, env: dict, found: FieldKeywords) -> None:
        said = _test(stmt.test, env, self.index)
        if said is None:
            if _touches(stmt):
                found.unknown = True
            return
        self._run(stmt.body if said else stmt.orelse, env, found)

    def _assign(self, stmt: ast.Assign, env: dict, found: FieldKeywords) -> None:
        target = stmt.targets[0]
        if isinstance(target, ast.Name) and isinstance(stmt.value, (ast.Set, ast.List, ast.Tuple)):
            env[target.id] = {e.value for e in stmt.value.elts if isinstance(e, ast.Constant)}
            return
        key = _kwargs_key(target)
        if key == "":
            found.type = found.action = found.nargs = None  # `kwargs[name] = {...}`: keywords start afresh
            found.choice = False
        elif key == "type":
            text = ast.unparse(stmt.value)
            if text.startswith("optional_type(") and found.type and "kwargs" in text:
                found.type = f"optional_type({found.type})"  # `optional_type(kwargs[name]["type"])`
            else:
                found.type = text
        elif key == "action":
            found.action = (
                BOOLEAN_OPTIONAL if "BooleanOptionalAction" in ast.unparse(stmt.value) else ast.unparse(stmt.value)
            )
        elif key == "nargs":
            found.nargs = stmt.value.value if isinstance(stmt.value, ast.Constant) else "+"

    def _update(self, call: ast.Call, found: FieldKeywords) -> None:
        """`kwargs[name].update(literal_to_kwargs(...))`, `….update(collection_to_kwargs(...))`."""
        if not (
            isinstance(call.func, ast.Attribute)
            and call.func.attr == "update"
            and _kwargs_key(call.func.value) == ""
            and call.args
        ):
            return
        text = ast.unparse(call.args[0])
        if "literal_to_kwargs" in text:
            found.type, found.choice = "choice", True
        elif "collection_to_kwargs" in text:
            found.type, found.nargs = "?", "+"
        else:
            found.unknown = True


def _loop_body(index: Index) -> list[ast.stmt] | None:
    """The `for field in fields(cls):` body of the release's `_compute_kwargs` (or `get_kwargs`)."""
    for name in ("_compute_kwargs", "get_kwargs"):
        for module in index.modules.values():
            fn = module.defs.get(name)
            if isinstance(fn, ast.FunctionDef):
                loop = next(
                    (n for n in ast.walk(fn) if isinstance(n, ast.For) and "fields(" in ast.unparse(n.iter)), None
                )
                if loop is not None:
                    return loop.body
    return None


def _kwargs_key(node: ast.expr) -> str | None:
    """`kwargs[name]["type"]` → "type"; `kwargs[name]` → ""; anything else → None."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Subscript):
        inner = node.value
        if ast.unparse(inner.slice) == "name" and isinstance(node.slice, ast.Constant):
            return str(node.slice.value)
        return None
    if isinstance(node, ast.Subscript) and ast.unparse(node.slice) == "name":
        return ""
    return None


def _touches(stmt: ast.If) -> bool:
    """Does either branch change the type, action or nargs? (An `if field.default …` does not.)"""
    return (
        any(
            _kwargs_key(t) not in (None, "default", "help", "deprecated", "const")
            for n in ast.walk(stmt)
            if isinstance(n, ast.Assign)
            for t in n.targets
        )
        or any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "update"
            for n in ast.walk(stmt)
        )
        or any(isinstance(n, ast.Raise) for n in ast.walk(stmt))
    )


def _test(node: ast.expr, env: dict, index: Index) -> bool | None:
    """A condition of the rule for the field in `env`; None: not one the interpreter follows."""
    names: set[str] = env["type_hints"]
    if isinstance(node, ast.BoolOp):
        said = [_test(v, env, index) for v in node.values]
        if isinstance(node.op, ast.And):
            return False if False in said else None if None in said else True
        return True if True in said else None if None in said else False
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        said = _test(node.operand, env, index)
        return None if said is None else not said
    if isinstance(node, ast.Call):
        return _call_test(node, names)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        return _compare(node, env)
    return None


def _call_test(node: ast.Call, names: set[str]) -> bool | None:
    func = ast.unparse(node.func)
    if func == "contains_type" and len(node.args) == 2:
        wanted = ast.unparse(node.args[1]).split(".")[-1]
        return wanted in names
    if func == "any" and "is_not_builtin" in ast.unparse(node):
        return any(n not in BUILTIN for n in names)
    return None


def _compare(node: ast.Compare, env: dict) -> bool | None:
    left, op, right = ast.unparse(node.left), node.ops[0], node.comparators[0]
    names: set[str] = env["type_hints"]
    if left == "dataclass_cls" and isinstance(op, (ast.IsNot, ast.Is)):
        return env["dataclass_cls"] == isinstance(op, ast.IsNot)
    if left == "type_hints" and isinstance(op, ast.Eq) and isinstance(right, ast.Set):
        wanted = {"None" if ast.unparse(e) == "type(None)" else ast.unparse(e) for e in right.elts}
        return names == wanted
    if left == "type(None)" and isinstance(op, (ast.In, ast.NotIn)) and ast.unparse(right) == "type_hints":
        return ("None" in names) == isinstance(op, ast.In)
    if left == "name" and isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(right, ast.Constant):
        return (env["name"] == right.value) == isinstance(op, ast.Eq)
    if left == "name" and isinstance(op, (ast.In, ast.NotIn)):
        pool = (
            env.get(ast.unparse(right))
            if isinstance(right, ast.Name)
            else {e.value for e in right.elts if isinstance(e, ast.Constant)}
            if isinstance(right, (ast.Set, ast.List, ast.Tuple))
            else None
        )
        return None if pool is None else (env["name"] in pool) == isinstance(op, ast.In)
    if left.startswith("get_origin(kwargs[name]"):
        return False  # a Literal given as a list element type: the choices are the values' business
    return None


def field_spec(rule: TypeRule, info: FieldInfo, overrides: dict, index: Index) -> str:
    """The spec of a get_kwargs-made option: the rule's keywords, then the code's later edits."""
    found = rule.keywords(info)
    if found.unknown:
        return UNKNOWN_SPEC
    action = overrides.get("action", found.action)
    action = (
        BOOLEAN_OPTIONAL
        if action == BOOLEAN_OPTIONAL or "BooleanOptionalAction" in str(action)
        else (action.text if isinstance(action, TypeText) else action)
    )
    type_text = overrides["type"].text if isinstance(overrides.get("type"), TypeText) else found.type
    if "type" in overrides and not isinstance(overrides["type"], TypeText):
        type_text = "?"
    nargs = overrides.get("nargs", found.nargs)
    kind = "choice" if found.choice and "type" not in overrides else type_kind(type_text or "str", index)
    return spec_from_keywords(action if isinstance(action, str) or action is None else "custom", nargs, kind)


def call_spec(call: ast.Call, keywords: dict, type_text: str, rule: TypeRule, index: Index) -> str:
    """The spec of one add_argument call: its field's, read through the rule (a `**kwargs["f"]` spread,
    with the code's edits and the call's own keywords over it), or the call's literal keywords."""
    info = keywords.get("__field__")
    if isinstance(info, FieldInfo):
        overrides = dict(keywords.get("__overrides__") or {})
        overrides.update({kw.arg: keywords[kw.arg] for kw in call.keywords if kw.arg in ("action", "nargs")})
        if type_text:
            overrides["type"] = TypeText(type_text)
        return field_spec(rule, info, overrides, index)
    action_text = next((ast.unparse(kw.value) for kw in call.keywords if kw.arg == "action"), None)
    action = keywords.get("action")
    action = action if isinstance(action, str) else action_text
    nargs = keywords.get("nargs")
    nargs = nargs if isinstance(nargs, (str, int)) or nargs is None else "?unknown"
    return spec_from_keywords(action, nargs, type_kind(type_text or "str", index))
