"""How much memory a sandbox's processes hold — run by its init (sandbox_init.py) every tick, stdlib only.

Memory is private anonymous memory plus shared memory (shmem), which no process's RssAnon shows (issue
57: 2 GiB of `MAP_SHARED|MAP_ANONYMOUS` passed a 2,048 MiB limit). Shmem lives in two places:
- the private tmpfs (/tmp, /dev/shm): their used blocks (statvfs), mapped or not;
- the kernel's internal shmem mount, which the sandbox cannot name: `MAP_SHARED|MAP_ANONYMOUS` regions,
  `memfd_create` files and SysV segments. A mapped one is in each mapper's RssShmem, whole; a memfd
  written and never mapped only behind a descriptor (its allocated blocks); a SysV segment nobody
  attaches only in /proc/sysvipc/shm, which lists this IPC namespace's segments: the sandbox's own.

Two passes, as before for anonymous memory. Every tick a cheap upper bound: RssAnon + RssShmem of each
process + the tmpfs + each memfd found behind a descriptor + SysV's resident bytes — a page may be
counted more than once there (a region a fork shares, a mapped tmpfs file or memfd), never missed. Only
while that bound is over the limit, the exact count: Pss_Anon (pages a fork shares counted once), the
tmpfs, and each internal shmem object once, by its inode: the larger of its size (a memfd's blocks, a
segment's resident bytes) and the proportional share (Pss) of its shared mappings summed over the
processes (which sums to its resident pages). Mapped tmpfs files are left to statvfs there (their
mappings are on the tmpfs's device, not the internal one), so nothing is counted twice.

A process that made itself undumpable hides its smaps (and its descriptors' targets) from the init,
which holds no capability: it is counted whole, RssAnon + RssShmem, in the exact pass too.
"""

import os

KIB = 1024


def internal_shm_dev():
    """The device of the kernel's internal shmem mount (a memfd's; MAP_SHARED anonymous regions and
    SysV segments live there too)."""
    try:
        fd = os.memfd_create("dm-probe")
    except (AttributeError, OSError):
        return os.makedev(0, 1)  # where Linux has always put it
    try:
        return os.fstat(fd).st_dev
    finally:
        os.close(fd)


SHM_DEV = internal_shm_dev()


def usage(memory_limit_mib, task_limit, tmpfs=("/tmp", "/dev/shm")):
    """(tasks, memory MiB) of the whole pid namespace (this /proc shows exactly its processes)."""
    procs = {}
    for pid in (e for e in os.listdir("/proc") if e.isdigit()):
        procs[pid] = fields(f"/proc/{pid}/status", (b"Threads:", b"RssAnon:", b"RssShmem:"))
    tasks = sum(p[0] for p in procs.values())
    held = tmpfs_bytes(tmpfs)
    memfds, segments = memfd_bytes(procs), sysv_bytes()
    bound = sum(p[1] + p[2] for p in procs.values()) * KIB + held + sum(memfds.values()) + sum(segments.values())
    if bound // 2**20 <= memory_limit_mib or tasks >= task_limit:  # past the task limit: killed anyway
        return tasks, bound // 2**20
    exact = held + exact_bytes(procs, {**memfds, **segments})
    return tasks, exact // 2**20


def exact_bytes(procs, whole):
    """Pss_Anon of every process plus each internal shmem object once (`whole`: inode -> size known
    from a descriptor or SysV)."""
    anon, mapped = 0, {}
    for pid, (_, rss_anon, rss_shmem) in procs.items():
        pss = fields(f"/proc/{pid}/smaps_rollup", (b"Pss_Anon:",), missing=None)[0]
        shared = shared_mappings(pid) if rss_shmem else {}
        if pss is None or shared is None:  # undumpable (or gone): counted whole
            anon += (rss_anon + rss_shmem) * KIB
            continue
        anon += pss * KIB
        for key, kib in shared.items():
            mapped[key] = mapped.get(key, 0) + kib * KIB
    return anon + sum(max(whole.get(k, 0), mapped.get(k, 0)) for k in {*whole, *mapped})


def shared_mappings(pid):
    """{object: Pss KiB} of the process's shared mappings of internal shmem (None: unreadable). A SysV
    segment's inode is its id, which may equal a memfd's inode: its key says which it is."""
    found, key = {}, None
    try:
        with open(f"/proc/{pid}/smaps", "rb") as fh:
            for line in fh:
                if line[:1].isalnum() and b"-" in line.split(b" ", 1)[0]:  # a mapping's header
                    key = _shared_key(line.split())
                elif key is not None and line.startswith(b"Pss:"):
                    found[key] = found.get(key, 0) + int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return found


def _shared_key(header):
    """("sysv" | "ino", inode) of a shared mapping of internal shmem, else None."""
    if len(header) < 5 or header[1][3:4] != b"s":
        return None
    major, _, minor = header[3].partition(b":")
    if os.makedev(int(major, 16), int(minor, 16)) != SHM_DEV:
        return None
    path = header[5] if len(header) > 5 else b""
    return ("sysv" if path.startswith(b"/SYSV") else "ino", int(header[4]))


def memfd_bytes(procs):
    """{("ino", inode): allocated bytes} of every memfd a process holds a descriptor of (a memfd is
    named "/memfd:…" by the kernel; its device says it is one)."""
    found = {}
    for pid in procs:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            path = f"/proc/{pid}/fd/{fd}"
            try:
                if not os.readlink(path).startswith("/memfd:"):
                    continue
                st = os.stat(path)
            except OSError:
                continue
            if st.st_dev == SHM_DEV:
                found[("ino", st.st_ino)] = max(st.st_size, st.st_blocks * 512)
    return found


def sysv_bytes():
    """{("sysv", id): resident bytes} of this IPC namespace's SysV segments, attached or not."""
    found = {}
    try:
        with open("/proc/sysvipc/shm", "rb") as fh:
            head = fh.readline().split()
            at_id, at_rss = head.index(b"shmid"), head.index(b"rss")
            for line in fh:
                row = line.split()
                found[("sysv", int(row[at_id]))] = int(row[at_rss])
    except (OSError, ValueError, IndexError):
        pass
    return found


def tmpfs_bytes(mounts):
    held = 0
    for mount in mounts:
        try:
            st = os.statvfs(mount)
            held += (st.f_blocks - st.f_bfree) * st.f_frsize
        except OSError:
            pass
    return held


def fields(path, keys, missing=0):
    """The first number after each of `keys` in a /proc file (`missing` where absent or unreadable)."""
    found = dict.fromkeys(keys, missing)
    try:
        with open(path, "rb") as fh:
            for line in fh:
                for key in keys:
                    if line.startswith(key):
                        found[key] = int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return [missing] * len(keys)
    return [found[k] for k in keys]
