"""Runs inside a target's Python: the names this vLLM build knows for option values and JSON keys.

stdin: a JSON object `{"uses": [{"kind": "value"|"key", "option": "--tool-call-parser", "key": null,
"value": "hermes"}, ...]}` (driftmatrix.flaghistory.uses.Use as data: the docs' values are data here, compared
and handed to vLLM's own parse functions, never evaluated). Answer: one JSON line on the original
stdout (vLLM's logging goes to stderr, as in vllm_helper.py), or the file named by argv[1]:

- `domains`: option (or `option.key`) -> {names, from, where, fold, open_with[, any_str]}: every
  name the build knows: the `choices` of the real serve parser's actions; the registries' own
  tables (ToolParserManager / ReasoningParserManager incl. lazily registered names,
  QUANTIZATION_METHODS, the model-loader table, AttentionBackendEnum, the tokenizer registry, the
  weight-transfer engine factory); the Literal/Enum types of EngineArgs fields shown without
  choices (`str | ConfigFormat`: `any_str`, a later check decides) and of every JSON option's
  config class fields (`--speculative-config.method`).
- `keys`: JSON option -> {class, where, keys (dotted paths into nested config dataclasses; not into
  init=False or SkipValidation fields), closed, built, how}: `closed` is read by handing the build
  a bogus key the way it builds the class itself (the parser's own type function where the parser
  builds it, else `Class(**dict)` as EngineArgs does) and reading the error: TypeError "unexpected
  keyword" or pydantic's unexpected_keyword_argument / extra_forbidden = rejects, no error = takes,
  any other error = null, with the error in `how`.
- `answers`: per use, {build: true/false/null, why}: the build's own check where one exists
  (argparse's type + choices; AttentionConfig's validator; a closed class handed the key), else
  membership in the names above after the fold the build's own code does (LoadConfig and
  ModelConfig lower-case; the enum validators upper-case).
- `unknown`: what could not be introspected, with why.
"""

import argparse
import dataclasses
import enum
import json
import os
import sys
import typing

if not __package__:  # run by path (a target's Python, `-I`): PEP 366, as the package this folder is,
    # so that `from . import sibling` finds the files next to this one (and import-linter sees it)
    sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = os.path.basename(os.path.dirname(os.path.abspath(__file__)))

BOGUS = "driftmatrix_no_such_key"
REJECTS = (
    "unexpected keyword argument",
    "Unexpected keyword argument",
    "unexpected_keyword_argument",
    "extra_forbidden",
    "Extra inputs are not permitted",
)
"""How a stdlib dataclass (TypeError) and pydantic (`extra="forbid"`, or a pydantic dataclass's
`unexpected_keyword_argument`) refuse a key the class lacks."""
TOOL, REASONING = "--tool-call-parser", "--reasoning-parser"
CLASSES = {}
"""JSON option -> (its config class, how the build builds it: "parser" or "class")."""


def _long(action):
    longs = [s for s in action.option_strings if s.startswith("--")]
    return longs[0] if longs else None


def _where(obj):
    module = sys.modules.get(getattr(obj, "__module__", "") or "")
    path = getattr(module, "__file__", "") or ""
    return "vllm/" + path.split("/vllm/", 1)[1] if "/vllm/" in path else path


def _dataclass_in(fn, depth=0):
    """The config class a parse function builds (vLLM's `parse_dataclass(val, cls=...)`, possibly
    wrapped by `optional_type`): read from its defaults and closure, never called."""
    if fn is None or depth > 3:
        return None
    for value in getattr(fn, "__defaults__", None) or ():
        if isinstance(value, type) and dataclasses.is_dataclass(value):
            return value
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if isinstance(value, type) and dataclasses.is_dataclass(value):
            return value
        if callable(value) and not isinstance(value, type):
            found = _dataclass_in(value, depth + 1)
            if found is not None:
                return found
    return None


def _hints(cls):
    try:
        return typing.get_type_hints(cls)
    except Exception:  # a forward reference the module cannot resolve at run time
        return {f.name: f.type for f in dataclasses.fields(cls)}


def _hints_extras(cls):
    """Type hints with Annotated metadata kept (SkipValidation is metadata)."""
    try:
        return typing.get_type_hints(cls, include_extras=True)
    except Exception:
        return {f.name: f.type for f in dataclasses.fields(cls)}


def _skips_validation(hint):
    if typing.get_origin(hint) is typing.Annotated:
        return any(
            "SkipValidation" in type(m).__name__ or "SkipValidation" in getattr(m, "__name__", "")
            for m in typing.get_args(hint)[1:]
        )
    if typing.get_origin(hint) is typing.Union or type(hint).__name__ == "UnionType":
        return any(_skips_validation(a) for a in typing.get_args(hint))
    return False


def _members(hint):
    """The types a field may hold: a Union/Optional split, Annotated unwrapped."""
    origin = typing.get_origin(hint)
    if origin is typing.Annotated:
        return _members(typing.get_args(hint)[0])
    if origin is typing.Union or type(hint).__name__ == "UnionType":
        return [m for a in typing.get_args(hint) for m in _members(a)]
    return [hint]


def _literal_names(members):
    names = []
    for m in members:
        if typing.get_origin(m) is typing.Literal:
            names += [a for a in typing.get_args(m) if isinstance(a, str)]
    return names


# --- the full sets ------------------------------------------------------------------------------


def choices_domains(serve, domains, actions):
    for action in serve._actions:
        name = _long(action)
        if name is None or not action.choices or isinstance(action, argparse._SubParsersAction):
            continue
        actions[name] = action
        domains[name] = {
            "names": sorted({str(c) for c in action.choices if c is not None}),
            "from": "choices",
            "where": "the serve parser's choices",
            "fold": None,
            "open_with": [],
        }


def registry_domains(domains, unknown):
    from .vllm_symbols import find

    for option, key, table, plugin in (
        (TOOL, "ToolParserManager", "tool_parsers", "--tool-parser-plugin"),
        (REASONING, "ReasoningParserManager", "reasoning_parsers", "--reasoning-parser-plugin"),
    ):
        manager = _lookup(find, key, option, unknown, f"this build has no {key}")
        if manager is None:
            continue
        # list_registered() joins eager and lazily registered names where the release has it
        names = (
            manager.list_registered()
            if hasattr(manager, "list_registered")
            else list(getattr(manager, table, {})) + list(getattr(manager, "lazy_parsers", {}))
        )
        domains[option] = {
            "names": sorted(names),
            "from": "registry",
            "where": _where(manager),
            "fold": None,
            "open_with": [plugin],
        }
    _quantization(domains, unknown, find)
    _load_formats(domains, unknown, find)
    _attention_backends(domains, unknown, find)
    _tokenizer_modes(domains, unknown, find)


def weight_transfer_backends(domains, unknown):
    """`--weight-transfer-config.backend` is `Literal[...] | str`: the engine factory's registry (names
    registered when its module is imported) decides when the engine is made."""
    from .vllm_symbols import find

    domain = "--weight-transfer-config.backend"
    if domain not in domains:
        return
    factory = _lookup(find, "WeightTransferEngineFactory", domain, unknown)
    table = getattr(factory, "_registry", None) if factory is not None else None
    if not isinstance(table, dict):
        return  # no registry in this release: the Literal's names stand
    domains[domain] = {
        "names": sorted({*table, *domains[domain]["names"]}),
        "from": "registry",
        "where": _where(factory),
        "fold": None,
        "open_with": [],
    }


def _tokenizer_modes(domains, unknown, find):
    """`--tokenizer-mode` takes any string at parse (`TokenizerMode | str`); the tokenizer registry
    decides later (`auto` is resolved before it is asked)."""
    registry = _lookup(find, "TokenizerRegistry", "--tokenizer-mode", unknown, NO_TOKENIZER_TABLE)
    if registry is None:
        return
    table = getattr(registry, "tokenizers", None)
    if not isinstance(table, dict):
        unknown.append({"domain": "--tokenizer-mode", "why": NO_TOKENIZER_TABLE})
        return
    model_config = find("ModelConfig")  # its TokenizerMode Literal: modes get_tokenizer resolves itself (`slow`)
    literal = _literal_names(_members(_hints(model_config).get("tokenizer_mode"))) if model_config is not None else []
    domains["--tokenizer-mode"] = {
        "names": sorted({*table, *literal, "auto"}),
        "from": "registry",
        "open_with": [],
        "where": _where(type(registry)),
        "fold": _tokenizer_fold(find),
    }


def _tokenizer_fold(find):
    """ModelConfig lower-cases tokenizer_mode (a validator) in the releases read: asked of its code."""
    model_config = find("ModelConfig")
    validator = getattr(model_config, "_lowercase_tokenizer_mode", None) if model_config is not None else None
    return "lower" if validator is not None else None


def field_domains(serve, domains, actions, unknown):
    """Options without choices whose EngineArgs field is a Literal or an Enum (`str | ConfigFormat`
    is shown as a metavar, not choices; an enum is parsed by its config's validator)."""
    from .vllm_symbols import find

    engine_args = find("AsyncEngineArgs")
    hints = _hints(engine_args) if engine_args is not None and dataclasses.is_dataclass(engine_args) else {}
    for action in serve._actions:
        name = _long(action)
        if (
            name is None
            or name in domains
            or (action.dest not in hints and not isinstance(action.metavar, (list, tuple)))
        ):
            continue
        members = _members(hints[action.dest]) if action.dest in hints else []
        names = _literal_names(members)
        enums = [m for m in members if isinstance(m, type) and issubclass(m, enum.Enum)]
        if names:
            domains[name] = {
                "names": sorted(set(names)),
                "from": "literal",
                "where": _where(engine_args),
                "fold": None,
                "open_with": [],
                "any_str": str in members,
            }
        elif enums:  # the enum validators read (attention, mamba, mm encoder) all do `Enum[value.upper()]`
            domains[name] = {
                "names": sorted(m.name for e in enums for m in e),
                "from": "enum",
                "where": _where(enums[0]),
                "fold": "upper",
                "open_with": [],
            }
        elif isinstance(action.metavar, (list, tuple)) and action.metavar:  # names shown, any str taken
            domains[name] = {
                "names": sorted(map(str, action.metavar)),
                "from": "metavar",
                "fold": None,
                "where": "the serve parser's metavar",
                "open_with": [],
                "any_str": True,
            }
        else:
            continue
        actions.setdefault(name, action)


NO_TOKENIZER_TABLE = "no tokenizer registry table in this build"
NO_LOADER_TABLE = "no _LOAD_FORMAT_TO_MODEL_LOADER table in this build"


def _lookup(find, key: str, domain: str, unknown: list, absent: str | None = None):
    """vLLM's `key` in this build (vllm_symbols.find), or None with why in `unknown`: it could not be
    imported, or it is absent and `absent` says why (None: the caller says what absence means)."""
    try:
        found = find(key)
    except ImportError as exc:
        unknown.append({"domain": domain, "why": f"{key} could not be imported: {exc}"})
        return None
    if found is None and absent:
        unknown.append({"domain": domain, "why": absent})
    return found


def _quantization(domains, unknown, find):
    if "--quantization" in domains:  # the parser lists them as choices in this release
        return
    methods = _lookup(find, "QUANTIZATION_METHODS", "--quantization", unknown, "this build has no QUANTIZATION_METHODS")
    if methods is None:
        return
    domains["--quantization"] = {
        "names": sorted(methods),
        "from": "registry",
        "fold": None,
        "open_with": [],
        "where": "vllm/model_executor/layers/quantization/__init__.py",
    }


def _load_formats(domains, unknown, find):
    if "--load-format" in domains:
        return
    loader = _lookup(find, "model_loader", "--load-format", unknown, NO_LOADER_TABLE)
    if loader is None:
        return
    table = getattr(loader, "_LOAD_FORMAT_TO_MODEL_LOADER", None)
    if table is None:
        unknown.append({"domain": "--load-format", "why": NO_LOADER_TABLE})
        return
    domains["--load-format"] = {
        "names": sorted(table),
        "from": "registry",
        "where": _where(loader),
        "fold": _load_format_fold(find),
        "open_with": [],
    }


def _load_format_fold(find):
    """LoadConfig lower-cases load_format in some releases: asked of LoadConfig itself."""
    try:
        load_config = find("LoadConfig")
        return "lower" if load_config is not None and load_config(load_format="AUTO").load_format == "auto" else None
    except Exception:
        return None


def _attention_backends(domains, unknown, find):
    backends = _lookup(
        find, "AttentionBackendEnum", "--attention-backend", unknown, "this build has no AttentionBackendEnum"
    )
    if backends is None:
        return
    domains["--attention-backend"] = {
        "names": sorted(m.name for m in backends),
        "from": "enum",
        "where": _where(backends),
        "fold": "upper",
        "open_with": [],
        "also": ["auto"],
    }


# --- JSON options: their config classes ---------------------------------------------------------


def config_class(action, find):
    """(class, how built): the parser's own parse function's class, else VllmConfig's field of the
    option's dest (EngineArgs builds `Class(**dict)` from the parsed JSON), else None."""
    cls = _dataclass_in(action.type)
    if cls is not None:
        return cls, "parser"
    vllm_config = find("VllmConfig")
    if vllm_config is not None and dataclasses.is_dataclass(vllm_config):
        hint = _hints(vllm_config).get(action.dest)
        for member in _members(hint) if hint is not None else ():
            if isinstance(member, type) and dataclasses.is_dataclass(member):
                return member, "class"
    return None, None


def key_paths(cls, prefix="", seen=()):
    """Every field as a dotted path; a field holding a config dataclass adds its fields below it."""
    paths, literals = [], {}
    for f in dataclasses.fields(cls):
        if f.name.startswith("_") or not f.init or f._field_type is not dataclasses._FIELD:
            continue  # InitVar/ClassVar/init=False fields: not keys a config can be given
        path = prefix + f.name
        paths.append(path)
        hint = _hints_extras(cls).get(f.name, f.type)
        members = _members(hint)
        names = _literal_names(members)
        if names:
            literals[path] = {"names": sorted(set(names)), "open": str in members}
        if _skips_validation(hint):
            continue  # pydantic's SkipValidation: what is inside is taken unchecked, no keys to name
        for m in members:
            if isinstance(m, type) and dataclasses.is_dataclass(m) and m not in seen:
                more, inner = key_paths(m, path + ".", (*seen, cls))
                paths += more
                literals.update(inner)
    return paths, literals


def build_with(action, cls, how, config):
    """Hand the build a config the way it builds one: None = taken, else the error text."""
    try:
        if how == "parser":
            action.type(json.dumps(config))
        else:
            cls(**config)
    except BaseException as exc:  # SystemExit/ArgumentTypeError/ValidationError/TypeError all count
        return f"{type(exc).__name__}: {exc}"[:600]
    return None


def _nested(path):
    """`{"a": {"b": null}}` for `a.b`."""
    config = None
    for part in reversed(path.split(".")):
        config = {part: config}
    return config


def rejected(error, key):
    return error is not None and any(r in error for r in REJECTS) and key.split(".")[-1] in error


def json_keys(serve, keys, domains, actions, unknown):
    from .vllm_symbols import find

    for action in serve._actions:
        name = _long(action)
        if name is None or not (name.endswith("-config") or _dataclass_in(action.type) is not None):
            continue
        try:
            cls, how = config_class(action, find)
        except Exception as exc:
            unknown.append({"domain": name, "why": f"its config class could not be found: {exc}"})
            continue
        if cls is None:
            unknown.append(
                {
                    "domain": name,
                    "why": "no config dataclass: the parser takes any JSON (a dict or a str), nothing names its keys",
                }
            )
            continue
        paths, literals = key_paths(cls)
        error = build_with(action, cls, how, {BOGUS: 1})
        closed = True if rejected(error, BOGUS) else False if error is None else None
        asked = (
            "the parser's own type function" if how == "parser" else f"{cls.__name__}(**dict), as EngineArgs builds it"
        )
        CLASSES[name] = (cls, how)
        keys[name] = {
            "class": cls.__name__,
            "where": _where(cls),
            "keys": sorted(paths),
            "closed": closed,
            "built": how,
            "how": f"a bogus key handed to {asked}: " + ("taken" if error is None else error[:300]),
        }
        actions[name] = action
        for path, found in literals.items():
            domains.setdefault(
                f"{name}.{path}",
                {
                    "names": found["names"],
                    "from": "literal",
                    "where": _where(cls),
                    "fold": None,
                    "open_with": [],
                    "any_str": found["open"],
                },
            )


# --- the uses -----------------------------------------------------------------------------------


def answer(use, domains, keys, actions, serve):
    """The build's answer for one use: its own check where one exists, else the names it knows."""
    action = serve._option_string_actions.get(use["option"])  # `-cc` is `--compilation-config`
    if action is not None and _long(action):
        use = {**use, "option": _long(action)}
    if use["kind"] == "key":
        record = keys.get(use["option"])
        if record is None:
            return None, "no config class for this option in this build"
        if use["key"] in record["keys"]:
            return True, f"a field of {record['class']}"
        if record["closed"] is True:  # some keys are taken without being fields (renamed old keys)
            cls, how = CLASSES[use["option"]]
            error = build_with(actions.get(use["option"]), cls, how, _nested(use["key"]))
            if error is None:
                return True, f"not a field of {record['class']}, yet the parser takes it"
            return False, f"not a field of {record['class']}, which rejects unknown keys"
        if record["closed"] is False:
            return True, f"not a field of {record['class']}, which takes (ignores) unknown keys"
        return None, f"not a field of {record['class']}; whether it rejects one is unknown"
    value, domain = use["value"], use["option"] + (f".{use['key']}" if use.get("key") else "")
    record = domains.get(domain)
    if record is None:
        return None, "this build names no values for it"
    action = actions.get(domain)
    if record["from"] == "choices" and action is not None:
        try:  # argparse's own order: the type function, then the choices
            converted = action.type(value) if callable(action.type) else value
        except BaseException as exc:
            return False, f"the parser's type function refused it: {type(exc).__name__}"
        return converted in action.choices, "the serve parser's choices"
    if domain == "--attention-backend":
        return _attention_backend(value, record)
    fold = record.get("fold")
    folded = value.lower() if fold == "lower" else value.upper() if fold == "upper" else value
    if folded in record["names"]:
        return True, f"one of the build's {record['from']} names"
    if record.get("any_str"):
        return None, "not a listed name, and the field also takes any string: a later check decides"
    return False, f"not one of the build's {len(record['names'])} {record['from']} names"


def _attention_backend(value, record):
    """AttentionConfig's own validator turns the string into the enum (`auto` -> None)."""
    from .vllm_symbols import find

    attention_config = find("AttentionConfig")
    if attention_config is not None:
        try:
            attention_config(backend=value)
            return True, "AttentionConfig(backend=...) took it"
        except BaseException as exc:
            text = f"{type(exc).__name__}: {exc}"
            if "backend" in text or isinstance(exc, KeyError):
                return False, "AttentionConfig refused it: " + text[:200]
            return None, "AttentionConfig failed for another reason: " + text[:200]
    return (value.upper() in record["names"] or value.lower() == "auto"), "AttentionBackendEnum names"


def main():
    from . import vllm_helper  # its import points fd 1 at stderr and keeps the original stdout as PROTO
    from .vllm_helper import build_parser

    query = json.load(sys.stdin)
    parser, _serve_cmd, _patched = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    serve = sub.choices["serve"]
    domains, keys, actions, unknown = {}, {}, {}, []
    choices_domains(serve, domains, actions)
    registry_domains(domains, unknown)
    field_domains(serve, domains, actions, unknown)
    json_keys(serve, keys, domains, actions, unknown)
    weight_transfer_backends(domains, unknown)
    answers = []
    for use in query.get("uses", []):
        try:
            build, why = answer(use, domains, keys, actions, serve)
        except Exception as exc:
            build, why = None, f"asking failed: {type(exc).__name__}: {exc}"[:300]
        answers.append({**use, "build": build, "why": why})
    result = {"domains": domains, "keys": keys, "answers": answers, "unknown": unknown}
    if sys.argv[1:] in ([], ["-"]):
        vllm_helper.PROTO.write(json.dumps(result, default=str) + "\n")
    else:
        with open(sys.argv[1], "w") as out:
            json.dump(result, out, default=str)


if __name__ == "__main__":
    main()
