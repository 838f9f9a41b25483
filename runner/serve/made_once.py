"""A folder made once per target under the cache by a contained process we trust (the compile
warm-up, vLLM's inspections), and handed to every job of that target as a seed.

One rule for both: made at most once at a time on the machine (a file lock: runs side by side on one
cache) and once per folder in this process (a thread lock: helpers and jobs side by side); accepted
only as plain files within a size (sandbox/output.py); ready when its READY file is written; an
earlier recipe's folder of the same target dropped; a failure remembered, so that a run does not try
again at every job.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

from driftmatrix.common.filelock import exclusive
from driftmatrix.runner.isolation.sandbox import output

Make = Callable[[Path], dict | str]
"""Fills the staging folder it is given: facts to write into READY, or why it could not."""

_locks: dict[str, threading.Lock] = {}
_guard = threading.Lock()
_failed: dict[str, str] = {}
"""Folders that could not be made in this process (why)."""


def ensure(final: Path, make: Make, max_bytes: int) -> bool:
    """True when `final` is ready (made now by `make` if needed), False when it could not be made."""
    with _guard:
        lock = _locks.setdefault(str(final), threading.Lock())
    with lock:
        if (final / "READY").is_file():
            return True
        if str(final) in _failed:
            return False
        with exclusive(Path(f"{final}.lock")):
            if not (final / "READY").is_file():
                _make(final, make, max_bytes)
        return (final / "READY").is_file()


def failed(final: Path) -> str | None:
    """Why `final` could not be made in this process, if it was tried and could not."""
    return _failed.get(str(final))


def _make(final: Path, make: Make, max_bytes: int) -> None:
    staging = final.parent / f".{final.name}.making"
    shutil.rmtree(staging, ignore_errors=True)
    t0 = time.monotonic()
    facts = make(staging)
    if isinstance(facts, dict):
        try:
            output.accept(staging, final, max_bytes)
            (final / "READY").write_text(json.dumps({**facts, "seconds": round(time.monotonic() - t0, 1)}))
            _drop_older(final)
            return
        except (output.UntrustedOutput, OSError) as err:
            facts = f"it was refused: {err}"
    shutil.rmtree(staging, ignore_errors=True)
    _failed[str(final)] = facts[:2000]


def _drop_older(final: Path) -> None:
    """The same target's folders of an earlier recipe (named TARGET-VERSION-RECIPE)."""
    family = final.name.rsplit("-", 1)[0]
    for older in final.parent.glob(f"{family}-*"):
        if older.is_dir() and older != final and older.name.rsplit("-", 1)[0] == family:
            shutil.rmtree(older, ignore_errors=True)
            Path(f"{older}.lock").unlink(missing_ok=True)
