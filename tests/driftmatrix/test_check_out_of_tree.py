"""Issue 57, point 6: `driftmatrix check` reads no page outside the tree it was given. In a real git
repository, a page added as a link to a file outside it, a page read through a linked folder, a link
to nothing and a link loop are each refused with a message that names the page relative to its
tree (no host path: neither the link's target nor an absolute path); the tree's other pages are still
checked; the exit status is 2 (an input could not be read: README's table, docs/guide/check.md); and
`check --changed` refuses them the same way, without a crash."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from git_identity import GIT_ENV

REPO = Path(__file__).resolve().parents[2]
PAGE = "# {title}\n\n```bash\nvllm serve Qwen/Qwen3-0.6B --max-model-len 4096\n```\n"
REFUSED = "not read: it resolves outside the tree it belongs to"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=GIT_ENV)


def _check(cwd: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "driftmatrix.cli", "check", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), **GIT_ENV},
    )


@pytest.fixture
def tree(tmp_path) -> tuple[Path, Path]:
    """A docs repository (committed: a page, a link out of the tree, a linked folder) and the folder
    outside it the links point to."""
    outside = tmp_path / "outside-secret"
    (outside / "folder").mkdir(parents=True)
    (outside / "secret.md").write_text(PAGE.format(title="Secret"))
    (outside / "folder" / "page.md").write_text(PAGE.format(title="Linked"))
    repo = tmp_path / "docs-repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "mkdocs.yaml").write_text("site_name: docs\n")
    (repo / "docs" / "ok.md").write_text(PAGE.format(title="Ok"))
    (repo / "docs" / "out.md").symlink_to(outside / "secret.md")
    (repo / "docs" / "linked").symlink_to(Path("..", "..", "outside-secret", "folder"))
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "docs")
    return repo, outside


def _no_host_path(text: str, *roots: Path) -> None:
    for root in roots:
        assert str(root) not in text and str(root.resolve()) not in text, text
    assert "outside-secret" not in text and "secret.md" not in text, text  # not the link's target either
    assert not any(word.startswith("/") for ln in text.splitlines() for word in ln.split()), text


def test_a_link_out_of_the_tree_and_a_linked_folder_are_refused(tree):
    repo, outside = tree
    for given in (("docs/out.md", "docs/linked/page.md", "docs/ok.md"), (repo / "docs" / "out.md", "--docs", repo)):
        proc = _check(repo, *given)
        assert proc.returncode == 2, proc.stderr
        _no_host_path(proc.stderr + proc.stdout, repo, outside, repo.parent)
        assert f"docs/out.md: {REFUSED}" in proc.stderr
    proc = _check(repo, "docs/linked/page.md", "docs/ok.md", "-v")
    assert f"docs/linked/page.md: {REFUSED}" in proc.stderr and "page.md:4" not in proc.stdout
    assert "docs/ok.md:4" in proc.stdout and "1 commands on 1 pages" in proc.stdout  # the others: checked
    inside = _check(repo / "docs", "ok.md", "linked/page.md:4", "--docs", "..")  # PAGE:LINE, from a subfolder
    assert inside.returncode == 2 and f"docs/linked/page.md: {REFUSED}" in inside.stderr, inside.stderr
    alone = _check(repo, "docs/ok.md")  # nothing refused: the page's verdict alone
    assert alone.returncode == 0 and not alone.stderr, alone.stderr


def test_check_changed_refuses_them_without_a_crash(tree):
    repo, outside = tree
    (repo / "docs" / "new-out.md").symlink_to(outside / "secret.md")
    (repo / "docs" / "nowhere.md").symlink_to(outside / "gone.md")
    (repo / "docs" / "loop.md").symlink_to("loop.md")
    (repo / "docs" / "new.md").write_text(PAGE.format(title="New"))
    (repo / "docs" / "ok.md").write_text(PAGE.format(title="Ok, changed"))
    (outside / "folder" / "page.md").write_text(PAGE.format(title="Linked, changed"))
    _git(repo, "add", "docs")
    proc = _check(repo, "--changed", "-v")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    _no_host_path(proc.stderr, repo, outside, repo.parent)
    refused = sorted(ln.split(":", 2)[1].strip() for ln in proc.stderr.splitlines())
    assert refused == ["docs/loop.md", "docs/new-out.md", "docs/nowhere.md"], proc.stderr
    assert f"docs/new-out.md: {REFUSED}" in proc.stderr
    assert "2 commands on 2 pages" in proc.stdout and "new.md:4" in proc.stdout and "ok.md:4" in proc.stdout
