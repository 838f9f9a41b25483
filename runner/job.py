"""What a job is and what the whole run shares: `Job` (one snippet or its variant x one target x
the last tier asked for) and `RunContext` (model resolver, helpers, workdir, deadlines)."""

from __future__ import annotations

import functools
import os
import platform
import socket
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

from extractor.records import Snippet
from runner import docker_target, sandbox
from runner.envs import TargetEnv
from runner.helper_client import HELPER, Helper, HelperError
from runner.models import ModelResolver
from runner.records import JobKey
from runner.redact import Redactor
from runner.settings import START_TIMEOUT_S, cache_dir, hub_dir


@dataclass
class Job:
    snippet: Snippet
    target: TargetEnv
    tier: str
    """The last tier asked for."""
    variant: str | None = None
    """None: the command as documented; `no-spec` / `self-spec`: driftmatrix's variant of it."""

    def key(self) -> JobKey:
        t = self.target
        return JobKey(self.snippet.id, self.variant, t.target.name, t.version, t.commit, self.tier)


@dataclass
class RunContext:
    resolver: ModelResolver
    workdir: Path
    """Server logs and helper logs go here."""
    base_env: dict[str, str] = field(default_factory=dict)
    start_timeout: float = START_TIMEOUT_S
    gpus: int = 0
    devices: list[int] = field(default_factory=list)
    """Physical indexes of the GPUs jobs may take (CUDA_VISIBLE_DEVICES honoured; targets.gpu_devices)."""
    gpu_mem_gb: float | None = None
    share_gpu: int = 1
    """Servers per GPU at once (tiny twins on a large GPU): each gets `--gpu-memory-utilization` of
    SHARED_GPU_MEMORY / share_gpu instead of the documented one, noted in its outcome (runner/tiers/start.py)."""
    redact: Redactor = field(default_factory=Redactor)
    helpers: dict[str, Helper] = field(default_factory=dict)
    stand_ins: str | None = None
    """None, `tiny` (2-layer twins) or `full` (the source's sizes, random weights: for perf on a GPU):
    replace models that cannot be had by twins built in the target's env."""
    cache_dir: Path = field(default_factory=cache_dir)
    _helpers_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    """Jobs side by side ask for the same target's helper at once: exactly one is made."""

    @property
    def device(self) -> str:
        return "gpu" if self.gpus else "cpu"

    def helper(self, target: TargetEnv) -> Helper:
        """The target's long-lived parse/config helper (made once; its process starts on first use)."""
        name = target.target.name
        with self._helpers_lock:
            if name not in self.helpers:
                self.helpers[name] = self._new_helper(target)
            return self.helpers[name]

    def _new_helper(self, target: TargetEnv) -> Helper:
        # Offline always, whether the hub answers or not: every model vLLM is given is a local folder
        # (model map, stand-in, or fetched from the hub beforehand by runner/hub.py), so the config
        # tier checks exactly the files we fetched and never downloads weights itself. No token
        # either: vLLM needs none offline, and a repo's remote code (--trust-remote-code) must not
        # see it (an empty HF_TOKEN is no token; the helper's env is laid over ours).
        env = {**self.base_env, **target.env, "HF_HUB_OFFLINE": "1", "HF_TOKEN": "", "HUGGING_FACE_HUB_TOKEN": ""}
        command = None
        if not target.target.docker:  # the helper loads configs, and a repo's remote code with them
            if refused := sandbox.required_missing():
                raise HelperError(refused)
            writable = [Path(p) for p in (target.env.get("VLLM_CACHE_ROOT"),) if p] + [self.workdir]
            hub_dir(self.cache_dir).mkdir(parents=True, exist_ok=True)  # models fetched later in the run
            command = sandbox.wrap([target.python, str(HELPER)], env, writable, gpu=self.gpus > 0,
                                   readable=[str(self.cache_dir), *self.resolver.model_map.values(),
                                             str(hub_dir(self.cache_dir))])
        if target.target.docker:
            hub_folder = hub_dir(self.cache_dir)  # models fetched later in the run are mounted too
            hub_folder.mkdir(parents=True, exist_ok=True)
            command = docker_target.helper_command(target.target.docker,
                                                   [*self.resolver.model_map.values(), str(hub_folder)],
                                                   {**env, **target.env})
        return Helper(target.python, env, self.workdir / f"helper-{target.target.name}.log", command=command)

    def close(self) -> None:
        for helper in self.helpers.values():
            helper.close()


@functools.lru_cache(maxsize=1)
def _host_facts() -> dict:
    facts = {"hostname": socket.gethostname(), "cpus": os.cpu_count(), "platform": platform.platform(),
             "sandbox": sandbox.describe()}
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        if out.returncode == 0 and out.stdout.strip():
            facts["gpus"] = [line.strip() for line in out.stdout.strip().splitlines()]
    except (OSError, subprocess.TimeoutExpired):
        pass
    return facts


def host_facts() -> dict:
    """The machine, looked up once per process (a copy: outcomes must not share it)."""
    return dict(_host_facts())
