"""Earlier publishes: `--run-history DIR` holds the `matrix.json` of every previous run
(`matrix-<UTC stamp>.json`, written there by each publish). From them: what changed since
the previous run, and per snippet the first and last vLLM version (and date) it was seen
passing — the `version_added` / `version_removed` of matrix.json.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from driftmatrix.common.versions import version_order
from driftmatrix.runner.outcomes.vocabulary import GOOD, REAL, stage_rank

CHANGE_KINDS = {
    "regressed": "ran on the previous build of this target, fails on its newer build as deep as it ran before",
    "fixed": "failed on the previous build, runs on the newer build at least as deep",
    "newly found": "a deeper check than before found the problem (not a regression)",
    "changed on the same build": "the same build answered differently (a flaky command or machine)",
    "now warns": "runs, but now with a vLLM warning",
    "warning gone": "runs, no longer with a vLLM warning",
    "newly checked": "was not checked before (SKIP/ERROR or new)",
    "no longer checked": "was checked before, is a SKIP/ERROR now",
}
"""How a verdict changed, compared like with like: the same build or the same target's newer build."""


@dataclass
class Change:
    """A snippet whose verdict on a target (by name: `nightly` moves commit) changed."""

    snippet_id: str
    target: str
    before: str
    after: str
    before_version: str
    after_version: str
    kind: str = "changed on the same build"
    """One of CHANGE_KINDS."""
    before_stage: str = ""
    after_stage: str = ""


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


@dataclass(frozen=True)
class _Cell:
    status: str
    version: str
    date: str
    stage: str
    commit: str | None


def _statuses(doc: dict, retired_too: bool = False) -> dict[tuple[str, str], _Cell]:
    """(snippet id, target name) -> the cell of one matrix.json; with `retired_too`, keyed by
    (snippet id, target key) and with the retired builds."""
    targets = doc.get("targets") or {}
    out = {}
    for sid, entry in (doc.get("snippets") or {}).items():
        for key, cell in (entry.get("support") or {}).items():
            t = targets.get(key) or {}
            if t.get("retired") and not retired_too:
                continue
            out[(sid, key if retired_too else t.get("name", key))] = _Cell(
                cell.get("status", ""), t.get("version", ""), t.get("date", ""), cell.get("stage", ""), t.get("commit")
            )
    return out


def _kind(before: _Cell, after: _Cell) -> str | None:
    """How `after` differs from `before`, like with like; None when it is no comparable change."""
    if before.status == after.status:
        return None
    real_before, real_after = before.status in REAL, after.status in REAL
    if not real_before:
        return "newly checked" if real_after else None
    if not real_after:
        return "no longer checked"
    good_before, good_after = before.status in GOOD, after.status in GOOD
    if good_before and good_after:
        return "now warns" if after.status == "WARN" else "warning gone"
    same = (before.version, before.commit) == (after.version, after.commit)
    newer = version_order(after.version) > version_order(before.version) or (
        after.version == before.version and after.date >= before.date
    )
    if good_before:  # now FAIL
        if stage_rank(after.stage) > stage_rank(before.stage):
            return "newly found"  # it went deeper than it had run before
        return "changed on the same build" if same or not newer else "regressed"
    if stage_rank(after.stage) < stage_rank(before.stage):
        return None  # runs, but not checked as deep as it failed before: nothing to say yet
    return "changed on the same build" if same or not newer else "fixed"


def changes(previous: dict | None, current: dict) -> list[Change]:
    if not previous:
        return []
    before, after = _statuses(previous), _statuses(current)
    out = []
    for (sid, name), now in sorted(after.items()):
        then = before.get((sid, name))
        kind = _kind(then, now) if then else None
        if kind:
            out.append(
                Change(sid, name, then.status, now.status, then.version, now.version, kind, then.stage, now.stage)
            )
    return out


def seen(snapshots: list[dict], current: list[tuple[str, str, str, str]]) -> dict[str, Seen]:
    """Per snippet id: first/last version seen passing over all runs, `current` included: this
    publish's cells as (snippet id, vLLM version, date, verdict), retired builds' too."""
    obs: dict[str, list[tuple[str, str, str]]] = {}
    for doc in snapshots:
        for (sid, _), cell in _statuses(doc, retired_too=True).items():
            obs.setdefault(sid, []).append((cell.version, cell.date, cell.status))
    for sid, version, date, verdict in current:
        obs.setdefault(sid, []).append((version, date, verdict))
    out = {}
    for sid, rows in obs.items():
        rows.sort(key=lambda r: (version_order(r[0]), r[1]))
        good = [r for r in rows if r[2] in GOOD]
        s = Seen()
        if good:
            s.first_passing = {"version": good[0][0], "date": good[0][1]}
            s.last_passing = {"version": good[-1][0], "date": max(r[1] for r in good if r[0] == good[-1][0])}
            later_fail = [r for r in rows if r[2] == "FAIL" and version_order(r[0]) > version_order(good[-1][0])]
            s.version_removed = later_fail[0][0] if later_fail else None
        out[sid] = s
    return out
