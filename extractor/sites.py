"""Another project's repository that tells people to run vLLM — a hardware plugin's mkdocs site, a
library's docs, a Helm chart's tutorials — and what it says about itself: its name, its repository,
where its pages are published (or nothing: then no page gets a link), the variables its pages are
rendered with, the vLLM plugin it documents, and the vLLM its newest release is built on.

A docs tree (`docs/` + mkdocs config) is vLLM's own unless its config names another repository or a
plugin; a folder holding a README and a LICENSE is a project's repository. Either is read whole:
Markdown and YAML everywhere in it (its `docs/`, `examples/`, `benchmarks/`, tutorials, charts),
except tool folders (`.github/`, `.buildkite/`: CI for the project, not instructions to a reader).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from driftmatrix.common import vllm_plugins
from driftmatrix.common.vllm_plugins import Plugin
from driftmatrix.extractor import bounds, side_files, yaml_nodes
from driftmatrix.extractor.snippet_record import WrittenFor
from driftmatrix.extractor.written_for import release

MKDOCS_CONFIGS = ("mkdocs.yaml", "mkdocs.yml")
TOOL_DIRS = frozenset(
    {".github", ".buildkite", ".jenkins", ".circleci", ".gitlab", ".devcontainer", ".vscode", ".idea", "tests", "test"}
)
"""Folders of a repository that hold its tools' and tests' files, not instructions to a reader: CI
pipelines start servers for the project's own checks, test fixtures are inputs."""
_VLLM_REPO = "vllm-project/vllm"
_VAR = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
# "Version 0.26.0 is now available, built on [vLLM 0.26.0](…)", "This release is based on vLLM v0.19.0"
_BUILT_ON = re.compile(r"\b(?:built|based)\s+on\s+\[?(?:upstream\s+)?vLLM\s+v?(\d+\.\d+(?:\.\d+)?)\b", re.I)


@dataclass
class Site:
    name: str
    """The site's `site_name`, else the folder's name."""
    repository: str = ""
    """Its `repo_url` (`https://github.com/vllm-project/vllm-gaudi`), or ""."""
    url_base: str = ""
    """Where its pages are published: a literal `site_url` (not `!ENV …`), or `--url-base`; "" : none
    (then no page gets a link: a made-up address is worse than none)."""
    docs_dir: str = "docs"
    """The mkdocs `docs_dir`: a page's address is its path under it."""
    variables: dict[str, str] = field(default_factory=dict)
    """The mkdocs `extra:` scalars, else the Sphinx conf.py's `myst_substitutions`, its pages are rendered
    with (`{{ pip_vllm_version }}`)."""
    rst_substitutions: dict[str, str] = field(default_factory=dict)
    """The Sphinx conf.py's reST substitutions (`rst_prolog`'s `|vllm_version|`, `|version|`)."""
    plugin: Plugin | None = None
    """The vLLM plugin the site documents (its repository, its name), or None."""
    docusaurus: bool = False
    """A Docusaurus site: its `.md` pages are read as MDX too (extractor/mdx.py)."""
    built_on: WrittenFor | None = None
    """The vLLM its newest release is built on, as its README says: the versions a page that states
    nothing is written for."""


def mkdocs_config(root: Path) -> dict:
    """The mkdocs config of a tree, or {} (unreadable, not a mapping). mkdocs' own tags (`!ENV`,
    `!!python/name:`) read as None: their values are not known here."""
    path = next((root / n for n in MKDOCS_CONFIGS if (root / n).is_file()), None)
    text = bounds.read_head(path, root) if path else None
    if not text:
        return {}
    try:
        nodes = yaml_nodes.compose_all(text)  # bounded: an alias bomb is refused
        data = _Loader("").construct_document(nodes[0]) if nodes else {}
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}


class _Loader(yaml.SafeLoader):
    """SafeLoader that reads any tag it does not know as None instead of refusing the file."""


_Loader.add_multi_constructor("", lambda loader, suffix, node: None)
_Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)


def is_third_party(config: dict) -> bool:
    """A docs tree whose config names another repository than vLLM's, or a vLLM plugin."""
    repo = str(config.get("repo_url") or "")
    if repo and not re.search(rf"github\.com/{_VLLM_REPO}/?$", repo.strip(), re.I):
        return True
    return vllm_plugins.of_text(str(config.get("site_name") or "")) is not None


def is_repository(path: Path) -> bool:
    """A project's repository: a README and a LICENSE at its root."""
    names = {p.name.upper() for p in path.iterdir() if p.is_file()} if path.is_dir() else set()
    return "README.MD" in names and any(n.startswith(("LICENSE", "LICENCE", "COPYING")) for n in names)


DOCUSAURUS_CONFIGS = tuple(f"{d}docusaurus.config.{e}" for d in ("", "website/") for e in ("js", "ts", "mjs", "cjs"))
"""A Docusaurus site's config, at the root or in the conventional `website/` folder."""


def is_docusaurus(root: Path) -> bool:
    """A Docusaurus site (its pages are MDX: extractor/mdx.py; its versions are `versioned_docs/version-X/`)."""
    return root.is_dir() and any((root / n).is_file() for n in DOCUSAURUS_CONFIGS)


def is_chart_template(path: Path) -> bool:
    """A Helm chart's template (`<chart>/templates/*.yaml` beside `Chart.yaml`): Go template text the
    chart renders from its values, not YAML; its commands are read from the values (helm_values)."""
    return path.parent.name == "templates" and (path.parent.parent / "Chart.yaml").is_file()


def read(root: Path, url_base: str = "") -> Site:
    config = mkdocs_config(root)
    site_url = config.get("site_url")
    repo = str(config.get("repo_url") or "")
    site = Site(
        name=str(config.get("site_name") or root.name),
        repository=repo,
        url_base=url_base or (site_url if isinstance(site_url, str) and site_url.startswith("http") else ""),
        docs_dir=str(config.get("docs_dir") or "docs").strip("/"),
        variables=_scalars(config.get("extra")),
    )
    myst, site.rst_substitutions = side_files.sphinx_config(root)
    site.variables = {**myst, **site.variables}  # a site with both: mkdocs renders its pages
    readme = _readme(root)
    site.plugin = (
        vllm_plugins.of_repository(repo) or vllm_plugins.of_text(site.name) or vllm_plugins.of_text(readme[:4000])
    )
    site.built_on = built_on(readme)
    site.docusaurus = is_docusaurus(root)
    return site


def _scalars(extra) -> dict[str, str]:
    """The `extra:` values a page can print: strings and numbers (not mappings such as analytics)."""
    if not isinstance(extra, dict):
        return {}
    return {
        str(k): str(v)
        for k, v in extra.items()
        if isinstance(v, (str, int, float)) and not isinstance(v, bool) and "\n" not in str(v)
    }


def render(text: str, variables: dict[str, str], rst: dict[str, str] | None = None) -> str:
    """The page as its site renders it: `{{ NAME }}` of a known variable replaced by its value, and
    `|name|` of a known reST substitution (one line stays one line: a value with a line break is never
    read into either). Unknown names stay as written — a placeholder for the reader."""
    text = side_files.render_rst(text, rst or {})
    if not variables or "{{" not in text:
        return text
    return _VAR.sub(lambda m: variables.get(m.group(1), m.group(0)), text)


def _readme(root: Path) -> str:
    path = root / "README.md"
    return (bounds.read_head(path, root) or "") if path.is_file() else ""


def built_on(text: str) -> WrittenFor | None:
    """X's release line (`==0.26.*`) when the README says its newest release is built on vLLM X (the
    newest such statement): a plugin is released in step with vLLM ("built on vLLM 0.26.0 and fully
    compatible with …"), so its pages are written for that vLLM, not for every later one. `text`: its README."""
    found = [(release(m.group(1)), text.count("\n", 0, m.start()) + 1) for m in _BUILT_ON.finditer(text)]
    found = [(v, line) for v, line in found if v is not None]
    if not found:
        return None
    version, line = max(found, key=lambda f: f[0])
    return WrittenFor(
        f"=={version.major}.{version.minor}.*",
        f"the site's README.md:{line}: its newest release is "
        f"built on vLLM {version}; a page that states no version is written for that release line",
        "site",
    )


def page_url(site: Site | None, rel: str, ref: str | None) -> str | None:
    """A page's address where the site says it lives: under its `site_url` for a page of its docs,
    at its repository's blob at `ref` (a git checkout's commit) for any other file; else None."""
    if site is None:
        return None
    docs = f"{site.docs_dir}/"
    if site.url_base and rel.startswith(docs) and rel.endswith(".md"):
        page = re.sub(r"(^|/)(README|index)$", r"\1", rel.removeprefix(docs).removesuffix(".md"))
        return f"{site.url_base.rstrip('/')}/{page}{'/' if page and not page.endswith('/') else ''}"
    if site.repository.startswith("https://github.com/") and ref:
        return f"{site.repository.rstrip('/').removesuffix('.git')}/blob/{ref}/{rel}"
    return None


def described(site: Site | None) -> dict[str, str] | None:
    """What snippets.json records of a site (CorpusInfo.site)."""
    if site is None:
        return None
    return {
        "name": site.name,
        "repository": site.repository,
        "url_base": site.url_base,
        "plugin": site.plugin.name if site.plugin else "",
        "written_for": site.built_on.spec if site.built_on else "",
    }


def yaml_file(text: str, place) -> tuple[list, list]:
    """A YAML file of another project's repository: a chart's values, a Kubernetes manifest."""
    if "vllm" not in text:
        return [], []
    from driftmatrix.extractor.helm_values import from_yaml_file  # noqa: PLC0415 — YAML files of sites only

    return from_yaml_file(text, place)


def mark_plugins(found: list, site: Site | None, text: str, markdown: bool) -> None:
    """The plugin each command of a page is written for (common/vllm_plugins.py): its site's, else the
    one its image carries (`vllm/vllm-tpu`), else one a Markdown page installs. A page that only names
    a plugin — a recipe's hardware list — marks nothing: its other commands are for stock vLLM. A page
    written for a fork (written_for basis `fork`) marks nothing either: a plugin extends stock vLLM, a fork
    replaces it, and its reader runs the fork."""
    page = site.plugin if site else (_page_plugin(text) if markdown else None)
    for snippet in found:
        image = vllm_plugins.of_image(snippet.image)
        for source in snippet.sources:
            # the command's own image first (`docker run quay.io/ascend/vllm-ascend:…`, a manifest's
            # `image:` above it: yaml_commands marks that source), then the page's
            plugin = image or vllm_plugins.named(source.plugin) or page
            forked = source.written_for is not None and source.written_for.basis == "fork"
            source.plugin = plugin.name if plugin and not forked else ""


def _page_plugin(text: str) -> Plugin | None:
    """The plugin a Markdown page installs (`pip install vllm-gaudi`) or runs the image of (`docker run …
    quay.io/ascend/vllm-ascend:v0.9.1 bash`, then `vllm serve` inside it)."""
    return vllm_plugins.of_install(text) or vllm_plugins.of_run(text)
