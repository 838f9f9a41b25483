"""The keys of the JSON-valued serve options (`--speculative-config '{"method": …}'`), per release.

The keys are the fields of the option's config class — the class its EngineArgs field is annotated
with, else the class the option's name spells (`--kv-transfer-config` ↔ `KVTransferConfig`) —
with nested config classes as dotted paths (`pass_config.enable_fusion`). Whether vLLM rejects a key
the class lacks ("closed") is read from how the class is made:
- pydantic `extra="forbid"`: in the class's `ConfigDict`, or in the release's own `@config`
  decorator (vllm/config/utils.py since 0.2x merges `ConfigDict(extra="forbid")` into every class);
- a plain stdlib dataclass built from the parsed dict with `Cls(**d)` / `cls(**d)`: an unknown key
  is a TypeError;
anything else (pydantic's default `extra="ignore"`, a BaseModel without it) is None: vLLM drops an
unknown key silently, so a history can never say it is rejected.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from driftmatrix.flaghistory.dataclass_fields import FieldInfo, decorated_dataclass, fields_of
from driftmatrix.flaghistory.literals import memo, nodes, origin, strings
from driftmatrix.flaghistory.pyindex import Index, Module
from driftmatrix.flaghistory.reader import ReleaseOptions
from driftmatrix.flaghistory.wording import REPLACING, help_says_deprecated

MAX_NESTING = 3
SCALARS = {"bool", "str", "int", "float", "None", "dict", "list", "Any"}
JSONISH = {"dict", "Dict"}


def _json_type(text: str) -> bool:
    """`type=json.loads`, `type=CompilationConfig.from_cli`, `type=PoolerConfig.from_json`: a JSON value."""
    return "json" in text or _type_class(text) is not None


def _type_class(text: str) -> str | None:
    head = text.split(".")[0]
    return head if head[:1].isupper() and head.endswith("Config") else None


@dataclass
class ConfigKeys:
    cls: str
    where: str
    keys: list[str]
    closed: bool
    deprecated: dict[str, dict] = field(default_factory=dict)
    """key → {"text", "replacement"} where the field's docstring says it is deprecated."""
    values: dict[str, tuple[str, list[str], str]] = field(default_factory=dict)
    """key → (kind, values, file) for keys typed with a Literal (`method` of SpeculativeConfig)."""
    folds: dict[str, str] = field(default_factory=dict)
    """key → "lower"/"upper" where its class's own validator folds it (`LoadConfig._lowercase_load_format`)."""


def json_options(found: ReleaseOptions) -> list[str]:
    """Options that take a JSON object: their field is a config class, or their name ends in `-config`."""
    names = []
    for name, option in found.options.items():
        if name.startswith("--no-") or "." in name or not name.startswith("--"):
            continue
        info = option.source_field
        if info is not None and info.json_config:
            names.append(name)
        elif name.endswith("-config") and (
            info.types & JSONISH if info is not None else _json_type(option.type_text) or "json" in option.help.lower()
        ):
            names.append(name)  # not `--generation-config` (a folder) nor `--config` (a YAML file)
    return sorted(names)


def _config_class(cls: ast.ClassDef) -> bool:
    """A dataclass (stdlib, pydantic, vLLM's `@config`) or a pydantic BaseModel: not `SupportsHash`."""
    return decorated_dataclass(cls) or any(ast.unparse(b).endswith("BaseModel") for b in cls.bases)


def _squash(text: str) -> str:
    return text.replace("-", "").replace("_", "").lower()


def find_class(index: Index, option: str, found: ReleaseOptions) -> tuple[Module, ast.ClassDef] | None:
    info = found.options[option].source_field
    if info is not None and info.module is not None:
        for name in sorted(info.types - SCALARS):
            hit = index.lookup_class(info.module, name)
            if hit and _config_class(hit[1]):
                return hit
    named = _type_class(found.options[option].type_text)  # type=PoolerConfig.from_json
    wanted = _squash(named or option[2:])  # --kv-transfer-config ↔ KVTransferConfig
    hits = [
        (m, n)
        for m in index.modules.values()
        for n in m.defs.values()
        if isinstance(n, ast.ClassDef) and _squash(n.name) == wanted and _config_class(n)
    ]
    hits.sort(key=lambda h: (not h[0].name.startswith("vllm.config"), h[0].path))
    return hits[0] if hits else None


def no_class(index: Index, option: str) -> str:
    """Why an option's keys were not read, for its diagnostic."""
    wanted = _squash(option[2:])
    plain = [
        n.name
        for m in index.modules.values()
        for n in m.defs.values()
        if isinstance(n, ast.ClassDef) and _squash(n.name) == wanted
    ]
    if plain:  # e.g. SpeculativeConfig before 0.8.3: a plain class with an __init__
        return f"class {plain[0]} is not a dataclass or pydantic model: its keys are not read"
    return f"no config class found (by its field's type, its type= or the name {wanted})"


def _init_false(cls: ast.ClassDef) -> set[str]:
    """Fields declared `field(init=False)` / `Field(init=False)`: not keys a user may pass."""
    names = set()
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(node.value, ast.Call):
            if any(
                k.arg == "init" and isinstance(k.value, ast.Constant) and k.value.value is False
                for k in node.value.keywords
            ):
                names.add(node.target.id)
    return names


def _hidden(index: Index, module: Module, cls: ast.ClassDef, depth: int = 0) -> set[str]:
    hidden = _init_false(cls)
    for base_module, base in index.bases(module, cls) if depth < 10 else []:
        hidden |= _hidden(index, base_module, base, depth + 1)
    return hidden


def _fields(index: Index, module: Module, cls: ast.ClassDef) -> dict[str, FieldInfo]:
    hidden = _hidden(index, module, cls)
    return {
        n: f
        for n, f in fields_of(index, module, cls).items()
        if not n.startswith("_") and n not in hidden and n != "model_config"
    }


def _factories(index: Index, module: Module, cls: ast.ClassDef, depth: int = 0) -> set[str]:
    """Fields whose default is a fresh instance (`Field(default_factory=PassConfig)`): a nested config
    the user sets inside the JSON. Fields defaulting to None that vLLM fills itself
    (`SpeculativeConfig.target_model_config`) are keys, but their classes are not walked into."""
    names = set()
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(node.value, ast.Call):
            if any(k.arg == "default_factory" for k in node.value.keywords):
                names.add(node.target.id)
    for base_module, base in index.bases(module, cls) if depth < 10 else []:
        names |= _factories(index, base_module, base, depth + 1)
    return names


def _optional(info: FieldInfo) -> bool:
    """`draft_load_config: LoadConfig | None = None`, `linear: QuantSpec | None`, `Optional["X"]`: the type
    says the user may give the nested config or leave it out, and pydantic validates what is given.
    Not `SkipValidation[ModelConfig] = None` (taken unchecked: vLLM fills it) nor `ModelConfig =
    field(default=None)` (a type without None: vLLM fills it)."""
    return "None" in info.types and info.annotation is not None and "SkipValidation" not in ast.unparse(info.annotation)


def walk_keys(index: Index, module: Module, cls: ast.ClassDef, prefix: str = "", depth: int = 0):
    """(dotted key, FieldInfo) for every field, nested config classes' fields under `field.` too: those
    made with a default factory and those typed `Config | None` (_optional). A field whose config
    class cannot be found (a dict of them, a class outside the kept sources) has no keys below it, so
    nothing under it is judged (FlagHistory.has_nested_keys)."""
    nested = _factories(index, module, cls)
    for name, info in _fields(index, module, cls).items():
        yield prefix + name, info
        if (
            not info.json_config
            or not (name in nested or _optional(info))
            or depth >= MAX_NESTING
            or info.module is None
        ):
            continue
        for type_name in sorted(info.types - SCALARS):
            hit = index.lookup_class(info.module, type_name)
            if hit and hit[1] is not cls:
                yield from walk_keys(index, hit[0], hit[1], f"{prefix}{name}.", depth + 1)
                break


# -- closed ---------------------------------------------------------------------------------
def _forbids(node: ast.AST) -> bool:
    return any(
        isinstance(k, ast.keyword)
        and k.arg == "extra"
        and isinstance(k.value, ast.Constant)
        and k.value.value == "forbid"
        for k in ast.walk(node)
    )


def _config_decorator_forbids(index: Index, module: Module) -> bool:
    found = index.lookup_function(module, "config")
    return bool(found) and _forbids(found[1])


def closed(index: Index, module: Module, cls: ast.ClassDef) -> bool:
    for deco in cls.decorator_list:
        name = ast.unparse(deco.func if isinstance(deco, ast.Call) else deco)
        if isinstance(deco, ast.Call) and any(k.arg == "config" for k in deco.keywords):
            if _forbids(deco):
                return True
            continue
        if name == "config" and _config_decorator_forbids(index, module):
            return True
    for node in cls.body:  # pydantic BaseModel: model_config = ConfigDict(extra="forbid")
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "model_config" for t in node.targets)
            and _forbids(node.value)
        ):
            return True
    return _stdlib_dataclass(module, cls) and _built_with_kwargs(index, cls)


def _stdlib_dataclass(module: Module, cls: ast.ClassDef) -> bool:
    for deco in cls.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if ast.unparse(target) == "dataclasses.dataclass":
            return True
        if ast.unparse(target) == "dataclass":
            return module.imports.get("dataclass", ("", None))[0] == "dataclasses"
    return False


def _built_with_kwargs(index: Index, cls: ast.ClassDef) -> bool:
    """`Cls(**d)` anywhere, or `cls(**d)` in one of its own methods (`from_dict`)."""
    for node in cls.body:
        if isinstance(node, ast.FunctionDef):
            for call in ast.walk(node):
                if (
                    isinstance(call, ast.Call)
                    and ast.unparse(call.func) == "cls"
                    and any(k.arg is None for k in call.keywords)
                ):
                    return True

    def spread():
        return {
            c.func.id
            for _, c in nodes(index, (ast.Call,))
            if isinstance(c.func, ast.Name) and any(k.arg is None for k in c.keywords)
        }

    return cls.name in memo(index, "built-with-kwargs", spread)


# -- deprecated keys ------------------------------------------------------------------------
def key_deprecation(key: str, info: FieldInfo, siblings: set[str]) -> dict | None:
    """The field's own docstring says it is deprecated (`Level is deprecated … Please use mode.`);
    the replacement is a sibling key (same class) a "use …" sentence names, as its full dotted key."""
    doc = " ".join(info.doc.split())
    leaf = key.rsplit(".", 1)[-1]
    opening = doc.lower().lstrip("`'\"[ ")
    if not (
        help_says_deprecated(doc)
        or opening.startswith(tuple(f"{w} is deprecated" for w in (leaf, leaf.replace("_", " "))))
    ):
        return None
    prefix = key[: len(key) - len(leaf)]  # "pass_config." for pass_config.enable_fusion
    named = _sibling(
        doc, leaf, {k[len(prefix) :] for k in siblings if k.startswith(prefix) and "." not in k[len(prefix) :]}
    )
    return {"text": doc[:400], "replacement": prefix + named if named else None}


def _sibling(doc: str, leaf: str, siblings: set[str]) -> str | None:
    for sentence in re.split(r"(?<=[.!?])\s+", doc):
        if not REPLACING.search(sentence):
            continue
        for word in re.findall(r"[A-Za-z_][\w.]*", sentence):
            word = word.strip(".")
            if word != leaf and word in siblings and len(word) > 2:
                return word
    return None


def read_keys(index: Index, option: str, found: ReleaseOptions) -> ConfigKeys | None:
    hit = find_class(index, option, found)
    if hit is None:
        return None
    module, cls = hit
    keys = ConfigKeys(cls.name, module.path, [], closed(index, module, cls))
    pairs = list(walk_keys(index, module, cls))
    siblings = {k for k, _ in pairs}
    for key, info in pairs:
        keys.keys.append(key)
        said = key_deprecation(key, info, siblings)
        if said:
            keys.deprecated[key] = said
        got = strings(index, info.module, info.annotation, {}) if info.module is not None else None
        where = origin(index, info.module, info.annotation) if info.module is not None else module.path
        if got and got[0] == "literal":  # enums: pydantic and vLLM validators differ (value vs name): not guessed
            keys.values[key] = (*got, where)
            if info.fold:
                keys.folds[key] = info.fold
    return keys
