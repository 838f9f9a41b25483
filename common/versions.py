"""One lenient reading of version strings for every stage: a PEP 440 version (packaging's), or None
where the text is not one (a git ref, `nightly`, a placeholder) — never an exception."""

from __future__ import annotations

from packaging.version import InvalidVersion, Version


def parse_version(text: str | None) -> Version | None:
    """`0.20.1`, `0.21.0.dev3+g1234abc`, ` 0.9 ` as a Version; None for anything that is not one."""
    try:
        return Version(str(text or "").strip())
    except InvalidVersion:
        return None


def version_order(version: str) -> tuple:
    """A sort key: PEP 440 order where the version parses (0.9 < 0.10, 0.21.0.dev3 < 0.21.0), after
    every unparsable one (in text order)."""
    parsed = parse_version(version)
    return (0, version) if parsed is None else (1, parsed)
