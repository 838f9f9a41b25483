"""The folder tree is the architecture, and it is kept: the stage lines and the runner's concerns by
import-linter's contracts (pyproject.toml, [tool.importlinter]), no import cycle between modules (a
function-level import included: it only hides one), and tests that mirror the packages."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("driftmatrix",)
"""The one installed name: the stages (extractor/, runner/, ... at the root) are driftmatrix.<stage>
through the links driftmatrix/<stage> -> ../<stage> (grimp follows them)."""
STAGES = ("common", "extractor", "flaghistory", "publisher", "runner")


def test_the_import_contracts_are_kept():
    lint = Path(sys.executable).with_name("lint-imports")
    proc = subprocess.run([str(lint), "--no-cache"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    import tomllib

    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    assert "0 broken" in proc.stdout and f"{len(contracts)} kept" in proc.stdout, proc.stdout[-2000:]


def test_nothing_imports_a_stage_by_its_bare_name():
    """`import runner` / `from driftmatrix.common import x` would work in a checkout (its root is on the path)
    and break installed, where only `driftmatrix` is at the top: every import, at any depth, of
    every Python file here says `driftmatrix.<stage>`."""
    import ast

    bare = []
    for path in sorted(REPO.rglob("*.py")):
        relative = path.relative_to(REPO)
        if relative.parts[0] in (".venv", "build", "site", ".git") or (
            relative.parts[0] == "driftmatrix" and len(relative.parts) > 1 and relative.parts[1] in STAGES
        ):
            continue  # a virtual environment, build output, or the same file through a link
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module]
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                else []
            )
            bare += [f"{relative}:{node.lineno}: {n}" for n in names if n.split(".")[0] in STAGES]
    assert bare == []


def test_every_stage_is_in_the_namespace():
    """driftmatrix/<stage> is a relative link to the stage's folder (what git holds, what an
    editable install and grimp read through)."""
    for stage in STAGES:
        link = REPO / "driftmatrix" / stage
        assert link.is_symlink() and link.readlink() == Path("..") / stage, stage


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_no_module_imports_itself_through_others():
    graph = grimp.build_graph(*PACKAGES, cache_dir=None, exclude_type_checking_imports=True)
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_one(tmp_path, monkeypatch):
    """The check above could pass by finding nothing ever: here it must find a hidden cycle."""
    pkg = tmp_path / "cyclic"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from cyclic import b\n")
    (pkg / "b.py").write_text("def f():\n    from cyclic import a  # hidden in a function\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("cyclic", cache_dir=None)
    assert _cycles(graph) == [["cyclic.a", "cyclic.b"]]


def test_tests_mirror_the_packages():
    """Every folder of tests/ that holds tests is named after a package folder of the code."""
    unmatched = []
    for folder in sorted(p.parent for p in (REPO / "tests").rglob("test_*.py")):
        relative = folder.relative_to(REPO / "tests")
        if relative.parts and relative.parts[0] not in ("workflow",) and not (REPO / relative).is_dir():
            unmatched.append(str(relative))
    assert unmatched == []


def test_the_slowest_first_order_names_test_files_that_exist():
    """The suite's order (tests/conftest.py SLOWEST_FIRST) is by file name: a file moved or renamed
    without it silently loses its place (test_agreement.py became test_history_agreement.py)."""
    import ast

    # read, not imported: `conftest` may already name another folder's conftest.py in this worker
    tree = ast.parse((REPO / "tests" / "conftest.py").read_text())
    [order] = [
        ast.literal_eval(n.value)
        for n in tree.body
        if isinstance(n, ast.Assign) and any(getattr(t, "id", None) == "SLOWEST_FIRST" for t in n.targets)
    ]
    SLOWEST_FIRST = order
    present = {p.name for p in (REPO / "tests").rglob("test_*.py")}
    assert [name for name in SLOWEST_FIRST if name not in present] == []
