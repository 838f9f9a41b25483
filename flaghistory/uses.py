"""What of a command the option history can judge: its options, the values it gives the options
whose names vLLM registers or lists (`--tool-call-parser qwen3_xml`, `--quantization awq`), the keys
of its JSON options (`--speculative-config '{"method": …}'`) and the values of those keys that vLLM
names (`method: eagle3`). One `Use` per thing; flaghistory/history.py answers for each release.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from driftmatrix.flaghistory.history import FlagHistory, token

UseKind = Literal["option", "value", "key", "argument"]
"""`argument`: what follows the option (its word, or none) against what the release's parser takes there
(flaghistory/arguments.py: arity and type)."""


@dataclass(frozen=True)
class Use:
    """One judged thing of a command."""

    kind: UseKind
    option: str
    """The option as vLLM names it (`--tool-call-parser`; `--max_model_len` becomes `--max-model-len`)."""
    written: str
    """The option as the command writes it (`--tool_call_parser`, `-q`, `--speculative-config.method`)."""
    value: str | None = None
    """value: the value given (`qwen3_xml`); for a key's value, that value (`eagle3`)."""
    key: str | None = None
    """key: the dotted key of the JSON option (`method`, `pass_config.enable_fusion`); for a key's
    value, the key it is the value of."""
    inline: bool = False
    """argument: the value was given as `--option=value`."""
    after_model: bool = False
    """argument: the command gave its model positionally before this option (a flag's next word is then extra)."""

    @property
    def domain(self) -> str:
        """Where the history keeps its names: the option, or `option.key` for a key's value."""
        return f"{self.option}.{self.key}" if self.kind == "value" and self.key else self.option

    def text(self) -> str:
        if self.kind == "option":
            return self.written
        if self.kind == "key":
            return f"{self.option} key `{self.key}`"
        if self.kind == "argument" and self.value is None:
            return f"{self.written} (no value)"
        if self.kind == "argument" and self.inline:
            return f"{self.written}={self.value}"
        if self.key:
            return f"{self.option} `{self.key}: {self.value}`"
        return f"{self.written} {self.value}"


def value_after(argv: list[str], i: int) -> str | None:
    """The value of the option at argv[i]: after `=`, else the next word unless it is an option."""
    head, eq, inline = argv[i].partition("=")
    if eq:
        return inline
    nxt = argv[i + 1] if i + 1 < len(argv) else None
    return nxt if nxt is not None and token(nxt) is None else None


def _flatten(config: dict, history: FlagHistory, option: str, prefix: str = "") -> list[tuple[str, object]]:
    """(dotted key, value) pairs; a dict value is walked into when the history knows nested keys under it."""
    pairs = []
    for key, value in config.items():
        path = f"{prefix}{key}"
        pairs.append((path, value))
        if isinstance(value, dict) and history.has_nested_keys(option, path):
            pairs += _flatten(value, history, option, path + ".")
    return pairs


def judged_key(history: FlagHistory, option: str, dotted: str) -> str:
    """The part of a dotted key the history can judge: `kv_connector_extra_config.backends+` is the key
    `kv_connector_extra_config` (a free-form dict: what is inside is the connector's, not vLLM's config);
    `+` (append to a list) is vLLM's dotted syntax, not part of the key."""
    parts = dotted.rstrip("+").split(".")
    path = parts[0]
    for part in parts[1:]:
        if not history.has_nested_keys(option, path):
            break
        path = f"{path}.{part}"
    return path


def uses_of(history: FlagHistory, argv: list[str]) -> list[Use]:
    """Every option, value, key and key value of the argv the history has names for, in order."""
    found: list[Use] = []
    for i, word in enumerate(argv):
        parsed = token(word)
        if parsed is None or word[1:2].isdigit():
            continue
        written = word.split("=", 1)[0]
        option = history.canonical(parsed.name)
        found.append(Use("option", option, written))
        if parsed.syntax == "-O<level>":
            continue  # `-O3`: the value is glued to the option, rewritten before argparse
        value = value_after(argv, i)
        dotted = written.partition(".")[2] if parsed.syntax == "--option.key" else ""
        if value is not None:
            found += _value_uses(history, option, written, value, dotted)
        if not dotted and history.args:  # after the value's own use: the same text reads as the value first
            found.append(
                Use(
                    "argument",
                    option,
                    written,
                    value=value,
                    inline="=" in word,
                    after_model=bool(argv) and token(argv[0]) is None and i > 0,
                )
            )
    return list(dict.fromkeys(found))


def _value_uses(history: FlagHistory, option: str, written: str, value: str, dotted: str) -> list[Use]:
    if dotted:  # `--speculative-config.method eagle3`
        key = judged_key(history, option, dotted)
        found = [Use("key", option, written, key=key)]
        if key == dotted and history.has_values(f"{option}.{key}"):
            found.append(Use("value", option, written, value=value, key=key))
        return found
    if history.has_values(option):
        return [Use("value", option, written, value=value)]
    return _json_uses(history, option, written, value) if history.has_keys(option) else []


def _json_uses(history: FlagHistory, option: str, written: str, value: str) -> list[Use]:
    try:
        config = json.loads(value)
    except ValueError:
        return []  # not JSON (a placeholder, a file path): nothing to judge
    if not isinstance(config, dict):
        return []
    found = []
    for key, inner in _flatten(config, history, option):
        found.append(Use("key", option, written, key=key))
        if isinstance(inner, str) and history.has_values(f"{option}.{key}"):
            found.append(Use("value", option, written, value=inner, key=key))
    return found
