"""The literal values of Python expressions in the docs' code, read with `ast` (never run): what a
name was assigned before a line, and an expression's value with those names filled in. Shared by the
engine-call reader (extractor/python_calls.py) and the command-string reader (extractor/python_strings.py)."""

from __future__ import annotations

import ast
import copy
from typing import Any

UNRESOLVED = object()
"""What `evaluate` gives for an expression that is not a literal (a call, an unknown name)."""


class _Names(ast.NodeTransformer):
    def __init__(self, assigned: dict[str, ast.expr]):
        self.assigned = assigned

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return self.assigned.get(node.id, node)


def assignments_before(tree: ast.AST, line: int) -> dict[str, ast.expr]:
    """The names assigned before `line` (the last assignment of each), as expressions."""
    found: list[tuple[int, str, ast.expr]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and node.lineno < line:
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found.append((node.lineno, target.id, node.value))
        elif isinstance(node, ast.AnnAssign) and node.value is not None and node.lineno < line:
            if isinstance(node.target, ast.Name):
                found.append((node.lineno, node.target.id, node.value))
    return {name: value for _, name, value in sorted(found, key=lambda x: x[0])}


def evaluate(node: ast.expr, assigned: dict[str, ast.expr]) -> Any:
    """The literal value of `node`, or `UNRESOLVED`."""
    for candidate in (node, _Names(assigned).visit(copy.deepcopy(node))):
        try:
            return ast.literal_eval(candidate)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
    return UNRESOLVED
