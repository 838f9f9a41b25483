"""The pre-commit hook (.pre-commit-hooks.yaml) run by the real `pre-commit` tool on a git repository
whose change touches three pages, and the same check without pre-commit (`driftmatrix check --changed`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from git_identity import GIT_IDENTITY

REPO = Path(__file__).resolve().parents[2]
GOOD = "# Good\n\n```bash\nvllm serve Qwen/Qwen3-0.6B --max-model-len 4096\n```\n"
REMOVED = "# Old\n\nStart it:\n\n```bash\nvllm serve Qwen/Qwen3-0.6B \\\n  --swap-space 4\n```\n"
WORKFLOW = "on: push\njobs: {}\n"  # YAML that is no docs page: not read


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env={**os.environ, **GIT_IDENTITY})


def docs_change(tmp_path: Path) -> Path:
    repo = tmp_path / "docs-repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "docs" / "good.md").write_text("# Good\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    (repo / "docs" / "good.md").write_text(GOOD)
    (repo / "docs" / "old.md").write_text(REMOVED)
    (repo / "ci.yaml").write_text(WORKFLOW)
    git(repo, "add", "-A")
    return repo


def test_the_hook_under_pre_commit_fails_a_removed_option_with_its_line(tmp_path):
    repo = docs_change(tmp_path)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"), **GIT_IDENTITY}
    done = subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(REPO), "driftmatrix-check"],
        cwd=repo,
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out[-4000:]
    assert "driftmatrix check (vLLM commands on changed pages)" in out and "Failed" in out
    assert "docs/old.md:6" in out and "--swap-space was removed in vLLM" in out
    assert "docs/good.md" not in out  # a page whose commands parse is not listed
    assert "2 commands on 2 pages" in out  # ci.yaml was passed to the hook and is no page


def test_the_same_check_without_pre_commit(tmp_path):
    repo = docs_change(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "driftmatrix.cli", "check", "--changed"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert "docs/old.md:6" in done.stdout and "2 commands on 2 pages" in done.stdout
    (repo / "docs" / "old.md").write_text(REMOVED.replace("--swap-space 4", "--max-num-seqs 4"))
    done = subprocess.run(
        [sys.executable, "-m", "driftmatrix.cli", "check", "--changed"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


TYPO = "# Tools\n\n```bash\nvllm serve Qwen/Qwen3-0.6B \\\n  --tool-call-parser-plugin my_parser.py\n```\n"


def test_the_hook_says_the_nearest_name(tmp_path):
    """The hook's entry (`driftmatrix check` with the changed pages) on an option no release has: the
    page's line fails, with the nearest name the page's releases have (issue 46, point 2)."""
    repo = docs_change(tmp_path)
    (repo / "docs" / "tools.md").write_text(TYPO)
    done = subprocess.run(
        [sys.executable, "-m", "driftmatrix.cli", "check", "docs/tools.md", "docs/good.md"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "docs/tools.md:4" in done.stdout and "did you mean --tool-parser-plugin?" in done.stdout
    assert "docs/good.md" not in done.stdout
