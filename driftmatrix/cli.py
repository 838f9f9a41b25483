"""`driftmatrix` command line: one sub-command per pipeline stage."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import extractor

SAMPLE_DOCS = Path(extractor.__file__).resolve().parent / "data" / "sample-docs"


def _cache_dir() -> Path:
    base = os.environ.get("DRIFTMATRIX_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "driftmatrix")
    return Path(base)


def cmd_extract(args: argparse.Namespace) -> int:
    from rich.console import Console

    from extractor.catalog import extract, print_diagnostic, summarize
    from extractor.summary_table import render

    sources = [Path(s) for s in args.sources]
    failed = []
    if args.vllm_version:
        from extractor.sdist import SdistError, fetch_docs  # httpx only when downloading
    for version in args.vllm_version or []:
        try:
            sources.append(fetch_docs(version, Path(args.cache_dir) / "sdists"))
        except SdistError as err:
            print(f"driftmatrix: error: vllm=={version}: {err}", file=sys.stderr)
            failed.append(version)
    if not sources and not failed:
        sources = [SAMPLE_DOCS]
        print(f"driftmatrix: no SOURCE given; extracting the embedded sample docs ({SAMPLE_DOCS})", file=sys.stderr)
    catalog, unusable = extract(sources, on_diagnostic=None if args.quiet else print_diagnostic)
    catalog.write(Path(args.output))
    console = Console(stderr=False)
    render(summarize(catalog), console)
    console.print(f"wrote {args.output}")
    return 1 if unusable or failed else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="driftmatrix", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("extract", help="docs trees / pages -> snippets.json")
    p.add_argument("sources", nargs="*", metavar="SOURCE",
                   help="vLLM docs tree, vLLM sdist tree, recipes repository, or saved .html page "
                        "(default: the embedded sample docs)")
    p.add_argument("--vllm-version", action="append", metavar="X",
                   help="also extract the docs of the vllm==X sdist from PyPI (repeatable)")
    p.add_argument("-o", "--output", default="snippets.json", help="catalog to write (default: %(default)s)")
    p.add_argument("--cache-dir", default=str(_cache_dir()), help="download cache (default: %(default)s)")
    p.add_argument("-q", "--quiet", action="store_true", help="do not print per-file diagnostics on stderr")
    p.set_defaults(func=cmd_extract)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
