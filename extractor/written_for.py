"""Which vLLM versions a page is written for: a PEP 440 specifier per source, with its origin.

A command is judged only on the builds its page is written for (publisher/judgement.py).
Decided per source, first rule that applies:

1. `extract --written-for SPEC` (an override for the whole run);
2. a vLLM docs tree whose version is known: that release line (docs of 0.20.1 are for
   `==0.20.*`); a recipe YAML inside it is narrowed further by its own `min_vllm_version`;
   docs of vLLM main (a git checkout not at a release tag, a `.devN` version): the nightly
   builds, i.e. newer than the stable release;
3. a recipe YAML (`models/<org>/<repo>.yaml`): its `min_vllm_version` (a variant's own one
   first; `nightly_required` admits that version's nightly builds);
4. what the page states, nearest before the command (else the page's first statement): an
   install line (`pip install vllm>=0.21.0`, `uv pip install -U vllm==0.20.1`, a nightly
   index or `--pre`), a vLLM image tag (`vllm/vllm-openai:v0.21.0`, `:nightly`,
   `vllm/vllm-tpu:nightly-…`), a plugin's image named after the vLLM it carries
   (`…/habanalabs/vllm-0.26.0-ptupstream-…`), a sentence ("requires vLLM 0.21 or later", "vLLM
   v0.21.0+", "built from vLLM's main branch": nightly), in the page's language too ("`vllm>=0.21` is recommended", "since vLLM X", "需要 vLLM 0.21 或更高
   版本"); a vendor's image whose tag names the vLLM inside (`acme/vllm-openai:v0.22.0-cu129`: `==0.22.0`);
   vLLM built from its source (`git clone …/vllm-project/vllm` + `pip install -e .`): the main branch, i.e.
   the nightly builds (a `git checkout vX` there: X), whatever a base image above said; a fork or a
   vendor's own build of vLLM (`…/HabanaAI/vllm-fork`, "the Acme build of vLLM"): that build,
   `===fork:<name>` (extractor/build_statements.py) — on a site read after its mkdocs variables or
   Sphinx substitutions are filled in (`vllm=={{ pip_vllm_version }}`: extractor/sites.py, conf.py's
   `myst_substitutions` and `rst_prolog`: extractor/side_files.py);
5. a `vllm` requirement in the `requirements*.txt` / `pyproject.toml` of the page's README folder;
6. another project's own word about itself: a plugin's Docusaurus versioned docs
   (`versioned_docs/version-X/`: X's release line), its README's "built on vLLM X" (its newest
   release), X's release line (a plugin is released in step with vLLM);
7. otherwise today's stable release and everything newer (the CLI passes the newest release the
   option history holds, or the run's resolved stable: never a pin shipped long ago).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from driftmatrix.common.versions import parse_version
from driftmatrix.common.vllm_plugins import INSTALL
from driftmatrix.extractor import build_statements
from driftmatrix.extractor.snippet_record import Snippet, WrittenFor


class WrittenForError(ValueError):
    """A version specifier that PEP 440 does not accept (the message names it)."""


def specifier(spec: str) -> SpecifierSet:
    """The parsed specifier; pre-releases (nightly `.devN` builds) always match."""
    try:
        return SpecifierSet(spec, prereleases=True)
    except InvalidSpecifier as err:
        raise WrittenForError(
            f"{spec!r} is not a PEP 440 version specifier (e.g. '>=0.21.0', '==0.20.*'): {err}"
        ) from None


def override(spec: str) -> WrittenFor:
    specifier(spec)
    return WrittenFor(spec.strip(), "set on the command line (--written-for)", "override")


def release(version: str) -> Version | None:
    """`0.20.1`, `v0.20.1`, `vllm-0.20.1` as a version, or None when it is not one."""
    return parse_version(re.sub(r"^(?:vllm-)?v?", "", version.strip()))


def nightly(stable: str, what: str) -> WrittenFor:
    return WrittenFor(f">{stable}", f"{what}: the nightly builds, newer than the stable release {stable}", "nightly")


def default(stable: str) -> WrittenFor:
    return WrittenFor(f">={stable}", f"no vLLM version stated: today's stable release ({stable}) and newer", "default")


def of_docs(version: str, what: str, stable: str) -> WrittenFor | None:
    """A vLLM docs tree or rendered page at `version`: its release line, the nightly builds for a
    development version, None when the version is unknown (then the page's own statements)."""
    v = release(version)
    if v is None:
        return None
    if v.is_devrelease or v.local:
        return WrittenFor(
            f">={v.base_version}.dev0",
            f"{what} (development version {version}): the nightly builds of {v.base_version} and later",
            "nightly",
        )
    return WrittenFor(f"=={v.major}.{v.minor}.*", f"{what}: the vLLM {v.major}.{v.minor} release line", "release")


def of_recipe(min_version: str | None, nightly_required: bool, where: str, stable: str) -> WrittenFor | None:
    """A recipe's `min_vllm_version` (`"nightly"` and `nightly_required` mean nightly builds)."""
    if not min_version:
        return None
    if str(min_version).strip().lower() == "nightly":
        return nightly(stable, f'{where}: min_vllm_version "nightly"')
    v = release(str(min_version))
    if v is None:
        return None
    if nightly_required:
        return WrittenFor(
            f">={v.base_version}.dev0",
            f"{where}: min_vllm_version {min_version} with nightly_required (its nightly builds and later)",
            "nightly",
        )
    return WrittenFor(f">={v}", f"{where}: min_vllm_version {min_version}", "recipe")


def narrowed(outer: WrittenFor, inner: WrittenFor | None) -> WrittenFor:
    """Both at once (a recipe inside a versioned docs tree): the specifiers intersected — except a
    recipe that says it needs the nightly builds: its reader installs one, not the tree's release
    (0.33.0's tree holds MiniMax-M3.1-Flash, `nightly_required`, which gives a key of 0.34.0)."""
    if inner is None:
        return outer
    if inner.basis == "nightly":
        return WrittenFor(inner.spec, f"{inner.origin}, over {outer.origin}", "nightly")
    return WrittenFor(f"{outer.spec},{inner.spec}", f"{outer.origin}; and {inner.origin}", outer.basis)


# --- statements on a page -------------------------------------------------------------------

_OP = r"(?:===|==|~=|!=|<=|>=|<|>)"
_VER = r"v?\d+(?:\.\d+)*(?:\.\*|[a-z]+\d*)*"
_REQUIREMENT = re.compile(rf"(?<![\w/.-])vllm(?:\[[\w,\s-]*\])?\s*({_OP}\s*{_VER}(?:\s*,\s*{_OP}\s*{_VER})*)", re.I)
_NIGHTLY_INSTALL = re.compile(r"wheels\.vllm\.ai/nightly|\s--pre\b", re.I)
_IMAGE = re.compile(
    r"\bvllm/vllm-(?:openai|tpu)(?:-[a-z]+)?:(v?\d+\.\d+(?:\.\d+)?|nightly(?:-[\w.-]+)?)(?![\w.])", re.I
)
# a plugin's image named after the vLLM it carries: `…/habanalabs/vllm-0.26.0-ptupstream-2.11.0:latest`
_PLUGIN_IMAGE = re.compile(r"(?<=/)vllm-v?(\d+\.\d+\.\d+)-[\w.-]*(?::[\w.-]+)?", re.I)
# any other image of a vLLM server pinned to a tag (`lmcache/vllm-openai:2025-05-05-v1`, `rocm/vllm:instinct_main`):
# the command runs the vLLM inside it, whose version the tag does not say
_OTHER_IMAGE = re.compile(
    r"(?<![\w./:-])((?:[\w.-]+/)+[\w.-]*vllm[\w.-]*):([A-Za-z0-9_][\w.-]{0,127})(?![\w.:/-])", re.I
)
# vLLM's own images under another tag (`vllm/vllm-openai:gemma`, a model's launch build) are built near the
# page that names them: the page's own statements say more of their vLLM than the tag
_OFFICIAL = re.compile(r"^(?:docker\.io/)?vllm/", re.I)
_IMAGE_KEY = re.compile(r"^\s*(?:-\s+)?image:\s", re.I)
_TAG_STATES_NOTHING = re.compile(r"^(?:latest|nightly|main|stable)(?:[-_.][\w.-]*)?$", re.I)
# "built from vLLM's main branch", "the nightly builds of vLLM", "follows the latest vLLM commits"
_MAIN = re.compile(
    r"\b(?:vLLM(?:'s)?\s+(?:main\s+branch|nightly\s+(?:builds?|wheels?))|(?:main\s+branch|nightly\s+"
    r"(?:builds?|wheels?)|latest\s+commits?)\s+of\s+vLLM|(?:follows?|tracks?)\s+(?:the\s+)?latest\s+"
    r"vLLM\s+commits?)\b",
    re.I,
)
_OR_LATER = re.compile(
    r"\bvLLM\s+(?:version\s+)?v?(\d+\.\d+(?:\.\d+)?)\s*(?:\+|or\s+(?:later|newer|above|higher)|"
    r"and\s+(?:later|newer|above))",
    re.I,
)
_PROSE_REQUIREMENT = re.compile(rf"(?<![\w/.-])vllm\s*(?:>=|==|~=|>)\s*{_VER}(?:\s*,\s*{_OP}\s*{_VER})*", re.I)
# "With vLLM >= 0.11.1, compatibility has been improved …", "before vllm==0.20": what some other version
# does, not what the page's reader runs
_CONDITIONAL = re.compile(r"\b(?:with|in|on|before|until|prior\s+to|below|older\s+than|if)\s*\**`?\s*$", re.I)
_REQUIRES = re.compile(
    rf"\b(?:requires?|required|needs?|minimum|at\s+least|since|starting\s+(?:from|with)|supported\s+(?:in|on|since|from)|"
    rf"available\s+(?:in|on|since|from))\b[^.\n]{{0,40}}?\bvLLM\s*(?:version\s*)?({_OP})?\s*v?"
    rf"(\d+\.\d+(?:\.\d+)?)",
    re.I,
)


@dataclass
class Statement:
    line: int
    """1-based line of the page."""
    written_for: WrittenFor


def _install_statement(text: str, stable: str, where: str) -> WrittenFor | None:
    m = _REQUIREMENT.search(text)
    if m:
        spec = re.sub(r"(?<=[=<>~!])v", "", re.sub(r"\s+", "", m.group(1)))
        try:
            specifier(spec)
        except WrittenForError:
            return None
        return WrittenFor(spec, f"{where}: `{text.strip()[:120]}`", "page")
    if re.search(r"(?<![\w/.-])vllm\b", text, re.I) and _NIGHTLY_INSTALL.search(text):
        return nightly(stable, f"{where}: `{text.strip()[:120]}`")
    return None


def _line_statement(text: str, stable: str, where: str) -> WrittenFor | None:
    if INSTALL.search(text):
        found = _install_statement(text, stable, f"install line ({where})")
        if found:
            return found
    m = _IMAGE.search(text)
    if m:
        tag = m.group(1)
        if tag.lower().startswith("nightly"):
            return nightly(stable, f"image tag ({where}): `{m.group(0)}`")
        return WrittenFor(f"=={tag.lstrip('vV')}", f"image tag ({where}): `{m.group(0)}`", "page")
    m = _PLUGIN_IMAGE.search(text)
    if m:
        return WrittenFor(
            f"=={m.group(1)}", f"a plugin image built on vLLM {m.group(1)} ({where}): `{m.group(0)}`", "page"
        )
    if _IMAGE_KEY.match(text) and (inside := _other_image(text, where)):
        return inside  # a manifest's container image: the command under it runs that image
    if inside := build_statements.fork_statement(text, stable, where):
        return inside  # a fork's install, before any prose: what its reader runs is the fork
    m = _MAIN.search(text)
    if m:
        return nightly(stable, f'the page says ({where}): "{m.group(0)}"')
    m = _OR_LATER.search(text)
    if m:
        return WrittenFor(f">={m.group(1)}", f'the page says ({where}): "{m.group(0)}"', "page")
    m = _REQUIRES.search(text)
    if m:
        op = m.group(1) or ">="
        return WrittenFor(f"{op}{m.group(2)}", f'the page says ({where}): "{m.group(0)}"', "page")
    m = _PROSE_REQUIREMENT.search(text)
    if m and not _CONDITIONAL.search(text[: m.start()]) and (found := _install_statement(m.group(0), stable, where)):
        # "`vllm>=0.21` is recommended": a requirement quoted in prose says the same as an install line
        return WrittenFor(found.spec, f'the page says ({where}): "{m.group(0)}"', "page")
    return build_statements.chinese(text, where)


_ANY_IMAGE = re.compile(r"^((?:[\w.-]+/)*[\w.-]+):([A-Za-z0-9_][\w.-]{0,127})$")


def _other_image(text: str, where: str, runs_vllm: bool = False) -> WrittenFor | None:
    """Another project's vLLM image pinned to a tag that names no version (`lmcache/vllm-openai:2025-05-05-v1`,
    `rocm/vllm:instinct_main`): the vLLM inside it, `===<tag>` — no build of a version is it, so its
    command is not judged on one; `latest`, `nightly…`, `main` state nothing, and so does vLLM's own
    image under a model's tag (`vllm/vllm-openai:gemma`): the page's statements decide."""
    m = _OTHER_IMAGE.search(text)
    if not m and runs_vllm and (any_image := _ANY_IMAGE.match(text.strip())):
        # an image of any name that runs `vllm serve`: only a tag that says `vllm-vX` names its vLLM
        # (`nvcr.io/nvidia/pytorch:24.01-py3` names PyTorch's release, not vLLM's)
        return build_statements.vendor_image(any_image.group(1), any_image.group(2), text.strip(), where, True)
    if not m or _TAG_STATES_NOTHING.match(m.group(2)) or _OFFICIAL.match(m.group(1)):
        return None
    if versioned := build_statements.vendor_image(m.group(1), m.group(2), m.group(0), where):
        return versioned
    return WrittenFor(
        f"==={m.group(2)}",
        f"the vLLM inside the image `{m.group(0)}` ({where}), whose tag names no "
        "vLLM version: no build of a version is it",
        "image",
    )


def statements(text: str, stable: str, file: str) -> list[Statement]:
    """Every line of a page that says which vLLM it is for, in page order."""
    out = []
    if "vllm" not in text.lower():
        return out
    lines = text.split("\n")
    for n, line in enumerate(lines, 1):
        if "vllm" in line.lower():
            # a checkout of vLLM's source, installed a few lines on, is read before the line's other words
            found = build_statements.from_source(lines, n - 1, stable, f"{file}:{n}") or _line_statement(
                line, stable, f"{file}:{n}"
            )
            if found:
                out.append(Statement(n, found))
    return out


def from_statements(found: list[Statement], line: int) -> WrittenFor | None:
    """The statement nearest before `line` (a command's own image tag counts), else the first.
    `found` is in page order: a binary search (a scan per command cost the square of a page that
    repeats an install line and a command)."""
    before = bisect.bisect_right(found, line, key=lambda s: s.line)
    chosen = found[before - 1] if before else (found[0] if found else None)
    return chosen.written_for if chosen else None


# --- assignment -----------------------------------------------------------------------------


@dataclass
class PageFacts:
    """What is known about one file before its sources are assigned."""

    stable: str
    """The current stable release (the stable target's pin)."""
    tree: WrittenFor | None = None
    """The override, or the docs tree's own versions (release line / nightly)."""
    recipe: WrittenFor | None = None
    """A recipe YAML's model-level `min_vllm_version` (for its guide's commands)."""
    text: str = ""
    """The page's text (statements are read from it when nothing above applies)."""
    file: str = ""
    beside: WrittenFor | None = None
    """A `vllm` requirement in the requirements.txt / pyproject.toml of the page's README folder
    (extractor/side_files.py): after the page's own statements, before its site's word."""
    fallback: WrittenFor | None = None
    """A page that states nothing: what its site says of itself (extractor/sites.py built_on), else
    the default (the current stable release and newer)."""


def assign(snippets: list[Snippet], facts: PageFacts) -> None:
    """Set `written_for` on every source of one file's snippets."""
    found: list[Statement] | None = None
    for snippet in snippets:
        own = _recipe_of(snippet, facts)
        image = _image_of(snippet, facts)
        for source in snippet.sources:
            if facts.tree is not None and facts.tree.basis == "override":
                source.written_for = facts.tree
            elif facts.tree is not None:
                source.written_for = narrowed(facts.tree, own)
            elif own is not None:
                source.written_for = own
            elif image is not None:
                source.written_for = image
            else:
                if found is None:
                    found = statements(facts.text, facts.stable, facts.file)
                end = source.line + source.text.count("\n")
                source.written_for = (
                    from_statements(found, end) or facts.beside or facts.fallback or default(facts.stable)
                )


def _image_of(snippet: Snippet, facts: PageFacts) -> WrittenFor | None:
    """The vLLM image the snippet itself runs, when its tag is a version (`vllm/vllm-openai:v0.8.5`;
    `latest` states nothing): a Helm values entry's `repository` + `tag`, written on two lines that no
    page statement reads (extractor/helm_values.py). For a `docker run` line it is the statement
    nearest its command anyway."""
    if not snippet.image:
        return None
    where = f"the image it runs, {facts.file}"
    if _IMAGE.search(snippet.image) or _PLUGIN_IMAGE.search(snippet.image):
        return _line_statement(snippet.image, facts.stable, where)
    return _other_image(snippet.image, where, runs_vllm=True)  # `docker run IMAGE vllm serve`: whatever its name


def _recipe_of(snippet: Snippet, facts: PageFacts) -> WrittenFor | None:
    """A recipe command's own min_vllm_version (its variant's first), else the recipe's."""
    r = snippet.recipe or {}
    if r.get("min_vllm_version"):
        where = f"recipe {facts.file}" + (f" variant {r.get('variant')}" if r.get("variant_min") else "")
        return of_recipe(r["min_vllm_version"], bool(r.get("nightly_required")), where, facts.stable)
    return facts.recipe
