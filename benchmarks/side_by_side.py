"""Jobs side by side on a machine without a GPU: the same start-tier jobs (two commands x the two
default CPU targets, twins) through `driftmatrix run --jobs 1` and `--jobs 2`, and the
wall time of each, with each job's worker on its own cores and with vLLM's own binding. Backs
settings.CPU_SERVERS_SIDE_BY_SIDE (the `run --jobs` default on a CPU) and settings.cpu_slots.

    python benchmarks/side_by_side.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from driftmatrix.extractor.catalog import extract
from driftmatrix.runner.builds.resolve import stable_pin
from driftmatrix.runner.settings import cache_dir

PAGE = """# bench

```bash
vllm serve Qwen/Qwen3-0.6B --max-model-len 512
```

```bash
vllm serve Qwen/Qwen3-0.6B --max-model-len 1024
```
"""


RUNS = (
    ("warm-up (twins built, compile cache filled; not a figure)", 2, {}),
    ("--jobs 1", 1, {}),
    ("--jobs 2, each job's worker on its own cores (settings.cpu_slots)", 2, {}),
    (
        "--jobs 2, vLLM's own binding (VLLM_CPU_OMP_THREADS_BIND=auto: every worker on core 0)",
        2,
        {"VLLM_CPU_OMP_THREADS_BIND": "auto"},
    ),
)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="dm-side-by-side-") as tmp:
        root = Path(tmp)
        (root / "docs" / "docs").mkdir(parents=True)
        (root / "docs" / "mkdocs.yaml").write_text("site_name: bench\n")
        (root / "docs" / "docs" / "index.md").write_text(PAGE)
        catalog, _ = extract(stable=stable_pin(), sources=[root / "docs"])
        catalog.write(root / "snippets.json")
        for i, (label, jobs, env) in enumerate(RUNS):
            out = root / f"o{i}.jsonl"
            t0 = time.monotonic()
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "driftmatrix.cli",
                    "run",
                    str(root / "snippets.json"),
                    "--stand-ins",
                    "--tier",
                    "start",
                    "--jobs",
                    str(jobs),
                    "-o",
                    str(out),
                    "--cache-dir",
                    str(cache_dir()),
                    "--format",
                    "json",
                ],
                check=True,
                capture_output=True,
                cwd=root,
                env={**os.environ, **env},
            )
            wall = time.monotonic() - t0
            n = len(out.read_text().splitlines())
            print(f"{label}: {n} start jobs in {wall:.0f} s ({wall / n:.0f} s per job)", flush=True)


if __name__ == "__main__":
    main()
