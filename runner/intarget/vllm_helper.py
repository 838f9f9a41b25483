"""Parse/config helper, run by a *target* environment's Python (imports vLLM, not driftmatrix).

One long-lived process per environment: the vLLM import is paid once, then each request
(one JSON line on stdin: `{"id", "argv", "tier", "env"}`, and `"subcommand"` for another `vllm`
subcommand) is answered with one JSON line on the protocol channel.  vLLM's logger writes to stdout, so the protocol uses a private copy of
the original stdout and fd 1 is pointed at stderr.

Tiers: `parse` = vLLM's own `vllm serve` parser + its validate(); `config` = additionally
`AsyncEngineArgs.from_cli_args(args).create_engine_config(...)`, where speculative method
resolution and cross-feature validation happen.

A request with `"subcommand": ["bench", "throughput"]` (or `["run-batch"]`, ...) is parsed by that
subcommand's own parser as this build's `vllm` CLI defines it (vllm/entrypoints/cli/main.py,
CMD_MODULES) plus the subcommand's validate(): the parse stage only, never an engine config. Those
parsers are built lazily, on the first such request, so the serve path starts no slower; a build
whose CLI has no such subcommand, or whose module fails to import, answers `skip` with the reason.
"""

import contextlib
import copy
import io
import json
import logging
import os
import sys
import time
import traceback
import warnings

PROTO = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr


# Below the line that takes stdout for the protocol (PROTO), so nothing imported can print into it.
if not __package__:  # run by path (a target's Python, `-I`): PEP 366, as the package this folder is,
    # so that `from . import sibling` finds the files next to this one (and import-linter sees it)
    sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = os.path.basename(os.path.dirname(os.path.abspath(__file__)))

from .cli_parsers import cli_argv, device_patch, legacy_parser, subcommand_parser  # noqa: E402
from .fork_server import ForkServer  # noqa: E402  (next to this file)
from .vllm_paths import relative as rel  # noqa: E402
from .vllm_symbols import FOUND, find  # noqa: E402


class Collector(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.records = []

    def emit(self, record):
        self.records.append(
            {
                "level": record.levelname,
                "logger": record.name,
                "file": rel(record.pathname),
                "line": record.lineno,
                "message": record.getMessage()[:2000],
            }
        )


def error_of(exc, stderr_text=""):
    frames = traceback.extract_tb(exc.__traceback__)
    vllm_frames = [f for f in frames if "/vllm/" in f.filename]
    where = vllm_frames[-1] if vllm_frames else (frames[-1] if frames else None)
    if isinstance(exc, SystemExit):
        lines = [ln for ln in stderr_text.strip().splitlines() if ln.strip()]
        # argparse prints usage, then "prog: error: ..."; pydantic adds lines and a URL
        start = next((i for i, ln in enumerate(lines) if "error:" in ln), None)
        kept = (
            [ln for ln in lines[start:] if not ln.strip().startswith("For further information")]
            if start is not None
            else lines[-1:]
        )
        message = "\n".join(kept) if kept else f"exit status {exc.code}"
        etype = "ArgumentError"
    else:
        message, etype = str(exc), type(exc).__name__
    return {
        "type": etype,
        "message": message[:4000],
        "location": {"file": rel(where.filename), "line": where.lineno, "function": where.name} if where else None,
        "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-6000:],
    }


class ScriptsServe:
    """`vllm serve` as vllm/scripts.py defined it before vllm.entrypoints.cli existed (0.6 … 0.7.2):
    the same parser that release's `main()` built, and the check its `serve()` ran after parsing."""

    name = "serve"

    def subparser_init(self, sub):
        serve_parser = sub.add_parser("serve", usage="vllm serve <model_tag> [options]")
        serve_parser.add_argument("model_tag", type=str)
        serve_parser.add_argument("--config", type=str, default="", required=False)
        return find("make_arg_parser")(serve_parser)

    def validate(self, args):
        check = find("validate_parsed_serve_args")
        if check is not None:
            check(args)


def build_parser():
    """(parser, the serve CLISubcommand, whether DeviceConfig was patched), every vLLM name taken
    from where this release keeps it (vllm_symbols.TABLE)."""
    FlexibleArgumentParser = find("FlexibleArgumentParser")
    cmd_init = find("serve_cmd_init")
    cli_env_setup = find("cli_env_setup")
    if cli_env_setup is not None:
        cli_env_setup()
    with device_patch() as patched:
        parser = FlexibleArgumentParser(prog="vllm")
        sub = parser.add_subparsers(required=False, dest="subparser")
        cmds = {}
        for cmd in cmd_init() if cmd_init is not None else [ScriptsServe()]:
            cmd.subparser_init(sub)
            cmds[cmd.name] = cmd
    return parser, cmds["serve"], patched


def effective(cfg):
    def get(obj, *names):
        for name in names:
            obj = getattr(obj, name, None)
            if obj is None:
                return None
        return obj if isinstance(obj, (bool, int, float, str)) else str(obj)

    out = {
        "model": get(cfg, "model_config", "model"),
        "architectures": getattr(getattr(getattr(cfg, "model_config", None), "hf_config", None), "architectures", None),
        # what vLLM resolved them to ("Resolved architecture: …" in its log), e.g. a fallback backend
        "resolved_architecture": get(cfg, "model_config", "architecture"),
        "max_model_len": get(cfg, "model_config", "max_model_len"),
        "dtype": get(cfg, "model_config", "dtype"),
        "is_multimodal": get(cfg, "model_config", "is_multimodal_model"),
        "async_scheduling": get(cfg, "scheduler_config", "async_scheduling"),
        "chunked_prefill": get(cfg, "scheduler_config", "enable_chunked_prefill"),
        "max_num_batched_tokens": get(cfg, "scheduler_config", "max_num_batched_tokens"),
        "max_num_seqs": get(cfg, "scheduler_config", "max_num_seqs"),
        "prefix_caching": get(cfg, "cache_config", "enable_prefix_caching"),
        "tensor_parallel_size": get(cfg, "parallel_config", "tensor_parallel_size"),
        "pipeline_parallel_size": get(cfg, "parallel_config", "pipeline_parallel_size"),
        "data_parallel_size": get(cfg, "parallel_config", "data_parallel_size"),
        "structured_outputs_backend": get(cfg, "structured_outputs_config", "backend"),
    }
    spec = getattr(cfg, "speculative_config", None)
    if spec is not None:
        out["speculative_method"] = get(spec, "method")
        out["num_speculative_tokens"] = get(spec, "num_speculative_tokens")
        out["draft_model"] = get(spec, "draft_model_config", "model") or get(spec, "model")
    return {k: v for k, v in out.items() if v is not None}


def own_values(args):
    """The parsed namespace with copies of its values. argparse hands every command the parser's own
    default objects, and vLLM mutates some of them while building a config (0.32.0's
    `--enable-return-routed-experts` sets a flag on the shared default AuxOutputConfig): in this one
    long-lived process that would leak into every later command, which a real `vllm serve` never sees."""
    for name, value in vars(args).items():
        try:
            setattr(args, name, copy.deepcopy(value))
        except Exception:  # an uncopyable default (a lock, a module) is left shared
            pass
    return args


DECLARED = None
"""Set by declared_device.py when it runs this helper for a CUDA build without a device: its
engine configs are built over the declared device, and withheld where they touched the missing one."""


def engine_config(args, result):
    """The engine config of the parsed args (None when withheld: `result["skip"]` says why)."""
    AsyncEngineArgs, UsageContext = find("AsyncEngineArgs"), find("UsageContext")

    def build():
        engine_args = AsyncEngineArgs.from_cli_args(args)
        return engine_args.create_engine_config(usage_context=UsageContext.OPENAI_API_SERVER)

    if DECLARED is None:
        return build()
    result["depth"] = DECLARED.depth
    if DECLARED.at_import:
        result["import_probes"] = list(DECLARED.at_import)
    cfg, withheld = DECLARED.config(build)  # raises vLLM's rejection when it does not depend on the device
    if withheld:
        result["skip"] = withheld
        del result["depth"]  # no verdict: the reason says what was decided and by what
    return cfg


def serve_parser(parser):
    """The `serve` subparser of the `vllm` parser build_parser() made."""
    for action in parser._actions:
        if isinstance(getattr(action, "choices", None), dict) and "serve" in action.choices:
            return action.choices["serve"]
    return parser


def defaults(parser):
    """dest -> default of every option of `parser` and of the subparsers under it."""
    found = {}
    for action in parser._actions:
        if isinstance(getattr(action, "choices", None), dict):
            for sub in action.choices.values():
                if hasattr(sub, "_actions"):
                    found.update(defaults(sub))
        elif action.dest not in found:
            found[action.dest] = action.default
    return found


def foreign_code(args, parser, code):
    """The settings of the parsed namespace that make vLLM load code that is not vLLM's: `code` is the
    runner's table (dest -> vLLM's own values, which load nothing: runner/isolation/trust.py). Read from
    what the parser made of the argv, so every spelling it accepts (an abbreviation, `_` for `-`, a
    value from `--config`) counts the same."""
    own_defaults = defaults(parser)
    found = []
    for dest, own in (code or {}).items():
        value = getattr(args, dest, None)
        if not value or value == own_defaults.get(dest) or (isinstance(value, str) and value in (own or ())):
            continue
        found.append(dest)
    return found


def answer(req, parser, serve_cmd, no_device):
    if req.get("report") == "modules":  # what the fork server itself imported: a child forked from it has the same
        return {"id": req.get("id"), "ok": True, "stage": "parse", "warnings": [], "modules": sorted(sys.modules)}
    words = list(req.get("subcommand") or [])
    result = {"id": req.get("id"), "stage": "parse", "ok": False}
    t0 = time.monotonic()
    cmd = serve_cmd
    if words:  # another subcommand: its own parser (built on first use, outside this command's warnings)
        built = subcommand_parser(words)
        if isinstance(built, str):
            result.update(ok=None, skip=built, warnings=[], duration_s=round(time.monotonic() - t0, 3))
            return result
        parser, cmd = built
    legacy = legacy_parser(req["entry"]) if req.get("entry") and not words else None
    if isinstance(legacy, str):  # the legacy module is not in this build: nothing to judge it by
        result.update(ok=None, skip=legacy, warnings=[], duration_s=round(time.monotonic() - t0, 3))
        return result
    collector = Collector()
    root = logging.getLogger("vllm")
    root.addHandler(collector)
    saved_env = dict(os.environ)
    os.environ.update(req.get("env") or {})  # the snippet's env prefix (VLLM_USE_..., ...)
    err = io.StringIO()
    try:
        with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stderr(err):
            warnings.simplefilter("always")
            try:
                if words:  # the parse stage only: these are not servers, no engine config is built
                    with cli_argv([*words, *req["argv"]]), device_patch():
                        args = parser.parse_args([*words, *req["argv"]])
                elif legacy is not None:  # `python -m vllm.entrypoints.openai.api_server ARGS`, as that module parses
                    args = own_values(legacy.parse_args(list(req["argv"])))
                else:
                    args = own_values(parser.parse_args(["serve", *req["argv"]]))
                result["foreign"] = foreign_code(args, parser, req.get("code"))
                # without a sandbox nothing after argparse runs for such a command (runner/isolation/trust.py)
                result["validated"] = not ((result["foreign"] and req.get("fail_closed")) or req.get("argparse_only"))
                if result["validated"]:
                    with cli_argv(
                        [*words, *req["argv"]]
                    ) if words else contextlib.nullcontext(), device_patch() if words else contextlib.nullcontext():
                        cmd.validate(args)
                if getattr(args, "model_tag", None) is not None:
                    args.model = args.model_tag
                if req.get("tier") == "config" and not words and result["validated"]:
                    result["stage"] = "config"
                    if no_device:  # the runner asks the declared-device helper (declared_device.py) instead
                        result.update(
                            ok=None,
                            no_device=True,
                            skip=DECLARED.unavailable
                            if DECLARED
                            else "a CUDA build without a device builds its engine config over a declared "
                            "device only (runner/intarget/declared_device.py)",
                        )
                        return result
                    cfg = engine_config(args, result)
                    if cfg is not None:
                        result["effective_config"] = effective(cfg)
                result["ok"] = None if result.get("skip") else True
            except BaseException as exc:  # SystemExit from argparse included
                if isinstance(exc, KeyboardInterrupt):
                    raise
                result["error"] = error_of(exc, err.getvalue())
        for w in caught:
            if not rel(w.filename).startswith("vllm/"):
                continue  # library noise (torch, transformers): not what the docs control
            collector.records.append(
                {
                    "level": "WARNING",
                    "logger": w.category.__name__,
                    "file": rel(w.filename),
                    "line": w.lineno,
                    "message": str(w.message)[:2000],
                }
            )
    finally:
        root.removeHandler(collector)
        os.environ.clear()
        os.environ.update(saved_env)
    seen, unique = set(), []
    for rec in collector.records:
        key = (rec["file"], rec["line"], rec["message"])
        if key not in seen:
            seen.add(key)
            unique.append(rec)
    result["warnings"] = unique
    result["duration_s"] = round(time.monotonic() - t0, 3)
    return result


WARM_UP_CONFIG = {
    "architectures": ["Qwen3ForCausalLM"],
    "model_type": "qwen3",
    "head_dim": 16,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "num_hidden_layers": 1,
    "vocab_size": 256,
    "max_position_embeddings": 256,
    "torch_dtype": "float32",
}
"""A model of our own (a config only) whose engine config the fork server builds once before it serves."""


def warm_up(parser, serve_cmd, no_device):
    """Build one engine config of our own in this process, so that what vLLM and transformers load on
    their first config (modules, caches) is there before any child is forked: each child then pays
    only its own command. Nothing of the docs runs here; a failure only leaves the children cold."""
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="dm-warm-up-")
    try:
        with open(os.path.join(folder, "config.json"), "w") as fh:
            json.dump(WARM_UP_CONFIG, fh)
        configured(folder, parser, serve_cmd, no_device)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def configured(model, parser, serve_cmd, no_device):
    """Whether the engine config of `model` (a folder the runner or we chose) alone could be built here:
    run before serving (our own model) and in a model's zygote (runner/intarget/fork_zygote.py), never
    with an option of any command. What vLLM logs meanwhile is no command's (not in the helper's log),
    and what it logs once per process is forgotten: a command that gives the same warning still has it."""
    saved = [os.dup(1), os.dup(2)]
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        result = answer({"id": 0, "argv": [model], "tier": "config"}, parser, serve_cmd, no_device)
        return result.get("ok") is True and result.get("stage") == "config"
    except Exception:  # a build that cannot configure it: its commands start cold, nothing else changes
        return False
    finally:
        for fd, was in zip((1, 2), saved):
            os.dup2(was, fd)
            os.close(was)
        os.close(devnull)
        forget_once()


def forget_once():
    """vLLM logs some messages once per process (functools.lru_cache over the message: vllm/logger.py
    `_print_warning_once`, ...): those a warm-up gave ("Triton is not installed", "NIXL is not
    available") would be missing from every command that gives them too."""
    for name in ("vllm.logger", "vllm.utils"):
        module = sys.modules.get(name)
        for attr in dir(module) if module is not None else ():
            found = getattr(module, attr, None)
            if attr.endswith("_once") and callable(getattr(found, "cache_clear", None)):
                found.cache_clear()


def main():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never hang on a hub this machine cannot reach
    t0 = time.monotonic()
    try:
        parser, serve_cmd, no_device = build_parser()
    except BaseException as exc:
        PROTO.write(json.dumps({"ready": False, "error": error_of(exc)}) + "\n")
        return 1
    serve = serve_parser(parser)
    warm_up(parser, serve_cmd, no_device)
    PROTO.write(
        json.dumps(
            {
                "ready": True,
                "import_s": round(time.monotonic() - t0, 2),
                "homes": FOUND,
                "options": sorted(serve._option_string_actions),
                "allow_abbrev": bool(getattr(serve, "allow_abbrev", True)),
            }
        )
        + "\n"
    )
    # every request in a child of its own, forked from this process (or from its model's zygote):
    # nothing a command loads outlives it
    ForkServer(
        lambda req: answer(req, parser, serve_cmd, no_device),
        PROTO,
        warm=lambda model: configured(model, parser, serve_cmd, no_device),
    ).serve(sys.stdin)
    return 0


if __name__ == "__main__":
    sys.exit(main())
