"""A verdict in words: how far a PASS or WARN went (the depth: runner/outcomes/vocabulary.py DEPTH),
where a FAIL stopped, how many ranks ran, the admonition title of a failure."""

from __future__ import annotations

from driftmatrix.extractor.snippet_record import Snippet
from driftmatrix.runner.outcomes import subcommands
from driftmatrix.runner.outcomes.outcome_record import Outcome
from driftmatrix.runner.outcomes.vocabulary import DEPTH, GOOD, STAGE_TITLE


def parser_only(o: Outcome, snippet: Snippet | None) -> bool:
    """A `subcommand` snippet's outcome (`vllm bench throughput …`) whose own argument parser accepted
    it, the tiers after it SKIPped: it is not a server (runner/outcomes/subcommands.py). As recorded (a SKIP
    after parse) or as it counts (the parser's PASS, counts.as_counted)."""
    if snippet is None or subcommands.words(snippet) is None or o.evidence.exception:
        return False
    return (o.verdict == "SKIP" and o.stage != "parse") or (o.verdict in GOOD and o.stage == "parse")


def depth_word(o: Outcome, snippet: Snippet | None = None) -> str:
    """The cell's text: how far a PASS/WARN went (`parser`, `started`), where a FAIL stopped."""
    if parser_only(o, snippet):
        return "parser only"
    if o.verdict in GOOD:
        return DEPTH.get(o.stage, (o.stage,))[0]
    if o.verdict == "FAIL":
        return f"at {o.stage}"
    return o.verdict.lower()


def depth_text(o: Outcome, snippet: Snippet | None = None) -> str:
    """In words: `accepted by the argument parser (not started)`, `fails at start`; for a subcommand
    snippet (`snippet` given) whose own parser accepted it, and the tiers after it SKIPped: `accepted
    by its own argument parser (not run: not a server)`."""
    if parser_only(o, snippet):
        return "accepted by its own argument parser (not run: not a server)"
    ranks = f", {ranks_text(o)}" if ranks_text(o) else ""
    if o.verdict in GOOD:
        return DEPTH.get(o.stage, ("", o.stage))[1] + ranks + (" (with a warning)" if o.verdict == "WARN" else "")
    if o.verdict == "FAIL":
        return f"fails at {o.stage}{ranks}"
    return "not checked" if o.verdict == "SKIP" else "the check broke"


def ranks_text(o: Outcome) -> str:
    """`ran with 4 ranks on CPU: tensor 2 x pipeline 2 parallel` where a multi-GPU command's ranks ran
    as CPU worker processes (runner/serve/ranks.py), else ""."""
    r = o.evidence.server.ranks if o.evidence.server else None
    if r is None or not isinstance(r.count, int):
        return ""
    sizes = [
        f"{name} {n}"
        for name, n in (("tensor", r.tensor), ("pipeline", r.pipeline), ("data", r.data))
        if isinstance(n, int) and n > 1
    ]
    expert = f", expert parallel over {r.expert}" if isinstance(r.expert, int) and r.expert > 1 else ""
    return f"ran with {r.count} ranks on {str(r.device or 'cpu').upper()}: {' x '.join(sizes)} parallel{expert}"


def works_on(version: str, o: Outcome) -> str:
    """`vLLM 0.32.0 accepts its arguments (parser only, not started)` / `it starts on vLLM 0.21.0`."""
    text = DEPTH.get(o.stage, ("", "", "it runs on vLLM {v}"))[2].format(v=version)
    return text + (", with a warning" if o.verdict == "WARN" else "")


def title(verdict: str, stage: str, versions: list[str]) -> str:
    """The admonition title: `Does not start on vLLM 0.20.1`, `Warns on vLLM 0.21.0`."""
    where = " and ".join(f"vLLM {v}" for v in versions)
    if verdict == "WARN":
        return f"Warns on {where}"
    return f"{STAGE_TITLE.get(stage, 'Fails on')} {where}"
