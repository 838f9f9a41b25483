"""The versions a command is known to work on, per kind of build (CPU build, CUDA build,
container image): what a matrix cell shows after its verdict (`✔ started · 0.21.0+`) and what
matrix.json's `range` says.

Two sources, never mixed in one range: the runs (this publish and every earlier one kept with
`--run-history`), compared within one kind of build; and, for a verdict reached by the argument
parser alone, the option history (the releases whose `vllm serve` has every option of the
command: `flaghistory`), which says exactly as much as a parser check does."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from driftmatrix.common.versions import version_order
from driftmatrix.publisher.results import Results, build_kind
from driftmatrix.runner.outcomes.outcome_record import Outcome
from driftmatrix.runner.outcomes.vocabulary import GOOD, REAL


@dataclass(frozen=True)
class Range:
    """A contiguous run of versions where the command worked."""

    first: str
    """The oldest version of the run."""
    last: str | None
    """The newest version of the run; None: it still works on the newest version seen."""
    basis: Literal["runs", "options"]
    """`runs`: seen working on builds of this kind; `options`: all its options exist there (option history)."""

    def text(self) -> str:
        """`0.21.0+`, `0.18.0–0.19.1`, `0.20.1`."""
        if self.last is None:
            return f"{self.first}+"
        return self.first if self.first == self.last else f"{self.first}–{self.last}"

    def words(self, kind: str) -> str:
        """The range in a sentence (a cell's detail, a screen reader)."""
        span = (
            f"vLLM {self.first} and every newer version seen"
            if self.last is None
            else f"vLLM {self.first}"
            if self.first == self.last
            else f"vLLM {self.first} through {self.last}"
        )
        if self.basis == "options":
            return f"its options exist in {span.replace('seen', 'read')} (option history: options, and the values and config keys it reads)"
        return f"seen working on {span} ({kind}s)"

    def contains(self, version: str) -> bool:
        v = version_order(version)
        return version_order(self.first) <= v and (self.last is None or v <= version_order(self.last))

    def as_json(self) -> dict:
        return {"first": self.first, "last": self.last, "basis": self.basis, "text": self.text()}


Runs = dict[tuple[str, str], dict[str, tuple[str, str]]]
"""(snippet id, kind of build) -> {vLLM version: (verdict, stage)}, PASS/WARN/FAIL only."""


def runs(snapshots: list[dict], results: Results) -> Runs:
    """Every real verdict (PASS/WARN/FAIL) seen, the earlier publishes' first, this one's last
    (a version seen twice counts as last seen)."""
    found: Runs = {}
    for doc in snapshots:
        targets = doc.get("targets") or {}
        for sid, entry in (doc.get("snippets") or {}).items():
            for key, cell in (entry.get("support") or {}).items():
                t = targets.get(key) or {}
                if cell.get("status") in REAL and t.get("version"):
                    found.setdefault((sid, build_kind(t.get("distribution"))), {})[t["version"]] = (
                        cell["status"],
                        cell.get("stage", ""),
                    )
    for (sid, variant, _target), o in results.cells.items():
        if variant is None and o.verdict in REAL:
            found.setdefault((sid, build_kind(o.target.distribution)), {})[o.target.version] = (o.verdict, o.stage)
    return found


def _streak(seen: list[tuple[str, bool]], at: int) -> Range:
    lo = hi = at
    while lo > 0 and seen[lo - 1][1]:
        lo -= 1
    while hi < len(seen) - 1 and seen[hi + 1][1]:
        hi += 1
    return Range(seen[lo][0], None if hi == len(seen) - 1 else seen[hi][0], "runs")


def of_runs(known: Runs, snippet_id: str, kind: str, version: str, worked: bool) -> Range | None:
    """The run of working versions around this one (it worked), or the newest such run (it
    failed); None when the runs know nothing beyond this one cell."""
    seen = sorted(
        ((v, verdict in GOOD) for v, (verdict, _) in (known.get((snippet_id, kind)) or {}).items()),
        key=lambda kv: version_order(kv[0]),
    )
    versions = [v for v, _ in seen]
    if worked and version in versions:
        r = _streak(seen, versions.index(version))
        return r if len(seen) > 1 else None
    good = [i for i, (_, ok) in enumerate(seen) if ok]
    return _streak(seen, good[-1]) if good else None


def of_options(flags: dict | None) -> Range | None:
    """From matrix.json's `flags_valid`: the newest run of releases with every option."""
    if not flags or not flags.get("first"):
        return None
    return Range(flags["first"], None if flags.get("last") == flags.get("newest") else flags["last"], "options")


def of_cell(known: Runs, snippet_id: str, o: Outcome, flags: dict | None) -> Range | None:
    """What a cell shows: the runs' range, else for a parser-only verdict the options' range."""
    if o.verdict not in REAL:
        return None
    found = of_runs(known, snippet_id, build_kind(o.target.distribution), o.target.version, o.verdict in GOOD)
    if found is None and o.stage == "parse":
        options = of_options(flags)
        # a parser FAIL where every option exists rejected a value: the option range says nothing
        return options if options and (o.verdict in GOOD or not options.contains(o.target.version)) else None
    return found
