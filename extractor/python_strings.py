"""vLLM command lines held by Python code: a string (`cmd = "vllm serve Qwen/Qwen3-8B --port 8000"`,
`os.system(...)`, `subprocess.run(..., shell=True)`) or an argument list (`subprocess.Popen(["vllm",
"serve", model, "--port", "8000"])`). Each is read as the shell would read it, its source line is
the string's, and its context says it was found in Python.

A list element that is not a literal is looked up among the names assigned before it, as for
`LLM(...)` keyword arguments; one that stays unknown is a placeholder (`<expr>`).
"""

from __future__ import annotations

import ast
import re
import shlex

from driftmatrix.extractor.python_values import UNRESOLVED, Code, evaluate
from driftmatrix.extractor.shell_commands import scan
from driftmatrix.extractor.snippet_builder import Place, from_shell_text
from driftmatrix.extractor.snippet_record import Snippet

_UNQUOTED_PLACEHOLDER = re.compile(r"'(<[^'<>]*>)'")
_LITERAL = re.compile(r"([rRuU]?)(\"\"\"|'''|\"|')(.*)\2", re.S)


def command_strings(code: Code, place: Place) -> list[Snippet]:
    tree = code.tree
    out: list[Snippet] = []
    lists: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple)) and _starts_vllm(node):
            out += _from_list(code, node, place)
            lists.update(id(e) for e in node.elts)
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):  # its parts are read with it, never alone
            lists.update(id(v) for v in node.values)
    for node in ast.walk(tree):
        if id(node) in lists:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "vllm" in node.value:
            out += _from_string(_as_written(code, node), node.lineno, place)
        elif isinstance(node, ast.JoinedStr):
            # f"vllm serve {model}": a replacement field is the reader's value, `{model}` a placeholder
            value = "".join(
                v.value if isinstance(v, ast.Constant) else "{" + ast.unparse(v.value) + "}"
                for v in node.values
                if isinstance(v, (ast.Constant, ast.FormattedValue))
            )
            if "vllm" in value:
                out += _from_string(value, node.lineno, place)
    return out


def _starts_vllm(node: ast.List | ast.Tuple) -> bool:
    heads = [e.value for e in node.elts[:4] if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return (
        heads[:2] == ["vllm", "serve"]
        or heads[:1] == ["vllm"]
        and len(node.elts) > 2
        or len(heads) >= 3
        and heads[1] == "-m"
        and heads[2].startswith("vllm.entrypoints")
    )


def _as_written(code: Code, node: ast.Constant) -> str:
    """The string's body as the page shows it: a `\\`-newline inside a Python string joins lines
    the way bash does, so reading the body as shell keeps both the command and its lines (the
    evaluated value has them joined). The value when the literal is not one plain string."""
    segment = code.segment(node) or ""
    m = _LITERAL.fullmatch(segment)
    if not m or m.group(2) in m.group(3).replace("\\" + m.group(2)[0], ""):  # `"a" "b"`: concatenated
        return node.value
    return m.group(3)


def _from_string(value: str, lineno: int, place: Place) -> list[Snippet]:
    found = scan(value)
    if not found.invocations:
        return []
    return from_shell_text(value, place.at(place.line + lineno - 1, context=_context(place, "a string")), found=found)


def _from_list(code: Code, node: ast.List | ast.Tuple, place: Place) -> list[Snippet]:
    assigned = code.assigned_before(node.lineno)
    words = []
    for element in node.elts:
        value = evaluate(element, assigned)
        words.append(str(value) if value is not UNRESOLVED else f"<{ast.unparse(element)}>")
    line = _UNQUOTED_PLACEHOLDER.sub(r"\1", shlex.join(words))  # an unknown element stays `<expr>`, a placeholder
    return from_shell_text(line, place.at(place.line + node.lineno - 1, context=_context(place, "an argument list")))


def _context(place: Place, what: str) -> str:
    return f"{place.context} in {what}" if place.context else f"python {what}"
