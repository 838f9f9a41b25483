"""A Python block as a reader pastes it, judged by Python's own parser (issue 45, point 6).

The reader copies the block as the page shows it and drops the indentation the whole block shares
(`textwrap.dedent`: a block indented inside a list item is still pasted flush left). What Python's
parser (`ast.parse`, this interpreter's) rejects then does not run as written: a `python-syntax`
lint (extractor/snippet_record.py BREAKING_LINTS), doc-drift on its page (publisher/defects.py).
Only the parser decides: `compile`'s later checks (`'return' outside function`, top-level `await`)
reject excerpts of a function body that the docs show on purpose (0.33.0 docs/training/async_rl.md),
and Jupyter runs top-level `await`.

A block marked python that holds a shell command (vllm-gaudi's managing_warm-up.md: `export …`,
`VAR=… vllm serve …`) is not Python at all: its reader runs it in a shell, whatever the fence says,
so it is read as the shell block it is, with a `python-fence-holds-shell` lint (a warning: the page
highlights it as Python; nobody pastes `export` into Python).
"""

from __future__ import annotations

import ast
import re
import sys
import textwrap
from dataclasses import dataclass

from driftmatrix.extractor.shell_commands import ShellScan, scan
from driftmatrix.extractor.snippet_builder import Place, build, from_shell_text, snippet_id
from driftmatrix.extractor.snippet_record import Lint, Snippet

PARSER = f"Python {sys.version_info.major}.{sys.version_info.minor}"
"""Whose parser judged: a syntax newer than it (a later Python's) would read as an error."""
_SHELL_KINDS = ("serve", "docker", "subcommand")


@dataclass(frozen=True)
class Rejection:
    """Python's own reading of a block it does not parse."""

    error: str
    """The exception's name: `IndentationError`, `SyntaxError`, `ValueError` (a NUL byte)."""
    message: str
    """Python's words: `unexpected indent`."""
    line: int
    """1-based line in the block."""

    def words(self) -> str:
        return f"{self.error}: {self.message} (line {self.line} of the block)"


def as_pasted(text: str) -> tuple[str, ast.Module | Rejection]:
    """The block as a reader pastes it (common indentation dropped, an interactive session's prompts
    and output too; line numbers kept) and its tree, or Python's rejection of it."""
    pasted = _without_prompts(textwrap.dedent(text))
    try:
        return pasted, ast.parse(pasted)
    except (SyntaxError, ValueError) as err:
        return pasted, Rejection(
            type(err).__name__, getattr(err, "msg", None) or str(err), getattr(err, "lineno", None) or 1
        )


def _without_prompts(text: str) -> str:
    """A `>>>` session (a pycon block) as the code typed into it: the prompts' lines without `>>> ` or
    `... `, the output lines blank (a reader types the code, not the prompts)."""
    if not _PROMPT.search(text):
        return text
    return "\n".join(
        line.strip()[4:] if line.strip()[:4] in (">>> ", "... ") or line.strip() in (">>>", "...") else ""
        for line in text.split("\n")
    )


_PROMPT = re.compile(r"^\s*>>>( |$)", re.M)


def rejected(text: str, pasted: str, why: Rejection, what: str, place: Place) -> list[Snippet]:
    """The snippets of a block Python rejects that holds vLLM usage (`what`, in words): the shell
    commands it holds if it is a shell block under a python fence, else one snippet that does not run."""
    found = scan(text)
    if any(inv.kind in _SHELL_KINDS and not inv.within for inv in found.invocations):
        return _shell_under_python_fence(text, why, place, found)
    line = place.line + why.line - 1
    lint = Lint(
        "python-syntax",
        f"{why.words()}: {PARSER}'s parser stops there, so the block, which {what}, does not run as written",
        line,
    )
    snippet = build(
        "python", [], {}, place.source(0, pasted.rstrip("\n")), lints=[lint], python={"call": None, "kwargs": {}}
    )
    # No call was read: the id hashes the block as pasted, so two broken blocks stay two snippets.
    snippet.id = snippet_id("python", ["python-syntax", pasted], {}, None)
    snippet.runnable, snippet.reason = False, f"python-syntax: {why.words()}"
    return [snippet]


def _shell_under_python_fence(text: str, why: Rejection, place: Place, found: ShellScan) -> list[Snippet]:
    """What its reader runs: the shell commands, each with the warning that the fence is wrong."""
    snippets = from_shell_text(text, place, found=found)
    for snippet in snippets:
        snippet.lints.append(
            Lint(
                "python-fence-holds-shell",
                "the block is marked python but holds a shell command: the page shows "
                f"it as Python (which stops at line {why.line} of the block: {why.error}: {why.message}); read as the "
                "shell block a reader runs",
                place.line,
                place.file,
                place.corpus,
                place.version,
            )
        )
    return snippets
