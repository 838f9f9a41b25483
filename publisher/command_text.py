"""The command as a reader sees it: as the docs show it, or a run's argv as a command line."""

from __future__ import annotations

import shlex

from driftmatrix.extractor.snippet_record import Snippet
from driftmatrix.runner.outcomes import subcommands


def command(snippet: Snippet) -> str:
    """The command as the docs show it (first place), else rebuilt from the argv."""
    if snippet.sources and snippet.sources[0].text.strip():
        return snippet.sources[0].text.strip()
    return run_as(snippet, snippet.argv, snippet.env)


def run_as(snippet: Snippet, argv: list[str], env: dict[str, str] | None = None) -> str:
    """`argv` as a command line after the snippet's program: `vllm serve …`, or for a subcommand
    snippet its own words (`vllm bench throughput …`)."""
    prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in (env or {}).items())
    return " ".join(p for p in (prefix, subcommands.program(snippet), shlex.join(argv)) if p)
