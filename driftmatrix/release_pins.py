"""Which vLLM releases the CLI hands the extractor, which reads no later stage: today's stable
release (what a page that states no version is written for) and the releases a run's extraction
checks the files commands name against (extractor/release_files.py)."""

from __future__ import annotations

from pathlib import Path


def release_trees(cache: Path, stable: str | None):
    """Where the files commands name in vLLM's tree are looked for (extractor/release_files.py): each
    page's own release, and the stable release and the targets' pins for a page written for a range."""
    from driftmatrix.extractor.release_files import ReleaseTrees
    from driftmatrix.runner.builds.resolve import stable_pin
    from driftmatrix.runner.builds.targets import TargetConfigError, default_path, load

    try:
        pins = [t.pinned_version() for t in load(default_path()).targets]
        stable = stable or stable_pin()
    except TargetConfigError:
        pins = []
    return ReleaseTrees(cache / "sdists", [v for v in dict.fromkeys([stable, *pins]) if v])


def todays_stable() -> str:
    """Today's stable vLLM release: the newest release the option history holds (refreshed with every
    release by the daily workflow), or the stable target's pin when that is newer. Never only the
    pin shipped with the targets (the seed's, long superseded); the daily run passes its resolved
    stable explicitly (`--stable`)."""
    from driftmatrix.common.versions import version_order
    from driftmatrix.flaghistory.commands import shipped
    from driftmatrix.runner.builds.resolve import stable_pin
    from driftmatrix.runner.builds.targets import TargetConfigError

    history = shipped()
    known = [r for r in (history.releases if history else []) if "dev" not in r and "rc" not in r]
    try:
        known.append(stable_pin())
    except TargetConfigError:
        pass
    return max(known, key=version_order)
