"""The values one release's serve options accept, and the keys of its JSON options (schema: issue 34).

Per option, in this order: a registry rule (registries.py: parsers, quantization, load formats,
attention backends — names vLLM registers outside the option), else its `choices=` (evaluated by
literals.py: literal lists, `[*TABLE, None]`, enum comprehensions), else the Literal / Enum type of
the dataclass field get_kwargs made it from. Options with none of these take free values and are
left out; an option a rule is for but that rule and the fallbacks find nothing for gets a
diagnostic, never an empty set (so the history says "not read", not "no names").
"""

from __future__ import annotations

import ast
import re

from driftmatrix.flaghistory.config_keys import json_options, no_class, read_keys
from driftmatrix.flaghistory.deprecations import deprecation_texts
from driftmatrix.flaghistory.literals import memo, nodes, origin, strings
from driftmatrix.flaghistory.pyindex import Index, evaluate
from driftmatrix.flaghistory.reader import OptionFound, ReleaseOptions
from driftmatrix.flaghistory.registries import EXTRA_RULES, RULES, Found
from driftmatrix.flaghistory.wording import REPLACING

DOMAINS = {
    "--tool-call-parser": "tool-call parsers",
    "--reasoning-parser": "reasoning parsers",
    "--quantization": "quantization methods",
    "--load-format": "load formats",
    "--speculative-config.method": "speculative decoding methods",
    "--spec-method": "speculative decoding methods",
    "--attention-backend": "attention backends",
    "--distributed-executor-backend": "distributed executors",
}
SPECULATIVE = (
    "Whether a method works depends on the draft model or on the target model having the matching MTP/EAGLE layers."
)
MODEL_DEPENDENT = {
    "--speculative-config.method": SPECULATIVE,
    "--spec-method": SPECULATIVE,
    "--quantization": "Whether a method works depends on the checkpoint's quantization config and on the GPU.",
    "--tool-call-parser": "Whether a parser works depends on the model's chat template and tool-call format.",
    "--reasoning-parser": "Whether a parser works depends on the model emitting that parser's reasoning tokens.",
}
OPEN_WITH = {"--tool-call-parser": ("--tool-parser-plugin",), "--reasoning-parser": ("--reasoning-parser-plugin",)}
"""Options that register more names at run time (a plugin file): with them, an unknown name is unknown."""
MAX_TEXT = 400


def _from_option(index: Index, option: OptionFound) -> Found | None:
    if option.choices is not None:
        module, node, env = option.choices
        got = (
            strings(index, module, node, env)
            if node is not None
            else ("choices", [v for v in env if isinstance(v, str)])
            if env
            else None
        )
        if got:
            return Found(sorted(set(got[1])), module.path, got[0])
    info = option.source_field
    if info is not None and info.module is not None:
        got = strings(index, info.module, info.annotation, {})
        where = origin(index, info.module, info.annotation)
        free = ast.unparse(info.annotation) if "str" in info.types else None  # `Literal | str`: metavar, not choices
        if got and got[0] == "enum-upper":
            return Found(sorted(set(got[1])), where, "enum", "upper", free)
        if got and got[0] in ("literal", "enum"):
            return Found(sorted(set(got[1])), where, got[0], info.fold, free)
    return None


def option_values(index: Index, found: ReleaseOptions) -> tuple[dict[str, dict], list[str]]:
    values, diagnostics = {}, []
    for name, option in sorted(found.options.items()):
        if name.startswith("--no-") or not name.startswith("--"):  # canonical names only (`-q` is --quantization)
            continue
        rule = RULES.get(name)
        got = _with_registry(index, name, (rule(index) if rule else None) or _from_option(index, option))
        got = _without_removed(index, name, got)
        if got is None:
            if rule is not None:
                diagnostics.append(f"values of {name}: its registry rule found no names in this release")
            elif name in DOMAINS:
                diagnostics.append(f"values of {name}: neither choices nor a Literal/Enum type in this release")
            elif option.choices is not None and option.choices[1] is not None and not _numbers(option.choices[1]):
                diagnostics.append(f"values of {name}: choices not readable: {ast.unparse(option.choices[1])[:120]}")
            continue
        if not got.values:
            continue
        got.deprecated.update(_said_deprecated(index, name, got.values))
        values[name] = _domain(name, got, found)
    return values, diagnostics


def _with_registry(index: Index, name: str, got: Found | None) -> Found | None:
    """The names a registry of EXTRA_RULES adds to the field's own (union): then from "registry" and
    where the registry's file, the field's `open` kept. Without the field's own names the union would
    miss `auto` & co: then nothing is recorded (values not read), never the registry alone."""
    rule = EXTRA_RULES.get(name)
    more = rule(index) if rule is not None and got is not None else None
    if more is None or got is None:
        return got
    return Found(sorted({*got.values, *more.values}), more.where, "registry", got.fold, got.open, got.deprecated)


def _removed_choices(index: Index) -> dict[str, set[str]]:
    """Names the serve parser's code takes out of an option's choices before adding it:
    `parallel_kwargs["all2all_backend"]["choices"].remove(PASSTHROUGH_ALL2ALL_BACKEND)` followed, in the
    same function, by `add_argument("--all2all-backend", **parallel_kwargs["all2all_backend"])`. Only a
    certain string removed from a `V["field"]["choices"]` of a `**V["field"]` spread counts."""

    def read():
        removed: dict[str, set[str]] = {}
        for module, fn in nodes(index, (ast.FunctionDef,)):
            taken: dict[str, set[str]] = {}  # `V["field"]` as written → names removed
            for call in ast.walk(fn):
                if not (
                    isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Attribute)
                    and call.func.attr == "remove"
                    and len(call.args) == 1
                    and isinstance(call.func.value, ast.Subscript)
                ):
                    continue
                target = call.func.value
                if not (
                    isinstance(target.slice, ast.Constant)
                    and target.slice.value == "choices"
                    and isinstance(target.value, ast.Subscript)
                ):
                    continue
                value = evaluate(call.args[0], {}, module, index)
                if isinstance(value, str):
                    taken.setdefault(ast.unparse(target.value), set()).add(value)
            if not taken:
                continue
            for call in ast.walk(fn):
                if (
                    isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Attribute)
                    and call.func.attr == "add_argument"
                ):
                    spread = [ast.unparse(k.value) for k in call.keywords if k.arg is None]
                    names = [
                        a.value
                        for a in call.args
                        if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("--")
                    ]
                    for kwargs in spread:
                        for option in names if kwargs in taken else []:
                            removed.setdefault(option, set()).update(taken[kwargs])
        return removed

    return memo(index, "removed-choices", read)


def _without_removed(index: Index, name: str, got: Found | None) -> Found | None:
    gone = _removed_choices(index).get(name) if got is not None else None
    if not gone:
        return got
    return Found(
        [v for v in got.values if v not in gone],
        got.where,
        got.kind,
        got.fold,
        got.open,  # type: ignore[union-attr]
        got.deprecated,
    )  # type: ignore[union-attr]


def _numbers(node: ast.expr) -> bool:
    """`choices=[8, 16, 32]`: numbers argparse converts, not names (left out, nothing to say)."""
    return isinstance(node, (ast.List, ast.Tuple)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, (int, float)) for e in node.elts
    )


def _domain(name: str, got: Found, found: ReleaseOptions) -> dict:
    return {
        "domain": DOMAINS.get(name, f"values of {name}"),
        "from": got.kind,
        "where": got.where,
        "values": got.values,
        "fold": got.fold,
        "open": got.open,
        "deprecated": {k: v for k, v in got.deprecated.items() if k in got.values},  # a table may name removed ones
        "open_with": [o for o in OPEN_WITH.get(name, ()) if o in found.options],
        "model_dependent": MODEL_DEPENDENT.get(name),
    }


# -- values vLLM's text calls deprecated ----------------------------------------------------
def _said_deprecated(index: Index, option: str, values: list[str]) -> dict[str, dict]:
    """`--convert reward is deprecated …` in a message, or a warning saying "deprecated" in an
    `if <field> == "value":` branch. The replacement is another value of the same set that a
    "use … / instead" sentence names."""
    said: dict[str, dict] = {}
    known = set(values)
    for value, text in [*_messages(index, option, known), *_branches(index, option, known)]:
        if value not in said or said[value]["replacement"] is None:
            said[value] = {"text": " ".join(text.split())[:MAX_TEXT], "replacement": _other_value(text, value, known)}
    return said


def _messages(index: Index, option: str, known: set[str]):
    for text in memo(index, "deprecated-strings", lambda: [t for t in deprecation_texts(index) if "--" in t]):
        if option not in text:
            continue
        for value in known:
            pattern = (
                rf"{re.escape(option)}[ =][`'\"]?{re.escape(value)}[`'\"]?\s*`?\s+(?:is|has been|was)\s+"
                rf"(?:now\s+)?deprecated"
            )
            if re.search(pattern, text):
                yield value, text


def _compared(index: Index) -> list[tuple[str, ast.If]]:
    """`if <x> == "lit":` / `if <x> in (...):` branches whose body says "deprecated", by the field they test."""
    found = []
    for _, node in nodes(index, (ast.If,)):
        test = node.test
        if (
            isinstance(test, ast.Compare)
            and isinstance(test.ops[0], (ast.Eq, ast.In))
            and any("deprecated" in t.lower() for t in _texts(node.body))
        ):
            found.append((ast.unparse(test.left).rsplit(".", 1)[-1], node))
    return found


def _branches(index: Index, option: str, known: set[str]):
    field_name = option[2:].replace("-", "_")
    for left, node in memo(index, "compared", lambda: _compared(index)):
        if left != field_name:
            continue
        compared = [c.value for c in ast.walk(node.test) if isinstance(c, ast.Constant) and c.value in known]
        text = next(t for t in _texts(node.body) if "deprecated" in t.lower())
        for value in compared:
            yield value, text


def _texts(body: list[ast.stmt]):
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                yield node.value
            elif isinstance(node, ast.JoinedStr):
                yield "".join(v.value if isinstance(v, ast.Constant) else "{…}" for v in node.values)


def _other_value(text: str, value: str, known: set[str]) -> str | None:
    for sentence in re.split(r"(?<=[.!?])\s+", text):
        if not REPLACING.search(sentence):
            continue
        for match in re.finditer(r"[`'\"]([\w.-]+)[`'\"]|(?<=[ =])([\w.-]+)", sentence):
            word = match.group(1) or match.group(2)
            if word != value and word in known:
                return word
    return None


# -- the keys of JSON options ---------------------------------------------------------------
def option_keys(index: Index, found: ReleaseOptions) -> tuple[dict[str, dict], dict[str, dict], list[str]]:
    """(keys by option, values of Literal-typed keys as `--option.key`, diagnostics)."""
    keys, values, diagnostics = {}, {}, []
    for name in json_options(found):
        read = read_keys(index, name, found)
        option = found.options[name]
        free = (
            option.source_field.types & {"dict", "Dict"}
            if option.source_field
            else "json.loads" in option.type_text or name.endswith("-extra-config")
        )  # passed on as a dict by design
        if read is None and free and no_class(index, name).startswith("no config class"):
            continue  # a free-form JSON object (`--override-generation-config`): no keys to read
        if read is None:
            diagnostics.append(f"keys of {name}: {no_class(index, name)}")
            continue
        keys[name] = {
            "class": read.cls,
            "where": read.where,
            "closed": read.closed,
            "keys": read.keys,
            "deprecated": read.deprecated,
        }
        for key, (kind, names, where) in read.values.items():
            option = f"{name}.{key}"
            got = _with_registry(index, option, Found(sorted(set(names)), where, kind, read.folds.get(key)))
            values[option] = _domain(option, got, found)  # type: ignore[arg-type]
        for option in DOMAINS:  # a named domain whose key exists but is not typed with its names
            base, _, key = option.partition(".")
            if base == name and key in read.keys and option not in values:
                diagnostics.append(
                    f"values of {option}: {read.cls}.{key} is not typed with a Literal of its "
                    "names in this release: not read"
                )
    return keys, values, diagnostics
