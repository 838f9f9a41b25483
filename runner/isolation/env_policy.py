"""What environment the processes driftmatrix starts may see — the one place that decides, both ways.

Two sources of variables reach a `vllm serve` (or the parse/config helper, a twin build, an
environment query, a pip install):

- the runner's own environment, which on a CI runner holds secrets (HF_TOKEN, GITHUB_TOKEN,
  ACTIONS_* tokens, cloud keys, database passwords under any name). A child gets an allow-list of it
  (`runner_env`): the program search path, the locale, the time zone, the device selection — and,
  for an installer only, the proxies and the package index settings. Nothing else, whatever its
  name; an operator who needs more names them in `DRIFTMATRIX_PASS_ENV` (comma-separated) or in
  the targets file's `env`;
- the env prefix of the documented command (`VLLM_USE_DEEP_GEMM=1 vllm serve …`), untrusted input:
  only vLLM's own `VLLM_*` settings, the collective libraries' knobs and a list of device, thread
  and allocator settings pass (`docs_env`), and of those never one that loads code, reads or writes
  a path, or names another host (DOCS_DENIED, DOCS_DENIED_WORDS, each with why) — by its name, and
  by its value whatever the name (DOCS_DENIED_VALUES: `ext://` imports, URLs, hosts and ports). What
  is dropped is listed in the outcome (`evidence.env_dropped`), each with why in its notes.
"""

from __future__ import annotations

import os
import re
from typing import Literal

from driftmatrix.common.redact import SECRET_NAME

KEEP_ANYWAY = frozenset({"HF_HUB_OFFLINE", "VLLM_API_KEY"})
"""Names the secret rule would catch that carry no secret of ours (VLLM_API_KEY only ever comes from
the docs' own command, e.g. `--api-key`/`VLLM_API_KEY=token-abc123`)."""

RUNNER_PASSED = frozenset(
    {
        "PATH",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TERM",
        "HOME",
        "USER",
        "LOGNAME",
        "TMPDIR",
        "LD_LIBRARY_PATH",
        "CUDA_VISIBLE_DEVICES",
        "CUDA_DEVICE_ORDER",
        "HIP_VISIBLE_DEVICES",
        "ROCR_VISIBLE_DEVICES",
        "NVIDIA_VISIBLE_DEVICES",
    }
)
"""From the runner's own environment to any child: where programs and libraries are (a GPU host's
CUDA libraries), the locale and time zone, who and where (a contained process gets its own HOME
and TMPDIR), and which devices the operator gave this run."""
RUNNER_PASSED_PREFIXES = ("LC_",)
INSTALLER_PASSED = frozenset(
    {
        "http_proxy",
        "https_proxy",
        "no_proxy",
        "all_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
        "ALL_PROXY",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "XDG_CACHE_HOME",
        "XDG_CONFIG_HOME",
    }
)
INSTALLER_PASSED_PREFIXES = ("PIP_", "UV_")
"""Only pip (creating a target's environment) reaches the network: it gets the proxies, the
certificates and the package index settings too."""
DOCKER_CLI_PASSED = frozenset(
    {"DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_CONFIG", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY"}
)
"""The docker CLI (a docker target) needs to find its engine; the container gets none of this."""
Kind = Literal["contained", "installer"]

ALLOWED_NAMES = frozenset(
    {
        "CUDA_VISIBLE_DEVICES",
        "CUDA_DEVICE_ORDER",
        "CUDA_LAUNCH_BLOCKING",
        "HIP_VISIBLE_DEVICES",
        "ROCR_VISIBLE_DEVICES",
        "ASCEND_RT_VISIBLE_DEVICES",
        "OMP_NUM_THREADS",
        "OMP_PROC_BIND",
        "MKL_NUM_THREADS",
        "TOKENIZERS_PARALLELISM",
        "PYTORCH_CUDA_ALLOC_CONF",
        "PYTORCH_NPU_ALLOC_CONF",
        "SAFETENSORS_FAST_GPU",
        "PYTHONHASHSEED",
        "PYTHONUNBUFFERED",
        "PYTHONNOUSERSITE",
        "TORCH_LOGS",
        "TORCH_LLM_ALLREDUCE",
        "FLASHINFER_DISABLE_VERSION_CHECK",
        "FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED",
        "TASK_QUEUE_ENABLE",
        "AITER_MXFP4_INTERMEDIATE",
        "TILELANG_CLEANUP_TEMP_FILES",
        "MIOPEN_FIND_MODE",
    }
)
"""Exact names from the docs that are passed on (device choice, threads, allocators, kernels)."""
ALLOWED_PREFIXES = ("VLLM_", "NCCL_", "HCCL_", "RCCL_")
"""vLLM's own settings (vllm/envs.py) and the collective libraries' knobs."""
DOCS_DENIED = {
    "VLLM_ALLOW_INSECURE_SERIALIZATION": "lets vLLM unpickle messages: code execution by design",
    "VLLM_PLUGINS": "loads installed plugins by name (code)",
    "VLLM_USE_MODELSCOPE": "fetches models from another hub",
    "VLLM_ASSETS_CACHE": "a path: our cache location",
    "VLLM_HOST_IP": "the docs author's machine",
    "VLLM_LOGGING_PREFIX": "a prefix on every line vLLM logs: it can forge the levels the log scanner reads",
}
"""Allowed by prefix but not passed, with why (names the word rule below does not catch)."""
DOCS_DENIED_WORDS = {
    "PATH": "a path",
    "PATHS": "paths",
    "DIR": "a folder",
    "DIRS": "folders",
    "FOLDER": "a folder",
    "FILE": "a file",
    "FILES": "files",
    "ROOT": "a folder",
    "HOME": "a folder",
    "SO": "a shared library loaded (dlopen = LD_PRELOAD)",
    "LIB": "a library loaded",
    "LIBS": "libraries loaded",
    "LIBRARY": "a library loaded",
    "PLUGIN": "a plugin loaded (code)",
    "PLUGINS": "plugins loaded (code)",
    "MODULE": "a module imported (code)",
    "HOST": "another host",
    "IP": "another host",
    "ADDR": "another host",
    "ADDRESS": "another host",
    "PORT": "a port of another host",
    "URL": "another host",
    "URI": "another host",
    "ENDPOINT": "another host",
    "SERVER": "another host",
    "SERVERS": "other hosts",
    "CACHE": "a folder vLLM creates and prunes",
}
"""A word of the name (split at `_`) says the value is code to load, a path to read or write, or an
address: VLLM_NCCL_SO_PATH and NCCL_NET_PLUGIN load libraries, VLLM_LOGGING_CONFIG_PATH a logging
config whose factories are code, NCCL_DEBUG_FILE and VLLM_TORCH_PROFILER_DIR write where they say,
VLLM_DEBUG_DUMP_PATH too, VLLM_CACHE_ROOT/VLLM_CONFIG_ROOT are ours."""
_HOST = r"(?:localhost|\d{1,3}(?:\.\d{1,3}){3}|\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*)"
DOCS_DENIED_VALUES = (
    (re.compile(r"^\s*ext://", re.I), "its value imports the module it names (logging's `ext://`)"),
    (re.compile(r"^\s*[A-Za-z][A-Za-z0-9+.-]*://"), "its value is a URL: another host"),
    (re.compile(rf"^\s*{_HOST}:\d{{1,5}}\s*$"), "its value names a host and port"),
    (
        re.compile(r"^\s*(?:\d{1,3}(?:\.\d{1,3}){3}|\[?[0-9A-Fa-f]*:[0-9A-Fa-f:]*:[0-9A-Fa-f:.]*\]?)\s*$"),
        "its value is an IP address: another host",
    ),
    (
        re.compile(r"^\s*(?:/|~|\.\.?(?:/|$))|/\.\.(?:/|$)"),
        "its value is a path of this machine (vLLM reads it, creates it or prunes it)",
    ),
)
"""What a documented value may not be, whatever its name (VLLM_LOGGING_STREAM=ext://pkg.mod imports a
module; VLLM_USAGE_STATS_SERVER a URL; NCCL_COMM_ID=host:port another machine; VLLM_HUMMING_*_QUANT_CONFIG=/x
is opened, VLLM_MEDIA_CACHE=/x created and pruned): the rule, each with why."""
NEEDED_FOR_MEANING = frozenset(
    {"PYTHONPATH", "PYTHONHOME", "AWS_ENDPOINT_URL", "MOONCAKE_CONFIG_PATH", "VLLM_PLUGINS", "VLLM_USE_MODELSCOPE"}
)
"""Dropped variables without which the command checks something else than what it documents (code
or models from the author's machine or another store): its config tier and beyond SKIP."""


def denied_why(name: str, value: str | None = None) -> str | None:
    """Why a documented variable is not passed (None: it is): by its name, then by its value."""
    if value is not None and (why := next((w for rule, w in DOCS_DENIED_VALUES if rule.search(value)), None)):
        return why if allowed(name) else denied_why(name)
    if SECRET_NAME.search(name) and name not in KEEP_ANYWAY:
        return "its name says it holds a secret"
    if name in DOCS_DENIED:
        return DOCS_DENIED[name]
    if not (name in ALLOWED_NAMES or name.startswith(ALLOWED_PREFIXES)):
        return "not one of vLLM's, the collective libraries' or the allowed device/thread settings"
    word = next((w for w in name.upper().split("_") if w in DOCS_DENIED_WORDS), None)
    return DOCS_DENIED_WORDS[word] if word else None


def allowed(name: str) -> bool:
    return denied_why(name) is None


def docs_env(env: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """(the documented env assignments passed on, the names dropped)."""
    dropped = dropped_why(env)
    return {k: v for k, v in env.items() if k not in dropped}, sorted(dropped)


def dropped_why(env: dict[str, str]) -> dict[str, str]:
    """The documented env assignments not passed on, each with why (by name or by value)."""
    return {k: why for k, v in env.items() if (why := denied_why(k, v))}


def runner_env(kind: Kind = "contained", environ: dict[str, str] | None = None) -> dict[str, str]:
    """The part of the runner's environment a child of `kind` gets (an allow-list, see above)."""
    environ = os.environ if environ is None else environ
    extra = {n.strip() for n in environ.get("DRIFTMATRIX_PASS_ENV", "").split(",") if n.strip()}
    names, prefixes = set(RUNNER_PASSED) | extra, RUNNER_PASSED_PREFIXES
    if kind == "installer":
        names |= INSTALLER_PASSED
        prefixes += INSTALLER_PASSED_PREFIXES
    return {k: v for k, v in environ.items() if k in names or k.startswith(prefixes)}


def docker_cli_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of the `docker` client itself (what the container gets is its `-e` list)."""
    environ = os.environ if environ is None else environ
    return {**runner_env("contained", environ), **{k: v for k, v in environ.items() if k in DOCKER_CLI_PASSED}}


def without_secrets(env: dict[str, str]) -> dict[str, str]:
    """`env` minus every variable whose name says it holds a secret (for values that come from
    configuration, e.g. a targets file's `env`)."""
    return {k: v for k, v in env.items() if k in KEEP_ANYWAY or not SECRET_NAME.search(k)}


def meaningless_without(dropped: list[str]) -> list[str]:
    """Dropped names the command cannot mean anything without."""
    return [name for name in dropped if name in NEEDED_FOR_MEANING]
