"""The installable package: `pip wheel .` builds a wheel that, installed into a fresh virtual
environment, works from any directory — package data (runner/data, templates, the sample docs)
and the site skeleton, the guide (docs/guide/) with it, included."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def sh(*cmd, cwd=None) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{cmd}: {proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.mark.network
def test_wheel_installs_and_runs_from_anywhere(tmp_path):
    sh(sys.executable, "-m", "pip", "wheel", REPO, "--no-deps", "-q", "-w", tmp_path / "dist")
    (wheel,) = (tmp_path / "dist").glob("driftmatrix-*.whl")
    sh(sys.executable, "-m", "venv", tmp_path / "fresh")
    bin_ = tmp_path / "fresh" / "bin"
    sh(bin_ / "pip", "install", "-q", wheel)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = sh(bin_ / "python", "-c", "import publisher, runner; print(publisher.__file__, runner.__file__)",
               cwd=elsewhere).stdout
    assert str(REPO) not in where and str(tmp_path / "fresh") in where  # the installed copy, not the checkout
    assert sh(bin_ / "driftmatrix", "--version", cwd=elsewhere).stdout.strip() == "driftmatrix 0.1.0"
    sh(bin_ / "driftmatrix", "extract", "-q", "-o", "snippets.json", cwd=elsewhere)  # the embedded sample
    snippets = json.loads((elsewhere / "snippets.json").read_text())["snippets"]
    assert any(s["model"] == "google/gemma-4-E2B-it" for s in snippets)
    plan = json.loads(sh(bin_ / "driftmatrix", "plan", "snippets.json", "--tier", "parse", cwd=elsewhere).stdout)
    assert plan["jobs"] == 2 * len(snippets)  # the shipped targets file (runner/data) was found
    (elsewhere / "outcomes.jsonl").write_text("")
    sh(bin_ / "driftmatrix", "publish", "--snippets", "snippets.json", "--outcomes", "outcomes.jsonl",
       "--site-dir", "site", cwd=elsewhere)
    site = elsewhere / "site"
    assert (site / "matrix.html").is_file() and (site / "javascripts" / "matrix.js").is_file()
    guide = {p.stem for p in (REPO / "docs" / "guide").glob("*.md")}
    assert guide and {p.stem for p in (site / "guide").glob("*.html")} == guide  # the guide ships in the wheel
    assert len(list((site / "snippets").glob("*.html"))) == len(snippets)
