"""The options `vllm serve` accepts in one release, read statically from its sources.

Starting where the release builds its `serve` sub-parser (`ServeSubcommand.subparser_init`
since 0.7, `vllm/scripts.py` before), the reader follows the calls that add arguments —
`make_arg_parser`, `FrontendArgs.add_cli_args`, `AsyncEngineArgs.add_cli_args`, `super()` —
and records every option string given to `add_argument`: literal names, names built from a
loop over `get_kwargs(SomeConfig)` (one per dataclass field), `--no-…` twins of boolean pairs
(and the `--disable-…`/`--enable-…` inverse vLLM's own action adds, flaghistory/action_pairs.py),
and `deprecated=True` markers with their help text. Branches are all taken (an option added
under any condition counts). What it cannot read is a diagnostic, never a crash.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from driftmatrix.flaghistory.action_pairs import inverse_prefixes, inverses
from driftmatrix.flaghistory.arg_types import TypeRule, TypeText, call_spec
from driftmatrix.flaghistory.dataclass_fields import BoolRule, FieldInfo, FieldKw, KwargsOf, bool_rule, fields_of
from driftmatrix.flaghistory.pyindex import BOOLEAN_OPTIONAL, UNKNOWN, Index, Module, evaluate
from driftmatrix.flaghistory.wording import help_says_deprecated

KWARGS_FACTORIES = ("get_kwargs", "_compute_kwargs")
PARSER_BUILDERS = ("add_argument_group", "add_mutually_exclusive_group")
MAX_DEPTH = 12


@dataclass
class OptionFound:
    """One option string of the serve parser in one release."""

    where: str
    """`vllm/engine/arg_utils.py:812`: the add_argument call that made it."""
    deprecated: bool = False
    """Marked `deprecated=True`, or its help says it is deprecated."""
    help: str = ""
    """The help text where the reader could evaluate it (deprecations quote it)."""
    choices: tuple | None = field(default=None, repr=False)
    """(module, `choices=` expression, the frame's names) of the add_argument call: values.py evaluates it."""
    source_field: FieldInfo | None = field(default=None, repr=False)
    """The dataclass field get_kwargs made the option from (its annotation gives Literal / Enum values)."""
    type_text: str = ""
    """The `type=` of a literal add_argument call as written (`json.loads`, `CompilationConfig.from_cli`):
    config_keys.py tells a JSON option and its class from it where no dataclass field made the option."""
    arg: str = ""
    """What it takes after it and the type of that word (flaghistory/arg_types.py: `one:int`, `none`)."""


@dataclass
class ReleaseOptions:
    version: str
    options: dict[str, OptionFound] = field(default_factory=dict)
    diagnostics: list[str] = field(default_factory=list)
    """What the reader could not understand (an option it may have missed, a file that did not parse)."""
    aliases: dict[str, str] = field(default_factory=dict)
    """Short option string → the long option given in the same add_argument call (`-cc` → `--compilation-config`)."""


@dataclass
class Frame:
    module: Module
    env: dict
    cls: tuple[Module, ast.ClassDef] | None = None
    """The class a classmethod was called on (`cls`), e.g. FrontendArgs for BaseFrontendArgs' method."""
    defining: tuple[Module, ast.ClassDef] | None = None
    """The class whose body holds the running method (for `super()`)."""
    serve_only: bool = False
    """In the entry function: only calls on the `serve` sub-parser count."""


class Reader:
    def __init__(self, index: Index, version: str):
        self.index = index
        self.rule: BoolRule = bool_rule(index)
        self.types = TypeRule(index)
        self.result = ReleaseOptions(version)
        self.visited: set[tuple[int, str]] = set()
        self.pairs, notes = inverse_prefixes(index)  # vLLM's own action: `--enable-x` also `--disable-x`
        self.result.diagnostics += notes

    # -- entry -------------------------------------------------------------------------
    def read(self) -> ReleaseOptions:
        self.result.diagnostics += [f"unparsable: {u}" for u in self.index.unparsable]
        entry = self._entry()
        if entry is None:
            self.result.diagnostics.append(
                "no serve sub-parser found (neither vllm/entrypoints/cli/serve.py nor vllm/scripts.py builds one)"
            )
            return self.result
        module, cls, fn = entry
        self._call(fn, Frame(module, {}, (module, cls) if cls else None, (module, cls) if cls else None, True), 0)
        if not self.result.options:
            self.result.diagnostics.append("the serve sub-parser was found but no option was read from it")
        return self.result

    def _entry(self):
        serve = self.index.modules.get("vllm.entrypoints.cli.serve")
        if serve is not None:
            for node in serve.tree.body:
                if isinstance(node, ast.ClassDef):
                    found = self.index.method(serve, node, "subparser_init")
                    if found and found[1] is node:
                        return serve, node, found[2]
        scripts = self.index.modules.get("vllm.scripts")
        for node in scripts.tree.body if scripts else []:
            if isinstance(node, ast.FunctionDef) and any(
                isinstance(c, ast.Constant) and c.value == "serve" for c in ast.walk(node)
            ):
                return scripts, None, node
        return None

    # -- statements ----------------------------------------------------------------------
    def _call(self, fn: ast.FunctionDef, frame: Frame, depth: int) -> object:
        key = (id(fn), frame.cls[1].name if frame.cls else "")
        if key in self.visited or depth > MAX_DEPTH:
            return UNKNOWN
        self.visited.add(key)
        return self._block(fn.body, frame, depth)

    def _block(self, body: list[ast.stmt], frame: Frame, depth: int) -> object:
        returned = UNKNOWN
        for stmt in body:
            value = self._stmt(stmt, frame, depth)
            if value is not UNKNOWN:
                returned = value
        return returned

    def _stmt(self, stmt: ast.stmt, frame: Frame, depth: int) -> object:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            frame.env[stmt.name] = stmt if isinstance(stmt, ast.FunctionDef) else UNKNOWN
            return UNKNOWN
        if isinstance(stmt, ast.For):
            self._for(stmt, frame, depth)
            return UNKNOWN
        if isinstance(stmt, (ast.If, ast.While, ast.With, ast.Try)):  # every branch: union of options
            for part in ("body", "orelse", "finalbody"):
                self._block(getattr(stmt, part, []), frame, depth)
            for handler in getattr(stmt, "handlers", []):
                self._block(handler.body, frame, depth)
            return UNKNOWN
        if isinstance(stmt, ast.Assign):
            self._assign(stmt, frame, depth)
            return UNKNOWN
        if isinstance(stmt, ast.Delete):
            for target in stmt.targets:
                self._delete(target, frame)
            return UNKNOWN
        if isinstance(stmt, ast.Return):
            return self._expr(stmt.value, frame, depth) if stmt.value is not None else UNKNOWN
        if isinstance(stmt, (ast.Expr, ast.AugAssign, ast.AnnAssign)) and stmt.value is not None:
            self._expr(stmt.value, frame, depth)
        return UNKNOWN

    def _for(self, stmt: ast.For, frame: Frame, depth: int) -> None:
        items = self._iterable(stmt.iter, frame, depth)
        if items is UNKNOWN:
            self._block(stmt.body, frame, depth)
            return
        for item in items:
            self._bind(stmt.target, item, frame)
            self._block(stmt.body, frame, depth)

    def _iterable(self, node: ast.expr, frame: Frame, depth: int):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args:
            owner = self._expr(node.func.value, frame, depth)
            if isinstance(owner, KwargsOf):
                names = [n for n in owner.fields if n not in owner.overrides.get("__deleted__", {})]
                if node.func.attr == "items":
                    return [(n, FieldKw(owner, n)) for n in names]
                if node.func.attr == "keys":
                    return names
        value = self._expr(node, frame, depth)
        if isinstance(value, KwargsOf):
            return list(value.fields)
        return value if isinstance(value, (list, tuple)) else UNKNOWN

    def _bind(self, target: ast.expr, value: object, frame: Frame) -> None:
        if isinstance(target, ast.Name):
            frame.env[target.id] = value
        elif isinstance(target, ast.Tuple):
            values = value if isinstance(value, (list, tuple)) and len(value) == len(target.elts) else None
            for i, element in enumerate(target.elts):
                self._bind(element, values[i] if values else UNKNOWN, frame)

    def _assign(self, stmt: ast.Assign, frame: Frame, depth: int) -> None:
        value = self._expr(stmt.value, frame, depth)
        for target in stmt.targets:
            if isinstance(target, ast.Subscript):
                target.parent_value = stmt.value  # type: ignore[attr-defined]  # the text of a `type` set
                self._set_item(target, value, frame, depth)
            else:
                self._bind(target, value, frame)

    def _set_item(self, target: ast.Subscript, value: object, frame: Frame, depth: int) -> None:
        """`kwargs["f"]["action"] = v` and `kwargs["f"]["flags"] = ["-x"]`: edits to a field's keywords."""
        inner = target.value
        if isinstance(inner, ast.Subscript):
            owner = self._expr(inner.value, frame, depth)
            name, key = (
                evaluate(inner.slice, frame.env, frame.module, self.index),
                evaluate(target.slice, frame.env, frame.module, self.index),
            )
            if isinstance(owner, KwargsOf) and isinstance(name, str) and isinstance(key, str):
                # a type is a function: kept as its text (flaghistory/arg_types.py reads it)
                owner.overrides.setdefault(name, {})[key] = (
                    TypeText(ast.unparse(target.parent_value)) if key == "type" else value
                )

    def _delete(self, target: ast.expr, frame: Frame) -> None:
        if (
            isinstance(target, ast.Subscript)
            and isinstance(target.value, ast.Subscript)
            and isinstance(target.value.value, ast.Name)
        ):  # `del kwargs["f"]["nargs"]`: that keyword gone
            owner = frame.env.get(target.value.value.id)
            name = evaluate(target.value.slice, frame.env, frame.module, self.index)
            key = evaluate(target.slice, frame.env, frame.module, self.index)
            if isinstance(owner, KwargsOf) and isinstance(name, str) and isinstance(key, str):
                owner.overrides.setdefault(name, {})[key] = None
            return
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            owner = frame.env.get(target.value.id)
            name = evaluate(target.slice, frame.env, frame.module, self.index)
            if isinstance(owner, KwargsOf) and isinstance(name, str):
                owner.overrides.setdefault("__deleted__", {})[name] = True

    # -- expressions ---------------------------------------------------------------------
    def _expr(self, node: ast.expr | None, frame: Frame, depth: int) -> object:
        if node is None:
            return UNKNOWN
        if isinstance(node, ast.Call):
            return self._call_expr(node, frame, depth)
        if isinstance(node, ast.Subscript):
            owner = self._expr(node.value, frame, depth)
            name = evaluate(node.slice, frame.env, frame.module, self.index)
            if isinstance(owner, KwargsOf) and isinstance(name, str):
                return FieldKw(owner, name)
            return UNKNOWN
        if isinstance(node, ast.Name) and isinstance(frame.env.get(node.id), (KwargsOf, FieldKw)):
            return frame.env[node.id]
        for child in ast.iter_child_nodes(node):  # calls nested in other expressions still run
            if isinstance(child, ast.Call):
                self._call_expr(child, frame, depth)
        return evaluate(node, frame.env, frame.module, self.index)

    def _call_expr(self, call: ast.Call, frame: Frame, depth: int) -> object:
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if name == "add_argument":
            if not frame.serve_only or self._on_serve(func.value, frame):  # type: ignore[union-attr]
                self._add_argument(call, frame)
            return UNKNOWN
        if name in KWARGS_FACTORIES and call.args:
            return self._kwargs_of(call.args[0], frame)
        if name == "add_parser" and frame.serve_only:
            first = evaluate(call.args[0], frame.env, frame.module, self.index) if call.args else UNKNOWN
            return "serve-parser" if first in ("serve", UNKNOWN) else UNKNOWN
        if name in PARSER_BUILDERS:
            return "serve-parser" if self._on_serve(func.value, frame) else UNKNOWN  # type: ignore[union-attr]
        if name == "pop" and isinstance(func, ast.Attribute):  # value.pop("flags", []): the extra names
            owner = self._expr(func.value, frame, depth)
            key = evaluate(call.args[0], frame.env, frame.module, self.index) if call.args else UNKNOWN
            if isinstance(owner, FieldKw) and isinstance(key, str):
                return owner.source.overrides.get(owner.name, {}).pop(key, [] if key == "flags" else UNKNOWN)
            return UNKNOWN
        return self._follow(call, frame, depth)

    def _on_serve(self, receiver: ast.expr, frame: Frame) -> bool:
        if not frame.serve_only:
            return True
        return isinstance(receiver, ast.Name) and frame.env.get(receiver.id) == "serve-parser"

    def _kwargs_of(self, arg: ast.expr, frame: Frame) -> object:
        if isinstance(arg, ast.Name) and arg.id == "cls" and frame.cls:
            module, cls = frame.cls
        elif isinstance(arg, ast.Name):
            found = self.index.lookup_class(frame.module, arg.id)
            if not found:
                self.result.diagnostics.append(
                    f"{frame.module.path}:{arg.lineno}: get_kwargs({arg.id}): class not found"
                )
                return UNKNOWN
            module, cls = found
        else:
            return UNKNOWN
        return KwargsOf(cls.name, fields_of(self.index, module, cls))

    # -- calls that add arguments -------------------------------------------------------
    def _callee(self, func: ast.expr, frame: Frame):
        """(module, function, cls, defining class) for a call the reader can follow, or None."""
        if isinstance(func, ast.Name):
            local = frame.env.get(func.id)
            if isinstance(local, ast.FunctionDef):
                return frame.module, local, frame.cls, frame.defining
            found = self.index.lookup_function(frame.module, func.id)
            return (found[0], found[1], None, None) if found else None
        if not isinstance(func, ast.Attribute):
            return None
        owner = func.value
        if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
            if frame.defining is None:
                return None
            for base_module, base in self.index.bases(*frame.defining):
                found = self.index.method(base_module, base, func.attr)
                if found:
                    return found[0], found[2], frame.cls, (found[0], found[1])
            return None
        if isinstance(owner, ast.Name) and owner.id == "cls" and frame.cls:
            cls = frame.cls
        elif isinstance(owner, ast.Name) and owner.id not in frame.env:
            cls = self.index.lookup_class(frame.module, owner.id)
        else:
            return None
        found = self.index.method(cls[0], cls[1], func.attr) if cls else None
        return (found[0], found[2], cls, (found[0], found[1])) if found else None

    def _follow(self, call: ast.Call, frame: Frame, depth: int) -> object:
        args = [self._expr(a, frame, depth) for a in call.args]
        keywords = {k.arg: self._expr(k.value, frame, depth) for k in call.keywords if k.arg}
        callee = self._callee(call.func, frame)
        if callee is None:
            return UNKNOWN
        module, fn, cls, defining = callee
        passes_parser = "serve-parser" in args or "serve-parser" in keywords.values()
        passes_kwargs = any(isinstance(a, KwargsOf) for a in [*args, *keywords.values()])
        text = ast.unparse(fn)
        if frame.serve_only and not passes_parser:
            return UNKNOWN
        if not (passes_parser or passes_kwargs or "add_argument" in text or "add_cli_args" in text):
            return UNKNOWN
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        decorators = {ast.unparse(d) for d in fn.decorator_list}
        if defining is not None and "staticmethod" not in decorators and params:
            params = params[1:]  # self / cls
        env = dict(zip(params, args))
        env.update({k: v for k, v in keywords.items() if k in params})
        returned = self._call(fn, Frame(module, env, cls, defining), depth + 1)
        return "serve-parser" if passes_parser and returned is UNKNOWN else returned

    def _add_argument(self, call: ast.Call, frame: Frame) -> None:
        where = f"{frame.module.path}:{call.lineno}"
        names: list[str] = []
        for arg in call.args:
            value = (
                self._expr(arg.value, frame, 0)
                if isinstance(arg, ast.Starred)
                else evaluate(arg, frame.env, frame.module, self.index)
            )
            values = value if isinstance(value, list) else [value]
            for v in values:
                if not isinstance(v, str):
                    self.result.diagnostics.append(f"{where}: option name not readable: {ast.unparse(arg)}")
                elif v.startswith("-"):
                    names.append(v)
        keywords = self._keywords(call, frame, where)
        made: list[str] = []  # what the action adds: argparse's `--no-x`, then vLLM's inverse (action_pairs.py)
        if keywords.get("action") == BOOLEAN_OPTIONAL:
            made = ["--no-" + n[2:] for n in names if n.startswith("--")] + inverses(names, self.pairs)
        names += made
        helptext = keywords.get("help") if isinstance(keywords.get("help"), str) else ""
        deprecated = keywords.get("deprecated") is True or help_says_deprecated(helptext)
        choices = next(((frame.module, kw.value, dict(frame.env)) for kw in call.keywords if kw.arg == "choices"), None)
        if choices is None and isinstance(keywords.get("choices"), list):  # set as kwargs["f"]["choices"] = [...]
            choices = (frame.module, None, keywords["choices"])
        spread = keywords.get("__field__")
        type_text = next((ast.unparse(kw.value) for kw in call.keywords if kw.arg == "type"), "")
        arg = call_spec(call, keywords, type_text, self.types, self.index)
        long = next((n for n in names if n.startswith("--")), None)
        for name in names if long is not None else []:
            if not name.startswith("--"):
                self.result.aliases.setdefault(name, long)
        for name in names:
            found = self.result.options.setdefault(name, OptionFound(where))
            found.deprecated = found.deprecated or deprecated
            found.help = found.help or helptext
            found.choices = found.choices or choices
            found.source_field = found.source_field or spread
            found.type_text = found.type_text or type_text
            found.arg = found.arg or ("none" if name in made else arg)

    def _keywords(self, call: ast.Call, frame: Frame, where: str) -> dict:
        """The call's argparse keywords, `**kwargs["field"]` spread in as get_kwargs makes them."""
        keywords: dict = {}
        for kw in call.keywords:
            if kw.arg is not None:
                continue
            for spread, literal in self._spreads(kw.value, frame):
                if literal is not None:
                    keywords.update(literal)
                    keywords.setdefault("__overrides__", {}).update(literal)
                    continue
                info = spread.source.fields.get(spread.name)
                if info is None:
                    self.result.diagnostics.append(f"{where}: {spread.source.cls} has no field {spread.name!r}")
                    continue
                keywords["action"] = BOOLEAN_OPTIONAL if self.rule.pair(info) else None
                keywords["help"] = info.doc
                keywords["__field__"] = info
                keywords["__overrides__"] = dict(spread.source.overrides.get(spread.name, {}))
                keywords.update(spread.source.overrides.get(spread.name, {}))
        for kw in call.keywords:
            if kw.arg is not None:
                keywords[kw.arg] = evaluate(kw.value, frame.env, frame.module, self.index)
        return keywords

    def _spreads(self, node: ast.expr, frame: Frame):
        """`**kwargs["f"]` → (FieldKw, None); `**{**kwargs["f"], "default": None}` → that, then the
        literal keys as (None, {key: value}), in the order Python applies them."""
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if key is None:
                    yield from self._spreads(value, frame)
                elif isinstance(name := evaluate(key, frame.env, frame.module, self.index), str):
                    yield (
                        None,
                        {
                            name: TypeText(ast.unparse(value))
                            if name == "type"
                            else evaluate(value, frame.env, frame.module, self.index)
                        },
                    )
            return
        spread = self._expr(node, frame, 0)
        if isinstance(spread, FieldKw):
            yield spread, None
