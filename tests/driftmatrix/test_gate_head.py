"""Issue 46, points 4 and 5: in vLLM's own repository the docs gate, `driftmatrix check --changed` and
the pre-commit hook judge the changed pages against the change's own sources — no build installed.

A real git repository made from two real vLLM sdists: 0.33.0's `vllm/` as the base commit, 0.34.0's
with one option renamed throughout its sources (plain text replaces: the dataclass field `max_num_seqs`
→ `max_num_sequences`, and the option string 0.34.0 spells out beside the field's kwargs,
`--max-num-seqs` → `--max-num-sequences`) as the change, which also
adds a docs page and touches one the base has. The real CLI runs in subprocesses with a fresh
driftmatrix cache, which must hold no build environment afterwards."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from git_identity import GIT_IDENTITY

from driftmatrix.flaghistory.build import read_sources
from driftmatrix.flaghistory.head_sources import at_worktree
from driftmatrix.flaghistory.sources import fetch_sources, list_releases
from driftmatrix.runner.settings import cache_dir

REPO = Path(__file__).resolve().parents[2]
NEW_PAGE = """# Scheduling

The batch size:

```bash
vllm serve m --max-num-sequences 8
```

As it was spelt before:

```bash
vllm serve m --max-num-seqs 8
```

And a long-removed option:

```bash
vllm serve m --use-v2-block-manager
```
"""
OLD_PAGE = """# Existing

```bash
vllm serve m --max-num-seqs 4
```

```bash
vllm serve m --swap-space 4
```
"""
pytestmark = pytest.mark.network  # the two sdists, once (cached under the driftmatrix cache)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env={**os.environ, **GIT_IDENTITY}
    ).stdout.strip()


def vllm_tree(version: str) -> Path:
    """The whole `vllm/` of the release's sdist from PyPI (every file, as a checkout has them), cached."""
    with httpx.Client(timeout=120, follow_redirects=True) as client:
        release = next(r for r in list_releases(client, since=version) if r.version == version)
        return fetch_sources(release, cache_dir() / "vllm-trees", client, keep=lambda inner, body: True) / "vllm"


def rename(tree: Path, old: str, new: str) -> int:
    """A plain text replace over the tree's .py files; how many files changed."""
    changed = 0
    for path in tree.rglob("*.py"):
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        if old in text:
            path.write_text(text.replace(old, new), encoding="utf-8", errors="surrogateescape")
            changed += 1
    return changed


@pytest.fixture(scope="module")
def vllm_repo(tmp_path_factory) -> tuple[Path, dict]:
    repo = tmp_path_factory.mktemp("vllm") / "vllm"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    shutil.copytree(vllm_tree("0.33.0"), repo / "vllm")
    (repo / "docs").mkdir()
    (repo / "docs" / "existing.md").write_text(OLD_PAGE)
    (repo / "mkdocs.yaml").write_text("site_name: vLLM\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base: vLLM 0.33.0")
    git(repo, "checkout", "-qb", "change")
    shutil.rmtree(repo / "vllm")
    shutil.copytree(vllm_tree("0.34.0"), repo / "vllm")
    # the field, and the option string 0.34.0 writes out beside `**scheduler_kwargs["max_num_seqs"]`
    assert rename(repo / "vllm", "max_num_seqs", "max_num_sequences") > 10
    assert rename(repo / "vllm", "max-num-seqs", "max-num-sequences") >= 1
    (repo / "docs" / "serving").mkdir()
    (repo / "docs" / "serving" / "scheduling.md").write_text(NEW_PAGE)
    (repo / "docs" / "existing.md").write_text(OLD_PAGE.replace("# Existing\n", "# Existing\n\nA sentence.\n"))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "vLLM 0.34.0, max_num_seqs renamed max_num_sequences; docs")
    return repo, {"head": git(repo, "rev-parse", "HEAD"), "base": git(repo, "rev-parse", "main")}


def test_the_rename_took(vllm_repo):
    """The reader, on the change's working tree: the new spelling is an option, the old one is not."""
    repo, _ = vllm_repo
    options = read_sources("head", at_worktree(repo).files).options
    assert "--max-num-sequences" in options and "--max-num-seqs" not in options
    assert "--max-model-len" in options and len(options) > 300


def _driftmatrix(*args: str, cwd: Path, cache: Path) -> subprocess.CompletedProcess:
    """The real CLI with a fresh cache; DRIFTMATRIX_SANDBOX=required as in the workflow (no bubblewrap
    needed: head mode and `check` start nothing)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "DRIFTMATRIX_CACHE": str(cache), "DRIFTMATRIX_SANDBOX": "required"}
    return subprocess.run(
        [sys.executable, "-m", "driftmatrix.cli", *args],
        check=False,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )


def _gate(repo: Path, tmp_path: Path, cache: Path, *more: str) -> tuple[subprocess.CompletedProcess, dict, str]:
    work = tmp_path / "gate"
    proc = _driftmatrix(
        "gate",
        "--repo",
        str(repo),
        "--base",
        "main",
        "--head",
        "change",
        "--workdir",
        str(work),
        "--summary",
        str(tmp_path / "summary.md"),
        *more,
        cwd=tmp_path,
        cache=cache,
    )
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    return proc, json.loads((work / "gate.json").read_text()), (tmp_path / "summary.md").read_text()


EXPECTED = {  # (page, line) → (judgement, new)
    ("docs/serving/scheduling.md", 6): ("ok", False),
    ("docs/serving/scheduling.md", 12): ("doc-drift", True),  # the change renamed it
    ("docs/serving/scheduling.md", 18): ("doc-drift", True),  # removed in 0.10.0
    ("docs/existing.md", 6): ("doc-drift", True),  # on the base page, but the base's sources have it
    ("docs/existing.md", 10): ("doc-drift", False),  # drift the base has too
}


def test_the_gate_judges_against_the_changes_own_sources(vllm_repo, tmp_path):
    repo, shas = vllm_repo
    cache = tmp_path / "cache"  # fresh: no build environment may appear in it
    proc, result, summary = _gate(repo, tmp_path, cache)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert result["mode"] == "head" and result["changed"] == ["docs/existing.md", "docs/serving/scheduling.md"]
    found = {(f["file"], f["line"]): (f["judgement"], f["new"]) for f in result["findings"]}
    assert found == EXPECTED
    why = {(f["file"], f["line"]): f["why"] for f in result["findings"]}
    short = shas["head"][:7]
    assert why[("docs/serving/scheduling.md", 12)] == (
        f"--max-num-seqs is not in the head's sources (vllm/ at {short}): vLLM 0.34.0 has it, the change removes "
        "or renames it"
    )
    assert why[("docs/serving/scheduling.md", 18)].startswith("--use-v2-block-manager was removed in vLLM 0.10.0")
    # nothing installed, nothing run: no environment in the cache, only the head's read
    assert not (cache / "envs").exists() and not (tmp_path / "gate" / "outcomes.jsonl").exists()
    assert [p.name.split("-")[0] for p in (cache / "head-reads").iterdir()] == ["tree", "tree"]  # head and base
    assert f"against the change's own vLLM sources (vllm/ at {short})" in summary and shas["head"] in summary
    assert f"0.34.0+head.{short}" in summary and "**3 new doc-drift**" in summary
    assert "docs/serving/scheduling.md:12" in summary and "docs/serving/scheduling.md:6" not in summary
    # a second run reads the head from the cache
    again, result2, _ = _gate(repo, tmp_path, cache)
    assert again.returncode == 1 and result2["findings"] == result["findings"]


def test_check_changed_and_the_hook_give_the_same_answers(vllm_repo, tmp_path):
    repo, _ = vllm_repo
    cache = tmp_path / "cache"
    answers = {}
    for how, args in (
        ("changed", ["check", "--changed", "main", "--json"]),
        ("hook", ["check", "docs/serving/scheduling.md", "docs/existing.md", "--json"]),
    ):
        proc = _driftmatrix(*args, cwd=repo, cache=cache)
        assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
        checked = json.loads(proc.stdout)
        # --changed also finds the READMEs 0.34.0 changed under vllm/ (the gate looks at its --paths only)
        answers[how] = {
            (page, int(line)): c["failed"]
            for c in checked
            for page, line in [c["where"].rsplit(":", 1)]
            if "/vllm/vllm/" not in page
        }
        label = checked[0]["asked"][0]
        assert "+worktree." in label and all(c["asked"] == [label] for c in checked)
        assert "this checkout's sources" in checked[0]["basis"]
        renamed = next(c for c in checked if c["where"].endswith("scheduling.md:12"))
        assert "is not in this checkout's sources" in renamed["uses"][0]["why"][label]
    gate_answers = {key: judgement == "doc-drift" for key, (judgement, _) in EXPECTED.items()}
    assert answers["changed"] == {(str(repo / p), line): bad for (p, line), bad in gate_answers.items()}
    assert answers["hook"] == {(p, line): bad for (p, line), bad in gate_answers.items()}
    assert not (cache / "envs").exists() and [p.name.split("-")[0] for p in (cache / "head-reads").iterdir()] == [
        "files"
    ]
    # the human output names the line and the head's words
    proc = _driftmatrix("check", "docs/serving/scheduling.md", cwd=repo, cache=cache)
    assert proc.returncode == 1 and "scheduling.md:12" in proc.stdout and "scheduling.md:6" not in proc.stdout


def test_builds_mode_in_a_vllm_tree_is_advisory_and_head_mode_needs_one(vllm_repo, tmp_path):
    """`--mode builds` stays (advisory in a vLLM source tree); `--mode head` on a docs-only repository
    is refused (exit 2), never read as drift."""
    import argparse

    from driftmatrix.gate_head import ADVISORY, chosen_mode

    repo, _ = vllm_repo
    args = argparse.Namespace(repo=str(repo), head="change", mode="builds")
    assert chosen_mode(args) == "builds" and args.advisory == ADVISORY
    args = argparse.Namespace(repo=str(repo), head="change", mode="auto")
    assert chosen_mode(args) == "head"
    docs_only = tmp_path / "docs-only"
    (docs_only / "docs").mkdir(parents=True)
    (docs_only / "docs" / "a.md").write_text("# A\n")
    git(docs_only, "init", "-q", "-b", "main")
    git(docs_only, "add", "-A")
    git(docs_only, "commit", "-qm", "base")
    git(docs_only, "checkout", "-qb", "change")
    args = argparse.Namespace(repo=str(docs_only), head="change", mode="auto")
    assert chosen_mode(args) == "builds" and args.advisory == ""
    proc = _driftmatrix(
        "gate",
        "--repo",
        str(docs_only),
        "--base",
        "main",
        "--head",
        "change",
        "--mode",
        "head",
        "--workdir",
        str(tmp_path / "w"),
        cwd=tmp_path,
        cache=tmp_path / "cache",
    )
    assert proc.returncode == 2 and "not a vLLM source tree" in proc.stderr


def test_a_clone_without_blobs_fetches_the_sources_in_one_batch(vllm_repo, tmp_path):
    """The workflow clones `--filter=blob:none`: the few hundred source files the reader keeps are
    fetched in one batch per side (`driftmatrix.common.git.prefetch`), not one fetch per file (5,000 fetches and six
    minutes before), and the answers are the full clone's."""
    repo, _ = vllm_repo
    git(repo, "config", "uploadpack.allowFilter", "true")
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "-q", "--filter=blob:none", "--no-checkout", f"file://{repo}", str(clone)],
        check=True,
        capture_output=True,
    )
    git(clone, "branch", "-q", "main", "origin/main")  # `change`, the remote's HEAD, is there already
    trace = tmp_path / "trace.json"
    os.environ["GIT_TRACE2_EVENT"] = str(trace)
    try:
        proc, result, _ = _gate(clone, tmp_path, tmp_path / "cache")
    finally:
        del os.environ["GIT_TRACE2_EVENT"]
    assert proc.returncode == 1
    assert {(f["file"], f["line"]): (f["judgement"], f["new"]) for f in result["findings"]} == EXPECTED
    fetches = [
        e
        for e in map(json.loads, trace.read_text().splitlines())
        if e.get("event") == "start" and "fetch" in e.get("argv", [])
    ]
    assert 0 < len(fetches) <= 6, len(fetches)  # head and base sources, head and base docs
