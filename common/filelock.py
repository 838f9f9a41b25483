"""One process at a time on a cache entry: runs side by side (test workers, shards on one machine,
a runner and the extractor) fetch the same release into the same cache folder, and two unpacking
into one place at once leave a tree with files missing."""

from __future__ import annotations

import contextlib
import fcntl
from pathlib import Path


@contextlib.contextmanager
def exclusive(lock_file: Path):
    """Hold `lock_file` (created if needed) exclusively for the block; others wait."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_file, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        yield
