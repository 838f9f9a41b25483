"""Judging what follows an option against what that release's parser takes there (a spec of
flaghistory/arg_types.py), the way argparse and vLLM's type functions would, in their words.

- arity: a flag given a value (`--enforce-eager=true`: "ignored explicit argument"), a flag followed by a
  word when the model was already given (`--trust-remote-code True`: "unrecognized arguments"), an option
  that takes one word given none ("expected one argument");
- type: `int`, `float`, vLLM's `human_readable_int` (`32k`, with that release's suffixes), JSON that does
  not parse as the shell hands it over (bash removed unquoted double quotes, a trailing comma, a
  backslash-newline inside single quotes).

What a spec does not say (`unknown`, a type `?`, a choice, a plain string, several words) is None —
cannot say — never a yes by default.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

HUMAN_NUMBER = re.compile(r"\b\d+(?:\.\d+)?[kKmMgGtT]\b")
"""What vLLM's `_expand_json_human_readable_numbers` expands inside a JSON option (0.2x on)."""
BRACED = re.compile(r"(?s)^\s*{.*}\s*$")
"""`union_dict_and_str`'s own test: only a `{…}` value is parsed as JSON."""


@dataclass(frozen=True)
class ArgumentAnswer:
    ok: bool | None
    words: str = ""
    """argparse's or vLLM's words for a refusal (without the `argument --x:` head), and what to do."""


def judge(spec: str, value: str | None, inline: bool, after_model: bool) -> ArgumentAnswer:
    """`value`: the word after the option (or after its `=`), None when an option or the end follows;
    `after_model`: the command gave its model positionally before this option."""
    takes, _, kind = spec.partition(":")
    if takes == "none":
        if value is not None and inline:
            return ArgumentAnswer(
                False, f"ignored explicit argument '{value}' (the option is a flag and takes no value)"
            )
        if value is not None and after_model:
            return ArgumentAnswer(False, f"unrecognized arguments: {value} (the option is a flag and takes no value)")
        return ArgumentAnswer(True if value is None else None)
    if takes == "one":
        if value is None:
            return ArgumentAnswer(False, "expected one argument")
        return _typed(kind, value)
    if takes == "optional":
        return ArgumentAnswer(True) if value is None else _typed(kind, value)
    return ArgumentAnswer(None)


def _typed(kind: str, value: str) -> ArgumentAnswer:
    optional = kind.endswith("?")
    base = kind.rstrip("?")
    if optional and value in ("", "None"):
        return ArgumentAnswer(True)
    if base in ("int", "float"):
        return _number(base, value, optional)
    if base.startswith("hint["):
        return _human(base, value)
    if base in ("json", "json{}"):
        return _json(value, braced_only=base == "json{}")
    if base == "dict|str":  # vLLM's union_dict_and_str
        return _json(value, braced_only=False) if BRACED.match(value) else ArgumentAnswer(True)
    if base == "str":
        return ArgumentAnswer(True)
    return ArgumentAnswer(None)  # a choice (the values' business), a type the reader did not follow


def _number(base: str, value: str, optional: bool) -> ArgumentAnswer:
    try:
        (int if base == "int" else float)(value)
        return ArgumentAnswer(True)
    except ValueError:
        pass
    if optional:  # vLLM's optional_type → parse_type words
        return ArgumentAnswer(False, f"Value {value} cannot be converted to <class '{base}'>.")
    return ArgumentAnswer(False, f"invalid {base} value: '{value}'")


def _human(kind: str, value: str) -> ArgumentAnswer:
    """vLLM's human_readable_int: an int, or digits with one of that release's suffixes (decimals only
    with a decimal, lower-case, suffix); `|auto`: also -1 and `auto`."""
    suffixes, _, auto = kind[len("hint[") :].partition("]")
    text = value.strip()
    if auto and (text == "-1" or text.lower() == "auto"):
        return ArgumentAnswer(True)
    found = re.fullmatch(r"(\d+(?:\.\d+)?)([a-zA-Z])", text)
    if found and found.group(2) in suffixes:
        number, suffix = found.groups()
        if suffix.islower() or "." not in number:
            return ArgumentAnswer(True)
        return ArgumentAnswer(
            False,
            f"Decimals are not allowed with binary suffixes like {suffix}. Did you mean "
            f"to use {number}{suffix.lower()} instead?",
        )
    try:
        int(text)
        return ArgumentAnswer(True)
    except ValueError:
        name = "human_readable_int_or_auto" if auto else "human_readable_int"
        return ArgumentAnswer(
            False,
            f"invalid {name} value: '{value}' (an integer, or one with a suffix of "
            f"{', '.join(suffixes)} in this release)",
        )


def _json(value: str, braced_only: bool) -> ArgumentAnswer:
    if braced_only and not BRACED.match(value):
        return ArgumentAnswer(None)  # a plain string, a level, a file: the type takes those its own way
    try:
        json.loads(value)
        return ArgumentAnswer(True if not braced_only else None)  # well-formed; its keys are judged apart
    except ValueError as err:
        if braced_only and _parses_expanded(value):
            return ArgumentAnswer(None)  # `{"cpu_bytes_to_use": 80m}`: vLLM may expand it first
        return ArgumentAnswer(False, f"not JSON as the shell passes it ({err}){_why_not_json(value)}")


def _parses_expanded(value: str) -> bool:
    try:
        json.loads(HUMAN_NUMBER.sub("0", value))
        return True
    except ValueError:
        return False


def _why_not_json(value: str) -> str:
    if "\\\n" in value:
        return ": a backslash-newline inside quotes reaches vLLM as it is — keep the JSON on one line"
    if '"' not in value and ":" in value:
        return ": the shell removed its unquoted double quotes — put the JSON in single quotes"
    if re.search(r",\s*[}\]]", value):
        return ": a trailing comma"
    return ""
