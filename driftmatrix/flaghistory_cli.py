"""`driftmatrix history`: the option history of every vLLM release, read from the sdists."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def cmd_history(args: argparse.Namespace) -> int:
    from rich.console import Console

    from driftmatrix.common.inert import console_markup
    from driftmatrix.common.package_index import PackageIndexError
    from driftmatrix.common.versions import parse_version
    from driftmatrix.flaghistory.build import ReleaseRead, build

    console = Console(stderr=True)
    if parse_version(args.since) is None:
        console.print(
            f"[red]driftmatrix history: --since {console_markup(repr(args.since))} is not a version (e.g. 0.6.0)"
        )
        return 2

    def progress(read: ReleaseRead) -> None:
        if not args.quiet:
            state = f"{len(read.options)} options" if read.options else "[yellow]not read"
            console.print(
                f"vllm {read.version}: {state}",
                *(f"[yellow]  {console_markup(d)}" for d in read.diagnostics),
                soft_wrap=True,
            )

    started = time.monotonic()
    try:
        history = build(Path(args.cache_dir) / "flag-history", args.since, only=args.release, progress=progress)
    except (PackageIndexError, OSError) as err:
        console.print(f"[red]driftmatrix history: {console_markup(err)}", soft_wrap=True)
        return 1
    Path(args.output).write_text(json.dumps(history, indent=1, sort_keys=False) + "\n")
    flags = history["flags"].values()
    console.print(
        f"{len(history['releases'])} releases read ({len(history['diagnostics'])} with diagnostics), "
        f"{len(history['flags'])} options: {sum(1 for f in flags if f['removed'])} removed, "
        f"{sum(1 for f in flags if f['deprecated'])} deprecated; wrote {args.output} "
        f"in {time.monotonic() - started:.1f} s"
    )
    return 0 if history["releases"] else 1


def add_parser(sub: argparse._SubParsersAction, cache_default: str) -> None:
    h = sub.add_parser(
        "history",
        help="every vLLM release's `vllm serve` options -> flag-history.json",
        description="Reads each release's sdist from the index (PEP 691 JSON; "
        "DRIFTMATRIX_INDEX_URL) statically with ast, and writes when each option "
        "was added, deprecated (with vLLM's words) and removed.",
    )
    h.add_argument("--since", default="0.6.0", metavar="X", help="first release to read (default: %(default)s)")
    h.add_argument("--release", action="append", metavar="X", help="only these releases (repeatable)")
    h.add_argument("-o", "--output", default="flag-history.json", help="file to write (default: %(default)s)")
    h.add_argument("--cache-dir", default=cache_default, help="download cache (default: %(default)s)")
    h.add_argument("-q", "--quiet", action="store_true", help="no line per release")
    h.set_defaults(func=cmd_history)
