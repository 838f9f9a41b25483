"""What a contained process leaves in a folder, measured as the disk holds it and handed out only after
it is gone — run by the sandbox's init (sandbox_init.py), stdlib only.

Why measured by blocks and entries, not by file sizes: space reserved with
`fallocate(FALLOC_FL_KEEP_SIZE)` has size 0 and no file-size limit applies to it, and folders and
inodes cost the disk too (issue 44: 500 MiB reserved and 20,000 folders under a 10 MiB limit passed).
So `usage` counts each entry's allocated blocks (`st_blocks`, 512 bytes each) or its size, whichever
is larger, and every entry (files and folders).

Why handed out afterwards: a server's compile cache lives in its private /tmp (a size-limited tmpfs)
while it runs; no folder of the runner's disk is writable to it. When the command and every process
of the sandbox are gone, the init writes the folder as a tar stream of plain files and folders into
a file only it holds (`export`), or nothing where it is over its limits; the runner checks it again as
it unpacks it (runner/isolation/sandbox/output.py)."""

import os
import stat
import tarfile


def usage(root, max_bytes=None, max_entries=None):
    """(bytes, entries) held under `root` (nothing followed). With limits, the walk stops as soon as
    one is passed, so a folder of millions of entries costs the watcher no more than its limit."""
    total, entries, pending = 0, 0, [root]
    while pending:
        try:
            listing = os.scandir(pending.pop())
        except OSError:
            continue
        with listing:
            for entry in listing:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                entries += 1
                total += max(st.st_size if stat.S_ISREG(st.st_mode) else 0, st.st_blocks * 512)
                if stat.S_ISDIR(st.st_mode):
                    pending.append(entry.path)
                if (max_bytes is not None and total > max_bytes) or (max_entries is not None and entries > max_entries):
                    return total, entries
    return total, entries


def over(root, limits):
    """`(limit, value, max)` of the first of the disk limits `root` is past, or None."""
    max_bytes, max_entries = limits["disk_mib"] * 2**20, limits["disk_files"]
    held, entries = usage(root, max_bytes, max_entries)
    if held > max_bytes:
        return "disk_mib", held // 2**20, limits["disk_mib"]
    if entries > max_entries:
        return "disk_files", entries, limits["disk_files"]
    return None


def export(folders, fd, limits, report):
    """Write `folders` (inside paths; each becomes a top-level folder of its base name) to `fd` as one
    tar stream — once every other process is gone. Nothing is written past a disk limit (reported as
    the limit) or where anything in them is not a plain file or folder (a link is never followed,
    nor handed out: reported as a note)."""
    present = [f for f in folders if os.path.isdir(f) and not os.path.islink(f)]
    entries = []
    for folder in present:
        hit = over(folder, limits)
        if hit:
            report({"limit": hit[0], "value": hit[1], "max": hit[2], "export": folder})
            return
        try:
            entries += _plain(folder, os.path.basename(folder))
        except ValueError as err:
            report({"note": f"{folder} not handed out: {err}"})
            return
    with os.fdopen(fd, "wb", closefd=False) as out, tarfile.open(fileobj=out, mode="w|") as tar:
        for path, name in entries:
            tar.add(path, arcname=name, recursive=False)


def _plain(folder, name):
    """[(path, name in the stream)] of a folder and everything in it, folders before what they hold;
    ValueError at the first entry that is neither a folder nor a regular file (lstat: nothing followed)."""
    found = [(folder, name)]
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        st = entry.stat(follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            found += _plain(entry.path, f"{name}/{entry.name}")
        elif stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
            found.append((entry.path, f"{name}/{entry.name}"))
        else:
            raise ValueError(f"{name}/{entry.name} is not a plain file or folder (mode {oct(st.st_mode)})")
    return found
