"""Earlier publishes: `--run-history DIR` holds, per previous run, a summary
(`summary-<UTC stamp>.json.gz`: each cell's status and stage on the builds that run checked, and those
builds) and, for the newest K runs only, the full `matrix.json` (`matrix-<UTC stamp>.json`), both written
there by each publish (`keep`; `--keep-snapshots K`). From them: what changed since the previous run,
and per snippet the first and last vLLM version (and date) it was seen passing — the `version_added` /
`version_removed` of matrix.json. A summary is a matrix.json with only what these read, so every
reader takes either; where a run has both, its full document is read.
"""

from __future__ import annotations

import gzip
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


DEFAULT_KEEP_SNAPSHOTS = 3
"""Full matrix.json documents kept in the run history (`publish --keep-snapshots`); every run keeps its summary.
A later run reads only the newest in full (the changes since it); a full document holds every build still in
the state, retired ones too (some 170 MB after a year: benchmarks/state_year.py), so few are kept."""
_TARGET_FIELDS = ("name", "version", "commit", "distribution", "date")
_CELL_FIELDS = ("status", "stage")


def _read(path: Path) -> dict:
    raw = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
    doc = json.loads(raw.decode("utf-8"))
    if not isinstance(doc, dict) or not isinstance(doc.get("snippets"), dict):
        raise ValueError("no snippets object")
    return doc


def load(directory: Path | None) -> History:
    hist = History()
    if directory is None or not directory.is_dir():
        return hist
    by_run: dict[str, dict] = {}
    full = sorted(directory.glob("matrix-*.json"))
    for path in [*full, *sorted(directory.glob("summary-*.json.gz"))]:  # a run's full document first
        try:
            doc = _read(path)
        except (OSError, ValueError, EOFError) as err:
            hist.problems.append(f"{path}: not a matrix.json snapshot or summary, ignored ({err})")
            continue
        by_run.setdefault(doc.get("generated") or path.name, doc)
    hist.snapshots = sorted(by_run.values(), key=lambda d: d.get("generated", ""))
    return hist


def summary(doc: dict) -> dict:
    """What a later run reads of a matrix.json (`changes`, `seen`, ranges.runs): its builds still current
    (a retired build's cells are in the summaries of the runs it was current in) and each cell's status
    and stage — a few percent of the document."""
    targets = {
        key: {f: t.get(f) for f in _TARGET_FIELDS}
        for key, t in (doc.get("targets") or {}).items()
        if isinstance(t, dict) and not t.get("retired")
    }
    snippets = {}
    for sid, entry in (doc.get("snippets") or {}).items():
        support = {
            key: {f: cell.get(f) for f in _CELL_FIELDS}
            for key, cell in ((entry or {}).get("support") or {}).items()
            if key in targets and isinstance(cell, dict)
        }
        if support:
            snippets[sid] = {"support": support}
    return {
        "schema": doc.get("schema"),
        "summary": True,
        "generated": doc.get("generated"),
        "targets": targets,
        "snippets": snippets,
    }


def _stamp(doc: dict) -> str:
    return str(doc["generated"]).replace(":", "").replace("-", "")


def _write_summary(doc: dict, directory: Path) -> Path:
    path = directory / f"summary-{_stamp(doc)}.json.gz"
    text = json.dumps(summary(doc), ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    path.write_bytes(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))  # the same run, the same bytes
    return path


def keep(text: str, doc: dict, directory: Path, keep_full: int = DEFAULT_KEEP_SNAPSHOTS) -> Path:
    """This run's matrix.json (`text`, the document `doc`) and its summary into the history, then only the
    newest `keep_full` full documents kept (`prune`). The path of the full document."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"matrix-{_stamp(doc)}.json"
    path.write_text(text, encoding="utf-8")
    _write_summary(doc, directory)
    prune(directory, keep_full)
    return path


def prune(directory: Path, keep_full: int = DEFAULT_KEEP_SNAPSHOTS) -> list[Path]:
    """Removes the full matrix.json of every run but the newest `keep_full` (by its stamp), after writing
    its summary where it has none (a history written before summaries); one that cannot be read is left
    as it is (`load` names it). The paths removed."""
    removed = []
    full = sorted(directory.glob("matrix-*.json"), reverse=True)
    for path in full[keep_full:]:
        if not (directory / f"summary-{path.name[len('matrix-') : -len('.json')]}.json.gz").exists():
            try:
                doc = _read(path)
                if not doc.get("generated"):
                    raise ValueError("no generated")
                _write_summary(doc, directory)
            except (OSError, ValueError, EOFError):
                continue  # kept, and named by `load`
        path.unlink()
        removed.append(path)
    return removed


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
