"""What a release says about its deprecated options, in its own words.

Two sources, both read with `ast`: the messages vLLM prints at run time — any string constant
in the kept sources whose sentence says the option is deprecated (`"--cuda-graph-sizes is
deprecated and will be removed in v0.13.0 … Please use --cudagraph-capture-sizes instead."`,
see wording.py) — and, failing that, the option's own `deprecated=True` marker or help text
(recorded by the reader). An option the text tells people to use instead is the replacement.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from driftmatrix.flaghistory.pyindex import Index
from driftmatrix.flaghistory.reader import ReleaseOptions
from driftmatrix.flaghistory.wording import replacement, subjects

MAX_TEXT = 400


@dataclass
class Deprecation:
    text: str
    """What vLLM says (a run-time message if there is one, else the option's help)."""
    replacement: str | None
    """The option the text tells people to use instead, when it names one that exists."""


def deprecation_texts(index: Index):
    """Every string constant (f-strings with their holes shown as `{…}`) in the release."""
    for module in index.modules.values():
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "eprecated" in node.value:
                yield node.value
            elif isinstance(node, ast.JoinedStr):
                parts = [v.value if isinstance(v, ast.Constant) else "{…}" for v in node.values]
                text = "".join(str(p) for p in parts)
                if "eprecated" in text:
                    yield text


def _clean(text: str) -> str:
    return " ".join(text.split())[:MAX_TEXT]


def deprecations(index: Index, found: ReleaseOptions) -> dict[str, Deprecation]:
    """Option → its deprecation in this release, for every option the release says is deprecated
    (a replacement is an option of the same release: vLLM points to what exists). A `--no-x`
    twin shares the deprecation of `--x` (one BooleanOptionalAction)."""
    present = set(found.options)
    result: dict[str, Deprecation] = {}
    for text in deprecation_texts(index):
        for subject in subjects(text):
            if subject in present and (subject not in result or result[subject].replacement is None):
                result[subject] = Deprecation(_clean(text), replacement(text, subject, present))
    for name in present:
        twin = "--" + name[5:] if name.startswith("--no-") else None
        if twin in result and name not in result:  # the same words; no replacement (`--no-x` means the opposite)
            result[name] = Deprecation(result[twin].text, None)
    for name, option in found.options.items():
        if option.deprecated and name not in result:
            result[name] = Deprecation(
                _clean(option.help) or "marked deprecated=True (no help text)", replacement(option.help, name, present)
            )
    return result
