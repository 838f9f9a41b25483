"""What plain mode may run: the allow-list of commands known to be inert.

Without a working sandbox (auto mode on a machine without bubblewrap), vLLM runs as a plain process
with the runner's rights, and whatever a command makes it load runs with them. vLLM adds ways to load
code or read files every release — a JSON key naming a plugin file, a logging config whose formatter
is a factory, a module path, a class override — so what may run plainly is decided by what is known
to be harmless, never by a list of what is known to be harmful: a deny-list is always one release
behind; this list can only fall behind by refusing more.

A command is inert when every option, every JSON or dotted key and every value it carries is one of:
- a number, a boolean switch, a human-readable size, or one of the parser's own `choices` (the
  option history's argument types, per release: flaghistory/arg_types.py);
- one of vLLM's own built-in values of that option or key (the history's value domains: parser
  names, quantization methods, speculative methods …);
- a string of an option or key reviewed here as a name or a label (`--served-model-name`,
  `--api-key`, a model id), never a path;
- a folder or file driftmatrix itself put in the command (a model it resolved, a file from the
  release's own sdist).
Anything else — a free string (a path, a module, a template), a key not reviewed, an option the
history does not know for the build's release, or one added after the release this list was
reviewed through — is not known to be inert. The docs' env is judged the same way: only values
that are numbers, switches or plain words reach a plain process.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass

from packaging.version import Version

from driftmatrix.common.option_tokens import token
from driftmatrix.flaghistory.history import FlagHistory
from driftmatrix.flaghistory.uses import value_after

REVIEWED_THROUGH = "0.34.0"
"""The newest release whose options, keys and values were reviewed for this list: anything the history
says was added after it is not inert until someone reviews it and moves this mark."""

INERT_SPECS = ("none", "one:int", "one:int?", "one:float", "one:float?", "one:choice", "one:hint[")
"""Argument types (flaghistory/arg_types.py) whose every accepted value is data: a switch, a number, a
size (`one:hint[GKMTgkmt]`), one of argparse's own choices."""

CODE_SWITCHES = {"--trust-remote-code": "runs the model repository's own Python code"}
"""Switches that take no value and still make vLLM run code that is not its own: the one kind of
option whose type alone does not say it is inert."""

PARSER_READS = {"--config": "a YAML file vLLM's parser reads while parsing"}
"""Options whose file vLLM's parser itself reads (FlexibleArgumentParser): without a sandbox such a
command is not even parsed, since the file is the docs' choice of a host path."""

REVIEWED_STRINGS = {
    "--served-model-name": "a name the server answers to",
    "--api-key": "a token the server asks clients for",
    "--host": "the address the server listens on (the runner gives its own)",
    "--root-path": "a URL prefix",
    "--response-role": "a chat role's name",
    "--revision": "a revision of the model repository",
    "--tokenizer-revision": "a revision of the tokenizer repository",
    "--code-revision": "a revision of the model repository's code",
    "--model": "a model id (resolved by driftmatrix, never a local path)",
    "--tokenizer": "a model id (resolved by driftmatrix, never a local path)",
    "--allowed-origins": "CORS origins",
    "--allowed-methods": "CORS methods",
    "--allowed-headers": "CORS headers",
}
"""Options whose free string vLLM uses as a name, a label or a model id: reviewed, the value still never
a path (`/x`, `./x`, `../x`, `~`)."""

REVIEWED_WORDS = {
    "--generation-config": frozenset({"auto", "vllm"}),
    "--distributed-executor-backend": frozenset({"mp", "ray", "uni", "external_launcher"}),
    "--worker-cls": frozenset({"auto"}),
}
"""Free-string options of which only these values are vLLM's own (any other names a folder or a class)."""

REVIEWED_DATA = frozenset({"--limit-mm-per-prompt", "--mm-processor-kwargs", "--hf-overrides"})
"""JSON options that are plain data (not a config class): inert when every value inside is a number,
a switch or null."""

REVIEWED_KEY_STRINGS = {
    ("--speculative-config", "model"): "the draft model's id (resolved by driftmatrix)",
    ("--speculative-config", "revision"): "a revision of the draft model",
    ("--speculative-config", "code_revision"): "a revision of the draft model's code",
}
"""JSON keys whose string is a name or a model id, reviewed (never a path)."""

REVIEWED_KEY_WORDS = frozenset(
    {
        ("--kv-transfer-config", "kv_connector"),
        ("--kv-transfer-config", "kv_role"),
        ("--kv-transfer-config", "kv_buffer_device"),
        ("--ec-transfer-config", "ec_connector"),
        ("--ec-transfer-config", "ec_role"),
        ("--compilation-config", "cudagraph_mode"),
        ("--compilation-config", "mode"),
        ("--compilation-config", "dynamic_shapes_config.type"),
        ("--attention-config", "backend"),
        ("--speculative-config", "method"),
        ("--speculative-config", "quantization"),
        ("--structured-outputs-config", "backend"),
        ("--structured-outputs-config", "reasoning_parser"),
        ("--reasoning-config", "reasoning_parser"),
        ("--pooler-config", "pooling_type"),
        ("--eplb-config", "policy"),
    }
)
"""JSON keys whose value is a name vLLM looks up among its own (a connector, a mode, a backend): inert
when it is a bare identifier, which can be neither a path nor a module (`pkg.mod`); a name vLLM does not
have is refused by vLLM, and loading another's code takes a key not listed here (`kv_connector_module_path`)."""

NOT_INERT_KEYS = frozenset(
    {
        ("--speculative-config", "draft_load_config"),
        ("--compilation-config", "inductor_passes"),
        ("--compilation-config", "inductor_compile_config"),
        ("--compilation-config", "static_forward_context"),
    }
)
"""Keys that hold a mapping handed on to code (a loader's extra config, passes by qualified name):
nothing under them is judged as data."""

_PATH = re.compile(r"^(?:/|\./|\.\./|~)|(?:^|/)\.\.(?:/|$)")
_MODEL_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(?:/[\w.-]+)?$")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_ENV_VALUE = re.compile(r"^[A-Za-z0-9_,:+=-]{0,128}$|^-?\d+(?:\.\d+)?(?:[eE]-?\d+)?$")


@dataclass(frozen=True)
class NotInert:
    """One thing of a command that plain mode does not run."""

    what: str
    """How the command writes it: `--chat-template`, `--structured-outputs-config` key `reasoning_parser_plugin`."""
    why: str
    """Why it is not known to be inert: "a free string (a path, a module or a template)"."""

    def text(self) -> str:
        return f"{self.what} is not known to be inert ({self.why})"


@dataclass(frozen=True)
class Reading:
    """What the allow-list knows of one build: the history's release for it."""

    history: FlagHistory
    release: str

    @classmethod
    def of(cls, history: FlagHistory | None, version: str) -> Reading | None:
        release = history.release_for(version) if history else None
        return cls(history, release) if history and release else None

    def added_late(self, record: dict | None) -> bool:
        added = (record or {}).get("added")
        return bool(added) and Version(added) > Version(REVIEWED_THROUGH)

    def known(self, option: str) -> bool:
        return option in self.history.options(self.release)

    def in_domain(self, domain: str, value: str) -> bool:
        record = self.history.values.get(domain) or {}
        member = (record.get("values") or {}).get(value)
        return bool(member) and self.history.within(member, self.release) and not self.added_late(member)

    def key_known(self, option: str, key: str) -> bool:
        record = ((self.history.keys.get(option) or {}).get("keys") or {}).get(key)
        return bool(record) and self.history.within(record, self.release) and not self.added_late(record)


def not_inert(
    argv: list[str], env: dict[str, str], reading: Reading | None, ours: Collection[str] = ()
) -> list[NotInert]:
    """Everything of the command (argv as the build's parser spells it, the docs' env that would be
    passed) that is not known to be inert; empty: plain mode may run it. `ours`: values driftmatrix
    put in the command itself (resolved model folders, files from the release's sdist)."""
    found = [
        NotInert(f"env `{name}`", "its value is not a number, a switch or a plain word")
        for name, value in sorted(env.items())
        if not _ENV_VALUE.match(value)
    ]
    if reading is None:
        return [*found, NotInert("the command", "no option history for this build's release")]
    i = 0
    while i < len(argv):
        word = argv[i]
        parsed = token(word)
        if parsed is None:
            if word not in ours and not _model_id(word):
                found.append(NotInert(f"`{word[:80]}`", "a positional word that is not a model id"))
            i += 1
            continue
        option = reading.history.canonical(parsed.name)
        switch = reading.history.arg_spec(option, reading.release) == "none" and "=" not in word
        value = None if switch or parsed.syntax == "-O<level>" else value_after(argv, i)
        i += 1 if value is None or "=" in word else 2
        found += _option(option, word, value, reading, ours)
    return list(dict.fromkeys(found))


def _option(option: str, word: str, value: str | None, reading: Reading, ours: Collection[str]) -> list[NotInert]:
    head = word.split("=", 1)[0]
    shown = f"`{head}`"
    if head.startswith("-O") and not head.startswith("-O."):  # `-O3`, `-O 3`: an optimisation level
        level = head[2:] or value or ""
        return [] if level.isdigit() else [NotInert(shown, "not an optimisation level")]
    if not reading.known(option):
        return [NotInert(shown, f"not an option of vLLM {reading.release} by the option history")]
    if reading.added_late(reading.history.flags.get(option)):
        return [
            NotInert(shown, f"added after vLLM {REVIEWED_THROUGH}, the release this allow-list was reviewed through")
        ]
    if option in CODE_SWITCHES:
        return [NotInert(shown, CODE_SWITCHES[option])]
    dotted = head.partition(".")[2]
    if dotted:
        return _key_value(option, dotted.rstrip("+"), value, reading, shown)
    if value is None or value in ours:
        return []
    return _argument(option, value, reading, shown)


def _argument(option: str, value: str, reading: Reading, shown: str) -> list[NotInert]:
    spec = reading.history.arg_spec(option, reading.release) or ""
    if spec.startswith(INERT_SPECS):
        return []
    if option in REVIEWED_DATA or "json" in spec:
        return _json(option, value, reading, shown)
    if reading.history.has_values(option):
        return (
            []
            if reading.in_domain(option, value)
            else [NotInert(shown, f"`{value[:80]}` is not one of vLLM's own values")]
        )
    if option in REVIEWED_WORDS:
        ok = value in REVIEWED_WORDS[option]
        return [] if ok else [NotInert(shown, f"`{value[:80]}` names a folder, a file or a class")]
    if option in REVIEWED_STRINGS:
        return [NotInert(shown, "its value is a path")] if _PATH.search(value) else []
    return [NotInert(shown, "a free string (a path, a module, a template or a name not reviewed)")]


def _json(option: str, value: str, reading: Reading, shown: str) -> list[NotInert]:
    try:
        config = json.loads(value)
    except ValueError:
        return [NotInert(shown, "its value is not JSON (a file, or text vLLM reads another way)")]
    if option in REVIEWED_DATA:
        bad = [k for k, v in _leaves(config) if not _plain(v)]
        return [NotInert(f"{shown} key `{k}`", "not a number, a switch or null") for k in bad]
    if not isinstance(config, dict) or not reading.history.has_keys(option):
        return [NotInert(shown, "JSON whose keys are not reviewed")]
    found = []
    for key, inner in _leaves(config, option, reading):
        found += _key_value(option, key, inner, reading, f"{shown} key `{key}`")
    return found


def _leaves(config, option: str | None = None, reading: Reading | None = None, prefix: str = ""):
    """(dotted key, value) of every leaf; a dict is walked into where the history knows keys under it
    (or for plain data everywhere)."""
    items = config.items() if isinstance(config, dict) else [("", config)]
    for key, inner in items:
        path = f"{prefix}{key}"
        nested = option is None or reading.history.has_nested_keys(option, path)
        if isinstance(inner, dict) and inner and nested and (option, path) not in NOT_INERT_KEYS:
            yield from _leaves(inner, option, reading, path + ".")
        else:
            yield path, inner


def _key_value(option: str, key: str, value, reading: Reading, shown: str) -> list[NotInert]:
    if (option, key) in NOT_INERT_KEYS or not reading.key_known(option, key):
        return [NotInert(shown, "a key not reviewed as data for this release")]
    if isinstance(value, str) and _number_or_switch(value):
        return []
    if _plain(value):
        return []
    if isinstance(value, str) and reading.in_domain(f"{option}.{key}", value):
        return []
    if isinstance(value, str) and (option, key) in REVIEWED_KEY_STRINGS and _model_id(value):
        return []
    if isinstance(value, str) and (option, key) in REVIEWED_KEY_WORDS and _IDENTIFIER.match(value):
        return []
    return [NotInert(shown, "its value is not a number, a switch or one of vLLM's own values")]


def _plain(value) -> bool:
    """A number, a switch, null, or a list of those."""
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (bool, int, float))


def _number_or_switch(text: str) -> bool:
    return text.lower() in ("true", "false") or bool(re.fullmatch(r"-?\d+(?:\.\d+)?", text))


def _model_id(text: str) -> bool:
    return bool(_MODEL_ID.match(text)) and not _PATH.search(text)
