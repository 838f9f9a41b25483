"""`LLM(..., speculative_config={...})` and friends in Python snippets, via `ast`.

Keyword values are evaluated with `ast.literal_eval` only; a name is replaced by the
literal it was last assigned before the call (`model_path = "google/…"`), anything else
stays an unresolved expression and makes the snippet not runnable.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from driftmatrix.extractor.python_blocks import Rejection, as_pasted, rejected
from driftmatrix.extractor.python_strings import command_strings
from driftmatrix.extractor.python_values import UNRESOLVED, Code, evaluate
from driftmatrix.extractor.snippet_builder import Place, build
from driftmatrix.extractor.snippet_record import Diagnostic, Snippet

CALLS = {"LLM", "AsyncEngineArgs", "EngineArgs", "AsyncLLMEngine", "LLMEngine"}


def _call_name(node: ast.Call) -> str | None:
    func = node.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    return name if name in CALLS else None


def kwargs_to_argv(model: Any, kwargs: dict[str, Any]) -> list[str]:
    """The `vllm serve` arguments equivalent to engine keyword arguments."""
    argv = [str(model)] if model is not None else []
    for key, value in kwargs.items():
        if key == "model" or value is None:
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            argv.append(flag)
        elif value is False:
            argv.append("--no-" + key.replace("_", "-"))
        elif isinstance(value, (dict, list, tuple)):
            argv += [flag, json.dumps(value, default=str)]
        else:
            argv += [flag, str(value)]
    return argv


def from_python(text: str, place: Place) -> tuple[list[Snippet], list[Diagnostic]]:
    """Snippets for every engine construction with `speculative_config=` in `text`, and for every
    vLLM command line the code holds as a string or an argument list (extractor/python_strings.py),
    read as a reader pastes the block (extractor/python_blocks.py). A block Python rejects that holds
    such usage is a snippet that does not run as written (a `python-syntax` lint; extractor/corpus.py
    repeats it on stderr); one that merely names vllm is pseudo-code: nothing is lost."""
    if "speculative_config" not in text and "vllm" not in text:
        return [], []
    pasted, tree = as_pasted(text)
    if isinstance(tree, Rejection):
        what = _what_is_lost(text)
        return (rejected(text, pasted, tree, what, place) if what else []), []
    code = Code(pasted, tree)  # its lines and assignments, looked up per command
    snippets = command_strings(code, place)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not (call := _call_name(node)):
            continue
        if not any(kw.arg == "speculative_config" for kw in node.keywords):
            continue
        snippets.append(_snippet(code, node, call, place))
    return snippets, []


_COMMAND_TEXT = re.compile(r"""\bvllm\W+serve\b|vllm\.entrypoints|["']serve["']""")


def _what_is_lost(text: str) -> str | None:
    """What an unparsable block may hold that the extractor reads, in words; None when nothing."""
    if "speculative_config" in text:
        return "mentions speculative_config"
    if _COMMAND_TEXT.search(text):
        return "holds a vLLM command line"
    return None


def _snippet(code: Code, node: ast.Call, call: str, place: Place) -> Snippet:
    assigned = code.assigned_before(node.lineno)
    kwargs: dict[str, Any] = {}
    record: dict[str, Any] = {}
    unresolved: list[str] = []

    def value_of(expr: ast.expr) -> Any:
        value = evaluate(expr, assigned)
        if value is UNRESOLVED:
            src = ast.unparse(expr)
            unresolved.append(src)
            record_value = {"unresolved": src}
            return f"<{src}>", record_value
        return value, value

    model = None
    if node.args:
        model, record["model"] = value_of(node.args[0])
    for kw in node.keywords:
        if kw.arg is None:
            unresolved.append("**" + ast.unparse(kw.value))
            continue
        kwargs[kw.arg], record[kw.arg] = value_of(kw.value)
    if "model" in kwargs:
        model = kwargs["model"]
    snippet = build(
        "python",
        kwargs_to_argv(model, kwargs),
        {},
        place.source(node.lineno - 1, code.segment(node) or ""),
        python={"call": call, "kwargs": record},
        extra_placeholders=[f"<{u}>" if not u.startswith("**") else u for u in unresolved],
        placeholder_models=place.placeholder_models,
    )
    if unresolved:
        snippet.reason = "unresolved Python expression: " + ", ".join(unresolved)
    spec = kwargs.get("speculative_config")
    if isinstance(spec, dict):
        snippet.speculative_config = spec  # keep Python values (True, not "true")
    return snippet
