"""The docs gate in vLLM's own repository (head mode, issue 46): a change touching three pages of the
vLLM 0.33.0 docs in a repository whose `vllm/` is a real release's (the base 0.33.0's, the head
0.34.0's: so both sides' sources are read, the worst case), cloned as the gate's workflow clones it
(`--filter=blob:none`, from a `file://` remote standing in for GitHub), then judged against the
head's own sources with `driftmatrix gate` — nothing installed.

    python benchmarks/gate_head.py [--keep DIR]

Prints the wall time cold (an empty driftmatrix cache: the sources fetched from the clone's remote
and read) and warm (the reads cached), the same for `driftmatrix check --changed` in a checkout of
the head, and the peak disk of the gate's folders (the clone, its work folder, its cache and its
temporary files), sampled while it runs. The targets: < 2 minutes cold for a 3-page change, < 1 GB.
The sdists come from PyPI once (cached under the driftmatrix cache).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DOCS = ROOT.parent / "shared" / "corpus" / "vllm-docs" / "0.33.0"
PAGES = ("docs/features/multimodal_inputs.md", "docs/benchmarking/cli.md", "docs/serving/parallelism_scaling.md")
ENV = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@x"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env={**os.environ, **ENV}
    ).stdout.strip()


def vllm_tree(version: str) -> Path:
    import httpx

    from driftmatrix.flaghistory.sources import fetch_sources, list_releases
    from driftmatrix.runner.settings import cache_dir

    with httpx.Client(timeout=120, follow_redirects=True) as client:
        release = next(r for r in list_releases(client, since=version) if r.version == version)
        return fetch_sources(release, cache_dir() / "vllm-trees", client, keep=lambda inner, body: True) / "vllm"


def make_repo(origin: Path) -> None:
    """base: vLLM 0.33.0's vllm/ and docs; change: 0.34.0's vllm/ and three pages changed."""
    origin.mkdir(parents=True)
    git(origin, "init", "-q", "-b", "main")
    shutil.copytree(vllm_tree("0.33.0"), origin / "vllm")
    shutil.copytree(DOCS / "docs", origin / "docs")
    shutil.copy(DOCS / "mkdocs.yaml", origin / "mkdocs.yaml")
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "base")
    git(origin, "checkout", "-qb", "change")
    shutil.rmtree(origin / "vllm")
    shutil.copytree(vllm_tree("0.34.0"), origin / "vllm")
    first = origin / PAGES[0]  # an option vLLM removed in 0.18.0, added to the first `vllm serve` line
    lines = first.read_text().splitlines()
    i = next(n for n, ln in enumerate(lines) if ln.lstrip().startswith("vllm serve "))
    body, cont = (lines[i][:-1].rstrip(), " \\") if lines[i].rstrip().endswith("\\") else (lines[i], "")
    lines[i] = body + " --swap-space 4" + cont
    first.write_text("\n".join(lines) + "\n")
    second = origin / PAGES[1]  # prose only
    second.write_text(second.read_text() + "\nA sentence added.\n")
    third = origin / PAGES[2]
    third.write_text(third.read_text().replace("vllm serve ", "vllm serve  ", 1))
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "vLLM 0.34.0's sources; three docs pages")
    git(origin, "config", "uploadpack.allowFilter", "true")
    git(origin, "config", "uploadpack.allowAnySHA1InWant", "true")


def du(paths: list[Path]) -> int:
    total = 0
    for root in paths:
        for folder, _, names in os.walk(root):
            for name in names:
                try:
                    total += os.lstat(os.path.join(folder, name)).st_blocks * 512
                except OSError:
                    pass
    return total


def timed(cmd: list[str], env: dict, cwd: Path, watch: list[Path]) -> tuple[float, int, subprocess.CompletedProcess]:
    """(wall seconds, peak bytes under `watch` sampled every 0.2 s, the process)."""
    peak, done = [0], threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], du(watch))
            done.wait(0.2)

    watcher = threading.Thread(target=sample)
    watcher.start()
    t0 = time.monotonic()
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env, cwd=cwd)
    wall = time.monotonic() - t0
    done.set()
    watcher.join()
    return wall, max(peak[0], du(watch)), proc


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep", help="build the repositories here and leave them")
    args = ap.parse_args()
    top = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="gate-head-"))
    try:
        make_repo(top / "origin")
        clone, cache, work, tmp = top / "docs-repo", top / "cache", top / "gate", top / "tmp"
        t0 = time.monotonic()
        subprocess.run(
            ["git", "clone", "-q", "--filter=blob:none", "--no-checkout", f"file://{top / 'origin'}", str(clone)],
            check=True,
        )
        clone_s = time.monotonic() - t0
        base, head = git(clone, "rev-parse", "origin/main"), git(clone, "rev-parse", "origin/change")
        tmp.mkdir()
        env = {**os.environ, "PYTHONPATH": str(ROOT), "DRIFTMATRIX_CACHE": str(cache), "TMPDIR": str(tmp)}
        gate = [
            sys.executable,
            "-m",
            "driftmatrix.cli",
            "gate",
            "--repo",
            str(clone),
            "--base",
            base,
            "--head",
            head,
            "--workdir",
            str(work),
            "--summary",
            str(top / "summary.md"),
        ]
        watch = [clone, cache, work, tmp]
        print(f"clone (blob:none, no checkout): {clone_s:.1f} s, {du([clone]) / 2**20:.1f} MiB")
        for run in ("cold", "warm"):
            wall, peak, proc = timed(gate, env, top, watch)
            print(
                f"gate {run}: exit {proc.returncode}, {wall:.1f} s, peak disk (clone + work + cache + tmp) "
                f"{peak / 2**20:.0f} MiB"
            )
            if proc.returncode not in (0, 1):
                print(proc.stderr[-2000:], file=sys.stderr)
        print(proc.stdout[-1500:])
        print("envs created:", (cache / "envs").exists())
        checkout = top / "checkout"  # a developer's checkout of the head: check --changed against main
        subprocess.run(["git", "clone", "-q", "-b", "change", f"file://{top / 'origin'}", str(checkout)], check=True)
        git(checkout, "branch", "-q", "main", "origin/main")
        check_cache = top / "check-cache"
        for run in ("cold", "warm"):
            wall, _, proc = timed(
                [sys.executable, "-m", "driftmatrix.cli", "check", "--changed", "main"],
                {**env, "DRIFTMATRIX_CACHE": str(check_cache)},
                checkout,
                [],
            )
            print(f"check --changed {run}: exit {proc.returncode}, {wall:.1f} s")
        print(proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-800:])
    finally:
        if not args.keep:
            shutil.rmtree(top, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
