"""`run --for-pages`: the release a page is written for, where no build of the run covers it.

A page pinned to an old release (`pip install vllm==0.11.0`, a release's versioned docs, a vendor
image tag) is judged on the builds inside its versions only (publisher/judgement.py); where the
run's builds are all outside them, only the option history speaks. On request the run adds, per
such page, the newest vLLM release its versions allow — installed on first use, cached like any
build — and runs that page's commands alone on it. On a machine without a GPU it is the CUDA
wheel, through parse and config (as today's stable there); with one, all tiers.

Pages written for a fork or a vendor build (`===fork:…`), or for an image whose tag names no
version (`===<tag>`), get none: no stock release is what their reader runs."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from driftmatrix.runner.builds.targets import Target

PAGE_BUILD = "page-"
"""The name of a build `--for-pages` added starts so (`page-0.11.0`): it runs its pages' commands only."""

PROJECT = "vllm"
"""The distribution of a page build: stock vLLM's wheel."""


def _specs(snippet) -> set[str]:
    """The version specifiers of SNIPPET's pages that a stock release can satisfy."""
    specs = set()
    for source in snippet.sources:
        wf = source.written_for
        if wf and wf.spec and "===" not in wf.spec:
            specs.add(wf.spec)
    return specs


def _allows(spec: str, version: str) -> bool:
    try:
        return SpecifierSet(spec, prereleases=True).contains(Version(version))
    except (InvalidSpecifier, InvalidVersion):
        return False


def page_builds(snippets: Iterable, targets: list[Target], releases: Callable[[], set[str]], gpus: int) -> list[Target]:
    """The builds to add: one per newest release that a page's versions allow and no target covers.
    RELEASES lists the final releases of vLLM (asked only when some page needs one)."""
    pinned = [v for t in targets if (v := t.pinned_version())]
    uncovered = {spec for s in snippets for spec in _specs(s) if not any(_allows(spec, v) for v in pinned)}
    if not uncovered:
        return []
    known = sorted((Version(v) for v in releases()), reverse=True)
    chosen = {next((str(v) for v in known if _allows(spec, str(v))), None) for spec in uncovered}
    return [_target(v, gpus) for v in sorted(filter(None, chosen), key=Version)]


def run_targets(tfile, pairs, opts, gpus: int) -> list[Target]:
    """The targets a run uses: those of TFILE it asks for (`--target`), and with `--for-pages` the
    releases its pages are written for that none of the file's builds covers."""
    targets = [t for t in tfile.targets if not opts.target_names or t.name in opts.target_names]
    if not opts.for_pages:
        return targets
    return targets + page_builds((s for s, _ in pairs), tfile.targets, vllm_releases, gpus)


def _target(version: str, gpus: int) -> Target:
    where = "all tiers" if gpus else "CUDA wheel on a CPU machine: parse and config tiers"
    return Target(
        name=f"{PAGE_BUILD}{version}",
        pip=f"{PROJECT}=={version}",
        max_tier=None if gpus else "config",
        label=f"vLLM {version}, the release its pages are written for (run --for-pages; {where})",
    )


def covers(target: Target, snippet) -> bool:
    """Whether a job of SNIPPET runs on TARGET: every build runs every command, except a page build,
    which runs only the commands of pages written for its release."""
    if not target.name.startswith(PAGE_BUILD):
        return True
    version = target.pinned_version()
    return bool(version) and any(_allows(spec, version) for spec in _specs(snippet))


def vllm_releases() -> set[str]:
    """vLLM's final releases on the package index (runner/builds/resolve.py asks it)."""
    import httpx

    from driftmatrix.runner.builds.resolve import releases

    with httpx.Client(timeout=60, follow_redirects=True) as client:
        return releases(PROJECT, client)
