"""Names vLLM registers outside the option's own `choices`, read with `ast` per release.

- tool-call / reasoning parsers: `@ToolParserManager.register_module("x")` / `(["a", "b"])` /
  `(name=…)` decorators (0.6 … 0.12, under vllm/entrypoints/openai/tool_parsers/ and vllm/reasoning/),
  and the lazy tables `_TOOL_PARSERS_TO_REGISTER = {"name": (file, class)}` /
  `_REASONING_PARSERS_TO_REGISTER` (vllm/tool_parsers/, vllm/reasoning/ since 0.13);
- quantization methods: `QuantizationMethods` Literal, else the `QUANTIZATION_METHODS` dict/list,
  and `DEPRECATED_QUANTIZATION_METHODS` with the warning vLLM prints for them;
- load formats: the `LoadFormats` Literal of vllm/model_executor/model_loader/ (else the option's choices);
- attention backends: the member *names* of `AttentionBackendEnum` (vLLM looks them up with
  `Enum[value.upper()]`, so any case is accepted: fold "upper");
- tokenizer modes (added to the `TokenizerMode` Literal, see EXTRA_RULES): the keys of the
  `_VLLM_TOKENIZERS = {"mode": (module, class)}` table of vllm/tokenizers/registry.py and literal
  `TokenizerRegistry.register("mode", …)` calls there (the registry get_tokenizer loads a mode from);
- weight-transfer backends (added to the `backend` Literal of WeightTransferConfig): the literal names
  of `WeightTransferEngineFactory.register_engine("name", …)` calls in
  vllm/distributed/weight_transfer/factory.py (the factory the engine is made by).
Each rule returns None when the release has nothing it recognises: the caller turns that into a
diagnostic, never an empty set.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from driftmatrix.flaghistory.literals import enum_values, is_enum, nodes, strings
from driftmatrix.flaghistory.pyindex import Index, Module, evaluate

TOOL_PACKAGES = ("vllm.tool_parsers", "vllm.entrypoints.openai.tool_parsers")
REASONING_PACKAGES = ("vllm.reasoning", "vllm.entrypoints.openai.reasoning_parsers")
QUANT_MODULE = "vllm.model_executor.layers.quantization"
LOADER_MODULE = "vllm.model_executor.model_loader"
ATTENTION_MODULES = ("vllm.v1.attention.backends.registry", "vllm.attention.backends.registry")
TOKENIZER_MODULE = "vllm.tokenizers.registry"
WEIGHT_TRANSFER_MODULE = "vllm.distributed.weight_transfer.factory"


@dataclass
class Found:
    """One option's value names in one release."""

    values: list[str]
    where: str
    kind: str
    """"choices" | "literal" | "enum" | "registry"."""
    fold: str | None = None
    open: str | None = None
    """The field's type when it admits any string beside the names (`str | DistributedExecutorBackend`):
    plugins, registries or class paths add names, so an unknown name is unknown, not rejected."""
    deprecated: dict[str, dict] = field(default_factory=dict)
    """value → {"text": vLLM's words, "replacement": value or None}."""


def _in(module: Module, packages: tuple[str, ...]) -> bool:
    return any(module.name == p or module.name.startswith(p + ".") for p in packages)


def _names(node: ast.expr | None, module: Module, index: Index) -> list[str]:
    value = evaluate(node, {}, module, index) if node is not None else None
    if isinstance(value, str):
        return [value]
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _decorated(module: Module, manager: str, index: Index) -> list[str]:
    """Names given to `@<manager>.register_module(...)` on the module's classes (the class name when none)."""
    found = []
    for node in module.tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        for deco in node.decorator_list:
            if not (isinstance(deco, ast.Call) and ast.unparse(deco.func) == f"{manager}.register_module"):
                continue
            named = deco.args[0] if deco.args else next((k.value for k in deco.keywords if k.arg == "name"), None)
            found += _names(named, module, index) if named is not None else [node.name]
    return found


def _lazy(module: Module, table: str, index: Index) -> list[str]:
    """Keys of a `_X_TO_REGISTER = {"name": (file, class)}` table, and literal `register_lazy_module(name=…)` calls."""
    found = []
    node = module.defs.get(table)
    if isinstance(node, ast.Dict):
        found += [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    for call in ast.walk(module.tree):
        if isinstance(call, ast.Call) and ast.unparse(call.func).endswith("register_lazy_module"):
            named = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "name"), None)
            if isinstance(named, ast.Constant) and isinstance(named.value, str):
                found.append(named.value)
    return found


def parsers(index: Index, packages: tuple[str, ...], manager: str, table: str) -> Found | None:
    names, files = [], []
    for module in sorted(index.modules.values(), key=lambda m: m.path):
        if not _in(module, packages):
            continue
        here = _decorated(module, manager, index) + _lazy(module, table, index)
        if here:
            names += here
            files.append(module.path)
    if not names:
        return None
    # the table's own file names the set best (newest layout); else the package folder
    where = next((f for f in files if f.endswith("__init__.py")), files[0].rsplit("/", 1)[0] + "/")
    return Found(sorted(set(names)), where, "registry")


def tool_parsers(index: Index) -> Found | None:
    return parsers(index, TOOL_PACKAGES, "ToolParserManager", "_TOOL_PARSERS_TO_REGISTER")


def reasoning_parsers(index: Index) -> Found | None:
    return parsers(index, REASONING_PACKAGES, "ReasoningParserManager", "_REASONING_PARSERS_TO_REGISTER")


def quantization(index: Index) -> Found | None:
    module = index.modules.get(QUANT_MODULE)
    if module is None:
        return None
    for name in ("QuantizationMethods", "QUANTIZATION_METHODS"):
        got = strings(index, module, ast.Name(name), {})
        if got:
            found = Found(sorted(set(got[1])), module.path, got[0] if got[0] != "choices" else "registry")
            found.deprecated = _deprecated_methods(index, module)
            return found
    return None


def _deprecated_methods(index: Index, module: Module) -> dict[str, dict]:
    """`DEPRECATED_QUANTIZATION_METHODS`, each with the warning printed in the branch that tests it."""
    listed = _names(module.defs.get("DEPRECATED_QUANTIZATION_METHODS"), module, index)  # may name removed ones
    text = _branch_warning(index, "DEPRECATED_QUANTIZATION_METHODS") or "listed in DEPRECATED_QUANTIZATION_METHODS"
    return {name: {"text": text, "replacement": None} for name in listed}


def _branch_warning(index: Index, table: str) -> str | None:
    """The first string saying "deprecated" inside an `if … in <table>:` branch anywhere in the release."""
    for _, node in nodes(index, (ast.If,)):
        if table in ast.unparse(node.test):
            for inner in ast.walk(node):
                text = _text(inner)
                if text and "deprecated" in text:
                    return text
    return None


def _text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return " ".join(node.value.split())
    if isinstance(node, ast.JoinedStr):
        parts = [v.value if isinstance(v, ast.Constant) else "{…}" for v in node.values]
        return " ".join("".join(str(p) for p in parts).split())
    return None


def load_formats(index: Index) -> Found | None:
    module = index.modules.get(LOADER_MODULE)
    got = strings(index, module, ast.Name("LoadFormats"), {}) if module else None
    if not got:
        return None
    return Found(sorted(set(got[1])), module.path, got[0], _load_fold(index))  # type: ignore[union-attr]


def _load_fold(index: Index) -> str | None:
    """vLLM lower-cases the load format before comparing (LoadConfig's validator) in newer releases."""
    for _, node in nodes(index, (ast.FunctionDef,)):
        if "load_format" in node.name and "lower()" in ast.unparse(node):
            return "lower"
    return None


def attention_backends(index: Index) -> Found | None:
    for name in ATTENTION_MODULES:
        module = index.modules.get(name)
        node = module.defs.get("AttentionBackendEnum") if module else None
        if module is not None and node is not None and is_enum(node):
            names = enum_values(index, module, node, "name")  # type: ignore[arg-type]
            return Found(sorted(names), module.path, "enum", "upper") if names else None
    return None


RULES = {
    "--tool-call-parser": tool_parsers,
    "--reasoning-parser": reasoning_parsers,
    "--quantization": quantization,
    "--load-format": load_formats,
    "--attention-backend": attention_backends,
}
"""Options whose names a registry gives (preferred over `choices`, which older releases list by hand
and newer ones leave open as `str`)."""


def _registered(module: Module, owner: str, method: str, index: Index) -> list[str]:
    """The first argument of every `<owner>.<method>("name", …)` call at the module's top level (where
    built-in entries are registered when the module is imported), when it is a certain string."""
    found = []
    for stmt in module.tree.body:
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if isinstance(call, ast.Call) and ast.unparse(call.func) == f"{owner}.{method}" and call.args:
            found += _names(call.args[0], module, index)
    return found


def tokenizer_modes(index: Index) -> Found | None:
    module = index.modules.get(TOKENIZER_MODULE)
    if module is None:
        return None
    names = (
        [
            k.value
            for k in module.defs["_VLLM_TOKENIZERS"].keys
            if isinstance(k, ast.Constant) and isinstance(k.value, str)
        ]
        if isinstance(module.defs.get("_VLLM_TOKENIZERS"), ast.Dict)
        else []
    )
    names += _registered(module, "TokenizerRegistry", "register", index)
    return Found(sorted(set(names)), module.path, "registry") if names else None


def weight_transfer_engines(index: Index) -> Found | None:
    module = index.modules.get(WEIGHT_TRANSFER_MODULE)
    names = _registered(module, "WeightTransferEngineFactory", "register_engine", index) if module is not None else []
    return Found(sorted(set(names)), module.path, "registry") if names else None  # type: ignore[union-attr]


EXTRA_RULES = {
    "--tokenizer-mode": tokenizer_modes,
    "--weight-transfer-config.backend": weight_transfer_engines,
}
"""Domains whose field is typed with a Literal *and* backed by a registry the release consults later
(`TokenizerMode | str`, `Literal["nccl", …] | str`): the names are the union of both, as the build
accepts either. Only `WeightTransferEngineFactory.register_engine` counts in factory.py (its trainer
factory registers the same names for the trainer side, not for this option)."""
