"""Accepting a folder a contained process wrote (a stand-in twin, a warm compile cache) only when it
holds nothing the runner or a later sandbox could be led astray by: regular files and folders, no
symbolic link, device, socket or pipe, no hard link to anything else, within a size. Checked with
lstat (nothing followed), then moved into place by rename (atomic, same file system)."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path


class UntrustedOutput(RuntimeError):
    """A contained process left something in its output folder that is not a plain file or folder."""


def check_tree(root: Path, max_bytes: int) -> int:
    """Raise UntrustedOutput unless `root` holds only plain files and folders of at most `max_bytes`
    together; return their size."""
    total = 0
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in [*dirs, *files]:
            path = os.path.join(folder, name)
            st = os.lstat(path)
            if stat.S_ISDIR(st.st_mode):
                continue
            if not stat.S_ISREG(st.st_mode):
                raise UntrustedOutput(f"{os.path.relpath(path, root)} is not a plain file (mode {oct(st.st_mode)})")
            if st.st_nlink != 1:
                raise UntrustedOutput(f"{os.path.relpath(path, root)} has {st.st_nlink} hard links")
            total += st.st_size
            if total > max_bytes:
                raise UntrustedOutput(f"more than {max_bytes} bytes")
    return total


def accept(staging: Path, final: Path, max_bytes: int) -> None:
    """Check `staging`, then move it to `final` (replacing an older one). The staging folder is
    removed when it does not pass (rmtree never follows a link)."""
    try:
        check_tree(staging, max_bytes)
    except (UntrustedOutput, OSError):
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if final.exists():
        shutil.rmtree(final)
    os.rename(staging, final)
