"""On the GPU machine: does the sandbox (runner/sandbox) hold there, and can CUDA work inside it?

    DRIFTMATRIX_BWRAP=PATH python3 benchmarks/gpu/sandbox_check.py OUT.json

Runs the machine's own python3 (with its torch) contained with `gpu=True`: a CUDA matmul, the
device's name, and what the process sees (uid, capabilities, /run, the checkout, the network)."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from driftmatrix.runner.isolation import sandbox
from driftmatrix.runner.isolation.sandbox import detection

PROBE = r"""
import json, os, socket, time
seen = {"uid": os.getuid(), "run": os.path.exists("/run"), "procs": len([p for p in os.listdir("/proc") if p.isdigit()]),
        "cap_eff": next(l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff"))}
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2); seen["network"] = True
except OSError:
    seen["network"] = False
t = time.monotonic()
import torch
x = torch.randn(4096, 4096, device="cuda")
seen.update(cuda=torch.cuda.get_device_name(0), matmul=float((x @ x).sum().item()) != 0.0,
            torch=torch.__version__, seconds=round(time.monotonic() - t, 1))
print(json.dumps(seen))
"""


def main() -> None:
    usable, how = detection.detect()
    report = {"detect": how}
    if usable:
        proc, events = sandbox.run(
            [sys.executable, "-c", PROBE],
            python=sys.executable,
            env={"PATH": "/usr/bin:/bin"},
            kind="query",
            timeout=300,
            gpu=True,
        )
        report.update(
            returncode=proc.returncode,
            events=events,
            stderr=proc.stderr[-3000:],
            seen=json.loads(proc.stdout.strip().splitlines()[-1]) if proc.stdout.strip() else None,
        )
    Path(sys.argv[1]).write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
