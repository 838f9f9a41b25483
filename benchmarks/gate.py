"""The docs pull-request gate, end to end: a change touching three pages of the vLLM 0.33.0 docs
(one command gets a flag vLLM removed, one page's prose changes, one command changes model),
checked with `driftmatrix gate` (parse + config on the shipped CPU builds; envs cached).

    .venv/bin/python benchmarks/gate.py [--tier parse|config] [--written-for SPEC]

Prints the wall time of the gate command and what it found. The target is < 3 minutes.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT.parent / "shared" / "corpus" / "vllm-docs" / "0.33.0"
PAGES = ("docs/features/multimodal_inputs.md", "docs/benchmarking/cli.md", "docs/serving/parallelism_scaling.md")


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        env={
            "GIT_AUTHOR_NAME": "b",
            "GIT_AUTHOR_EMAIL": "b@x",
            "GIT_COMMITTER_NAME": "b",
            "GIT_COMMITTER_EMAIL": "b@x",
            "PATH": "/usr/bin:/bin",
        },
    )


def make_change(repo: Path) -> None:
    shutil.copytree(DOCS / "docs", repo / "docs")
    shutil.copy(DOCS / "mkdocs.yaml", repo / "mkdocs.yaml")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", "change")
    first = repo / PAGES[0]  # a removed flag added to the page's first `vllm serve` line
    lines = first.read_text().splitlines()
    i = next(n for n, ln in enumerate(lines) if ln.lstrip().startswith("vllm serve "))
    body, cont = (lines[i][:-1].rstrip(), " \\") if lines[i].rstrip().endswith("\\") else (lines[i], "")
    lines[i] = body + " --disable-log-requests" + cont
    first.write_text("\n".join(lines) + "\n")
    second = repo / PAGES[1]  # prose only
    second.write_text(second.read_text().replace("benchmark", "benchmark", 1) + "\nA sentence added.\n")
    third = repo / PAGES[2]  # another model in a command
    third.write_text(third.read_text().replace("vllm serve ", "vllm serve  ", 1))
    git(repo, "commit", "-q", "-am", "docs change")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tier", default="config", choices=["parse", "config"])
    ap.add_argument("--written-for", help="e.g. '>=0.20.1' to judge the pages against the CPU builds checked")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "docs-repo"
        repo.mkdir()
        make_change(repo)
        cmd = [
            str(ROOT / ".venv" / "bin" / "driftmatrix"),
            "gate",
            "--repo",
            str(repo),
            "--base",
            "main",
            "--tier",
            args.tier,
            "--workdir",
            str(Path(tmp) / "gate"),
            "--summary",
            str(Path(tmp) / "summary.md"),
        ]
        if args.written_for:
            cmd += ["--written-for", args.written_for]
        t0 = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.monotonic() - t0
        print(proc.stdout[-3000:])
        print(proc.stderr[-1500:], file=sys.stderr)
        print(
            f"gate exit {proc.returncode}; wall {wall:.1f} s for a change touching {len(PAGES)} pages (target < 180 s)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
