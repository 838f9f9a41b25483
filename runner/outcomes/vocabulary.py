"""The words of a verdict, in one place: what a job can amount to (the verdicts), the tiers it runs in
order and how far a verdict went in words (the depths), the icons shown beside them, and the kinds of
judgement the publisher makes of a command for its pages' versions (docs/guide/judgements.md says
them for readers).

The runner writes verdicts and tiers into its records; the publisher reads them and shows the rest:
both take them from here, the lowest part of the runner, which every stage may import. Nothing else
defines a verdict's, tier's or judgement's name, icon or words (tests/test_vocabulary.py).
"""

from __future__ import annotations

from typing import Literal, get_args

# The verdicts

VerdictName = Literal["PASS", "WARN", "FAIL", "SKIP", "ERROR"]
"""What a job amounts to (docs/guide/judgements.md, Verdicts); the one list of verdicts."""
VERDICTS: tuple[VerdictName, ...] = get_args(VerdictName)
REAL = ("PASS", "WARN", "FAIL")
"""Verdicts about the command (SKIP: not checked; ERROR: the check broke)."""
GOOD = ("PASS", "WARN")
"""It runs (a WARN runs: a warning is a warning, not a failure)."""
ICONS = {"PASS": "✔", "WARN": "⚠", "FAIL": "✘", "SKIP": "–", "ERROR": "⚙"}
"""A verdict's icon on the site, in matrix.json and on an evidence page."""
VERDICT_MEANING = {
    "PASS": "runs as far as it was checked (the depth says how far)",
    "WARN": "runs as far as it was checked, with a vLLM warning about a documented feature",
    "FAIL": "stops at the stage shown (with the evidence)",
    "SKIP": "not checked (placeholder, model or hardware not available, …)",
    "ERROR": "the check itself broke (our fault or the infrastructure's, not the docs')",
}
"""A verdict in words: the site's legend and matrix.json's `meaning`."""

# The tiers, and how far a verdict went

TierName = Literal["parse", "config", "start", "probe", "perf"]
"""The tiers, in the order they run (a job asked for one runs the ones before it); the one list of tiers."""
TIERS: tuple[TierName, ...] = get_args(TierName)
StageName = TierName
"""Where a verdict was reached: one of the tiers (the first failing one, or the last run)."""


def stage_rank(stage: str) -> int:
    """How far a stage goes: parse 0 … perf 4 (-1 for anything else)."""
    return TIERS.index(stage) if stage in TIERS else -1


DEPTH = {
    # stage -> (the cell's word, what a PASS there has shown, how a sentence says it works)
    "parse": (
        "parser",
        "accepted by the argument parser (not started)",
        "vLLM {v} accepts its arguments (parser only, not started)",
    ),
    "config": ("config", "engine config built (not started)", "vLLM {v} builds its engine config (not started)"),
    "start": ("started", "server started", "it starts on vLLM {v}"),
    "probe": ("probed", "server started, requests answered", "it starts on vLLM {v} and answers requests"),
    "perf": (
        "perf",
        "server started, requests answered, speed measured",
        "it starts on vLLM {v}, answers requests and was measured under load",
    ),
}
"""How deep a verdict went: every PASS and WARN says it, in a cell, a page, matrix.json, a warning."""
STAGE_TITLE = {
    "parse": "Is rejected by the argument parser of",
    "config": "Is rejected by the engine config of",
    "start": "Does not start on",
    "probe": "Starts but fails a request on",
    "perf": "Starts but fails under load on",
}
"""A FAIL's admonition title by the stage it stopped at, before the builds: `Does not start on vLLM 0.20.1`."""
PLAIN_STAGE = {
    "parse": "the argument parser",
    "config": "the engine config",
    "start": "server start",
    "probe": "requests answered",
    "perf": "speed measured",
}
"""A stage as an evidence page names it: where a job stopped, or how far it was to go."""

# The status line under a command in a docs build (publisher/mkdocs_plugin.py): plain characters,
# one or two words, as a line of someone else's docs theme carries them.
STATUS_LINE_ICONS = {"PASS": "✓", "WARN": "⚠", "FAIL": "✗", "SKIP": "·", "ERROR": "!"}
STATUS_LINE_DEPTH = {
    "parse": "parses",
    "config": "config builds",
    "start": "starts",
    "probe": "starts, answers",
    "perf": "starts, measured",
}
"""How far a PASS went, in one or two words (the evidence page says it in full)."""

# The judgements (publisher/judgement.py makes them)

JudgementKind = Literal["doc-drift", "vllm-regression", "needs-newer", "ok", "unknown"]
"""What a command amounts to for a page's versions (docs/guide/judgements.md); the one list of judgements."""
JUDGEMENTS: tuple[JudgementKind, ...] = get_args(JudgementKind)
"""Most severe first: a command on several pages is shown with its most severe judgement."""
JUDGEMENT_MEANING = {
    "doc-drift": "fails on a vLLM build its page is written for, or the shell (or Python) does not run it as written, "
    "or the option history says those versions lack one of its options: the docs are wrong for their readers",
    "vllm-regression": "passed on an earlier build the page is written for, fails on a later one: a vLLM bug, not a doc bug",
    "needs-newer": "fails only on builds older than the page's versions: not a doc bug",
    "ok": "runs on the builds its page is written for, as deep as shown",
    "unknown": "no build its page is written for was checked",
}
"""A judgement in words: the site's legend and matrix.json's `judgementMeaning`."""
