"""Multi-rank starts on vLLM's CPU build (issue 35): the same command with 1, 2, 4 and 8 tensor
parallel ranks (`-tp N`, a Qwen3-8B twin whose heads divide N), each through `driftmatrix run
--tier start --stand-ins` on the nightly CPU target, one job at a time; prints per rank count the
seconds to /health 200, the job's wall time, the sandbox's peak memory and tasks, and the binding.
A warm-up start (not a figure) builds the twins and fills the compile cache first, as a scheduled
run's warm-up does.

    python benchmarks/cpu_ranks.py [--ranks 1 2 4 8] [--target nightly] [--tier start|probe]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"

from driftmatrix.extractor.catalog import extract
from driftmatrix.runner.builds.resolve import stable_pin
from driftmatrix.runner.outcomes.vocabulary import GOOD


def page(ranks: list[int]) -> str:
    blocks = [f"```bash\nvllm serve Qwen/Qwen3-8B --tensor-parallel-size {n} --max-model-len 512\n```\n" for n in ranks]
    return "# ranks\n\n" + "\n".join(blocks)


def run(snippets: Path, out: Path, target: str, tier: str, only: list[str]) -> tuple[list[dict], float]:
    cmd = [
        sys.executable,
        "-m",
        "driftmatrix.cli",
        "run",
        str(snippets),
        "--target",
        target,
        "--tier",
        tier,
        "--stand-ins",
        "--jobs",
        "1",
        "-o",
        str(out),
        "--format",
        "json",
        "--only",
        *only,
    ]
    t0 = time.monotonic()
    subprocess.run(cmd, check=False, capture_output=True, text=True)
    took = time.monotonic() - t0
    rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    return rows, took


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--target", default="nightly")
    ap.add_argument("--tier", default="start", choices=["start", "probe"])
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="dm-ranks-") as tmp:
        root = Path(tmp)
        (root / "docs" / "docs").mkdir(parents=True)
        (root / "docs" / "mkdocs.yaml").write_text("site_name: ranks\n")
        (root / "docs" / "docs" / "index.md").write_text(page(a.ranks))
        catalog, _ = extract(stable=stable_pin(), sources=[root / "docs"])
        path = root / "snippets.json"
        catalog.write(path)
        ids = {int(s.argv[s.argv.index("--tensor-parallel-size") + 1]): s.id for s in catalog.snippets}
        run(path, root / "warm.jsonl", a.target, a.tier, list(ids.values()))  # twins, compile cache
        print(f"{'ranks':>5} {'verdict':7} {'ready s':>8} {'job s':>7} {'peak MiB':>9} {'tasks':>6}  binding")
        for n in a.ranks:
            rows, took = run(path, root / f"r{n}.jsonl", a.target, a.tier, [ids[n]])
            o = rows[0] if rows else {}
            server = (o.get("evidence") or {}).get("server") or {}
            peak = next((e["peak"] for e in server.get("sandbox") or [] if "peak" in e), {})
            binding = (server.get("ranks") or {}).get("binding") or "vLLM's own"
            print(
                f"{n:5} {o.get('verdict', '-'):7} {server.get('ready_s') or '-':>8} {took:7.0f} "
                f"{peak.get('memory_mib', '-'):>9} {peak.get('tasks', '-'):>6}  {binding}"
                + (f"  ({o.get('reason')})" if o.get("verdict") not in GOOD else "")
            )


if __name__ == "__main__":
    main()
