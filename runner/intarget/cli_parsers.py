"""Other `vllm` subcommands (`vllm bench throughput`, `vllm run-batch`) parsed by their own parsers as
this build's `vllm` CLI defines them, and the device patch every parser is built under; run in a
target's own Python beside vllm_helper.py (stdlib and vLLM only)."""

import ast
import contextlib
import importlib
import importlib.util
import sys

from .vllm_symbols import find


@contextlib.contextmanager
def device_patch():
    """A CUDA build without an accelerator cannot infer its device while a parser builds its
    defaults; vLLM's own docs build patches DeviceConfig.__post_init__ the same way. Yields
    whether it patched."""
    platform = find("current_platform")
    # before 0.8 there is no is_unspecified, and DeviceConfig inferred its device only when built
    # (not while a parser builds its defaults): nothing to patch there
    unspecified = getattr(platform, "is_unspecified", None)
    DeviceConfig = find("DeviceConfig")
    if unspecified is None or not unspecified() or "__post_init__" not in vars(DeviceConfig):
        yield False
        return
    patched = DeviceConfig.__post_init__
    DeviceConfig.__post_init__ = lambda self: None
    try:
        yield True
    finally:
        DeviceConfig.__post_init__ = patched


# --- other `vllm` subcommands (`vllm bench throughput`, `vllm run-batch`): their own parsers -------

KNOWN_MODULES = {"bench": "vllm.entrypoints.cli.benchmark.main", "run-batch": "vllm.entrypoints.cli.run_batch"}
"""Where the subcommands the docs give a speculative config to live (tried first, when this
build's CMD_MODULES lists them); any other word is looked for in every module CMD_MODULES lists."""
SUBCOMMANDS = {}
"""First word -> (parser, CLISubcommand) or, when it cannot be had here, the reason (a str)."""


def cli_modules():
    """The modules this build's `vllm` CLI takes its subcommands from: CMD_MODULES in
    vllm/entrypoints/cli/main.py, read (main() itself imports all of them and parses sys.argv)."""
    main = find("cli_main")
    if main is None or not getattr(main, "__file__", None):
        return []
    with open(main.__file__, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, (ast.List, ast.Tuple))
            and any(isinstance(t, ast.Name) and t.id == "CMD_MODULES" for t in node.targets)
        ):
            return [ast.unparse(e) for e in node.value.elts]
    return []


@contextlib.contextmanager
def cli_argv(words):
    """sys.argv as `vllm WORDS...` would have it: `vllm bench` builds its nested parsers only when
    the command line's first positional word is `bench`."""
    saved = sys.argv
    sys.argv = ["vllm", *words]
    try:
        yield
    finally:
        sys.argv = saved


def subcommand_parser(words):
    """(parser, the CLISubcommand) for `vllm WORDS...`, built once per first word; or the reason it
    cannot be had in this build (a str)."""
    name = words[0]
    if name in SUBCOMMANDS:
        return SUBCOMMANDS[name]
    listed = cli_modules()
    known = KNOWN_MODULES.get(name)
    candidates = [known] if known and (known in listed or not listed) else []
    candidates += [
        m
        for m in listed
        if m not in candidates and m != "vllm.entrypoints.cli.serve" and m not in KNOWN_MODULES.values()
    ]
    problems, found = [], None
    for module_name in candidates:
        try:
            module = importlib.import_module(module_name)
            cmds = module.cmd_init()
        except Exception as exc:  # a missing optional dependency, a module of another version
            problems.append(f"{module_name}: {type(exc).__name__}: {str(exc)[:300]}")
            continue
        found = next((cmd for cmd in cmds if getattr(cmd, "name", None) == name), None)
        if found is not None:
            break
    if found is None:
        why = (
            f"this vLLM build's CLI could not load `vllm {name}` ({'; '.join(problems)})"
            if problems and known
            else f"this vLLM build's CLI has no `vllm {name}` subcommand (vllm/entrypoints/cli/main.py does "
            "not list it)"
        )
        SUBCOMMANDS[name] = why
        return why
    FlexibleArgumentParser = find("FlexibleArgumentParser")
    try:
        with cli_argv(words), device_patch():
            parser = FlexibleArgumentParser(prog="vllm")
            sub = parser.add_subparsers(required=False, dest="subparser")
            found.subparser_init(sub)
    except Exception as exc:
        why = f"this vLLM build could not build the parser of `vllm {name}`: {type(exc).__name__}: {str(exc)[:300]}"
        SUBCOMMANDS[name] = why
        return why
    SUBCOMMANDS[name] = (parser, found)
    return SUBCOMMANDS[name]


# --- the legacy entry point `python -m vllm.entrypoints.openai.api_server`: its own parser ---------

LEGACY_MODULES = ("vllm.entrypoints.openai.api_server",)
"""The legacy entry points read (importing a name only to look for it would run its packages)."""
LEGACY = {}
"""The module's name -> its parser, or the reason this build has none (a str); built on first use."""


def legacy_parser(module):
    """The parser `python -m MODULE` builds in its `__main__` (vLLM's FlexibleArgumentParser given
    make_arg_parser's options): the arguments come without a `serve` word, so none of `vllm serve`'s
    own rules apply (its positional model, "`model` should be provided as the first positional
    argument when using `vllm serve`"); the model is `--model` or the module's default."""
    if module not in LEGACY:
        LEGACY[module] = _build_legacy(module)
    return LEGACY[module]


def _build_legacy(module):
    if module not in LEGACY_MODULES:
        return f"{module} is not an entry point driftmatrix reads"
    try:
        if importlib.util.find_spec(module) is None:
            return f"this build has no {module} (the legacy entry point the docs start)"
    except (ImportError, ValueError) as exc:
        return f"this build has no {module}: {type(exc).__name__}: {exc}"
    try:
        make_arg_parser, flexible = find("make_arg_parser"), find("FlexibleArgumentParser")
        with device_patch():
            return make_arg_parser(flexible(description="vLLM OpenAI-Compatible RESTful API server."))
    except Exception as exc:  # a layout the symbol table does not know: said, not a crash of the command
        return f"this build's {module} parser could not be built: {type(exc).__name__}: {exc}"
