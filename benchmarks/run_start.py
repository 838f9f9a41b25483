"""Runner overhead for one start+probe job vs the bare `vllm serve` start-up to /health.

Builds a Qwen3 twin with the nightly target's Python, then N interleaved rounds (medians):
  bare    - `vllm serve DIR --max-model-len 512` from the target env, polled every 0.1 s
            until GET /health is 200 (then killed);
  runner  - the same command as a docs snippet through `driftmatrix run --tier probe`:
            * warm: in a batch whose helper is already up (the steady state of a real run):
              job time minus the probe requests themselves;
            * cold: a fresh `driftmatrix run` process for that one job, whole wall time.
Goal from the issue: warm ratio runner/bare under 1.10.

    python benchmarks/run_start.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "runner"))

from runhelp import catalog_of, docs_tree  # noqa: E402

from driftmatrix.runner.builds.envs import ensure  # noqa: E402
from driftmatrix.runner.builds.targets import DEFAULT_CPU, load  # noqa: E402
from driftmatrix.runner.jobs.execute import JobRunner  # noqa: E402
from driftmatrix.runner.jobs.job import Job, RunContext  # noqa: E402
from driftmatrix.runner.models.resolution import ModelResolver  # noqa: E402
from driftmatrix.runner.models.twins import build  # noqa: E402
from driftmatrix.runner.serve.server import free_port  # noqa: E402
from driftmatrix.runner.settings import cache_dir  # noqa: E402

CACHE = cache_dir()


def bare(env, model: Path) -> float:
    port = free_port()
    cmd = [*env.vllm, "serve", str(model), "--max-model-len", "512", "--host", "127.0.0.1", "--port", str(port)]
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        env={**os.environ, **env.env, "VLLM_CPU_KVCACHE_SPACE": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    return time.monotonic() - t0
            except httpx.HTTPError:
                pass
            if proc.poll() is not None:
                raise RuntimeError("bare vllm serve exited")
            time.sleep(0.1)
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    tfile = load(DEFAULT_CPU)
    target = [t for t in tfile.targets if t.name == "nightly"][0]
    env = ensure(target, CACHE)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model = tmp / "tiny"
        build("Qwen/Qwen3-0.6B", env, model, cache=CACHE)
        bare(env, model)  # warm vLLM's compile cache once, for both sides alike
        snippets, ids = catalog_of(
            docs_tree(tmp / "docs", f"# b\n\n```bash\nvllm serve {model} --max-model-len 512\n```\n")
        )
        from driftmatrix.extractor.snippet_record import Catalog

        snippet = Catalog.read(snippets).snippets[0]
        ctx = RunContext(ModelResolver({}, hub=False), tmp / "work", base_env=tfile.env)
        runner = JobRunner(ctx)
        ctx.helper(env).ask([str(model)], "config")  # the batch's helper is up
        bare_ts, warm, owned = [], [], []
        for _ in range(a.runs):  # interleaved, so machine drift hits both sides alike
            bare_ts.append(bare(env, model))
            o = runner.run(Job(snippet, env, "probe"))
            assert o.verdict == "PASS", o.reason
            probes = sum(p.duration_s for p in o.evidence.probes)
            warm.append(o.duration_s - probes)
            owned.append(o.duration_s - probes - o.evidence.server.ready_s)
        ctx.close()
        t0 = time.monotonic()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "driftmatrix.cli",
                "run",
                str(snippets),
                "--target",
                "nightly",
                "-o",
                str(tmp / "cold.jsonl"),
                "--cache-dir",
                str(CACHE),
            ],
            check=True,
            capture_output=True,
        )
        cold = time.monotonic() - t0
    med = statistics.median
    bare_t = med(bare_ts)
    print(f"bare vllm serve to /health: median {bare_t:.1f} s of {[round(x, 1) for x in bare_ts]}")
    print(
        f"runner job, warm helper, minus probe requests: median {med(warm):.1f} s of {[round(x, 1) for x in warm]}"
        f" -> ratio {med(warm) / bare_t:.3f} (goal < 1.10)"
    )
    print(
        f"  of which the runner's own time (parse+config in the helper, polling, teardown): "
        f"median {med(owned):.2f} s; the rest is vLLM starting"
    )
    print(
        f"runner, fresh process for one job (helper import, parse, config, start, probe, teardown): "
        f"{cold:.1f} s -> ratio {cold / bare_t:.3f}"
    )


if __name__ == "__main__":
    main()
