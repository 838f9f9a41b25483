"""Where each vLLM symbol the in-target scripts use lives, release by release: the one table.

vLLM moves functions between releases (0.34.0 moved `cli_env_setup` from
`vllm.entrypoints.serve.utils.api_utils` to `vllm.entrypoints.common.startup`; 0.6–0.7 built the
`vllm serve` parser in `vllm/scripts.py`, later releases in `vllm.entrypoints.cli.serve`). A script
never imports a vLLM name directly: it asks `find(KEY)`, which tries the homes listed here, newest
first, so a release is read where it keeps the name. tests/runner/builds/test_intarget_symbols.py checks,
with `ast` on every release's own sources, that each key resolves through this table.

Standard library only: imported by the scripts in a target's Python and by driftmatrix's check
(runner/builds/symbol_check.py), which reads the same table.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Where:
    homes: tuple[str, ...]
    """`module` (the key is the name in it) or `module:name`, newest home first; `module:` names the
    module itself."""
    absent: str | None = None
    """None: every release must have it. Otherwise what the scripts do in a release that has none."""
    instead_of: str | None = None
    """Needed exactly where the release has no KEY of that name (the older way of doing the same)."""


TABLE: dict[str, Where] = {
    "FlexibleArgumentParser": Where(("vllm.utils.argparse_utils", "vllm.utils")),
    "cli_env_setup": Where(
        ("vllm.entrypoints.common.startup", "vllm.entrypoints.serve.utils.api_utils", "vllm.entrypoints.utils"),
        absent="the release's CLI sets nothing up before parsing: nothing to call",
    ),
    "serve_cmd_init": Where(
        ("vllm.entrypoints.cli.serve:cmd_init",),
        absent="the serve parser as vllm/scripts.py built it (make_arg_parser on a `serve` subparser)",
    ),
    "make_arg_parser": Where(
        ("vllm.entrypoints.common.cli_args", "vllm.entrypoints.openai.cli_args", "vllm.entrypoints.launchers.cli_args"),
        instead_of="serve_cmd_init",
    ),
    "validate_parsed_serve_args": Where(
        ("vllm.entrypoints.common.cli_args", "vllm.entrypoints.openai.cli_args", "vllm.entrypoints.launchers.cli_args"),
        absent="the release validated nothing after parsing",
    ),
    "cli_main": Where(
        ("vllm.entrypoints.cli.main:",), absent="the release's CLI has no subcommands other than vllm/scripts.py's"
    ),
    "current_platform": Where(("vllm.platforms",)),
    "platforms": Where(("vllm.platforms:",)),
    "CudaPlatformBase": Where(
        ("vllm.platforms.cuda",), absent="no CUDA platform class to declare a device over: the config tier SKIPs"
    ),
    "DeviceCapability": Where(
        ("vllm.platforms.interface",), absent="no device capability type to declare: the config tier SKIPs"
    ),
    "DeviceConfig": Where(("vllm.config",)),
    "AsyncEngineArgs": Where(("vllm.engine.arg_utils",)),
    "UsageContext": Where(("vllm.usage.usage_lib",)),
    "ModelRegistry": Where(("vllm.model_executor.models.registry", "vllm.model_executor.models")),
    "models_registry": Where(
        ("vllm.model_executor.models.registry:",),
        absent="no registry module: each helper and server inspects the architectures it meets itself",
    ),
    "load_general_plugins": Where(("vllm.plugins",), absent="the release loads no plugins: none to load first"),
    # the value names and config classes serve_values.py reads (issue 34): a release without one
    # answers "unknown" for that domain
    "ToolParserManager": Where(
        ("vllm.tool_parsers", "vllm.entrypoints.openai.tool_parsers"),
        absent="no tool-call parser registry: --tool-call-parser names unknown",
    ),
    "ReasoningParserManager": Where(
        ("vllm.reasoning",), absent="no reasoning parser registry: --reasoning-parser names unknown"
    ),
    "QUANTIZATION_METHODS": Where(
        ("vllm.model_executor.layers.quantization",), absent="no quantization method list: --quantization names unknown"
    ),
    "model_loader": Where(
        ("vllm.model_executor.model_loader:",), absent="no model-loader package: --load-format names unknown"
    ),
    "LoadConfig": Where(("vllm.config",), absent="no LoadConfig: --load-format read without folding"),
    "AttentionBackendEnum": Where(
        ("vllm.v1.attention.backends.registry", "vllm.attention.backends.registry"),
        absent="no attention backend enum: --attention-backend names unknown",
    ),
    "AttentionConfig": Where(("vllm.config",), absent="no AttentionConfig: backend names matched upper-cased"),
    "ModelConfig": Where(("vllm.config",), absent="no ModelConfig: --tokenizer-mode read without folding"),
    "TokenizerRegistry": Where(
        ("vllm.tokenizers.registry", "vllm.transformers_utils.tokenizer_base"),
        absent="no tokenizer registry: --tokenizer-mode names unknown",
    ),
    "WeightTransferEngineFactory": Where(
        ("vllm.distributed.weight_transfer.factory",),
        absent="no weight-transfer engine registry: the backend Literal stands",
    ),
    "VllmConfig": Where(("vllm.config",), absent="no VllmConfig: JSON options without a parser-built class unknown"),
    # the configuration classes vLLM ships for models transformers lacks (twin_vllm_config.py, issue 35)
    "vllm": Where(("vllm:",)),
    "_CONFIG_REGISTRY": Where(
        ("vllm.transformers_utils.config",),
        absent="no configuration classes of vLLM's own: such architectures get no twin",
    ),
}


def split(home: str, key: str) -> tuple[str, str | None]:
    """(module, name in it; None for the module itself)."""
    module, sep, name = home.partition(":")
    return module, (name or None) if sep else key


FOUND: dict[str, str] = {}
"""KEY -> the home it was found in, in this process (the helper reports it when it starts)."""


def _missing(exc: ModuleNotFoundError, module: str) -> bool:
    """The module (or a package above it) is not in this release, as opposed to a module that is
    there and fails to import (a missing dependency): that is a real error, not a moved name."""
    return exc.name is not None and (module == exc.name or module.startswith(exc.name + "."))


def find(key: str):
    """KEY from the first of its homes this release has; None where the release has none and the
    table says it may lack it; ImportError naming every home tried otherwise."""
    where = TABLE[key]
    tried, broken = [], None
    for home in where.homes:
        module_name, name = split(home, key)
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if not _missing(exc, module_name):
                broken = broken or exc
            tried.append(
                f"{module_name} (no such module)"
                if _missing(exc, module_name)
                else f"{module_name} ({type(exc).__name__}: {exc})"
            )
            continue
        except Exception as exc:  # the home exists but cannot be imported: keep looking, report it
            broken = broken or exc
            tried.append(f"{module_name} ({type(exc).__name__}: {exc})")
            continue
        if name is None:
            FOUND[key] = home
            return module
        if hasattr(module, name):
            FOUND[key] = home
            return getattr(module, name)
        tried.append(f"{module_name} (has no {name})")
    if broken is not None:
        raise ImportError(f"{key}: {'; '.join(tried)}") from broken
    if where.absent is None:  # an `instead_of` name is asked for only where it is needed
        raise ImportError(f"this vLLM has no {key} where the table looks for it: {'; '.join(tried)}")
    FOUND[key] = "absent"
    return None
