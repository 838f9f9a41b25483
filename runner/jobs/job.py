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

from driftmatrix.common.redact import Redactor
from driftmatrix.extractor.snippet_record import Snippet
from driftmatrix.runner.builds.envs import TargetEnv
from driftmatrix.runner.isolation import env_policy
from driftmatrix.runner.isolation.sandbox import detection
from driftmatrix.runner.isolation.sandbox.launch import Launch
from driftmatrix.runner.models.resolution import ModelResolver
from driftmatrix.runner.outcomes.outcome_record import JobKey
from driftmatrix.runner.serve import docker_target, helper_client, model_infos
from driftmatrix.runner.serve.helper_client import Helper
from driftmatrix.runner.settings import DECLARED_DEVICE, START_TIMEOUT_S, cache_dir, hub_dir


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
    SHARED_GPU_MEMORY / share_gpu instead of the documented one, noted in its outcome (runner/jobs/tiers/start.py)."""
    redact: Redactor = field(default_factory=Redactor)
    helpers: dict[str, Helper] = field(default_factory=dict)
    stand_ins: str | None = None
    """None, `tiny` (2-layer twins) or `full` (the source's sizes, random weights: for perf on a GPU):
    replace models that cannot be had by twins built in the target's env."""
    cache_dir: Path = field(default_factory=cache_dir)
    jobs: int = 1
    """Jobs side by side: each contained process's share of the machine (runner/isolation/sandbox/limits.py)."""
    declared_device: dict | None = field(default_factory=lambda: dict(DECLARED_DEVICE))
    """The CUDA device a CUDA build's config tier declares where there is none (None: SKIP instead)."""
    _helpers_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    """Jobs side by side ask for the same target's helper at once: exactly one is made."""

    @property
    def device(self) -> str:
        return "gpu" if self.gpus else "cpu"

    def helper(self, target: TargetEnv, declared: bool = False) -> Helper:
        """The target's long-lived parse/config helper (made once; its process starts on first use);
        `declared`: its twin over the declared CUDA device (a CUDA build's config tier without a device)."""
        name = target.target.name + ("+declared" if declared else "")
        with self._helpers_lock:
            if name not in self.helpers:
                # it serves every model of the run: the folders they can come from, made now, since the
                # sandbox binds only what exists when the helper starts (at the first parse, before any
                # twin is built or model fetched: on a fresh cache, as on the H100 of issue 47, twins
                # built later were invisible to it and vLLM took their paths for hub ids)
                made = [hub_dir(self.cache_dir), self.cache_dir / "standins", self.cache_dir / "sdists"]
                for folder in made:
                    folder.mkdir(parents=True, exist_ok=True)
                folders = [*self.resolver.model_map.values(), *map(str, made)]
                self.helpers[name] = self._new_helper(
                    target, self.workdir / f"helper-{name}.log", folders, declared=declared
                )
            return self.helpers[name]

    def _new_helper(
        self,
        target: TargetEnv,
        log: Path,
        readable: list[str],
        attempts: int = 2,
        declared: bool = False,
    ) -> Helper:
        """Offline always, whether the hub answers or not: every model vLLM is given is a local folder
        (model map, twin, or fetched from the hub beforehand by runner/models/hub.py), so the config tier
        checks exactly the files we fetched and never downloads itself; no token either (the
        allow-listed environment has none)."""
        if not target.target.docker:
            return helper_client.contained(
                target.python,
                {**self.base_env, **target.env},
                log,
                readable,
                gpu=self.gpus > 0,
                jobs=self.jobs,
                attempts=attempts,
                vllm_cache=lambda: model_infos.ensure(target, self),
                declared=self.declared_device if declared else None,
            )
        hub_folder = hub_dir(self.cache_dir)  # models fetched later in the run are mounted too
        hub_folder.mkdir(parents=True, exist_ok=True)
        command = docker_target.helper_command(
            target.target.docker, [*self.resolver.model_map.values(), str(hub_folder)], {**self.base_env, **target.env}
        )
        return Helper(lambda: Launch(command, env_policy.docker_cli_env()), log, attempts=attempts)

    def close(self, now: bool = False) -> None:
        """Close every helper; `now` (an interrupted run): killed, not left to finish a request."""
        for helper in self.helpers.values():
            if now:
                helper.kill()
            helper.shutdown()


@functools.lru_cache(maxsize=1)
def _host_facts() -> dict:
    facts = {
        "hostname": socket.gethostname(),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "sandbox": detection.describe(),
        "contained": detection.active(),
    }
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        if out.returncode == 0 and out.stdout.strip():
            facts["gpus"] = [line.strip() for line in out.stdout.strip().splitlines()]
    except (OSError, subprocess.TimeoutExpired):
        pass
    return facts


def host_facts() -> dict:
    """The machine, looked up once per process (a copy: outcomes must not share it)."""
    return dict(_host_facts())
