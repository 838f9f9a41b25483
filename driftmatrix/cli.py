"""`driftmatrix` command line: one sub-command per pipeline stage."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from driftmatrix.extractor import SAMPLE_DOCS
from driftmatrix.runner.settings import cache_dir


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("driftmatrix")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "(not installed)"


def _cache_dir() -> Path:
    return cache_dir()


def cmd_extract(args: argparse.Namespace) -> int:
    from rich.console import Console

    from driftmatrix.common.inert import terminal
    from driftmatrix.extractor.catalog import extract, summarize
    from driftmatrix.extractor.summary_table import render
    from driftmatrix.extractor.written_for import WrittenForError, override, release
    from driftmatrix.release_pins import release_trees

    if args.stable is not None and release(args.stable) is None:
        print(f"driftmatrix extract: --stable {args.stable!r} is not a vLLM version (e.g. 0.20.1)", file=sys.stderr)
        return 2
    try:
        written_for = override(args.written_for) if args.written_for is not None else None
    except WrittenForError as err:
        print(f"driftmatrix extract: --written-for {terminal(err)}", file=sys.stderr)
        return 2
    if args.stable is None:
        from driftmatrix.release_pins import todays_stable

        args.stable = todays_stable()
    sources = [Path(s) for s in args.sources]
    failed = []
    if args.vllm_version:
        from driftmatrix.common.package_index import PackageIndexError  # httpx only when downloading
        from driftmatrix.extractor.sdist import fetch_docs
    for version in args.vllm_version or []:
        try:
            sources.append(fetch_docs(version, Path(args.cache_dir) / "sdists"))
        except PackageIndexError as err:
            print(f"driftmatrix: error: vllm=={terminal(version)}: {terminal(err)}", file=sys.stderr)
            failed.append(version)
    if not sources and not failed:
        sources = [SAMPLE_DOCS]
        print(f"driftmatrix: no SOURCE given; extracting the embedded sample docs ({SAMPLE_DOCS})", file=sys.stderr)
    catalog, unusable = extract(
        sources,
        on_diagnostic=None if args.quiet else _print_diagnostic,
        stable=args.stable,
        written_for=written_for,
        url_base=args.url_base or "",
        model_id=args.model_id or "",
        placeholder_models=args.placeholder_model or [],
        release_trees=None if args.no_release_files else release_trees(Path(args.cache_dir), args.stable),
    )
    catalog.write(Path(args.output))
    console = Console(stderr=False)
    render(summarize(catalog), console)
    console.print(f"wrote {args.output}", markup=False)
    from driftmatrix.common.step_summary import escape, write

    pages = {src.file for s in catalog.snippets for src in s.sources}
    write(
        f"### Extract\n\n{len(catalog.snippets)} distinct commands from {len(pages)} pages"
        + (f"; could not read: {escape(', '.join(map(str, [*unusable, *failed])))}" if unusable or failed else ""),
        full="this step's log",
    )
    return 1 if unusable or failed else 0


def cmd_twin(args: argparse.Namespace) -> int:
    import json

    from driftmatrix.runner.builds.envs import EnvError, ensure
    from driftmatrix.runner.builds.resolve import pinned_at_start
    from driftmatrix.runner.builds.targets import TargetConfigError
    from driftmatrix.runner.models.twins import TwinError, build

    try:
        tfile = pinned_at_start(Path(args.targets) if args.targets else None)[0]
        target = next((t for t in tfile.targets if t.name == args.target), None) if args.target else tfile.targets[-1]
        if target is None:
            raise TargetConfigError(f"no target named {args.target}")
        env = ensure(target, Path(args.cache_dir), log=lambda m: print(m, file=sys.stderr), base_env=tfile.env)
        from driftmatrix.runner.builds import source_trees

        docs_root = source_trees.source_tree(env.version, Path(args.cache_dir)) if not target.docker else None
        twin = build(
            args.model,
            env,
            Path(args.output),
            cache=Path(args.cache_dir),
            layers=args.layers,
            tokenizer_from=args.tokenizer_from,
            full_size=args.full_size,
            docs_root=docs_root,
            split={
                "tp": args.tensor_parallel,
                "pp": args.pipeline_parallel,
                "ep": args.expert_parallel,
                "context": args.max_model_len or 1,
            },
        )
    except (TargetConfigError, EnvError, TwinError) as err:
        from driftmatrix.common.inert import terminal

        print(f"driftmatrix standin: {terminal(err)}", file=sys.stderr)
        return 1
    print(json.dumps(twin.__dict__, indent=1))
    return 0


class _Version(argparse.Action):
    """`--version`, its package metadata read only when asked (importlib.metadata costs `check` 35 ms)."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"driftmatrix {version()}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="driftmatrix", description=__doc__)
    parser.add_argument("--version", action=_Version, nargs=0, help="show driftmatrix's version and exit")
    parser.set_defaults(root_parser=parser)  # `run --plan` re-reads a plan entry's arguments with it
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("extract", help="docs trees / pages -> snippets.json")
    p.add_argument(
        "sources",
        nargs="*",
        metavar="SOURCE",
        help="vLLM docs tree, vLLM sdist tree, recipes repository, saved .html page (any site), "
        "Markdown page or folder of pages, Hugging Face model card (README.md with front matter) "
        "(default: the embedded sample docs)",
    )
    p.add_argument(
        "--vllm-version",
        action="append",
        metavar="X",
        help="also extract the docs of the vllm==X sdist from PyPI (repeatable)",
    )
    p.add_argument("-o", "--output", default="snippets.json", help="catalog to write (default: %(default)s)")
    p.add_argument("--cache-dir", default=str(_cache_dir()), help="download cache (default: %(default)s)")
    p.add_argument("-q", "--quiet", action="store_true", help="do not print per-file diagnostics on stderr")
    p.add_argument(
        "--written-for",
        metavar="SPEC",
        help="the vLLM versions every page is written for, a PEP 440 specifier (e.g. '>=0.21.0'); "
        "default: per page (a release's docs: its release line; a recipe: its min_vllm_version; "
        "an install line on the page; else the stable release and newer)",
    )
    p.add_argument(
        "--stable",
        metavar="X",
        help="today's stable vLLM release, for pages that state no version "
        "(default: the newest release the option history holds)",
    )
    p.add_argument(
        "--url-base",
        metavar="URL",
        help="where the pages of a Markdown SOURCE are published (links are URL/<page path>; a GitHub "
        "blob URL links lines); also the address of a saved page without a canonical link",
    )
    p.add_argument(
        "--model-id",
        metavar="ORG/NAME",
        help="the model of a model card SOURCE: `vllm serve` without a model or with a relative path "
        "serves it (default: from the card's front matter)",
    )
    p.add_argument(
        "--placeholder-model",
        action="append",
        metavar="WORD",
        help="a word the docs use for the reader's model (`vllm serve WORD`): never taken as a model "
        "(repeatable; adds to extractor/data/placeholders.yaml)",
    )
    p.add_argument(
        "--no-release-files",
        action="store_true",
        help="do not check the files commands name in vLLM's tree (examples/…) against the releases "
        "their pages are written for (no sdist is fetched for it)",
    )
    p.set_defaults(func=cmd_extract)

    st = sub.add_parser("standin", help="build a tiny architecture-preserving twin of a model")
    st.add_argument("model", metavar="MODEL_OR_CONFIG", help="model id, local model dir, or a config.json")
    st.add_argument("-o", "--output", required=True, help="directory to write (replaced)")
    st.add_argument(
        "--targets",
        help="targets TOML (default: this machine's: today's stable and the newest CPU build, or the GPU file)",
    )
    st.add_argument("--target", help="build with this target's env (its transformers); default: the last one")
    st.add_argument("--layers", type=int, default=2, help="decoder layers (default: %(default)s)")
    st.add_argument("--tokenizer-from", metavar="DIR", help="share this twin's tokenizer (for a draft model)")
    st.add_argument(
        "--full-size",
        action="store_true",
        help="keep the real sizes (layers, hidden sizes, vocabulary): for speed on a GPU",
    )
    for flag, what in (
        ("tensor", "heads divide by it"),
        ("pipeline", "layers at least one per stage"),
        ("expert", "experts divide by it"),
    ):
        st.add_argument(
            f"--{flag}-parallel",
            type=int,
            default=1,
            metavar="N",
            help=f"the command's {flag} parallel size: the twin's {what}",
        )
    st.add_argument(
        "--max-model-len",
        type=int,
        metavar="N",
        help="the command's context length: a twin from class defaults gets at least it",
    )
    st.add_argument("--cache-dir", default=str(_cache_dir()), help="environments and configs (default: %(default)s)")
    st.set_defaults(func=cmd_twin)
    from driftmatrix.check_cli import add_parser as add_check
    from driftmatrix.ci import add_parser as add_ci
    from driftmatrix.flaghistory_cli import add_parser as add_history
    from driftmatrix.gate_head import add_parser as add_gate  # the gate's parser, with its modes
    from driftmatrix.pipeline import add_parser as add_pipeline
    from driftmatrix.plan_cli import add_plan_parser, add_resolve_parser
    from driftmatrix.publish_cli import add_parsers
    from driftmatrix.run_cli import add_parser as add_run
    from driftmatrix.sandbox_cli import add_parser as add_sandbox
    from driftmatrix.state_branch import add_parser as add_state

    add_resolve_parser(sub)
    add_run(sub, str(_cache_dir()))
    add_plan_parser(sub)
    add_state(sub)
    add_ci(sub)
    add_gate(sub)
    add_sandbox(sub)
    add_parsers(sub)
    add_pipeline(sub, str(_cache_dir()))
    add_history(sub, str(_cache_dir()))
    add_check(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from driftmatrix.common.inert_stdio import guard_stdio

    with guard_stdio():  # a CI log reads every line: none may be a workflow command or a control code
        args = build_parser().parse_args(argv)
        from driftmatrix.sandbox_cli import apply_unsandboxed

        apply_unsandboxed(args)  # run, pipeline, gate: --unsandboxed before anything is detected
        return args.func(args)


def _print_diagnostic(diag) -> None:
    """The extractor's diagnostic line, its docs text (message, file name) made inert first."""
    from dataclasses import replace

    from driftmatrix.common.inert import terminal
    from driftmatrix.extractor.catalog import print_diagnostic

    print_diagnostic(
        replace(diag, message=terminal(diag.message), file=terminal(diag.file) if diag.file else diag.file)
    )


if __name__ == "__main__":
    sys.exit(main())
