"""Accepting a folder a contained process wrote (a twin, a warm compile cache) only when it
holds nothing the runner or a later sandbox could be led astray by: regular files and folders, no
symbolic link, device, socket or pipe, no hard link to anything else, within a size counted as the
disk holds it (allocated blocks) and a number of entries. Checked with lstat (nothing followed),
then moved into place by rename (atomic, same file system). A server's caches come as a tar stream
from its init (`unpack`), checked the same way as they are unpacked."""

from __future__ import annotations

import os
import shutil
import stat
import tarfile
from pathlib import Path


class UntrustedOutput(RuntimeError):
    """A contained process left something in its output folder that is not a plain file or folder."""


MAX_ENTRIES = 100_000
"""Files and folders one accepted folder may hold (a compile cache: hundreds; a twin: tens)."""


def check_tree(root: Path, max_bytes: int, max_entries: int = MAX_ENTRIES) -> int:
    """Raise UntrustedOutput unless `root` holds only plain files and folders, at most `max_entries` of
    them taking at most `max_bytes` of disk together — each counted by its allocated blocks or its
    size, whichever is larger (space reserved with fallocate has blocks and no size); return that."""
    total, entries = 0, 0
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in [*dirs, *files]:
            path = os.path.join(folder, name)
            st = os.lstat(path)
            entries += 1
            if entries > max_entries:
                raise UntrustedOutput(f"more than {max_entries} files and folders (the limit on entries)")
            if not stat.S_ISDIR(st.st_mode) and not stat.S_ISREG(st.st_mode):
                raise UntrustedOutput(f"{os.path.relpath(path, root)} is not a plain file (mode {oct(st.st_mode)})")
            if stat.S_ISREG(st.st_mode) and st.st_nlink != 1:
                raise UntrustedOutput(f"{os.path.relpath(path, root)} has {st.st_nlink} hard links")
            total += max(st.st_size if stat.S_ISREG(st.st_mode) else 0, st.st_blocks * 512)
            if total > max_bytes:
                raise UntrustedOutput(f"more than {max_bytes} bytes on disk (the size limit, blocks counted)")
    return total


def unpack(stream, dest: Path, max_bytes: int, max_entries: int = MAX_ENTRIES) -> None:
    """The tar stream a sandbox's init handed out (runner/intarget/sandbox_export.py) into the fresh
    folder `dest`: plain files and folders only, each name inside `dest`, within the limits —
    UntrustedOutput otherwise (what was unpacked is removed)."""
    dest.mkdir(parents=True, exist_ok=True)
    total, entries = 0, 0
    try:
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            for member in tar:
                entries += 1
                total += max(member.size, 0)
                if entries > max_entries or total > max_bytes:
                    raise UntrustedOutput(f"more than {max_entries} entries or {max_bytes} bytes")
                if not (member.isreg() or member.isdir()):
                    raise UntrustedOutput(f"{member.name} is not a plain file or folder")
                tar.extract(member, dest, set_attrs=False, filter="data")
    except (tarfile.TarError, OSError) as err:
        shutil.rmtree(dest, ignore_errors=True)
        raise UntrustedOutput(f"the folder handed out could not be read: {err}") from None
    except UntrustedOutput:
        shutil.rmtree(dest, ignore_errors=True)
        raise


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
