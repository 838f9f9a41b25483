"""git, run one way for every stage: an argv list (never a shell), output captured, the caller
deciding what a failure means (the extractor's source refs, the docs gate's trees, the PR pushes)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def run_git(repo: Path | None, *args: str, env: dict[str, str] | None = None, timeout: float | None = None,
        input: str | bytes | None = None, text: bool = True) -> subprocess.CompletedProcess:
    """`git -C repo ARGS…` (`repo` None: no repository, e.g. `check-ref-format`)."""
    argv = ["git", *(["-C", str(repo)] if repo is not None else []), *args]
    return subprocess.run(argv, capture_output=True, text=text, env=env, timeout=timeout, input=input)
