"""Peak disk and memory of one workflow job, as GitHub would count them (issue 31: a standard
runner has 14 GB of SSD and 16 GB of memory): runs a command and samples, every second, the
bytes under the watched folders (environments, models, twins, pip's cache, the work folder) and
the resident memory of the command's whole process tree.

    python benchmarks/leg_disk.py --watch ~/.cache/driftmatrix --watch WORK [--json OUT] -- COMMAND...

Prints wall time, peak disk (total over the watched folders, and each at that moment) and peak
memory; exits with the command's status.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from driftmatrix.runner.models.twin_cache import folder_bytes  # du's count: hard links once, no symlink followed


def tree_rss(pid: int) -> int:
    """Resident bytes of `pid` and every process below it."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
        rss[int(entry)] = next((int(ln.split()[1]) * 1024 for ln in status.splitlines() if ln.startswith("VmRSS:")), 0)
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo += children.get(p, [])
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--watch", action="append", default=[], type=Path, help="a folder whose size counts")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--every", type=float, default=1.0, help="seconds between samples (default: %(default)s)")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        ap.error("give the command after --")
    base = {str(w): folder_bytes(w) if w.exists() else 0 for w in args.watch}
    peak = {"disk": 0, "disk_by_folder": dict(base), "memory": 0}
    t0 = time.monotonic()
    proc = subprocess.Popen(command)
    done = threading.Event()

    def sample():
        while not done.is_set():
            sizes = {str(w): folder_bytes(w) if w.exists() else 0 for w in args.watch}
            if sum(sizes.values()) > peak["disk"]:
                peak["disk"], peak["disk_by_folder"] = sum(sizes.values()), sizes
            peak["memory"] = max(peak["memory"], tree_rss(proc.pid))
            done.wait(args.every)

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    status = proc.wait()
    done.set()
    watcher.join()
    gb = 1e9
    report = {
        "command": command,
        "status": status,
        "wall_s": round(time.monotonic() - t0, 1),
        "peak_disk_gb": round(peak["disk"] / gb, 2),
        "before_gb": round(sum(base.values()) / gb, 2),
        "peak_by_folder_gb": {k: round(v / gb, 2) for k, v in peak["disk_by_folder"].items()},
        "peak_memory_gb": round(peak["memory"] / gb, 2),
    }
    print(json.dumps(report, indent=1), file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return status


if __name__ == "__main__":
    sys.exit(main())
