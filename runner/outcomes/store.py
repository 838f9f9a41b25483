"""outcomes.jsonl: append-only, flushed per outcome, read back tolerantly.

A killed run leaves at worst a torn last line; it is ignored (with a note) and every
complete line is kept.  The cache key (snippet id, variant, target name+version+commit,
tier) lets a rerun skip finished work.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from driftmatrix.runner.outcomes import counts
from driftmatrix.runner.outcomes.outcome_record import Outcome


def read(path: Path) -> tuple[list[Outcome], list[str]]:
    """(outcomes, problems) — problems name the line that could not be read."""
    outcomes, problems = [], []
    if not path.exists():
        return outcomes, problems
    with path.open(encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                if isinstance(data, dict) and "record" in data:  # a target's diagnostic: read_records
                    continue
                outcomes.append(Outcome.from_dict(data))
            except (ValueError, KeyError, TypeError) as err:
                problems.append(f"{path}:{n}: unreadable outcome line ignored ({type(err).__name__})")
    return outcomes, problems


def read_records(path: Path, kind: str) -> list[dict]:
    """The records of one kind other than outcomes (`target-diagnostic`: runner/outcomes/target_diagnostic.py)."""
    found = []
    if not path.exists():
        return found
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if f'"{kind}"' not in line:
                continue
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if isinstance(data, dict) and data.get("record") == kind:
                found.append(data)
    return found


class Store:
    def __init__(self, path: Path, previous: list[Path] | tuple[Path, ...] = ()):
        """`previous`: outcome files of earlier runs, read only: their finished jobs count as done, as the
        output's own do, but none of their records is copied into it (a CI leg hands in only what it wrote)."""
        self.path = path
        self.lock = threading.Lock()
        existing, self.problems = read(path)
        self.done = {o.key() for o in existing if counts.is_done(o)}  # ERRORs are retried
        for earlier in previous:
            found, problems = read(earlier)
            self.problems += problems
            self.done.update(o.key() for o in found if counts.is_done(o))
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = path.open("a", encoding="utf-8")
        if path.stat().st_size and not path.read_bytes().endswith(b"\n"):
            self._fh.write("\n")  # never glue a new record onto a torn line

    def append(self, outcome: Outcome) -> None:
        line = json.dumps(outcome.to_dict(), ensure_ascii=False, default=str)
        with self.lock:
            self._fh.write(line + "\n")
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self.done.add(outcome.key())

    def append_record(self, record: dict) -> None:
        """A line that is not an outcome (it carries `"record"`; `read` passes over it)."""
        with self.lock:
            self._fh.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
            self._fh.flush()
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()
