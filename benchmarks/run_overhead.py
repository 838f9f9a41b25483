"""What one `driftmatrix run` costs before its first server: a one-command page at the parse tier on
both default CPU targets, as a doc writer's quick check or a test would run it.

Reports per repeat the wall time and how many helper processes (`vllm_helper.py`, each importing vLLM)
the run started, seen by polling /proc while it runs: one per target is the design (issue 48's review:
helpers started side by side were killed with the pool thread that forked them, and started again).

    python benchmarks/run_overhead.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PAGE = "# Quick\n\n```bash\nvllm serve Qwen/Qwen3-0.6B --max-model-len 512\n```\n"


def helper_pids() -> set[int]:
    found = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(a.endswith(b"vllm_helper.py") for a in args) and not any(a.endswith(b"sandbox_init.py") for a in args):
            found.add(int(proc.name))
    return found


def one_run(work: Path, snippets: Path) -> tuple[float, int]:
    out = work / "outcomes.jsonl"
    out.unlink(missing_ok=True)
    argv = [sys.executable, "-m", "driftmatrix.cli", "run", str(snippets), "--tier", "parse", "-o", str(out)]
    t0, seen = time.monotonic(), set()
    proc = subprocess.Popen(argv, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    while proc.poll() is None:
        seen |= helper_pids()
        time.sleep(0.2)
    wall = time.monotonic() - t0
    if proc.returncode:
        raise SystemExit(f"driftmatrix run exited {proc.returncode}: {proc.stderr.read()[-2000:]}")
    return wall, len(seen)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "docs" / "docs").mkdir(parents=True)
        (work / "docs" / "mkdocs.yaml").write_text("site_name: quick\n")
        (work / "docs" / "docs" / "index.md").write_text(PAGE)
        snippets = work / "snippets.json"
        subprocess.run(
            [sys.executable, "-m", "driftmatrix.cli", "extract", "-q", "docs", "-o", str(snippets)],
            cwd=work,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        for i in range(1, args.repeats + 1):
            wall, helpers = one_run(work, snippets)
            print(f"run {i}: {wall:.1f} s wall, {helpers} helper process(es) for 2 targets")


if __name__ == "__main__":
    main()
