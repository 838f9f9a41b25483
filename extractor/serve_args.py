"""Read the arguments of a `vllm serve` invocation the way vLLM's parser would.

- the model (first positional, or `--model`),
- the effective `--speculative-config` (JSON, `-sc`, `--speculative_config`, `=` form,
  and dotted keys merged the way vLLM's `FlexibleArgumentParser` merges them),
- placeholders the reader must fill in,
- a canonical form of the arguments, which is what a snippet's id hashes.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from driftmatrix.extractor.placeholder_text import CJK_BRACKETED, LETTER
from driftmatrix.extractor.snippet_record import Lint

# Short aliases vLLM registers, expanded so `-tp 2` and `--tensor-parallel-size 2` share an id.
ALIASES = {
    "-tp": "--tensor-parallel-size",
    "-pp": "--pipeline-parallel-size",
    "-dp": "--data-parallel-size",
    "-sc": "--speculative-config",
    "-q": "--quantization",
}
SPEC_FLAG = "--speculative-config"
# Variables the runner takes from its own environment (never placeholders to fill in).
AMBIENT_VARS = {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HOME", "HOME", "USER", "PWD"}

_PLACEHOLDER_TEXT = re.compile(
    rf"<{LETTER}[^<>\n]{{0,80}}?>"  # <MODEL>, <draft-model>, <你的模型路径> (extractor/placeholder_text.py)
    rf"|{CJK_BRACKETED}"  # 〈模型〉, 「モデル」, ＜模型路径＞
    rf"|(?<!\$)\{{(?:{LETTER}|_)[^{{}}\n\"':,]{{0,80}}\}}"  # {your model directory}, not ${VAR}
    r"|(?<![\w.])/path/to/[^\s\"',}]*"  # /path/to/model
    r"|<(?:\.\.\.|…)>|(?<![\w.])(?:\.\.\.|…)(?![\w.])"  # an elision: `<...>`, `...`, `'{…}'`, `'{..., "k": 1}'`
    r"|(?i:\byour[-_][\w-]+)"  # your-huggingface-token, YOUR_API_KEY
)
_VAR_NAME = re.compile(r"^\$\{?([A-Za-z_][A-Za-z0-9_]*)")
# A positional standing for "the rest of the arguments": `<args...>`, `[ARGS]`, `...`.
_ARGS_WORD = re.compile(
    r"^(?:[<\[]?(?:args|arguments|options|flags|extra[-_ ]args|other[-_ ]args|vllm[-_ ]args)"
    r"(?:\.\.\.|…)?[>\]]?|\.\.\.|…)$",
    re.I,
)
# Keys of a JSON option whose string values name a model, file or place: `<…>` there is the
# reader's to fill in; under any other key it is a literal token (`"<think>"`, `"<image>"`).
_NAMING_KEY = re.compile(r"model|tokenizer|path|dir|file|url|name|repo|revision", re.I)
_READS_AS_PLACEHOLDER = (re.compile(r"^<[A-Z0-9_ -]+>$"), re.compile(r"^<[^<>]*\s[^<>]*>$|^<your[-_ ]", re.I))

# How many values an option takes, for finding a model written after options (`vllm serve --task
# transcription openai/whisper-small`: argparse gives `--task` one word, the next is the model).
# vLLM's switches (booleans) take none: its bool fields are `--enable-…`/`--disable-…`/`--no-…` or these.
_SWITCH_PREFIXES = ("--enable-", "--disable-", "--no-")
_SWITCHES = {"--trust-remote-code", "--enforce-eager", "--headless", "--skip-tokenizer-init", "--omni"}
# Its list-valued options (nargs="+") take every word up to the next option; the rest take one.
_LIST_VALUED = {
    "--served-model-name",
    "--lora-modules",
    "--prompt-adapters",
    "--logits-processors",
    "--cuda-graph-sizes",
    "--api-key",
    "--allowed-media-domains",
    "--collect-detailed-traces",
    "--ignore-patterns",
    "--long-lora-scaling-factors",
}

_NEGATIVE_NUMBER = re.compile(r"^-\d")
_HUMAN_INT = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")


@dataclass
class Option:
    """One option as written: name (as typed), attached/following values, position."""

    written: str
    name: str
    """Canonical name: dashes for underscores before the first `.`, aliases expanded."""
    values: list[str]
    index: int


@dataclass
class ServeArgs:
    model: str | None
    options: list[Option]
    speculative_config: dict[str, Any] | None = None
    speculative_config_error: dict[str, Any] | None = None
    lints: list[Lint] = field(default_factory=list)
    placeholders: list[str] = field(default_factory=list)
    """Words standing for the reader's model or arguments (`my-model`, `<args...>`), not taken
    as the model."""
    positional: str | None = None
    """The model position as written, placeholder or not: part of the id, so a command keeps its
    id whether or not its first word counts as a model."""

    def canonical(self) -> list[str]:
        """Model first, then options sorted by name (argparse is order-insensitive except
        for repeats, whose relative order is kept), JSON values re-serialised compactly."""
        first = self.model if self.model is not None else self.positional
        out = [first] if first is not None else []
        for opt in sorted(self.options, key=lambda o: o.name):
            out.append(opt.name)
            out.extend(_canonical_value(v) for v in opt.values)
        return out


def canonical_flag(flag: str) -> str:
    name = ALIASES.get(flag.split(".", 1)[0], flag.split(".", 1)[0])
    rest = flag[len(flag.split(".", 1)[0]) :]
    if name.startswith("--"):
        name = "--" + name[2:].replace("_", "-")
    return name + rest


def _canonical_value(value: str) -> str:
    stripped = value.strip()
    if stripped[:1] in "{[":
        try:
            return json.dumps(json.loads(stripped), sort_keys=True, separators=(",", ":"))
        except ValueError:
            pass
    return value


def _is_option(token: str) -> bool:
    return token.startswith("-") and len(token) > 1 and not _NEGATIVE_NUMBER.match(token)


def _human_readable_int(value: str) -> int:
    m = _HUMAN_INT.fullmatch(value.strip())
    if not m:
        return int(value)
    number, suffix = m.groups()
    if suffix.islower():
        return int(float(number) * 10 ** {"k": 3, "m": 6, "g": 9, "t": 12}[suffix])
    return int(number) * 2 ** {"K": 10, "M": 20, "G": 30, "T": 40}[suffix]


def _dotted_value(value: str) -> Any:
    # vLLM: json.loads, else a human-readable int (`80g`), else the string itself.
    try:
        return json.loads(value)
    except ValueError:
        try:
            return _human_readable_int(value)
        except ValueError:
            return value


def _merge(original: dict[str, Any], update: dict[str, Any]) -> None:
    for k, v in update.items():
        if isinstance(v, dict) and isinstance(original.get(k), dict):
            _merge(original[k], v)
        elif isinstance(v, list) and isinstance(original.get(k), list):
            original[k] += v
        else:
            original[k] = v


def json_error(value: str, err: json.JSONDecodeError) -> dict[str, Any]:
    return {"message": err.msg, "value": value, "pos": err.pos, "lineno": err.lineno, "colno": err.colno}


def parse_serve_args(
    args: list[str], model_is_positional: bool = True, placeholder_models: frozenset[str] | None = None
) -> ServeArgs:
    """Split `args` (after `vllm serve`) into model + options and resolve the spec config;
    `placeholder_models`: the words that stand for the reader's model (default: the shipped ones)."""
    model: str | None = None
    options: list[Option] = []
    i = 0
    positional = args[0] if model_is_positional and args and not _is_option(args[0]) else None
    if positional is not None and not is_args_placeholder(positional):
        model, i = positional, 1
    while i < len(args):
        tok = args[i]
        if not _is_option(tok):
            # A stray positional (e.g. the model after some options); `<args...>` stands for options.
            if model is None and not is_args_placeholder(tok):
                model = tok
            positional = positional or tok
            i += 1
            continue
        written, _, attached = tok.partition("=")
        values = [attached] if "=" in tok else []
        j = i + 1
        if "=" not in tok:
            while j < len(args) and not _is_option(args[j]):
                values.append(args[j])
                j += 1
        options.append(Option(written, canonical_flag(written), values, i))
        i = j
    result = ServeArgs(model, options, positional=positional)
    for opt in options:
        if opt.name == "--model" and opt.values and result.model is None:
            result.model = opt.values[0]
    if result.model is None:
        _model_after_options(result, args)
    if result.model is not None and (
        is_args_placeholder(result.model) or is_placeholder_model(result.model, placeholder_models)
    ):
        result.placeholders.append(result.model)
        result.model = None
    _resolve_speculative_config(result)
    _lint_json_values(result)
    return result


def _values_taken(opt: Option) -> int | None:
    """How many of the words after `opt` argparse gives it (None: all of them, a list option)."""
    if opt.name in _LIST_VALUED:
        return None
    return 0 if opt.name in _SWITCHES or opt.name.startswith(_SWITCH_PREFIXES) else 1


def _model_after_options(result: ServeArgs, args: list[str]) -> None:
    """The model written after options (`--task transcription openai/whisper-small`, `--enforce-eager
    org/model`): the first word an option does not take is argparse's positional. It moves from the
    option's values to the model, so the command has the id of its model-first spelling; any further
    words stay where they were written (an option not known to take a list may still take them)."""
    for opt in result.options:
        taken = _values_taken(opt)
        if taken is None or "=" in args[opt.index]:  # `--opt=value` takes no more words
            continue
        extra = next((k for k, v in enumerate(opt.values) if k >= taken and not is_args_placeholder(v)), None)
        if extra is not None:
            result.model = opt.values.pop(extra)
            result.positional = result.positional or result.model
            return


def _resolve_speculative_config(result: ServeArgs) -> None:
    whole: list[Option] = [o for o in result.options if o.name == SPEC_FLAG]
    dotted: dict[str, Any] = {}
    for opt in result.options:
        if not opt.name.startswith(SPEC_FLAG + "."):
            continue
        path = opt.name[len(SPEC_FLAG) + 1 :]
        raw = opt.values[0] if opt.values else ""
        if path.endswith("+"):
            path, value = path[:-1], raw.split(",")
        else:
            value = _dotted_value(raw)
        for key in reversed(path.split(".")):
            value = {key: value}
        _merge(dotted, value)
    if len(whole) > 1:
        result.lints.append(Lint("duplicate-flag", f"`{SPEC_FLAG}` is given {len(whole)} times; the last one wins"))
    if dotted:
        # vLLM re-appends the merged dotted keys after all other arguments, so they
        # replace (not extend) any JSON value given with the plain flag.
        if whole:
            result.lints.append(
                Lint(
                    "dotted-replaces-json",
                    f"`{SPEC_FLAG}` is given both as JSON and as dotted keys; vLLM uses only the dotted keys",
                )
            )
        result.speculative_config = dotted
        return
    if not whole:
        return
    raw = whole[-1].values[0] if whole[-1].values else ""
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as err:
        if not _at_placeholder(raw, err.pos):
            result.speculative_config_error = json_error(raw, err)
        return
    if isinstance(value, dict):
        result.speculative_config = value
    else:
        result.speculative_config_error = {
            "message": f"expected a JSON object, got {type(value).__name__}",
            "value": raw,
            "pos": 0,
            "lineno": 1,
            "colno": 1,
        }


_EXPANSION = re.compile(r"\$(?:\{[^}]*\}|\(|[A-Za-z_][A-Za-z0-9_]*)")


def _at_placeholder(raw: str, pos: int) -> bool:
    """Whether a JSON value breaks only where the reader or the shell fills something in (`'{...}'`,
    `{…, "k": 1}`, `"num_speculative_tokens": <K>` or `$K`): a placeholder, the command is not
    runnable as written, and the JSON is not judged."""
    spans = [*_PLACEHOLDER_TEXT.finditer(raw), *_EXPANSION.finditer(raw)]
    return any(m.start() <= pos < m.end() for m in spans)


def _lint_json_values(result: ServeArgs) -> None:
    for opt in result.options:
        if "." in opt.name or not opt.name.endswith(("-config", "-per-prompt", "-kwargs", "-overrides")):
            continue
        for value in opt.values[:1]:
            if re.match(r"^[A-Za-z_][\w.]*=", value):
                result.lints.append(
                    Lint(
                        "key-value-not-json",
                        f"`{opt.written} {value}` uses key=value form; vLLM expects JSON here "
                        f"(e.g. `{opt.written} '{{\"{value.split('=')[0]}\": ...}}'`)",
                    )
                )


def placeholders_in(text: str, expansions: list[str]) -> list[str]:
    """Placeholders a reader must replace in one word (expansions come from the lexer)."""
    found = _json_placeholders(text)
    if found is None:
        found = [m.group(0) for m in _PLACEHOLDER_TEXT.finditer(text)]
    for exp in expansions:
        m = _VAR_NAME.match(exp)
        if m and m.group(1) in AMBIENT_VARS:
            continue
        found.append(exp)
    return found


def _norm_word(word: str) -> str:
    return word.strip().lower().replace("_", "-")


@functools.cache
def shipped_placeholder_models() -> frozenset[str]:
    """The placeholder model words that ship (extractor/data/placeholders.yaml), normalised."""
    import yaml  # noqa: PLC0415 — only to read the shipped list once

    path = Path(__file__).resolve().parent / "data" / "placeholders.yaml"
    return frozenset(_norm_word(w) for w in yaml.safe_load(path.read_text(encoding="utf-8"))["model_words"])


def placeholder_model_words(extra: list[str] = ()) -> frozenset[str]:
    """The shipped words plus a run's own (`driftmatrix extract --placeholder-model`): added, never replacing."""
    return shipped_placeholder_models() | {_norm_word(w) for w in extra}


def is_placeholder_model(word: str, words: frozenset[str] | None = None) -> bool:
    return _norm_word(word) in (shipped_placeholder_models() if words is None else words)


def is_args_placeholder(word: str) -> bool:
    return bool(_ARGS_WORD.match(word.strip()))


def _json_placeholders(text: str) -> list[str] | None:
    """Placeholders in a JSON value (None when `text` is not JSON): `<…>` in a string counts only
    under a key that names a model, file or place, or when it reads like one (`<YOUR_MODEL>`,
    `<draft model>`); elsewhere angle brackets are literal tokens (`"think_start_str": "<think>"`)."""
    stripped = text.strip()
    if stripped[:1] not in "{[":
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        return None
    found: list[str] = []

    def walk(node: Any, key: str) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, str(k))
        elif isinstance(node, list):
            for v in node:
                walk(v, key)
        elif isinstance(node, str):
            for m in _PLACEHOLDER_TEXT.finditer(node):
                token = m.group(0)
                if (
                    not token.startswith("<")
                    or _NAMING_KEY.search(key)
                    or any(r.match(token) for r in _READS_AS_PLACEHOLDER)
                ):
                    found.append(token)

    walk(value, "")
    return found
