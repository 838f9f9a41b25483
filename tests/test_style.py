"""One style for every Python file of the repository, kept by ruff ([tool.ruff] in pyproject.toml, which
says why each rule is selected): `ruff format --check` and `ruff check` are clean. Run from the
installed test extra, as tests/test_architecture.py runs lint-imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RUFF = Path(sys.executable).with_name("ruff")


def _ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(RUFF), *args], cwd=REPO, capture_output=True, text=True)


@pytest.mark.parametrize(
    "args, fix",
    [
        (("format", "--check", "--diff", "."), "ruff format ."),
        (("check", "--output-format", "concise", "."), "ruff check --fix . (and by hand what it cannot fix)"),
    ],
    ids=["format", "lint"],
)
def test_ruff_is_clean(args, fix):
    proc = _ruff(*args)
    assert proc.returncode == 0, f"run `{fix}`:\n{proc.stdout[-6000:]}{proc.stderr[-2000:]}"
