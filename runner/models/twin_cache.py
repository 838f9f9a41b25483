"""The twin cache kept under a size: least recently used twins go first, never one in use.

A leg on a GitHub-hosted runner has 14 GB of disk; the target's environment takes 7–9 GB and a
day's twins, kept, grew to 6.7 GB in the rehearsal (benchmarks/rehearsal.py), so a leg ran out.
Twins are cheap to rebuild (seconds, random weights), so the cache keeps the recently used ones
and drops the rest once it passes `settings.twin_cache_bytes()`.

Two lock files beside each twin folder keep this safe between parallel jobs and processes:
`<twin>.lock`, held exclusively while the twin is built or looked up (twins_dir.ensure), and
`<twin>.use`, held shared by every job that uses the twin until the job ends (a lease). A twin is
dropped only when both can be taken exclusively at once, so no job loses its model mid-run and
no lookup returns a folder being deleted. A twin's last use is its marker file's mtime.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path
from typing import IO

from driftmatrix.runner.models.resolution import TWIN_MARKER
from driftmatrix.runner.settings import TWIN_FREE_RESERVE_GB, twin_cache_bytes


def lease(twin_dir: Path) -> IO:
    """Hold `twin_dir` in use until the returned file is closed (called under its `.lock`)."""
    held = open(f"{twin_dir}.use", "a")
    fcntl.flock(held, fcntl.LOCK_SH)
    try:
        os.utime(twin_dir / TWIN_MARKER)  # its last use: what the cache keeps longest
    except OSError:
        pass
    return held


def folder_bytes(root: Path) -> int:
    """Bytes allocated under `root` (hard links once, no symlink followed)."""
    seen, total = set(), 0
    for top, _dirs, files in os.walk(root):
        for name in files:
            try:
                st = os.lstat(os.path.join(top, name))
            except OSError:
                continue
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
    return total


def _twins_oldest_first(twins_dir: Path) -> list[tuple[Path, int]]:
    """Each finished twin folder with its size, least recently used first."""
    found = []
    for marker in twins_dir.glob(f"*/{TWIN_MARKER}"):
        try:
            found.append((marker.stat().st_mtime, marker.parent))
        except OSError:
            continue
    return [(folder, folder_bytes(folder)) for _, folder in sorted(found)]


def _drop_if_unused(folder: Path) -> bool:
    """Delete `folder` if no job uses it and no lookup holds it; True when it went."""
    with open(f"{folder}.lock", "a") as built, open(f"{folder}.use", "a") as used:
        try:
            fcntl.flock(built, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(used, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        (folder / TWIN_MARKER).unlink(missing_ok=True)  # first: a half-deleted twin is never "built"
        shutil.rmtree(folder, ignore_errors=True)
        return True


def limit(twins_dir: Path) -> int | None:
    """The bytes of twins `twins_dir` may hold (settings.twin_cache_bytes), with `free` worked out on
    its disk now: the twins there plus the free space, less settings.TWIN_FREE_RESERVE_GB."""
    setting = twin_cache_bytes()
    if setting != "free":
        return setting
    probe = twins_dir
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    held = folder_bytes(twins_dir) if twins_dir.is_dir() else 0
    return max(0, held + free - int(TWIN_FREE_RESERVE_GB * 1e9))


def trim(twins_dir: Path, limit_bytes: int | None) -> list[str]:
    """Drop least recently used twins until `twins_dir` holds at most `limit_bytes` (None: no
    limit); twins in use stay, even above the limit. Returns the names of the twins dropped."""
    if limit_bytes is None or not twins_dir.is_dir():
        return []
    twins = _twins_oldest_first(twins_dir)
    total = sum(size for _, size in twins)
    dropped = []
    for folder, size in twins:
        if total <= limit_bytes:
            break
        if _drop_if_unused(folder):
            total -= size
            dropped.append(folder.name)
    return dropped
