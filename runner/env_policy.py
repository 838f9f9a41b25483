"""What environment the processes driftmatrix starts may see — the one place that decides.

Two sources of variables reach a `vllm serve` (or the parse/config helper, a pip install, a
stand-in build):

- the machine's own environment, which on a CI runner holds secrets (HF_TOKEN, GITHUB_TOKEN,
  ACTIONS_* tokens, cloud keys). The docs make us run model-repository code
  (`--trust-remote-code`), so no variable whose name says it is a secret is passed on
  (`without_secrets`); models are fetched beforehand by driftmatrix itself (runner/hub.py);
- the env prefix of the documented command (`VLLM_USE_DEEP_GEMM=1 vllm serve …`), which is
  untrusted input: only an allow-list is passed (`docs_env`): vLLM's own `VLLM_*` settings except
  those that point vLLM at other hosts or our caches, device selection, thread and allocator
  settings and the collective-communication libraries' knobs. Anything else (LD_PRELOAD,
  PYTHONPATH, HF_ENDPOINT — which would send a token to whatever host the docs name —, proxies,
  cloud endpoints) is dropped and listed in the outcome (`evidence.env_dropped`).
"""

from __future__ import annotations

import re

SECRET_NAME = re.compile(r"(^|_)(TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIALS?|COOKIE|AUTH|PAT)(_|$)|^SSH_AUTH_SOCK$",
                         re.I)
"""Names of variables never passed to a process that may run code from the docs or a model repo:
a whole word of the name says secret (HF_TOKEN, GITHUB_TOKEN, ACTIONS_RUNTIME_TOKEN,
AWS_SECRET_ACCESS_KEY, MY_API_KEY, …; not TOKENIZERS_PARALLELISM)."""
KEEP_ANYWAY = frozenset({"HF_HUB_OFFLINE", "VLLM_API_KEY"})
"""Names the secret rule would catch that carry no secret of ours (VLLM_API_KEY only ever comes from
the docs' own command, e.g. `--api-key`/`VLLM_API_KEY=token-abc123`)."""

ALLOWED_NAMES = frozenset({
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_LAUNCH_BLOCKING", "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES", "OMP_NUM_THREADS", "OMP_PROC_BIND",
    "MKL_NUM_THREADS", "TOKENIZERS_PARALLELISM", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_NPU_ALLOC_CONF",
    "SAFETENSORS_FAST_GPU", "PYTHONHASHSEED", "PYTHONUNBUFFERED", "PYTHONNOUSERSITE", "TORCH_LOGS",
    "TORCH_LLM_ALLREDUCE", "FLASHINFER_DISABLE_VERSION_CHECK", "FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED",
    "TASK_QUEUE_ENABLE", "AITER_MXFP4_INTERMEDIATE", "TILELANG_CLEANUP_TEMP_FILES", "MIOPEN_FIND_MODE",
})
"""Exact names from the docs that are passed on (device choice, threads, allocators, kernels)."""
ALLOWED_PREFIXES = ("VLLM_", "NCCL_", "HCCL_", "RCCL_")
"""vLLM's own settings (vllm/envs.py) and the collective libraries' knobs."""
DENIED_NAMES = frozenset({
    "VLLM_USE_MODELSCOPE", "VLLM_CACHE_ROOT", "VLLM_CONFIG_ROOT", "VLLM_ASSETS_CACHE", "VLLM_RPC_BASE_PATH",
    "VLLM_PLUGINS", "VLLM_TUNED_CONFIG_FOLDER", "VLLM_HOST_IP", "VLLM_PORT",
})
"""Allowed by prefix but not passed: other model hubs, our cache locations, plugins and paths or
addresses of the docs author's machine."""
NEEDED_FOR_MEANING = frozenset({"PYTHONPATH", "PYTHONHOME", "AWS_ENDPOINT_URL", "MOONCAKE_CONFIG_PATH",
                                "VLLM_PLUGINS", "VLLM_USE_MODELSCOPE"})
"""Dropped variables without which the command checks something else than what it documents (code
or models from the author's machine or another store): its config tier and beyond SKIP."""


def allowed(name: str) -> bool:
    if name in DENIED_NAMES or (SECRET_NAME.search(name) and name not in KEEP_ANYWAY):
        return False
    return name in ALLOWED_NAMES or name.startswith(ALLOWED_PREFIXES)


def docs_env(env: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """(the documented env assignments passed on, the names dropped)."""
    kept = {k: v for k, v in env.items() if allowed(k)}
    return kept, sorted(set(env) - set(kept))


def without_secrets(env: dict[str, str]) -> dict[str, str]:
    """`env` minus every variable whose name says it holds a secret."""
    return {k: v for k, v in env.items() if k in KEEP_ANYWAY or not SECRET_NAME.search(k)}


def meaningless_without(dropped: list[str]) -> list[str]:
    """Dropped names the command cannot mean anything without."""
    return [name for name in dropped if name in NEEDED_FOR_MEANING]
