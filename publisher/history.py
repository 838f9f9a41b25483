"""Earlier publishes: `--history DIR` holds the `matrix.json` of every previous run
(`matrix-<UTC stamp>.json`, written there by each publish). From them: what changed since
the previous run, and per snippet the first and last vLLM version (and date) it was seen
passing — the `version_added` / `version_removed` of matrix.json.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from publisher.results import version_key

GOOD = ("PASS", "WARN")  # WARN runs: it is a warning, not a failure


@dataclass
class Change:
    """A snippet whose verdict on a target (by name: `nightly` moves commit) changed."""

    snippet_id: str
    target: str
    before: str
    after: str
    before_version: str
    after_version: str


@dataclass
class Seen:
    """When a snippet was seen passing, over every run known."""

    first_passing: dict | None = None
    """`{version, date}` of the oldest vLLM version seen passing."""
    last_passing: dict | None = None
    """`{version, date}` of the newest vLLM version seen passing."""
    version_removed: str | None = None
    """The oldest version newer than `last_passing` seen failing (None while it passes on the newest)."""


@dataclass
class History:
    snapshots: list[dict] = field(default_factory=list)
    """Previous matrix.json documents, oldest first."""
    problems: list[str] = field(default_factory=list)

    @property
    def previous(self) -> dict | None:
        return self.snapshots[-1] if self.snapshots else None


def load(directory: Path | None) -> History:
    hist = History()
    if directory is None or not directory.is_dir():
        return hist
    for path in sorted(directory.glob("matrix-*.json")):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(doc, dict) or not isinstance(doc.get("snippets"), dict):
                raise ValueError("no snippets object")
            hist.snapshots.append(doc)
        except (OSError, ValueError) as err:
            hist.problems.append(f"{path}: not a matrix.json snapshot, ignored ({err})")
    hist.snapshots.sort(key=lambda d: d.get("generated", ""))
    return hist


def _statuses(doc: dict) -> dict[tuple[str, str], tuple[str, str, str]]:
    """(snippet id, target name) -> (status, version, date) of one matrix.json."""
    targets = doc.get("targets") or {}
    out = {}
    for sid, entry in (doc.get("snippets") or {}).items():
        for key, cell in (entry.get("support") or {}).items():
            t = targets.get(key) or {}
            out[(sid, t.get("name", key))] = (cell.get("status", ""), t.get("version", ""), t.get("date", ""))
    return out


def changes(previous: dict | None, current: dict) -> list[Change]:
    if not previous:
        return []
    before, after = _statuses(previous), _statuses(current)
    return [Change(sid, name, before[(sid, name)][0], status, before[(sid, name)][1], version)
            for (sid, name), (status, version, _) in sorted(after.items())
            if (sid, name) in before and before[(sid, name)][0] != status]


def seen(snapshots: list[dict], current: dict) -> dict[str, Seen]:
    """Per snippet id: first/last version seen passing over all runs (the current included)."""
    obs: dict[str, list[tuple[str, str, str]]] = {}
    for doc in [*snapshots, current]:
        for (sid, _), (status, version, date) in _statuses(doc).items():
            obs.setdefault(sid, []).append((version, date, status))
    out = {}
    for sid, rows in obs.items():
        rows.sort(key=lambda r: (version_key(r[0]), r[1]))
        good = [r for r in rows if r[2] in GOOD]
        s = Seen()
        if good:
            s.first_passing = {"version": good[0][0], "date": good[0][1]}
            s.last_passing = {"version": good[-1][0], "date": max(r[1] for r in good if r[0] == good[-1][0])}
            later_fail = [r for r in rows if r[2] == "FAIL" and version_key(r[0]) > version_key(good[-1][0])]
            s.version_removed = later_fail[0][0] if later_fail else None
        out[sid] = s
    return out
