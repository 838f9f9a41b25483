"""The literal values of Python expressions in the docs' code, read with `ast` (never run): what a
name was assigned before a line, and an expression's value with those names filled in. Shared by the
engine-call reader (extractor/python_calls.py) and the command-string reader (extractor/python_strings.py)."""

from __future__ import annotations

import ast
import bisect
import copy
import re
from typing import Any

UNRESOLVED = object()
"""What `evaluate` gives for an expression that is not a literal (a call, an unknown name)."""


class _Names(ast.NodeTransformer):
    def __init__(self, assigned: Assigned | dict[str, ast.expr]):
        self.assigned = assigned

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return self.assigned.get(node.id, node)


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
"""A line with its end, as `ast` splits source (`\r\n`, `\r` or `\n`; not a form feed)."""


class Code:
    """A parsed Python block and what its readers look up in it, each made once: its lines (for a
    node's text) and its assignments by name (for the names assigned before a line). Per command,
    `ast.get_source_segment` split the whole block and a walk of the whole tree found the
    assignments: a block of N commands cost N² (2,000 command strings took 33 s)."""

    def __init__(self, text: str, tree: ast.AST):
        self.text, self.tree = text, tree
        self._lines: list[str] | None = None
        self._by_name: dict[str, tuple[list[int], list[ast.expr]]] | None = None

    def segment(self, node: ast.AST) -> str | None:
        """`ast.get_source_segment(text, node)`."""
        try:
            if node.end_lineno is None or node.end_col_offset is None:
                return None
            first, last, col, end_col = node.lineno - 1, node.end_lineno - 1, node.col_offset, node.end_col_offset
        except AttributeError:
            return None
        if self._lines is None:
            self._lines = _LINE.findall(self.text)
        lines = self._lines
        if first == last:
            return lines[first].encode()[col:end_col].decode()
        return "".join(
            [lines[first].encode()[col:].decode(), *lines[first + 1 : last], lines[last].encode()[:end_col].decode()]
        )

    def assigned_before(self, line: int) -> Assigned:
        """The names assigned before `line` (the last assignment of each), as expressions."""
        if self._by_name is None:
            self._by_name = _assignments(self.tree)
        return Assigned(self._by_name, line)


def _assignments(tree: ast.AST) -> dict[str, tuple[list[int], list[ast.expr]]]:
    """Name -> (lines, values) of its assignments (`x = …`, `x: T = …`), by line; on one line in
    `ast.walk` order."""
    found: list[tuple[int, str, ast.expr]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            found += [(node.lineno, t.id, node.value) for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and node.value is not None and isinstance(node.target, ast.Name):
            found.append((node.lineno, node.target.id, node.value))
    by_name: dict[str, tuple[list[int], list[ast.expr]]] = {}
    for lineno, name, value in sorted(found, key=lambda x: x[0]):
        lines, values = by_name.setdefault(name, ([], []))
        lines.append(lineno)
        values.append(value)
    return by_name


class Assigned:
    """What each name was last assigned before a line (looked up by binary search, not copied)."""

    def __init__(self, by_name: dict[str, tuple[list[int], list[ast.expr]]], line: int):
        self.by_name, self.line = by_name, line

    def get(self, name: str, default: Any = None) -> Any:
        lines, values = self.by_name.get(name, ((), ()))
        i = bisect.bisect_left(lines, self.line)
        return values[i - 1] if i else default


def evaluate(node: ast.expr, assigned: Assigned | dict[str, ast.expr]) -> Any:
    """The literal value of `node`, or `UNRESOLVED`."""
    for candidate in (node, _Names(assigned).visit(copy.deepcopy(node))):
        try:
            return ast.literal_eval(candidate)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
    return UNRESOLVED
