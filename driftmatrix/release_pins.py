"""The releases a run's extraction checks the files commands name against (extractor/release_files.py):
the stable release and the targets' pins, read from the runner's targets here, in the CLI, and passed
to the extractor, which reads no later stage."""

from __future__ import annotations

from pathlib import Path


def release_trees(cache: Path, stable: str | None):
    """Where the files commands name in vLLM's tree are looked for (extractor/release_files.py): each
    page's own release, and the stable release and the targets' pins for a page written for a range."""
    from extractor.release_files import ReleaseTrees
    from runner.builds.targets import TargetConfigError, default_path, load
    from runner.builds.resolve import stable_pin

    try:
        pins = [t.pinned_version() for t in load(default_path()).targets]
        stable = stable or stable_pin()
    except TargetConfigError:
        pins = []
    return ReleaseTrees(cache / "sdists", [v for v in dict.fromkeys([stable, *pins]) if v])
