"""Kernel-enforced task and memory limits for one sandbox, where the runner may make cgroups.

Why not rlimits alone: RLIMIT_NPROC is not enforced for root (which CI and many GPU hosts run the
runner as) and RLIMIT_AS breaks CUDA; a watchdog alone can be starved by the very fork bomb it
watches. As root (or with a delegated cgroup) a child cgroup of our own — `pids.max`, a memory
limit — stops a bomb or a hog at once. Without a writable cgroup, a non-root runner gets
RLIMIT_NPROC instead, which the kernel counts per user namespace, so per sandbox
(runner/intarget/sandbox_init.py). Both v1 (one hierarchy per controller) and v2 (unified) are
handled; any failure means "no cgroup", said in the outcome, never an error.
"""

from __future__ import annotations

import itertools
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from driftmatrix.runner.isolation.sandbox.limits import MIB, Limits

_serial = itertools.count()
BWRAP_TASKS = 4
"""bubblewrap's own processes outside the sandbox share its cgroup: room for them above the limit, so
the sandbox's init sees its namespace reach the limit (and reports it) before the kernel refuses."""


def _mounts() -> dict[str, Path]:
    """controller -> mount point (`unified` for cgroup v2)."""
    found: dict[str, Path] = {}
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        left, _, right = line.partition(" - ")
        fstype, _, options = (right.split() + ["", "", ""])[:3]
        mount = Path(left.split()[4])
        if fstype == "cgroup2":
            found.setdefault("unified", mount)
        elif fstype == "cgroup":
            for opt in options.split(","):
                if opt in ("pids", "memory"):
                    found.setdefault(opt, mount)
    return found


def _own_paths() -> dict[str, str]:
    """controller -> our cgroup's path in its hierarchy (`unified` for v2)."""
    own: dict[str, str] = {}
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for c in controllers.split(",") if controllers else ["unified"]:
                own[c] = path
    except (OSError, ValueError):
        pass
    return own


@dataclass
class Cgroup:
    """The cgroup folders of one sandbox (one per v1 controller, or one v2 folder)."""

    dirs: dict[str, Path] = field(default_factory=dict)

    def join(self) -> None:
        """In the child, before exec: move this process (and so all it starts) in."""
        for path in self.dirs.values():
            (path / "cgroup.procs").write_text("0\n")

    def oom_killed(self) -> bool:
        for name, path in self.dirs.items():
            text = _read(path / ("memory.events" if name == "unified" else "memory.oom_control"))
            for line in text.splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and value.strip().isdigit() and int(value) > 0:
                    return True
        return False

    def remove(self) -> None:
        """Kill what is left, then remove the folders."""
        for path in self.dirs.values():
            for _ in range(50):
                pids = [p for p in _read(path / "cgroup.procs").split() if p.isdigit()]
                if not pids:
                    break
                for pid in pids:
                    try:
                        os.kill(int(pid), 9)
                    except (ProcessLookupError, PermissionError):
                        pass
                time.sleep(0.1)
            try:
                path.rmdir()
            except OSError:
                pass


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _v2_parent(mount: Path, own: str) -> Path | None:
    """Where a v2 sandbox cgroup can go: below our own cgroup when it delegates pids and memory (v2
    allows no controllers below a cgroup that holds processes, as ours usually does), else — as root
    — a `driftmatrix` cgroup below the root, which may enable them."""
    parent = mount / own.lstrip("/")
    if {"pids", "memory"} <= set(_read(parent / "cgroup.subtree_control").split()):
        return parent
    ours = mount / "driftmatrix"
    try:
        ours.mkdir(exist_ok=True)
        if not {"pids", "memory"} <= set(_read(mount / "cgroup.subtree_control").split()):
            (mount / "cgroup.subtree_control").write_text("+pids +memory\n")
        (ours / "cgroup.subtree_control").write_text("+pids +memory\n")
    except OSError:
        return None
    return ours


def create(limits: Limits) -> Cgroup | None:
    """A fresh cgroup holding `limits` (tasks; memory a quarter and 1 GiB above the watchdog's, which
    counts anonymous memory only: the kernel also counts the page cache of the libraries the process
    maps, and a cgroup at its limit evicts and re-reads those for ever instead of stopping — so the
    watchdog must strike first; the kernel stops what outruns it), or None where none can be made."""
    mounts, own = _mounts(), _own_paths()
    tasks = limits.tasks + BWRAP_TASKS
    name = f"driftmatrix-{os.getpid()}-{next(_serial)}"
    memory = int(limits.memory_mib * MIB * 1.25) + 1024 * MIB
    made = Cgroup()
    try:
        if "pids" in mounts and "memory" in mounts:  # v1
            for controller, settings in (("pids", {"pids.max": tasks}), ("memory", {"memory.limit_in_bytes": memory})):
                path = mounts[controller] / own.get(controller, "/").lstrip("/") / name
                path.mkdir()
                made.dirs[controller] = path
                for key, value in settings.items():
                    (path / key).write_text(f"{value}\n")
        elif "unified" in mounts:
            parent = _v2_parent(mounts["unified"], own.get("unified", "/"))
            if parent is None:
                return None
            path = parent / name
            path.mkdir()
            made.dirs["unified"] = path
            (path / "pids.max").write_text(f"{tasks}\n")
            (path / "memory.max").write_text(f"{memory}\n")
            if (path / "memory.swap.max").exists():  # without swap accounting there is no such file
                (path / "memory.swap.max").write_text("0\n")
        else:
            return None
    except OSError:
        made.remove()
        return None
    return made
