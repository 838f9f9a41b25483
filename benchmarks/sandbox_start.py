"""The start tier with and without the tighter sandbox (issue 30): the same jobs through
`driftmatrix run --tier start`, a fresh process each, rounds interleaved (medians):

  plain    - DRIFTMATRIX_SANDBOX=off: no sandbox at all;
  sandbox  - this checkout's sandbox (allow-listed binds, limits, the init, a warm compile cache
             copied into the job's private /tmp, a helper of its own for `--trust-remote-code`);
  previous - optional (`--previous DIR`: a checkout of the earlier driftmatrix with its own .venv):
             the sandbox before (`/` read-only, shared writable compile cache, one helper for all).

Jobs: a plain command and the same with `--trust-remote-code` (a tiny Qwen3 twin; no remote code
in it, so only the containment differs). Per job: the whole job, the server's time to /health.

    python benchmarks/sandbox_start.py [--runs N] [--previous ../wt-old]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "runner"))

from runhelp import catalog_of, docs_tree  # noqa: E402

from driftmatrix.runner.builds.envs import ensure  # noqa: E402
from driftmatrix.runner.builds.targets import DEFAULT_CPU, load  # noqa: E402
from driftmatrix.runner.models.twins import ensure as ensure_twin  # noqa: E402
from driftmatrix.runner.settings import cache_dir  # noqa: E402

CACHE = cache_dir()
COMMANDS = {
    "plain": "vllm serve org/tiny --max-model-len 256",
    "trust-remote-code": "vllm serve org/tiny --max-model-len 256 --trust-remote-code",
}


def one_run(checkout: Path, mode: str, snippets: Path, targets: Path, work: Path) -> dict[str, dict]:
    """{command kind: {job_s, ready_s, verdict}} from one fresh `driftmatrix run`."""
    work.mkdir(parents=True)
    env = {**os.environ, "DRIFTMATRIX_SANDBOX": mode}
    t0 = time.monotonic()
    subprocess.run(
        [
            str(checkout / ".venv" / "bin" / "python"),
            "-m",
            "driftmatrix.cli",
            "run",
            str(snippets),
            "--targets",
            str(targets),
            "--target",
            "nightly",
            "--tier",
            "start",
            "--jobs",
            "1",
            "--cache-dir",
            str(CACHE),
            "--workdir",
            str(work),
            "-o",
            str(work / "o.jsonl"),
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - t0
    found = {}
    for line in (work / "o.jsonl").read_text().splitlines():
        o = json.loads(line)
        kind = "trust-remote-code" if "--trust-remote-code" in o["argv"] else "plain"
        found[kind] = {
            "job_s": o["duration_s"],
            "ready_s": (o["evidence"].get("server") or {}).get("ready_s"),
            "verdict": o["verdict"],
        }
    found["run"] = {"job_s": round(wall, 1)}
    return found


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--previous", type=Path, help="a checkout of the earlier driftmatrix (with .venv)")
    a = ap.parse_args()
    tfile = load(DEFAULT_CPU)
    env = ensure(next(t for t in tfile.targets if t.name == "nightly"), CACHE)
    model = ensure_twin("Qwen/Qwen3-0.6B", env, CACHE).dir
    sides = {"plain": (REPO, "off"), "sandbox": (REPO, "required")}
    if a.previous:
        sides["previous"] = (a.previous.resolve(), "required")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        targets = tmp / "targets.toml"
        targets.write_text(DEFAULT_CPU.read_text() + f'"org/tiny" = "{model}"\n')
        page = "# b\n\n" + "".join(f"```bash\n{c}\n```\n\n" for c in COMMANDS.values())
        snippets, _ = catalog_of(docs_tree(tmp / "docs", page))
        one_run(REPO, "required", snippets, targets, tmp / "warm-up")  # the sandbox's warm compile cache, once
        got: dict[str, list[dict]] = {side: [] for side in sides}
        for i in range(a.runs):  # interleaved: machine drift hits every side alike
            for side, (checkout, mode) in sides.items():
                got[side].append(one_run(checkout, mode, snippets, targets, tmp / f"{side}-{i}"))
    med = statistics.median
    for kind in (*COMMANDS, "run"):
        print(f"{kind}:")
        for side, runs in got.items():
            job = [r[kind]["job_s"] for r in runs if kind in r]
            ready = [r[kind]["ready_s"] for r in runs if kind in r and r[kind].get("ready_s")]
            verdicts = sorted({r[kind].get("verdict") for r in runs if kind in r} - {None})
            print(
                f"  {side:9s} job median {med(job):6.1f} s of {job}"
                + (f"; /health after median {med(ready):5.1f} s of {ready}" if ready else "")
                + (f"; {verdicts}" if verdicts else "")
            )


if __name__ == "__main__":
    main()
