"""The README stays a front page and the guide stays whole: the README is short, keeps the test
command CI runs, names every subcommand and exit code the code has; every file the README and the
guide name exists, and every relative link in them reaches a file (and a heading) of this
repository; every guide page is in the site's navigation; and nothing tracked points outside the
repository."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml
from markdown.extensions.toc import slugify
from markdown_it import MarkdownIt

from driftmatrix.cli import build_parser
from driftmatrix.runner.run import loop

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
GUIDE = REPO / "docs" / "guide"
README_MAX_LINES = 150

CORPUS_READERS = {
    "tests/conftest.py": "finds the corpus the real-docs tests read",
    "tests/extractor/test_real_corpus.py": "facts about the corpus it reads",
    "tests/fixtures/site/regenerate.sh": "extracts the corpus to regenerate the site fixture",
    "tests/fixtures/site/snippets.json": "recorded from the corpus: its sources' root",
}
"""The tracked files that may name the corpus beside the checkout: each reads it at run time."""
NAMED_PATH = re.compile(
    r"(?<![\w/.~<>-])(?:driftmatrix|extractor|runner|publisher|flaghistory|common|tests|benchmarks|docs"
    r"|workflow-templates|\.github|\.ci)/[\w./-]*"
)
"""A file or folder of this repository named in prose (`runner/models/hub.py`, `runner/models/twins.ensure`)."""
NOT_OURS = {
    "driftmatrix/doc-warnings": "the doc-fix PR's branch name",
    "docs/models/supported_models.md": "a file of vLLM's own tree",
    ".github/CODEOWNERS": "a file of the repository that installs the docs gate",
}
OUTSIDE = re.compile(r"\.\./shared\b|\b(?:DESIGN|GPU|VLLM-CPU)\.md\b")
"""A pointer out of the repository: the folder beside it, or the notes that used to live there."""


def markdown_files() -> list[Path]:
    return [README, *sorted(GUIDE.glob("*.md"))]


def links(path: Path) -> list[str]:
    """Every link and image target of a Markdown file, as markdown-it-py (CommonMark) reads it."""
    found = []
    for token in MarkdownIt("commonmark").parse(path.read_text(encoding="utf-8")):
        for child in token.children or []:
            target = child.attrGet("href") if child.type == "link_open" else child.attrGet("src")
            if child.type in ("link_open", "image") and target:
                found.append(str(target))
    return found


def anchors(path: Path) -> set[str]:
    """The heading anchors of a Markdown page, made the way the site makes them (Python-Markdown's
    toc slugify, as mkdocs.yml's `toc` extension does)."""
    tokens = MarkdownIt("commonmark").parse(path.read_text(encoding="utf-8"))
    return {slugify(tokens[i + 1].content, "-") for i, t in enumerate(tokens) if t.type == "heading_open"}


def test_readme_is_a_front_page():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; the detail belongs in docs/guide/"


def test_readme_keeps_the_test_command_that_ci_runs():
    """.ci/run takes the test command from the README with awk: run that very extraction."""
    awk = re.search(r"awk '([^']+)' README\.md", (REPO / ".ci" / "run").read_text(encoding="utf-8")).group(1)
    command = subprocess.run(["awk", awk, str(README)], capture_output=True, text=True, check=True).stdout.strip()
    assert command.startswith("python3 -m venv .venv") and ".venv/bin/python -m pytest" in command


def test_readme_names_every_subcommand():
    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    text = README.read_text(encoding="utf-8")
    named = set(re.findall(r"^\| `driftmatrix ([a-z]+)` \|", text, re.M))
    assert named == set(sub.choices), (
        f"in the README only: {named - set(sub.choices)}; missing: {set(sub.choices) - named}"
    )


def test_readme_says_every_exit_code_of_run():
    text = README.read_text(encoding="utf-8")
    for name in ("EXIT_ERRORS", "EXIT_TARGET", "EXIT_INTERRUPTED"):
        assert re.search(rf"^\| {getattr(loop, name)} \|.*`{name}`", text, re.M), name


def test_every_relative_link_reaches_a_file_and_its_heading():
    broken = []
    for page in markdown_files():
        for target in links(page):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http(s), mailto: not a file of the repository
                continue
            file, _, anchor = target.partition("#")
            dest = (page.parent / file).resolve() if file else page
            if not dest.is_file() or REPO not in dest.parents:
                broken.append(f"{page.relative_to(REPO)}: {target} (no such file in the repository)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{page.relative_to(REPO)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_every_file_the_readme_and_guide_name_exists():
    """Module names in prose go stale when code moves: each must still be a file or folder here
    (a `module.function` name counts when its module is)."""
    stale = []
    for page in markdown_files():
        for match in NAMED_PATH.finditer(page.read_text(encoding="utf-8")):
            name = match.group(0).rstrip(".,;:")
            if name in NOT_OURS:
                continue
            if not ((REPO / name).exists() or (REPO / re.sub(r"\.\w+$", ".py", name)).exists()):
                stale.append(f"{page.relative_to(REPO)}: {name}")
    assert not stale, "\n".join(stale)


def test_every_guide_page_is_in_the_site_navigation():
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))

    def entries(nav) -> list[str]:
        out = []
        for item in nav:
            value = next(iter(item.values())) if isinstance(item, dict) else item
            out += entries(value) if isinstance(value, list) else [value]
        return out

    listed = {e for e in entries(config["nav"]) if e.startswith("guide/")}
    assert listed == {f"guide/{p.name}" for p in GUIDE.glob("*.md")}


def test_nothing_tracked_points_outside_the_repository():
    tracked = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True).stdout
    pointers = []
    for rel in tracked.decode().split("\0"):
        path = REPO / rel
        if not rel or rel in CORPUS_READERS or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # a binary fixture
            continue
        pointers += [f"{rel}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}" for m in OUTSIDE.finditer(text)]
    assert not pointers, "\n".join(pointers)
    for rel in CORPUS_READERS:  # each still reads the corpus, or it leaves the list
        assert OUTSIDE.search((REPO / rel).read_text(encoding="utf-8")), rel
