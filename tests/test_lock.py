"""Issue 60 point 5: installs that cannot be swapped. requirements/lock.txt pins, with hashes, every
runtime dependency of pyproject.toml (Linux x86_64, Python 3.11), made by an ecosystem tool whose command
its header names; the jobs that hold a token install from it (`pip install --require-hashes -r`, then
driftmatrix itself with `--no-deps`: tests/workflow/test_locked_installs.py). Here: the lock is in step
with pyproject, and installing it in a fresh venv gives exactly what pyproject asks (network: PyPI)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
LOCK = REPO / "requirements" / "lock.txt"
BUILD_IN = REPO / "requirements" / "build.in"
REGENERATE = (
    "uv pip compile pyproject.toml requirements/build.in --generate-hashes --python-version 3.11 "
    "--python-platform x86_64-unknown-linux-gnu --index-url https://pypi.org/simple -o requirements/lock.txt"
)
"""The command the lock's header names (uv from PyPI, in a scratch venv: `pip install uv`)."""
_ENTRY = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+?)\s*(?:;[^\\]*)?\\?$")


def pins() -> dict[str, tuple[str, list[str]]]:
    """name -> (version, its hashes), as the lock says."""
    found: dict[str, tuple[str, list[str]]] = {}
    name = None
    for line in LOCK.read_text().splitlines():
        if m := _ENTRY.match(line):
            name = canonicalize_name(m.group(1))
            found[name] = (m.group(2), [])
        elif (h := re.search(r"--hash=sha256:([0-9a-f]{64})", line)) and name:
            found[name][1].append(h.group(1))
        elif line and not line.startswith((" ", "#")):
            raise AssertionError(f"a lock line that is not a pin: {line!r}")
    return found


def wanted() -> list[Requirement]:
    """pyproject's runtime dependencies and its build backend (installed from the lock too: `pip install
    --no-build-isolation` then builds with it, no unpinned download)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    return [Requirement(r) for r in [*project["project"]["dependencies"], *project["build-system"]["requires"]]]


def test_every_dependency_of_pyproject_is_pinned_within_its_range():
    locked = pins()
    for req in wanted():
        name = canonicalize_name(req.name)
        assert name in locked, f"{req} is not in {LOCK.name}: run `{REGENERATE}`"
        version, hashes = locked[name]
        assert req.specifier.contains(version, prereleases=True), f"{name}=={version} is outside {req}: regenerate"
        assert hashes, name
    assert all(hashes for _, hashes in locked.values())  # --require-hashes needs one on every line
    assert "setuptools" in BUILD_IN.read_text()


def test_the_header_names_the_command_that_regenerates_it():
    header = [line for line in LOCK.read_text().splitlines()[:5] if line.startswith("#")]
    assert any(line.strip("# ").strip() == REGENERATE for line in header), header
    for part in ("pyproject.toml", "--generate-hashes", "--python-version 3.11", "-o requirements/lock.txt"):
        assert part in REGENERATE


@pytest.mark.network
def test_the_lock_installs_exactly_what_pyproject_asks(tmp_path):
    """A fresh venv, as a token-holding job makes it: the lock with --require-hashes, then driftmatrix with
    --no-deps --no-build-isolation. pip check is clean (every requirement met), every requirement of the
    installed driftmatrix within pyproject's range, and nothing installed that the lock does not pin."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") or k in ("PIP_CERT", "PIP_DEFAULT_TIMEOUT")}
    env["PIP_CONFIG_FILE"] = os.devnull  # this machine's pip.conf (extra indexes, constraints) is no part of it
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"

    def run(*args: str) -> str:
        done = subprocess.run([*pip, *args], capture_output=True, text=True, env=env, cwd=REPO, timeout=900)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return done.stdout

    run("install", "-q", "--require-hashes", "-r", str(LOCK))
    run("install", "-q", "--no-deps", "--no-build-isolation", "-e", ".")
    run("check")
    installed = {
        canonicalize_name(line.split("==")[0]): line.split("==")[1]
        for line in run("list", "--format=freeze").splitlines()
        if "==" in line
    }
    locked = pins()
    extra = set(installed) - set(locked) - {"driftmatrix", "pip"}
    assert not extra, f"installed but not locked: {sorted(extra)}"
    assert {n: v for n, v in installed.items() if n in locked} == {n: v for n, (v, _) in locked.items()}
    for req in wanted():
        assert req.specifier.contains(installed[canonicalize_name(req.name)], prereleases=True), req
    # and what the installed driftmatrix asks is pyproject's list, all of it there
    asked = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import importlib.metadata as m; print('\\n'.join(m.requires('driftmatrix')))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    runtime = {canonicalize_name(Requirement(r).name) for r in asked if r and "extra ==" not in r}
    assert runtime == {canonicalize_name(r.name) for r in wanted()} - {"setuptools"}
