"""Where the CPU time of a test-suite run (or any run) goes, by kind of process (issue 48, point 7).

The suite is CPU-bound on 2 cores (3 % idle with two server modules side by side), so its wall time
follows the CPU seconds its processes use. Linux process accounting records each process's CPU time,
parent and command name when it exits; this reads such a file (`dump-acct`, Debian's `acct`) and
sums the CPU seconds by kind:

- servers: every process of a `vllm serve` (API server, engine core, workers, and what they start;
  vLLM names them `vllm`, `VLLM::…`, or by their last thread);
- vLLM's registry subprocess: a Python process of >= 4 CPU s started by another one (a helper or an
  API server importing vLLM again to inspect an architecture: runner/serve/model_infos.py);
- helpers and other vLLM-importing Python processes (>= 4 CPU s);
- the `driftmatrix` processes (children of the pytest workers), the pytest workers themselves,
  short Python processes, the browser (Playwright) and the rest.

Usage (as root, around the command to measure):

    apt-get install -y acct; touch /tmp/pacct; accton /tmp/pacct
    python -m pytest -q -n 2 --dist loadfile      # the README's test command
    accton off; python benchmarks/cpu_by_process.py /tmp/pacct
"""

from __future__ import annotations

import argparse
import collections
import subprocess
from dataclasses import dataclass

SERVER_NAMES = ("vllm", "VLLM::", "ZMQbg/", "pt_gloo_runloop")
BROWSER_NAMES = ("chromium", "node", "MemoryInfra", "ThreadPool", "HangWatcher", "SignalInspector")
BIG_S = 4.0
"""A Python process using this much CPU imported torch or vLLM (a bare `import vllm` takes ~6 s)."""
TICKS_PER_S = 100


@dataclass
class Proc:
    comm: str
    cpu_s: float
    elapsed_s: float
    pid: int
    ppid: int


def read(path: str) -> list[Proc]:
    text = subprocess.run(["dump-acct", path], capture_output=True, text=True, check=True).stdout
    procs = []
    for line in text.splitlines():
        f = [x.strip() for x in line.split("|")]
        procs.append(
            Proc(f[0], (float(f[2]) + float(f[3])) / TICKS_PER_S, float(f[4]) / TICKS_PER_S, int(f[9]), int(f[10]))
        )
    return procs


def classify(procs: list[Proc]) -> tuple[collections.Counter, collections.Counter]:
    by_pid = {p.pid: p for p in procs}
    longest = max((p.elapsed_s for p in procs if p.comm == "python"), default=0)
    workers = {p.pid for p in procs if p.comm == "python" and p.elapsed_s > 0.7 * longest}

    def in_server(p: Proc) -> bool:
        for _ in range(16):
            if p.comm.startswith(SERVER_NAMES):
                return True
            p = by_pid.get(p.ppid)
            if p is None:
                return False
        return False

    cpu, count = collections.Counter(), collections.Counter()
    for p in procs:
        parent = by_pid.get(p.ppid)
        if p.pid in workers:
            kind = "pytest processes"
        elif in_server(p):
            kind = "vLLM servers (all their processes)"
        elif p.comm == "python" and p.ppid in workers:
            kind = "driftmatrix CLI processes"
        elif p.comm == "python" and p.cpu_s >= BIG_S and _imports_vllm(parent, workers):
            kind = "vLLM's registry subprocess (inspections)"
        elif p.comm == "python" and p.cpu_s >= BIG_S:
            kind = "helpers, twin builds, in-target queries (>= 4 CPU s)"
        elif p.comm.startswith("python"):
            kind = "short Python processes"
        elif p.comm.startswith(BROWSER_NAMES):
            kind = "browser (Playwright) and node"
        else:
            kind = "other"
        cpu[kind] += p.cpu_s
        count[kind] += 1
    return cpu, count


def _imports_vllm(parent: Proc | None, workers: set[int]) -> bool:
    """A big Python process (a helper, an API server: not a pytest worker) started this one."""
    return parent is not None and parent.pid not in workers and parent.comm == "python" and parent.cpu_s >= BIG_S


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pacct", help="a process accounting file (accton)")
    args = parser.parse_args()
    cpu, count = classify(read(args.pacct))
    print(f"{'CPU s':>8} {'procs':>6}  kind")
    for kind, seconds in cpu.most_common():
        print(f"{seconds:8.0f} {count[kind]:6d}  {kind}")
    print(f"{sum(cpu.values()):8.0f} {sum(count.values()):6d}  all")


if __name__ == "__main__":
    main()
