"""Issue 34's speed figures for `driftmatrix check`: one command (cold: no compiled module, every one
read from source as on the first run after an install; warm: again) and the pre-commit hook's run on a 3-page change of the vLLM 0.33.0 docs (a
git repository holding a copy of them; `driftmatrix check --changed`, and the real `pre-commit run`
with its hook environment already installed).

    .venv/bin/python benchmarks/check.py [CORPUS]   (default: the shared docs corpus beside the checkout)
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO.parent / "shared" / "corpus"
DOCS = CORPUS / "vllm-docs" / "0.33.0"
COMMAND = (
    "vllm serve google/gemma-4-31B-it --max-model-len 16384 --enable-auto-tool-choice --reasoning-parser gemma4 "
    "--tool-call-parser gemma4 --speculative-config "
    '\'{"model": "google/gemma-4-31B-it-assistant", "num_speculative_tokens": 4}\''
)
PAGES = [
    "docs/features/tool_calling.md",
    "docs/features/speculative_decoding/README.md",
    "docs/serving/parallelism_scaling.md",
]
GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "b",
    "GIT_AUTHOR_EMAIL": "b@b",
    "GIT_COMMITTER_NAME": "b",
    "GIT_COMMITTER_EMAIL": "b@b",
}


def timed(argv: list[str], cwd: Path, runs: int = 5, env: dict | None = None) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, cwd=cwd, capture_output=True, env=env or GIT_ENV, check=False)
        times.append(time.perf_counter() - started)
    return times


def show(what: str, times: list[float]) -> None:
    print(
        f"{what}: median {statistics.median(times):.2f} s (min {min(times):.2f}, max {max(times):.2f}, n={len(times)})"
    )


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=GIT_ENV)


def main() -> None:
    cli = [sys.executable, "-m", "driftmatrix.cli", "check"]
    cold = []
    for _ in range(3):  # cold: nothing compiled yet (every module, stdlib included, from source)
        with tempfile.TemporaryDirectory() as empty:
            cold += timed([*cli, COMMAND], REPO, runs=1, env={**GIT_ENV, "PYTHONPYCACHEPREFIX": empty})
    show("check, one command, cold (no compiled modules)", cold)
    show("check, one command (warm)", timed([*cli, COMMAND], REPO))
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "vllm"
        shutil.copytree(DOCS, repo, symlinks=True)
        git(repo, "init", "-q", "-b", "main")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "docs 0.33.0")
        for page in PAGES:
            with (repo / page).open("a") as out:
                out.write("\n```bash\nvllm serve Qwen/Qwen3-0.6B --max-model-len 4096 --swap-space 4\n```\n")
        git(repo, "add", "-A")
        show(f"check --changed, {len(PAGES)} pages", timed([*cli, "--changed"], repo))
        config = repo / ".pre-commit-config.yaml"
        home = Path(tmp) / "pre-commit-home"
        env = {**GIT_ENV, "PRE_COMMIT_HOME": str(home)}
        try_repo = [sys.executable, "-m", "pre_commit", "try-repo", str(REPO), "driftmatrix-check", "--verbose"]
        started = time.perf_counter()
        subprocess.run(try_repo, cwd=repo, capture_output=True, env=env, check=False)
        print(f"pre-commit try-repo (installs the hook's environment): {time.perf_counter() - started:.1f} s")
        # the hook's environment installed: what a writer waits for at each commit
        config.write_text(
            f"repos:\n- repo: local\n  hooks:\n  - id: driftmatrix-check\n    name: driftmatrix check\n"
            f"    entry: {Path(sys.executable).parent / 'driftmatrix'} check\n    language: system\n"
            "    files: \\.(md|markdown|ya?ml)$\n"
        )
        git(repo, "add", ".pre-commit-config.yaml")
        show(
            f"pre-commit run on the {len(PAGES)} staged pages (hook environment installed)",
            timed([sys.executable, "-m", "pre_commit", "run"], repo),
        )


if __name__ == "__main__":
    main()
