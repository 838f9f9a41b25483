"""Source trees: tell what a SOURCE is, list its files, read each one safely.

A SOURCE is a vLLM docs tree (`docs/` + `mkdocs.yaml`), an unpacked vLLM sdist (the
same plus `PKG-INFO` and `examples/`), a vllm-project/recipes checkout (`models/` +
`taxonomy.yaml`/`strategies/`), a saved HTML page, or any other Markdown: one page, a
folder of pages, a Hugging Face model card (extractor/markdown_sources.py). Each file is
read on its own: a broken file becomes a diagnostic and every other file is still extracted.
Reads are bounded and stay inside the tree (extractor/bounds.py, extractor/file_text.py); a
Markdown page's snippets are found by extractor/markdown_pages.py.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from driftmatrix.common.git import run_git
from driftmatrix.extractor import bounds, markdown_sources, mdx, side_files, sites, written_for
from driftmatrix.extractor.file_text import read_text
from driftmatrix.extractor.markdown_pages import markdown_snippets, recipe_markdown
from driftmatrix.extractor.recipes_yaml import from_recipe
from driftmatrix.extractor.rst_pages import included_written_for, rst_snippets
from driftmatrix.extractor.snippet_builder import Place
from driftmatrix.extractor.snippet_record import CorpusInfo, Diagnostic, Snippet, WrittenFor

DOCS_SITE = "https://docs.vllm.ai/en"
RECIPES_REPO = "https://github.com/vllm-project/recipes"
_SKIP_DIRS = {".git", "node_modules", ".next", "public", "site", "__pycache__"}


class SourceError(ValueError):
    """The SOURCE argument is not something the extractor can read."""


@dataclass
class Tree:
    kind: str
    """`vllm-docs`, `recipes`, `site` (another project's repository: extractor/sites.py), `markdown`
    or `model-card` (also the corpus name written to sources)."""
    root: Path
    version: str
    layout: str = "docs-tree"
    """`docs-tree`, `sdist` (has PKG-INFO), `git`/`git-tag`, `recipes-repo`, `markdown-file`,
    `markdown-folder`, `model-card` (a card's README.md), `model-repo` (a folder holding one),
    `site-docs` (another project's mkdocs site) or `repository` (another project's README + LICENSE)."""
    url_base: str = ""
    """`--url-base`: where the pages of a source that is not the vLLM docs are published."""
    model_id: str = ""
    """A model card's model (`--model-id` or its front matter): what `vllm serve` without a model
    or with a relative path serves."""
    stable: str = ""
    """The current stable vLLM release: unversioned pages are written for it and newer."""
    placeholder_models: frozenset[str] | None = None
    """The words that stand for the reader's model (shipped + `--placeholder-model`; None: shipped)."""
    written_for: WrittenFor | None = None
    """The versions every page of the tree is written for (an override, a docs tree's release
    line or nightly); None: decided per page (recipes, statements on the page, the default)."""
    site: sites.Site | None = None
    """A `site`'s own words about itself (set when the tree is prepared)."""

    @property
    def base(self) -> Path:
        """The folder file names are relative to (a single page's own folder)."""
        return self.root.parent if self.root.is_file() else self.root

    def versions(self) -> WrittenFor | None:
        """The tree's own versions: a vLLM docs tree's release line, or the nightly builds for
        a checkout of main; None for a recipes repository or an unknown version."""
        if self.kind != "vllm-docs":
            return None
        if self.layout == "git":
            return written_for.nightly(self.stable, f"docs of vLLM at git {self.version} (not a release tag)")
        what = {"sdist": "docs of its sdist", "git-tag": "docs at its release tag"}.get(self.layout, "docs tree")
        return written_for.of_docs(self.version, f"{what} (vLLM {self.version})", self.stable)


@dataclass
class Result:
    info: CorpusInfo
    snippets: list[Snippet] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)


def _git(root: Path, *args: str) -> str | None:
    if not (root / ".git").exists():
        return None
    try:
        out = run_git(root, *args, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else None


def _git_ref(root: Path) -> str | None:
    return _git(root, "rev-parse", "--short", "HEAD")


def _git_release_tag(root: Path) -> str | None:
    """`0.20.1` when the checkout is exactly at the tag `v0.20.1`."""
    tag = _git(root, "describe", "--tags", "--exact-match", "HEAD")
    v = written_for.release(tag) if tag else None
    return str(v) if v is not None and not v.is_devrelease else None


def _pkg_version(root: Path) -> str | None:
    head = bounds.read_head(root / "PKG-INFO", root) if (root / "PKG-INFO").is_file() else None
    m = re.search(r"^Version:\s*(\S+)", head or "", re.M)
    return m.group(1) if m else None


def detect(path: Path) -> Tree:
    if not path.exists():
        raise SourceError(f"{path}: no such file or directory")
    if path.is_dir():
        if (path / "docs").is_dir() and any((path / n).is_file() for n in sites.MKDOCS_CONFIGS):
            if sites.is_third_party(sites.mkdocs_config(path)):
                return Tree("site", path, _git_ref(path) or path.name, "site-docs")
            pkg_version = _pkg_version(path)
            if pkg_version:
                return Tree("vllm-docs", path, pkg_version, "sdist")
            tag, ref = _git_release_tag(path), _git_ref(path)
            if tag or ref:
                return Tree("vllm-docs", path, tag or ref, "git-tag" if tag else "git")
            return Tree("vllm-docs", path, path.name.removeprefix("vllm-"), "docs-tree")
        if (path / "models").is_dir() and ((path / "taxonomy.yaml").is_file() or (path / "strategies").is_dir()):
            return Tree("recipes", path, _git_ref(path) or path.name, "recipes-repo")
        if (sites.is_repository(path) or sites.is_docusaurus(path)) and not markdown_sources.is_card(
            path / "README.md", path
        ):
            return Tree("site", path, _git_ref(path) or path.name, "repository")
        if markdown_sources.markdown_files(path, _SKIP_DIRS):
            card = (path / "README.md").is_file() and markdown_sources.is_card(path / "README.md", path)
            return Tree(
                "model-card" if card else "markdown",
                path,
                _git_ref(path) or "",
                "model-repo" if card else "markdown-folder",
            )
    elif path.suffix.lower() in markdown_sources.PAGE_SUFFIXES:
        card = markdown_sources.is_card(path)
        return Tree(
            "model-card" if card else "markdown",
            path,
            _git_ref(path.parent) or "",
            "model-card" if card else "markdown-file",
        )
    raise SourceError(
        f"{path}: not a vLLM docs tree (docs/ + mkdocs.yaml), a vLLM sdist, a recipes repository "
        "(models/ + taxonomy.yaml), a saved .html page, a Markdown page or a folder holding any"
    )


def files_of(tree: Tree) -> Iterator[Path]:
    """The pages of a tree, and the links among them that lead out of it (extract_file reports those)."""
    if tree.kind in ("markdown", "model-card"):
        yield from markdown_sources.markdown_files(tree.root, _SKIP_DIRS)
        return
    tops = [tree.root / "docs", tree.root / "recipes"] if tree.kind == "vllm-docs" else [tree.root]
    skip = _SKIP_DIRS | sites.TOOL_DIRS if tree.kind == "site" else _SKIP_DIRS
    for top in tops:
        if not (top.is_dir() or top.is_symlink()):
            continue
        files, escapes = bounds.walk(tree.root, top, skip)
        for path in sorted(files + escapes):
            if is_page(tree, path) or (path.is_dir() and path in escapes):
                yield path


def is_page(tree: Tree, path: Path) -> bool:
    """A file of the tree the extractor reads: Markdown (reST outside vLLM's docs), and a recipes tree's model YAML."""
    if tree.kind in ("markdown", "model-card"):
        return path.suffix.lower() in markdown_sources.PAGE_SUFFIXES
    rel = path.relative_to(tree.root)
    if tree.kind == "site":  # read whole: its charts and manifests too (not its mkdocs config)
        if path.suffix.lower() in (".yaml", ".yml"):
            return rel.as_posix() not in sites.MKDOCS_CONFIGS and not sites.is_chart_template(path)
        return path.suffix.lower() in markdown_sources.PAGE_SUFFIXES
    return path.suffix == ".md" or (path.suffix in (".yaml", ".yml") and "models" in rel.parts[:-1])


def page_url(tree: Tree, rel: str) -> str | None:
    if tree.kind in ("markdown", "model-card"):
        return markdown_sources.page_link(tree.url_base, rel)
    if tree.kind == "recipes":
        return f"{RECIPES_REPO}/blob/{tree.version}/{rel}"
    if tree.kind == "site":
        return sites.page_url(tree.site, rel, _git_ref(tree.root))
    if not rel.startswith("docs/"):
        return f"https://github.com/vllm-project/vllm/blob/v{tree.version}/{rel}"
    page = rel.removeprefix("docs/").removesuffix(".md")
    page = re.sub(r"(^|/)(README|index)$", r"\1", page)
    version = f"v{tree.version}" if re.match(r"^\d", tree.version) else tree.version or "latest"
    return f"{DOCS_SITE}/{version}/{page}{'/' if page and not page.endswith('/') else ''}"


def extract_file(tree: Tree, path: Path) -> tuple[list[Snippet], list[Diagnostic]]:
    """Snippets and diagnostics of one file of a tree (never raises)."""
    rel = path.relative_to(tree.base).as_posix()
    text, diagnostics = read_text(path, tree.kind, tree.version, rel, tree.root)
    if text is None:
        return [], diagnostics
    url = page_url(tree, rel)
    # a page of a Docusaurus versioned tree is that site version's page (`versioned_docs/version-0.3/…`: 0.3)
    page_version = side_files.docusaurus_version(rel) if tree.kind not in ("vllm-docs", "recipes") else None
    place = Place(
        tree.kind,
        page_version or tree.version,
        rel,
        1,
        None,
        url,
        line_links="github.com" in (url or ""),
        model_id=tree.model_id,
        placeholder_models=tree.placeholder_models,
    )
    if tree.site is not None:  # as the site shows it: `vllm=={{ pip_vllm_version }}`, `|vllm_version|`
        text = sites.render(text, tree.site.variables, tree.site.rst_substitutions)
    if mdx.is_mdx(rel, tree.site is not None and tree.site.docusaurus):  # JSX, imports, `:::note` blanked
        text = mdx.as_markdown(text)
    facts = written_for.PageFacts(tree.stable, tree.written_for, text=text, file=rel, fallback=_fallback(tree, rel))
    page = path.suffix.lower() in markdown_sources.PAGE_SUFFIXES
    if tree.written_for is None and page:
        facts.beside = side_files.beside(path, tree.root)
    try:
        rst = path.suffix.lower() in markdown_sources.RST_SUFFIXES
        if rst:
            found, diags = rst_snippets(text, place, tree.root, path)
        elif page:
            found, diags = markdown_snippets(text, place, tree.root)
        elif tree.kind == "site":
            found, diags = sites.yaml_file(text, place)
        else:
            found, diags, guide = from_recipe(text, place)
            if guide is not None:
                more, more_diags = recipe_markdown(guide, place)
                found, diags = found + more, diags + more_diags
                claim = guide.claim
                facts.recipe = written_for.of_recipe(
                    claim.get("min_vllm_version"), bool(claim.get("nightly_required")), f"recipe {rel}", tree.stable
                )
        written_for.assign(found, facts)
        if rst:  # a `literalinclude`d file's own statements (its image tag)
            included_written_for(found, facts, tree.root)
        sites.mark_plugins(found, tree.site, text, page)
    except RecursionError:
        found, diags = (
            [],
            [Diagnostic("error", "too-deep", "nesting too deep to read; skipped", tree.kind, tree.version, rel)],
        )
    except Exception as err:  # noqa: BLE001 — our bug: report it for this file, go on
        found, diags = (
            [],
            [Diagnostic("error", "internal-error", f"{type(err).__name__}: {err}", tree.kind, tree.version, rel)],
        )
    if any(d.code == "line-too-long" for d in diagnostics):
        found = [s for s in found if not _holds_left_out_line(s)]
    return found, diagnostics + diags + snippet_problems(found)


def _fallback(tree: Tree, rel: str) -> WrittenFor | None:
    """A page that states nothing: a plugin's versioned docs (`versioned_docs/version-0.26.0/`), else what
    its site says of itself (its README's "built on vLLM X")."""
    if tree.site is None:
        return None
    site = tree.site
    return side_files.versioned_docs(rel, site.plugin is not None, site.name) or site.built_on


def _holds_left_out_line(snippet: Snippet) -> bool:
    """A command that held a line left out as too long (bounds.LONG_LINE_MARK): never extracted cut short."""
    mark = bounds.LEFT_OUT
    return any(mark in src.text for src in snippet.sources) or any(mark in word for word in snippet.argv)


_ECHOED = ("unbalanced-quote", "python-syntax", "python-fence-holds-shell")  # lints that are input problems too


def snippet_problems(snippets: list[Snippet]) -> list[Diagnostic]:
    """Per-snippet input problems, repeated as diagnostics so they reach stderr too."""
    out = []
    for snippet in snippets:
        src = snippet.sources[0]
        err = snippet.speculative_config_error
        if err:
            out.append(
                Diagnostic(
                    "warning",
                    "invalid-json",
                    f"--speculative-config is not valid JSON: {err['message']} (line {err['lineno']}, "
                    f"column {err['colno']} of the value)",
                    src.corpus,
                    src.version,
                    src.file,
                    src.line,
                )
            )
        for lint in snippet.lints:
            if lint.code in _ECHOED:
                out.append(Diagnostic("warning", lint.code, lint.message, src.corpus, src.version, src.file, lint.line))
    return out
