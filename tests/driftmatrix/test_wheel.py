"""The installable package: `pip wheel .` builds a wheel that, installed into a fresh virtual
environment, works from any directory — package data (runner/data, templates, the sample docs)
and the site skeleton, the guide (docs/guide/) with it, included — and puts one name at the top of
the environment's site-packages: `driftmatrix` (issue 48 point 5: a generic top-level `runner` or
`common` would break, or be broken by, any other distribution that ships one)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def sh(*cmd, cwd=None) -> subprocess.CompletedProcess:
    """CMD with no PYTHONPATH: a fresh environment sees what is installed in it, never the checkout."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=900, env=env)
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
    where = sh(
        bin_ / "python",
        "-c",
        "from driftmatrix import publisher, runner; print(publisher.__file__, runner.__file__)",
        cwd=elsewhere,
    ).stdout
    assert str(REPO) not in where and str(tmp_path / "fresh") in where  # the installed copy, not the checkout
    assert sh(bin_ / "driftmatrix", "--version", cwd=elsewhere).stdout.strip() == "driftmatrix 0.1.0"
    sh(bin_ / "driftmatrix", "extract", "-q", "-o", "snippets.json", cwd=elsewhere)  # the embedded sample
    snippets = json.loads((elsewhere / "snippets.json").read_text())["snippets"]
    assert any(s["model"] == "google/gemma-4-E2B-it" for s in snippets)
    plan = json.loads(sh(bin_ / "driftmatrix", "plan", "snippets.json", "--tier", "parse", cwd=elsewhere).stdout)
    assert plan["jobs"] == 2 * len(snippets)  # the shipped targets file (runner/data) was found
    (elsewhere / "outcomes.jsonl").write_text("")
    sh(
        bin_ / "driftmatrix",
        "publish",
        "--snippets",
        "snippets.json",
        "--outcomes",
        "outcomes.jsonl",
        "--site-dir",
        "site",
        cwd=elsewhere,
    )
    site = elsewhere / "site"
    assert (site / "matrix.html").is_file() and (site / "javascripts" / "matrix.js").is_file()
    guide = {p.stem for p in (REPO / "docs" / "guide").glob("*.md")}
    assert guide and {p.stem for p in (site / "guide").glob("*.html")} == guide  # the guide ships in the wheel
    assert len(list((site / "snippets").glob("*.html"))) == len(snippets)


GENERIC = ("common", "extractor", "flaghistory", "publisher", "runner")
"""The packages that live at the repository's root and install under `driftmatrix.`."""


def _site_packages(venv: Path) -> Path:
    (found,) = venv.glob("lib/python3*/site-packages")
    return found


def _ours(site: Path, before: set[str]) -> set[str]:
    return {p.name for p in site.iterdir()} - before - {"__pycache__"}


@pytest.mark.network
def test_an_install_adds_one_name_to_site_packages(tmp_path):
    """`pip install .` into a fresh environment: `driftmatrix` and its dist-info, nothing generic;
    the stages import as `driftmatrix.<stage>`, and not by their bare names."""
    sh(sys.executable, "-m", "venv", tmp_path / "fresh")
    site = _site_packages(tmp_path / "fresh")
    before = {p.name for p in site.iterdir()}
    sh(tmp_path / "fresh" / "bin" / "pip", "install", "-q", "--no-deps", REPO)
    assert _ours(site, before) == {"driftmatrix", "driftmatrix-0.1.0.dist-info"}
    assert {p.name for p in (site / "driftmatrix").iterdir() if p.is_dir()} >= set(GENERIC)
    assert not any((site / "driftmatrix" / name).is_symlink() for name in GENERIC)  # real files, not links
    probe = (
        "import importlib.util as u; "  # found, not imported: installed without its dependencies
        "assert all(u.find_spec(m) for m in ('driftmatrix.runner.settings', 'driftmatrix.publisher.site', "
        "'driftmatrix.extractor.catalog', 'driftmatrix.flaghistory.history', 'driftmatrix.common.inert')); "
        f"print([n for n in {GENERIC!r} if u.find_spec(n)])"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert sh(tmp_path / "fresh" / "bin" / "python", "-c", probe, cwd=elsewhere).stdout.strip() == "[]"


@pytest.mark.network
def test_an_editable_install_exposes_only_the_namespace(tmp_path):
    """`pip install -e .`: the checkout's code under `driftmatrix.` from any directory (through the
    repository's driftmatrix/<stage> links), and no bare `runner` or `common` on the path."""
    sh(sys.executable, "-m", "venv", tmp_path / "fresh")
    sh(tmp_path / "fresh" / "bin" / "pip", "install", "-q", "--no-deps", "-e", REPO)
    probe = (
        "import importlib.util as u, driftmatrix.runner.settings as s; "
        f"print(s.__file__); print([n for n in {GENERIC!r} if u.find_spec(n)])"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where, bare = sh(tmp_path / "fresh" / "bin" / "python", "-I", "-c", probe, cwd=elsewhere).stdout.split("\n")[:2]
    assert Path(where).resolve() == REPO / "runner" / "settings.py" and bare == "[]"
