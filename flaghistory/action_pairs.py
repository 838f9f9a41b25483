"""The option strings vLLM's own argparse action makes beside those given to `add_argument`.

From vLLM 0.33.0 its FlexibleArgumentParser registers its own action in place of
`argparse.BooleanOptionalAction` (`self.register("action", BooleanOptionalAction,
EnableDisableAction)`): every boolean pair (a literal `action=argparse.BooleanOptionalAction` or one
that `get_kwargs` makes) then also answers to its inverse, `--enable-x` to `--disable-x` and
`--disable-x` to `--enable-x`, by the class's `_inverse_prefixes`. So `--disable-log-requests`,
removed as an option of its own in 0.17.0, parses again beside 0.33.0's `--enable-log-requests`.
Reading only what `add_argument` is given, the history would call that a removed option.

The pairing is read from the release's own class (the registered name, its prefix table), never
assumed: a release that registers an action whose table the reader cannot read says so in a
diagnostic, and its pairs are not invented.
"""

from __future__ import annotations

import ast

from driftmatrix.flaghistory.pyindex import Index

PARSER = "FlexibleArgumentParser"
TABLE = "_inverse_prefixes"
"""The class attribute vLLM's EnableDisableAction keeps its prefix → inverse prefix table in."""


def inverse_prefixes(index: Index) -> tuple[dict[str, str], list[str]]:
    """(prefix → inverse prefix, diagnostics) of the action the release's parser uses for
    BooleanOptionalAction; ({}, []) where it registers none (argparse's own: `--no-x` only)."""
    for module in index.modules.values():
        parser = module.defs.get(PARSER)
        if not isinstance(parser, ast.ClassDef):
            continue
        for call in ast.walk(parser):
            registered = _registered_for_boolean_optional(call)
            if registered is None:
                continue
            found = index.lookup_class(module, registered)
            table = _table(found[1]) if found else None
            if table is None:
                return {}, [
                    f"{module.path}:{call.lineno}: {PARSER} registers {registered} for BooleanOptionalAction; "
                    f"its option strings not read (no {TABLE} table)"
                ]
            return table, []
    return {}, []


def _registered_for_boolean_optional(node: ast.AST) -> str | None:
    """`self.register("action", BooleanOptionalAction, X)` → "X"."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "register"
        and len(node.args) == 3
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value == "action"
    ):
        return None
    key, action = node.args[1], node.args[2]
    if _name(key) != "BooleanOptionalAction":
        return None
    return _name(action)


def _name(node: ast.expr) -> str | None:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def _table(cls: ast.ClassDef) -> dict[str, str] | None:
    for stmt in cls.body:
        targets = (
            stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
        )
        if any(isinstance(t, ast.Name) and t.id == TABLE for t in targets) and stmt.value is not None:
            try:
                table = ast.literal_eval(stmt.value)
            except ValueError:
                return None
            if isinstance(table, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in table.items()):
                return table
    return None


def inverses(names: list[str], table: dict[str, str]) -> list[str]:
    """The option strings the action adds for those given (`--enable-x` → `--disable-x`), as its
    `__init__` does: only for the given names, not their `--no-…` twins."""
    return [
        inverse + name.removeprefix(prefix)
        for name in names
        for prefix, inverse in table.items()
        if name.startswith(prefix)
    ]
