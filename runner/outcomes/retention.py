"""What the state keeps: the one rule that bounds `outcomes.jsonl` (issue 60 point 4), applied by
`driftmatrix merge` (and so by the workflow's save-state job) and nowhere else.

A nightly build moves every day and every one of its jobs runs again, so without a limit the state
grows by a day's records each day. The rule:

- every **release** build is kept (a version without a dev or local segment: `0.34.0`, `0.34.0rc1`,
  `0.34.0.post1`; a version that does not parse counts as a release: what cannot be read is not dropped);
- of the **nightly** builds (a dev or local version, `0.35.0.dev12+g1a2b3c4`), the newest
  `keep_nightlies` of each **build line** are kept — a build line is a target name and the release line
  (major.minor) of its version (`nightly` / `0.35`), newest by version and then by when it last ran;
- the **newest verdict** of every (snippet, variant, tier) on each build line survives whatever build it
  was reached on: a probe check that the rotation last reached a month ago (runner/run/budget.py) stays
  until a newer build of that line has one.

Everything else (yesterday's nightlies' records, superseded by the same jobs on newer builds of the same
line) goes. Which outcome of one job counts is counts.best's rule, unchanged.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from driftmatrix.common.versions import parse_version, version_order
from driftmatrix.runner.outcomes import counts
from driftmatrix.runner.outcomes.outcome_record import JobKey, Outcome

DEFAULT_KEEP_NIGHTLIES = 7
"""Nightly builds kept per build line (`driftmatrix merge --keep-nightlies`): a week of daily nightlies."""

BuildKey = tuple[str, str, str | None]


def is_nightly(version: str) -> bool:
    """A development build (`0.35.0.dev12+g1a2b3c4`, or any local `+…` version); False for a release
    and for a version that does not parse."""
    parsed = parse_version(version)
    return parsed is not None and (parsed.is_devrelease or parsed.local is not None)


def release_line(version: str) -> str:
    """`0.35` for `0.35.0.dev12+g1a2b3c4` (major.minor); the text itself when it does not parse."""
    parsed = parse_version(version)
    if parsed is None:
        return version
    major, minor = (list(parsed.release) + [0, 0])[:2]
    return f"{major}.{minor}"


def build_line(key: BuildKey) -> tuple[str, str]:
    """(target name, release line) of a build."""
    return (key[0], release_line(key[1]))


@dataclass
class Compacted:
    kept: list
    dropped_builds: list[BuildKey] = field(default_factory=list)
    """The nightly builds beyond the newest N of their line (some of their records may survive as the
    newest verdict of a job on that line)."""
    dropped_records: int = 0


def compact(outcomes: Iterable, keep_nightlies: int | None = DEFAULT_KEEP_NIGHTLIES) -> Compacted:
    """The outcomes the state keeps (see the module's rule), in their order; `keep_nightlies` None keeps all.
    Outcomes or `Line`s: what is read is the snippet, variant, tier, target and start."""
    outcomes = list(outcomes)
    if keep_nightlies is None:
        return Compacted(outcomes)
    if keep_nightlies < 1:
        raise ValueError("keep_nightlies must be at least 1 (or None: all)")
    last_ran: dict[BuildKey, str] = {}
    for o in outcomes:
        key = counts.build_key(o.target)
        last_ran[key] = max(last_ran.get(key, ""), o.started or "")

    def newness(key: BuildKey) -> tuple:
        return (version_order(key[1]), last_ran[key])

    by_line: dict[tuple[str, str], list[BuildKey]] = {}
    for key in last_ran:
        if is_nightly(key[1]):
            by_line.setdefault(build_line(key), []).append(key)
    dropped = set()
    for keys in by_line.values():
        keys.sort(key=newness, reverse=True)
        dropped.update(keys[keep_nightlies:])
    if not dropped:
        return Compacted(outcomes)
    # the newest build with a verdict of each (snippet, variant, tier) on each build line
    newest: dict[tuple, BuildKey] = {}
    for o in outcomes:
        key = counts.build_key(o.target)
        job = (o.snippet_id, o.variant, o.tier, *build_line(key))
        if job not in newest or newness(key) > newness(newest[job]):
            newest[job] = key
    kept = []
    for o in outcomes:
        key = counts.build_key(o.target)
        if key not in dropped or newest[(o.snippet_id, o.variant, o.tier, *build_line(key))] == key:
            kept.append(o)
    return Compacted(kept, sorted(dropped, key=lambda k: (k[0], newness(k))), len(outcomes) - len(kept))


class Build(NamedTuple):
    """A record's build as the rule reads it (counts.build_key)."""

    name: str
    version: str
    commit: str | None


@dataclass(slots=True)
class Line:
    """One record as `merge` holds it: where it was read (written back from there as it was) and what the
    rule reads — a few hundred bytes, not the record (a year's state is some 345,000 of them:
    benchmarks/state_year.py)."""

    source: int
    """Which input file (its index)."""
    offset: int
    """Where its line starts in that file."""
    snippet_id: str
    variant: str | None
    tier: str
    target: Build
    rank: tuple
    """counts.rank of the outcome."""

    @property
    def started(self) -> str:
        return self.rank[2]


def _interned(text: str | None) -> str | None:
    return None if text is None else sys.intern(text)


def _lines(source: int, path: Path, problems: list[str]):
    """(job key, Line) of every outcome record of a file, one at a time, read as store.read reads them: a
    torn or unreadable line is named and skipped, a record other than an outcome passed over."""
    if not path.exists():
        return
    with path.open("rb") as fh:
        n, offset = 0, 0
        for raw in fh:
            n, start, offset = n + 1, offset, offset + len(raw)
            if not raw.strip():
                continue
            try:
                data = json.loads(raw.decode("utf-8", errors="replace"))
                if isinstance(data, dict) and "record" in data:
                    continue
                o = Outcome.from_dict(data)
            except (ValueError, KeyError, TypeError) as err:
                problems.append(f"{path}:{n}: unreadable outcome line ignored ({type(err).__name__})")
                continue
            key = JobKey(*map(_interned, o.key()))  # one copy of each name, version, tier for all records
            build = Build(key.target, key.version, key.commit)
            yield key, Line(source, start, key.snippet_id, key.variant, key.tier, build, counts.rank(o))


def merge(paths: Iterable[Path], keep_nightlies: int | None = DEFAULT_KEEP_NIGHTLIES) -> tuple[Compacted, list[str]]:
    """Outcome files (the previous state, every leg's new records) into one record per job key (the one
    that counts, counts.best: a fold, so copies of one record cost nothing), compacted. (result, problems);
    the result's `kept` are `Line`s: `write` puts them into a file."""
    jobs: dict[JobKey, Line] = {}
    problems: list[str] = []
    for source, path in enumerate(paths):
        for key, line in _lines(source, Path(path), problems):
            chosen = jobs.get(key)
            if chosen is None or line.rank >= chosen.rank:  # counts.best, one record at a time
                jobs[key] = line
    return compact(jobs.values(), keep_nightlies), problems


def write(kept: Iterable[Line], paths: list[Path], out: Path) -> int:
    """The kept records, each line as it was read from its input, into `out` (written beside it and then
    moved: `out` may be one of the inputs). How many."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.merging")
    files = [Path(p).open("rb") if Path(p).exists() else None for p in paths]
    n = 0
    try:
        with tmp.open("wb") as dst:
            for line in kept:
                src = files[line.source]
                src.seek(line.offset)
                dst.write(src.readline().strip() + b"\n")
                n += 1
    finally:
        for fh in files:
            if fh:
                fh.close()
    os.replace(tmp, out)
    return n
