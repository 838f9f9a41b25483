"""Short Markdown summaries for a CI job's page (`$GITHUB_STEP_SUMMARY`), written one way by every command.

Text from the docs and from vLLM (snippet reasons, exception messages) is untrusted: it is cut
short and shown as code (common/inert.py), so that it cannot open HTML, links, images or table
cells, nor mention anyone. Every summary goes through `write`, which keeps a step under GitHub's
limit (`driftmatrix.common.inert.STEP_SUMMARY_CAP`).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from driftmatrix.common.inert import STEP_SUMMARY_CAP, cap, clip, code_block, code_span, plain

FULL_LIST = "the job's outcomes file (`outcomes.jsonl`, uploaded as its artifact)"
"""Where a summary cut at the cap says the rest is, unless its writer says better."""


def escape(text: object, limit: int = 160) -> str:
    """One line of text for a prose position or a table cell: escaped and defused
    (`driftmatrix.common.inert.plain`). Docs and vLLM text goes in `code_span` instead."""
    return plain(text, limit)


def write(markdown: str, path: str | os.PathLike | None = None, full: str = FULL_LIST) -> bool:
    """Append to `path`, else to `$GITHUB_STEP_SUMMARY` when set; False when there is nowhere to
    write, or no room. What this step's summary already holds counts: together they stay within
    `STEP_SUMMARY_CAP`, a longer text cut at a row with a line saying where the `full` list is."""
    target = path or os.environ.get("GITHUB_STEP_SUMMARY")
    if not target or not markdown:
        return False
    held = Path(target).stat().st_size if Path(target).is_file() else 0
    text = cap(markdown.rstrip(), full, STEP_SUMMARY_CAP - held - 2)  # 2: the blank line after it
    if not text:
        return False
    with Path(target).open("a", encoding="utf-8") as fh:
        fh.write(text + "\n\n")
    return True


def log_tail(title: str, log: Path, lines: int = 20) -> str:
    """A heading (`title`: the workflow's words, escaped) and the last `lines` lines of `log` as one
    code block that no line of it can close, each line cut at 2,000 characters (the end of a log is
    what explains a failure, and the cap would keep a block's first lines); a missing log says so."""
    if not log.is_file():
        return f"### {plain(title, 300)}\n\nNo log: {code_span(log.name)} was not written."
    tail = [clip(line, 2000) for line in log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]]
    return f"### {plain(title, 300)}\n\n" + code_block("\n".join(tail))


def main(argv: list[str] | None = None) -> int:
    """`python -m driftmatrix.common.step_summary --title T --log FILE`: a log's tail into this step's summary,
    capped like every summary (a workflow step that has only bash and driftmatrix's Python)."""
    p = argparse.ArgumentParser(prog="python -m driftmatrix.common.step_summary")
    p.add_argument("--title", required=True)
    p.add_argument("--log", required=True, type=Path)
    p.add_argument("--lines", type=int, default=20)
    p.add_argument("--full", default="this job's log", help="where the whole log is (said when the summary is cut)")
    p.add_argument("--summary", help="append here (default: $GITHUB_STEP_SUMMARY)")
    args = p.parse_args(argv)
    write(log_tail(args.title, args.log, args.lines), args.summary, args.full)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
