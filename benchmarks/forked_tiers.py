"""Issue 57 point 2: a clean process for every command, and what it costs.

1. The parse tier of vLLM 0.33.0's docs and recipes (every command, `--trust-remote-code` ones
   included: each is answered by a child forked for it, none by a helper of its own) on both default
   CPU targets, through `driftmatrix run` as a user runs it; goal < 60 s here.
2. The config tier per command on tiny twins, answered by forked children, beside the same requests
   asked of the parent's own process (what the shared helper did before): goal within 2x.

3. The config tier of real docs commands: the first 150 runnable `vllm serve` commands of vLLM 0.33.0's
   docs without --trust-remote-code (those had a helper of their own before), on the nightly build,
   with twins (`--stand-ins`), this checkout against an older one: wall time, mean and median config job.

    python benchmarks/forked_tiers.py [CORPUS_DIR] [--skip-parse] [--baseline=OLD_CHECKOUT/runner/intarget]
        [--older-python=OLD_CHECKOUT/.venv/bin/python]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from driftmatrix.runner.builds.envs import ensure
from driftmatrix.runner.builds.targets import DEFAULT_CPU, load
from driftmatrix.runner.jobs.job import RunContext
from driftmatrix.runner.models.resolution import ModelResolver
from driftmatrix.runner.serve import helper_client
from driftmatrix.runner.settings import cache_dir

CLI = [sys.executable, "-m", "driftmatrix.cli"]


def parse_tier(corpus: Path, work: Path) -> None:
    snippets = work / "snippets.json"
    sources = [corpus / "vllm-docs" / "0.33.0"]
    subprocess.run([*CLI, "extract", "-q", "-o", str(snippets), *map(str, sources)], check=True)
    count = len(json.loads(snippets.read_text())["snippets"])
    out = work / "outcomes.jsonl"
    t0 = time.monotonic()
    proc = subprocess.run(
        [*CLI, "run", str(snippets), "--tier", "parse", "-o", str(out), "--workdir", str(work / "run")],
        capture_output=True,
        text=True,
    )
    wall = time.monotonic() - t0
    outcomes = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    verdicts = Counter((o["target"]["name"], o["verdict"]) for o in outcomes)
    remote = sum(1 for o in outcomes if "--trust-remote-code" in (o.get("argv") or []))
    print(f"parse tier: {count} snippets, {len(outcomes)} outcomes ({remote} with --trust-remote-code) in {wall:.1f} s")
    print(f"  exit {proc.returncode}; verdicts {dict(sorted(verdicts.items()))}")
    print(f"  goal < 60 s: {'met' if wall < 60 else 'NOT met'}")


def config_per_command(models: list[str], repeats: int = 20, baseline: Path | None = None) -> None:
    """The config tier of one command over and over, per command. `baseline`: an older checkout's
    runner/intarget folder, whose helper answered every command in its own long-lived process."""
    tfile = load(DEFAULT_CPU)
    if baseline is not None:  # the sandbox binds this checkout's runner/intarget: the old one's files copied there
        helper_client.HELPER = helper_client.HELPER.with_name("baseline_vllm_helper.py")
        helper_client.HELPER.write_text((baseline / "vllm_helper.py").read_text())
    how = "in the helper's own process (baseline)" if baseline else "forked child per command"
    for target in tfile.targets:
        env = ensure(target, cache_dir())
        with tempfile.TemporaryDirectory() as tmp:
            # as a run makes it: seeded with vLLM's inspections, seeing the twins' folder
            ctx = RunContext(ModelResolver(tfile.models, hub=False), Path(tmp), base_env=tfile.env)
            helper = ctx.helper(env)
            helper.start()
            times = []
            for i in range(repeats):
                t0 = time.monotonic()
                answer = helper.ask([models[0], "--max-model-len", str(128 + i)], "config")
                times.append(time.monotonic() - t0)
            ctx.close()
        times.sort()
        print(
            f"config tier on {target.name} ({env.version}), {how}: slowest {times[-1] * 1000:.0f} ms, "
            f"median {times[len(times) // 2] * 1000:.0f} ms ({answer.result} at {answer.stage})"
        )
    if baseline is not None:
        helper_client.HELPER.unlink(missing_ok=True)


def config_run(cli: list[str], twin: Path, work: Path, count: int = 30) -> float:
    """Median seconds per config job of a run: `count` commands on a tiny twin (a third with
    --trust-remote-code, a model of our own whose code is vLLM's) on both CPU targets, through `cli`'s
    `driftmatrix run` (this checkout's, or an older one's for the figure before)."""
    work.mkdir(parents=True)
    targets = work / "targets.toml"
    targets.write_text(DEFAULT_CPU.read_text() + f'"org/tiny" = "{twin}"\n')
    lines = [
        f"vllm serve org/tiny --max-model-len {128 + i}" + (" --trust-remote-code" if i % 3 == 0 else "")
        for i in range(count)
    ]
    (work / "docs").mkdir()
    (work / "docs" / "page.md").write_text("# Config\n\n" + "".join(f"```bash\n{c}\n```\n\n" for c in lines))
    snippets = work / "snippets.json"
    subprocess.run([*cli, "extract", "-q", "-o", str(snippets), str(work / "docs")], check=True, capture_output=True)
    out = work / "o.jsonl"
    subprocess.run(
        [*cli, "run", str(snippets), "--targets", str(targets), "--tier", "config", "-o", str(out)],
        check=True,
        capture_output=True,
        cwd=work,
    )
    outcomes = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    durations = sorted(o["duration_s"] for o in outcomes if o["stage"] == "config")
    verdicts = Counter(o["verdict"] for o in outcomes)
    print(f"  {' '.join(cli[-2:])}: {len(durations)} config outcomes {dict(verdicts)}")
    return durations[len(durations) // 2] if durations else float("nan")


def config_corpus(cli: list[str], corpus: Path, work: Path, count: int = 150) -> dict:
    """The config tier of `count` real docs commands (see the module's docstring) through `cli`'s run."""
    work.mkdir(parents=True)
    snippets = work / "snippets.json"
    subprocess.run([*cli, "extract", "-q", "-o", str(snippets), str(corpus / "vllm-docs" / "0.33.0")], check=True)
    data = json.loads(snippets.read_text())
    data["snippets"] = [
        s for s in data["snippets"] if s["kind"] == "serve" and s["runnable"] and "--trust-remote-code" not in s["argv"]
    ][:count]
    snippets.write_text(json.dumps(data))
    out = work / "o.jsonl"
    t0 = time.monotonic()
    run = [*cli, "run", str(snippets), "--tier", "config", "--target", "nightly", "--stand-ins", "-o", str(out)]
    subprocess.run(run, check=True, capture_output=True, cwd=work)
    wall = time.monotonic() - t0
    outcomes = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    jobs = sorted(o["duration_s"] for o in outcomes if o["stage"] == "config")
    found = {"wall": wall, "mean": sum(jobs) / len(jobs), "median": jobs[len(jobs) // 2], "jobs": len(jobs)}
    found["verdicts"] = {o["snippet_id"]: (o["stage"], o["verdict"]) for o in outcomes}
    print(
        f"  {cli[0]}: {len(outcomes)} outcomes, {len(jobs)} config jobs: wall {wall:.1f} s, "
        f"mean {found['mean'] * 1000:.0f} ms, median {found['median'] * 1000:.0f} ms"
    )
    return found


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    corpus = Path(args[0]) if args else Path(__file__).resolve().parents[2] / "shared" / "corpus"
    with tempfile.TemporaryDirectory() as tmp:
        if "--skip-parse" not in sys.argv:
            parse_tier(corpus, Path(tmp))
    # the same architecture every time (the cache's first folder changes as twins are made): a text model
    twins = [c for c in sorted((cache_dir() / "standins").glob("*/config.json")) if "Qwen3ForCausalLM" in c.read_text()]
    baseline = next((Path(a.split("=", 1)[1]) for a in sys.argv if a.startswith("--baseline=")), None)
    older = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--older-python=")), None)
    if twins:
        config_per_command([str(twins[0].parent)], baseline=baseline)
        with tempfile.TemporaryDirectory() as tmp:
            now = config_run(CLI, twins[0].parent, Path(tmp) / "now")
            print(f"config job in a run, median: {now * 1000:.0f} ms (this checkout)")
            if older:
                before = config_run([older, "-m", "driftmatrix.cli"], twins[0].parent, Path(tmp) / "before")
                print(
                    f"config job in a run, median: {before * 1000:.0f} ms (older checkout); ratio {now / before:.1f}x"
                )
    else:
        print("config tier: no twin in the cache to configure (run the tests or the pipeline first)")
    with tempfile.TemporaryDirectory() as tmp:
        print("config tier of 150 docs commands (vLLM 0.33.0, no --trust-remote-code), nightly, with twins:")
        now = config_corpus(CLI, corpus, Path(tmp) / "now")
        if older:
            before = config_corpus([older, "-m", "driftmatrix.cli"], corpus, Path(tmp) / "before")
            same = now["verdicts"] == before["verdicts"]
            print(
                f"  ratio: wall {now['wall'] / before['wall']:.2f}x, mean {now['mean'] / before['mean']:.2f}x, "
                f"median {now['median'] / before['median']:.1f}x; every stage and verdict the same: {same}"
            )


if __name__ == "__main__":
    main()
