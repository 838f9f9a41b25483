"""The judgement of a command on the pages written for a set of versions, as a record: the builds'
checks it rests on and what decided it (publisher/judgement.py computes it; the site, matrix.json,
`annotate` and `pr` read it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from driftmatrix.extractor.snippet_record import Lint, WrittenFor
from driftmatrix.publisher.results import Column
from driftmatrix.runner.outcomes.outcome_record import Outcome
from driftmatrix.runner.outcomes.vocabulary import GOOD, JudgementKind, stage_rank

Scope = Literal["in", "older", "newer", "unknown"]
DecidedBy = Literal["builds", "shell", "python", "tree", "history"]
SPOKE: dict[str, str] = {
    "shell": "the shell (how it reads the command as written)",
    "python": "Python's parser (the block as a reader pastes it)",
    "tree": "the release's source tree (a file the command names)",
    "history": "the option history (no build ran as far as vLLM's check)",
}
"""What `Judgement.evidence` says of each decider other than the builds."""


@dataclass
class Check:
    """One current build's counted outcome, seen from a page's versions."""

    column: Column
    outcome: Outcome
    scope: Scope
    """`in` the page's versions, `older` or `newer` than them, `unknown` (no version)."""

    @property
    def version(self) -> str:
        return self.column.version


@dataclass
class Judgement:
    kind: JudgementKind
    written_for: WrittenFor
    checks: list[Check] = field(default_factory=list)
    """Every current build with an outcome for the command as documented, oldest first."""
    failing: list[Check] = field(default_factory=list)
    """doc-drift: the FAILs on builds the page is written for (what a warning may cite)."""
    regression: tuple[Check, Check] | None = None
    """vllm-regression: (the earlier build where it passed, the later one where it fails)."""
    works_from: str | None = None
    """The oldest version seen running (PASS/WARN) after the newest failure: "needs vLLM ≥ X"."""
    summary: str = ""
    """One plain sentence: what was judged on which builds (escape before it reaches a page)."""
    options_from: str | None = None
    """The first release after the newest failure on which every option of the command exists and
    every value and config key the history reads is known (flaghistory), for "needs vLLM ≥ X" when
    no checked build shows it running."""
    newer_notes: list[str] = field(default_factory=list)
    """needs-newer from the history: what of the command came after the newest failing build, in the
    history's words ("`--tool-call-parser qwen3_xml` is known from vLLM 0.11.0 (the tool-call parsers)")."""
    option_notes: list[str] = field(default_factory=list)
    """doc-drift at parse: why the failing build rejects each option (removed when, vLLM's words);
    decided by the history: why the page's versions lack it."""
    decided_by: DecidedBy = "builds"
    """What the judgement rests on: `builds` (the outcomes); `shell` (the shell does not run the
    command as written: a breaking lint on this page, see `defects`); `python` (Python's parser rejects
    the block as a reader pastes it: nothing of it runs); `tree` (a file it names is not in the release's
    tree); `history` (the option history, no build of the page's versions checked)."""
    defects: list[Lint] = field(default_factory=list)
    """This page's breaking lints (what the shell runs is not what the author meant), line order."""
    history_release: str | None = None
    """decided by the history: the release that removed (doc-drift) or added (needs-newer) its option."""
    history_why: str | None = None
    """decided by the history, doc-drift: why, in a few words (`removed by vLLM 0.18.0`, `there only from
    vLLM 0.33.0` for a page pinned before it): titles and tables say it."""

    @property
    def working(self) -> list[Check]:
        """Where it runs, on builds the page is written for or newer."""
        return [k for k in self.checks if k.outcome.verdict in GOOD and k.scope in ("in", "newer")]

    @property
    def evidence(self) -> str:
        """Which evidence spoke, in words for the matrix (issue 58): the builds that decided it and how far
        each went, or the option history, the shell, Python's parser, the release's tree; "" when none did."""
        if self.decided_by != "builds":
            return SPOKE[self.decided_by]
        if self.kind == "doc-drift":
            checks = self.failing
        elif self.kind == "vllm-regression":
            checks = list(self.regression or ())
        else:  # ok and needs-newer rest on where it runs; unknown on nothing
            checks = self.working if self.kind in ("ok", "needs-newer") else []
        ran = dict.fromkeys(f"vLLM {k.version} at {k.outcome.stage}" for k in checks)
        return f"the builds: {', '.join(ran)}" if ran else ""

    @property
    def depth(self) -> str | None:
        """How deep the judgement rests: `shell`, `python`, `tree` or `history` when they decided it; else the
        failing stage, or the deepest stage shown running."""
        if self.decided_by != "builds":
            return self.decided_by
        if self.kind == "doc-drift" and self.failing:
            return self.failing[0].outcome.stage
        if self.regression:
            return self.regression[1].outcome.stage
        good = [k for k in self.checks if k.outcome.verdict in GOOD and k.scope == "in"] or self.working
        if good:
            return max((k.outcome.stage for k in good), key=stage_rank)
        # needs-newer with no run of the page's versions: it rests on the older builds' failures
        return max((k.outcome.stage for k in self.checks if k.outcome.verdict == "FAIL"), key=stage_rank, default=None)


def versions_text(checks: list[Check]) -> str:
    return " and ".join(dict.fromkeys(f"vLLM {k.version}" for k in checks))
