"""Which vLLM *build* a page's reader installs, beyond a stock release's install line: a vendor's
image whose tag names a vLLM version, vLLM built from a checkout of its source, a fork of vLLM, and
version statements in the page's own language (Chinese as well as English).

extractor/written_for.py asks these after its own rules of a line; each answer is a WrittenFor whose
origin quotes the statement, so the matrix and `check` can show the reader which line decided.

A fork (basis `fork`) replaces stock vLLM — unlike a plugin (common/vllm_plugins.py), which extends it:
its spec is `===fork:<name>`, which no release matches, so no stock build and no option history judges
its commands (publisher/judgement.py says so instead of an alarm).
"""

from __future__ import annotations

import re

from driftmatrix.extractor.snippet_record import WrittenFor

_VERSION = r"v?(\d+\.\d+(?:\.\d+)?(?:rc\d+)?)"

# --- vendor images --------------------------------------------------------------------------

# a vendor's rebuild of vLLM names the vLLM version first in its tag (`aibrix/vllm-openai:v0.22.0-cu129`,
# `…:v0.8.5`), or after `vllm-` (`…:aibrix-kvcache-vllm-v0.11.0rc1`); what follows is the vendor's own
# (CUDA, NIXL, a date). A tag that starts with something else (`aibrix-kvcache-v0.8.5-…`) may name the
# vendor's release, not vLLM's: still read as naming none.
_TAG_VERSION = re.compile(rf"^{_VERSION}(?![\d])|(?<![\w])vllm-{_VERSION}(?![\d])", re.I)
_TAG_VLLM_VERSION = re.compile(rf"(?<![\w])vllm-{_VERSION}(?![\d])", re.I)
_COMMIT_IN_TAG = re.compile(r"[-_.](?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}(?![\w])", re.I)
"""A git commit among the vendor's parts (`aibrix/vllm-openai:v0.6.1-edb07092-20250118`): built from that
commit, which may be past the release the tag starts with, so the tag names no release: read as none."""
_OWN_RELEASE_TAGS = re.compile(r"^(?:[\w.-]+\.[a-z]{2,}/)?lmcache/", re.I)
"""Images tagged by their project's own release, not vLLM's: `lmcache/vllm-openai:v0.3.7` is LMCache
0.3.7 (with whichever vLLM it pinned), so its tag names no vLLM version."""


def vendor_image(repository: str, tag: str, quoted: str, where: str, named: bool = False) -> WrittenFor | None:
    """A vendor's vLLM image whose tag names the vLLM version inside it: that release (`==0.22.0`).
    `named`: only a tag that says `vllm-vX` (an image whose name does not say vLLM)."""
    if _OWN_RELEASE_TAGS.match(repository):
        return None
    m = (_TAG_VLLM_VERSION if named else _TAG_VERSION).search(tag)
    if not m or _COMMIT_IN_TAG.search(tag[m.end() :]):
        return None
    version = next(g for g in m.groups() if g)
    return WrittenFor(
        f"=={version}",
        f"a vendor's image of vLLM {version} ({where}): `{quoted}`, its tag names the vLLM inside",
        "page",
    )


# --- building from source -------------------------------------------------------------------

_CLONE = re.compile(
    r"\bgit\s+clone\b[^\n]*?(?:https?://|git@)github\.com[/:]([\w.-]+)/([\w.-]+?)(?:\.git)?(?=[\s/]|$)", re.I
)
_PIP_GIT = re.compile(r"\bgit\+https?://github\.com/([\w.-]+)/([\w.-]+?)(?:\.git)?(?:@([\w.-]+))?(?=[\s#/'\"]|$)", re.I)
_LOCAL_INSTALL = re.compile(
    r"\b(?:pip3?|uv\s+pip)\s+install\b[^\n]*?(?:\s-e\s*\.|\s--editable\s+\.|\s\.(?:\[[\w,]*\])?(?:\s|$))|"
    r"\bsetup\.py\s+(?:install|develop)\b|\bpython3?\s+-m\s+build\b",
    re.I,
)
_CHECKOUT = re.compile(rf"\bgit\s+checkout\s+(?:tags/)?{_VERSION}\b", re.I)
_LOOKAHEAD = 10
"""Lines after a `git clone` searched for the install of the checkout (`cd vllm`, `git checkout`, the
build requirements come between)."""
_VLLM_REPO = ("vllm-project", "vllm")


def _is_vllm_source(owner: str, name: str) -> bool:
    return (owner.lower(), name.lower()) == _VLLM_REPO


def _is_fork_repo(owner: str, name: str) -> bool:
    """Another owner's vLLM (`HabanaAI/vllm-fork`, `ROCm/vllm`): a fork, not vLLM's own or a plugin's
    repository (`vllm-project/vllm-gaudi` names more after `vllm-`; a plugin's name is not `vllm`)."""
    name = name.lower()
    return owner.lower() != "vllm-project" and (name == "vllm" or name.startswith("vllm-fork") or name == "vllm_fork")


def from_source(lines: list[str], index: int, stable: str, where: str) -> WrittenFor | None:
    """`git clone` of vLLM (or a fork) followed by an install of the checkout: vLLM's main branch (the
    nightly builds) unless a `git checkout vX` pins a release; a fork's checkout is that fork."""
    m = _CLONE.search(lines[index])
    if not m:
        return None
    owner, name = m.group(1), m.group(2)
    if not (_is_vllm_source(owner, name) or _is_fork_repo(owner, name)):
        return None
    after = lines[index + 1 : index + 1 + _LOOKAHEAD]
    if not any(_LOCAL_INSTALL.search(line) for line in [lines[index], *after]):
        return None  # cloned for its examples or benchmarks, not installed
    if _is_fork_repo(owner, name):
        return fork(f"{owner}/{name}", f"{where}: `{lines[index].strip()[:120]}`, built from its source")
    pinned = next((c for line in after if (c := _CHECKOUT.search(line))), None)
    if pinned:
        return WrittenFor(
            f"=={pinned.group(1)}", f"vLLM built from source at {pinned.group(0).split()[-1]} ({where})", "page"
        )
    return WrittenFor(
        f">{stable}",
        f"vLLM built from source ({where}: `{lines[index].strip()[:120]}`): its main branch, i.e. the "
        f"nightly builds, newer than the stable release {stable}",
        "nightly",
    )


# --- forks and vendor builds ----------------------------------------------------------------

_STOCK_BUILDS = frozenset(
    "cpu cuda gpu rocm tpu xpu hpu nightly latest stable official upstream main release source docker wheel "
    "pip pypi development dev default same new current".split()
)
"""Words before "build of vLLM" that name one of vLLM's own builds, not somebody's fork."""
_BUILD_OF = re.compile(
    r"\b(?:the\s+|an?\s+|its\s+|our\s+)?([\w.-]+(?:\s+[\w.-]+)?)['’]?s?\s+(?:build|fork|distribution)\s+of\s+vLLM\b",
    re.I,
)
_FORK_LINK = re.compile(r"github\.com/([\w.-]+)/([\w.-]+)", re.I)
_INSTALL_WORDS = re.compile(r"\b(?:install|clone|build|use|set\s+up|run)\b", re.I)


def fork(name: str, origin: str) -> WrittenFor:
    """A fork of vLLM or a vendor's own build of it: no stock build or release history speaks for it."""
    return WrittenFor(
        f"===fork:{re.sub(r'[^A-Za-z0-9._/+-]', '-', name)}",
        f"{origin}: a non-stock build of vLLM ({name}); stock vLLM's builds and option history cannot say",
        "fork",
    )


def fork_statement(text: str, stable: str, where: str) -> WrittenFor | None:
    """A line telling the reader to install a fork: `pip install git+https://github.com/HabanaAI/vllm-fork`,
    "install the latest [vllm-fork](https://github.com/HabanaAI/vllm-fork…)", "the Acme build of vLLM";
    or vLLM's own source by pip (`git+https://github.com/vllm-project/vllm`: main, `@v0.9.2`: that release)."""
    m = _PIP_GIT.search(text)
    if m and _is_fork_repo(m.group(1), m.group(2)):
        return fork(f"{m.group(1)}/{m.group(2)}", f"{where}: `{m.group(0)}`")
    if m and _is_vllm_source(m.group(1), m.group(2)):
        ref = m.group(3) or ""
        tagged = re.fullmatch(_VERSION, ref)
        if tagged:
            return WrittenFor(f"=={tagged.group(1)}", f"vLLM installed from its source at {ref} ({where})", "page")
        return WrittenFor(
            f">{stable}",
            f"vLLM installed from its source ({where}: `{m.group(0)}`): "
            + (f"`{ref}`, a branch or commit, read as" if ref else "its main branch, i.e.")
            + f" the nightly builds, newer than the stable release {stable}",
            "nightly",
        )
    if _INSTALL_WORDS.search(text):
        for link in _FORK_LINK.finditer(text):
            if _is_fork_repo(link.group(1), link.group(2)):
                return fork(f"{link.group(1)}/{link.group(2)}", f"the page says ({where}): `{text.strip()[:120]}`")
    m = _BUILD_OF.search(text)
    if m:
        words = m.group(1).split()
        if not any(w.lower().strip("'’") in _STOCK_BUILDS for w in words):
            return fork(m.group(1), f'the page says ({where}): "{m.group(0)}"')
    return None


# --- prose in other languages ---------------------------------------------------------------

_ZH_OR_LATER = re.compile(
    rf"vLLM\s*(?:版本\s*)?[:：]?\s*{_VERSION}\s*(?:版本)?\s*(?:\+|(?:或|及|和|以及)?\s*(?:更高|更新|以上|之后))", re.I
)
_ZH_REQUIRES = re.compile(
    rf"(?:需要|要求|依赖|最低|至少|自|从)[^。\n]{{0,20}}?vLLM\s*(?:版本\s*)?[:：]?\s*(>=|==|~=|>)?\s*{_VERSION}", re.I
)


def chinese(text: str, where: str) -> WrittenFor | None:
    """ "需要 vLLM 0.21 或更高版本", "vLLM v0.21.0 及以上", "要求 vLLM >= 0.21", "从 vLLM 0.21 开始"."""
    said = f'the page says ({where}): "{text.strip()[:120]}"'  # the sentence: its verb is before the match
    m = _ZH_OR_LATER.search(text)
    if m:
        return WrittenFor(f">={m.group(1)}", said, "page")
    m = _ZH_REQUIRES.search(text)
    if m:
        return WrittenFor(f"{m.group(1) or '>='}{m.group(2)}", said, "page")
    return None
