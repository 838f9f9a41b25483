"""Version statements a reader sees beside a page rather than on it (extractor/written_for.py reads the
page's own lines):

- a Sphinx site's `conf.py`: MyST's `myst_substitutions` (a page's `{{ pip_vllm_version }}`), the
  `rst_prolog`'s `.. |name| replace:: value` and Sphinx's own `|version|` / `|release|`. A page is read
  as the site renders it, with these filled in (as mkdocs `extra:` is, extractor/sites.py). conf.py is
  read with `ast`, never run: it is another project's code;
- `requirements*.txt` / `pyproject.toml` in the folder of a README: a `vllm` requirement is what a
  reader of that folder installs (`vllm>=0.21`, `vllm==0.20.1`);
- a Docusaurus versioned tree (`versioned_docs/version-X/…`, its translations under
  `i18n/<lang>/docusaurus-plugin-content-docs/version-X/…`): the docs as of the project's release X.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from driftmatrix.extractor import bounds
from driftmatrix.extractor.snippet_record import WrittenFor
from driftmatrix.extractor.written_for import release

SPHINX_CONFIGS = (
    "conf.py",
    "docs/conf.py",
    "docs/source/conf.py",
    "source/conf.py",
    "doc/conf.py",
    "doc/source/conf.py",
)
"""Where a repository keeps its Sphinx configuration, nearest the root first."""
_PROLOG_SUB = re.compile(r"^\.\.\s+\|([^|\n]+)\|\s+replace::\s*(\S[^\n]*?)\s*$", re.M)
_RST_SUB = re.compile(r"\|([A-Za-z_][\w.-]*)\|")


def sphinx_config(root: Path) -> tuple[dict[str, str], dict[str, str]]:
    """(MyST substitutions, reST substitutions) of the repository's Sphinx `conf.py`, or ({}, {})."""
    path = next((root / n for n in SPHINX_CONFIGS if (root / n).is_file()), None)
    text = bounds.read_head(path, root) if path else None
    if not text:
        return {}, {}
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}, {}
    names = _assignments(tree)
    myst = names.get("myst_substitutions")
    myst = {str(k): v for k, v in myst.items() if isinstance(v, str)} if isinstance(myst, dict) else {}
    rst = {k: names[k] for k in ("version", "release") if isinstance(names.get(k), str)}
    prolog = names.get("rst_prolog")
    if isinstance(prolog, str):
        rst.update({m.group(1).strip(): m.group(2) for m in _PROLOG_SUB.finditer(prolog)})
    return {k: v for k, v in myst.items() if "\n" not in v}, {k: v for k, v in rst.items() if "\n" not in v}


def _assignments(tree: ast.Module) -> dict[str, object]:
    """Module-level `name = <literal>` of conf.py, in order: strings, numbers, f-strings and `+` of
    names assigned before, dicts of those (`myst_substitutions = {"pip_vllm_version": vllm_version}`)."""
    names: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            target, value = node.target.id, node.value
        else:
            continue
        found = _value(value, names)
        if found is not None:
            names[target] = found
    return names


def _value(node: ast.AST, names: dict[str, object]) -> object | None:
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, (str, int, float))
        and not isinstance(node.value, bool)
    ):
        return str(node.value)
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _value(node.left, names), _value(node.right, names)
        return left + right if isinstance(left, str) and isinstance(right, str) else None
    if isinstance(node, ast.JoinedStr):
        parts = [
            _value(v.value if isinstance(v, ast.FormattedValue) else v, names) for v in node.values
        ]  # an f-string of known names only
        return "".join(parts) if all(isinstance(p, str) for p in parts) else None
    if isinstance(node, ast.Dict):
        out = {}
        for k, v in zip(node.keys, node.values, strict=True):
            key, val = (_value(k, names) if k is not None else None), _value(v, names)
            if isinstance(key, str) and val is not None:
                out[key] = val
        return out
    return None


def render_rst(text: str, substitutions: dict[str, str]) -> str:
    """`|name|` of a known reST substitution replaced by its value (unknown ones stay as written)."""
    if not substitutions or "|" not in text:
        return text
    return _RST_SUB.sub(lambda m: substitutions.get(m.group(1), m.group(0)), text)


# --- requirements beside a README -----------------------------------------------------------

_README = re.compile(r"^readme(?:\.[\w]+)?$", re.I)


def beside(page: Path, root: Path) -> WrittenFor | None:
    """The `vllm` requirement of the `requirements*.txt` or `pyproject.toml` in a README's folder (the page
    is one of that folder's pages), nearest file name first; None when there is none."""
    folder = page.parent
    try:
        names = sorted(p.name for p in folder.iterdir() if p.is_file())
    except OSError:
        return None
    if not any(_README.match(n) for n in names):
        return None
    for name in [n for n in names if re.match(r"^requirements[\w.-]*\.txt$", n, re.I)] + (
        ["pyproject.toml"] if "pyproject.toml" in names else []
    ):
        text = bounds.read_head(folder / name, root) or ""
        lines = _pyproject_requirements(text) if name == "pyproject.toml" else text.splitlines()
        for line in lines:
            spec = _vllm_spec(line)
            if spec:
                rel = (folder / name).relative_to(root).as_posix() if folder.is_relative_to(root) else name
                return WrittenFor(spec, f"{rel} beside the page: `{line.strip()[:120]}`", "page")
    return None


def _vllm_spec(line: str) -> str | None:
    line = line.split("#", 1)[0].strip()
    if not line or line.startswith("-"):
        return None  # an option line (`-r other.txt`, `--extra-index-url`)
    try:
        req = Requirement(line)
    except InvalidRequirement:
        return None
    return str(req.specifier) or None if canonicalize_name(req.name) == "vllm" else None


def _pyproject_requirements(text: str) -> list[str]:
    """`[project] dependencies` and its optional dependencies (PEP 621)."""
    try:
        project = tomllib.loads(text).get("project") or {}
    except tomllib.TOMLDecodeError:
        return []
    found = [d for d in project.get("dependencies") or [] if isinstance(d, str)]
    for group in (project.get("optional-dependencies") or {}).values():
        found += [d for d in group if isinstance(d, str)] if isinstance(group, list) else []
    return found


# --- Docusaurus versioned docs --------------------------------------------------------------

_VERSIONED = re.compile(
    r"(?:^|/)(?:versioned_docs|i18n/[^/]+/docusaurus-plugin-content-docs)/version-([^/]+)/"
)  # `versioned_docs/version-0.3/…` and its translations, `i18n/zh/docusaurus-plugin-content-docs/version-0.3/…`


def docusaurus_version(rel: str) -> str | None:
    """The site version a page of a Docusaurus versioned tree belongs to (`0.3` for
    `versioned_docs/version-0.3/…` and `i18n/<lang>/docusaurus-plugin-content-docs/version-0.3/…`); None
    for the current docs (`docs/…`, `i18n/<lang>/docusaurus-plugin-content-docs/current/…`) and any other page."""
    m = _VERSIONED.search(rel)
    return m.group(1) if m else None


def versioned_docs(rel: str, in_step_with_vllm: bool, project: str) -> WrittenFor | None:
    """A page of a Docusaurus versioned tree: for a vLLM plugin (released in step with vLLM, as vllm-gaudi
    0.26.0 is built on vLLM 0.26.0) that vLLM's release line; another project's release number says
    nothing of vLLM's, so None (its page's own statements, or the site's, decide)."""
    version = docusaurus_version(rel)
    v = release(version) if version and in_step_with_vllm else None
    if v is None:
        return None
    return WrittenFor(
        f"=={v.major}.{v.minor}.*",
        f"{rel}: the docs of {project} {version} (versioned_docs), a plugin released in step with vLLM: "
        f"the vLLM {v.major}.{v.minor} release line",
        "site",
    )
