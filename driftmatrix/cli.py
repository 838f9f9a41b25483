"""`driftmatrix` command line: one sub-command per pipeline stage."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from extractor import SAMPLE_DOCS
from runner.records import TIERS
from runner.settings import START_TIMEOUT_S, cache_dir


def _variant_list(text: str) -> list[str]:
    from runner.argv_edit import VARIANTS

    names = [v.strip() for v in text.split(",") if v.strip()]
    bad = [v for v in names if v not in VARIANTS]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"unknown variant(s) {', '.join(bad) or text!r}; known: {', '.join(VARIANTS)}")
    return names


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

    from extractor.catalog import extract, print_diagnostic, summarize
    from extractor.summary_table import render
    from extractor.written_for import WrittenForError, override, release

    if args.stable is not None and release(args.stable) is None:
        print(f"driftmatrix extract: --stable {args.stable!r} is not a vLLM version (e.g. 0.20.1)", file=sys.stderr)
        return 2
    try:
        written_for = override(args.written_for) if args.written_for is not None else None
    except WrittenForError as err:
        print(f"driftmatrix extract: --written-for {err}", file=sys.stderr)
        return 2
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
    catalog, unusable = extract(sources, on_diagnostic=None if args.quiet else print_diagnostic, stable=args.stable,
                                written_for=written_for)
    catalog.write(Path(args.output))
    console = Console(stderr=False)
    render(summarize(catalog), console)
    console.print(f"wrote {args.output}")
    return 1 if unusable or failed else 0


def cmd_run(args: argparse.Namespace) -> int:
    import signal

    from runner.main import RunOptions, run

    def stop(signum, frame):  # CI cancellation: unwind so servers are torn down
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, stop)

    return run(RunOptions(
        snippets=Path(args.snippets), output=Path(args.output),
        targets=Path(args.targets) if args.targets else None, tier=args.tier, only=args.only,
        shard=args.shard, variants=args.variants, gpus=args.gpus, gpu_mem=args.gpu_mem,
        start_timeout=args.start_timeout, cache_dir=Path(args.cache_dir),
        workdir=Path(args.workdir) if args.workdir else None, fmt=args.format,
        junit=Path(args.junit) if args.junit else None, target_names=args.target, stand_ins=args.stand_ins,
        jobs=args.jobs))


def cmd_standin(args: argparse.Namespace) -> int:
    import json

    from runner.envs import EnvError, ensure
    from runner.standins import StandInError, build
    from runner.targets import TargetConfigError, default_path, load

    try:
        tfile = load(Path(args.targets) if args.targets else default_path())
        target = next((t for t in tfile.targets if t.name == args.target), None) if args.target else tfile.targets[-1]
        if target is None:
            raise TargetConfigError(f"no target named {args.target}")
        env = ensure(target, Path(args.cache_dir), log=lambda m: print(m, file=sys.stderr))
        twin = build(args.model, env, Path(args.output), cache=Path(args.cache_dir), layers=args.layers,
                     tokenizer_from=args.tokenizer_from, full_size=args.full_size)
    except (TargetConfigError, EnvError, StandInError) as err:
        print(f"driftmatrix standin: {err}", file=sys.stderr)
        return 1
    print(json.dumps(twin.__dict__, indent=1))
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    import json
    from dataclasses import asdict

    from extractor.records import Catalog
    from runner import store
    from runner.main import RunOptions, select
    from runner.targets import TargetConfigError, default_path, load
    from runner.todo import todo

    try:
        tfile = load(Path(args.targets) if args.targets else default_path())
    except TargetConfigError as err:
        print(f"driftmatrix plan: {err}", file=sys.stderr)
        return 2
    catalog = Catalog.read(Path(args.snippets))
    previous = [o for path in args.previous or [] for o in store.read(Path(path))[0]]
    targets = [t for t in tfile.targets if not args.target or t.name in args.target]
    pairs = select(catalog, RunOptions(snippets=Path(args.snippets), output=Path("-"), variants=args.variants))
    print(json.dumps(asdict(todo(catalog, targets, args.tier, previous, pairs, args.shards))))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="driftmatrix", description=__doc__)
    parser.add_argument("--version", action="version", version=f"driftmatrix {version()}")
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
    p.add_argument("--written-for", metavar="SPEC",
                   help="the vLLM versions every page is written for, a PEP 440 specifier (e.g. '>=0.21.0'); "
                        "default: per page (a release's docs: its release line; a recipe: its min_vllm_version; "
                        "an install line on the page; else the stable release and newer)")
    p.add_argument("--stable", metavar="X", help="the current stable vLLM release (default: the stable target's pin "
                                                 "in the shipped targets file)")
    p.set_defaults(func=cmd_extract)

    r = sub.add_parser("run", help="snippets.json x targets -> outcomes.jsonl")
    r.add_argument("snippets", help="the extractor's snippets.json")
    r.add_argument("-o", "--output", default="outcomes.jsonl",
                   help="outcomes file, appended to; finished jobs in it are not re-run (default: %(default)s)")
    r.add_argument("--targets", help="targets TOML (default: the shipped config for this machine, CPU or GPU)")
    r.add_argument("--target", action="append", metavar="NAME", help="only these targets of the config (repeatable)")
    r.add_argument("--tier", choices=TIERS, default="probe",
                   help="the last tier to run (default: %(default)s; perf = decode tok/s, 1 and 16 "
                        "streams, meant for GPUs)")
    r.add_argument("--only", nargs="+", metavar="ID", help="only these snippet ids")
    r.add_argument("--shard", metavar="i/n", help="run the i-th of n cost-balanced shards (1-based)")
    r.add_argument("--variants", nargs="?", const=["no-spec"], type=_variant_list, metavar="LIST",
                   help="extra runs, comma-separated: no-spec (each snippet with a speculative config, "
                        "without it; the default), self-spec (the served model as its own draft)")
    r.add_argument("--gpus", type=int, help="GPUs to use (default: as many as nvidia-smi lists; 0 = CPU)")
    r.add_argument("--gpu-mem", type=float, metavar="GB", help="memory per GPU: SKIP models that cannot fit")
    r.add_argument("--jobs", type=int, metavar="N", help="jobs at once (default: one per GPU; without a GPU, two "
                                                       "servers side by side when the memory allows)")
    r.add_argument("--start-timeout", type=float, default=START_TIMEOUT_S, metavar="S",
                   help="deadline for a server to answer /health (default: %(default)s)")
    r.add_argument("--cache-dir", default=str(_cache_dir()), help="target environments (default: %(default)s)")
    r.add_argument("--workdir", help="server and helper logs (default: next to the output)")
    r.add_argument("--format", choices=["rich", "json"], default="rich",
                   help="rich progress bar, or JSON lines on stdout for machines")
    r.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report")
    r.add_argument("--stand-ins", nargs="?", const="tiny", choices=["tiny", "full"], metavar="SIZE",
                   help="replace models that cannot be had (incl. drafts in speculative configs) by "
                        "architecture-preserving twins with random weights: tiny (the default; 2 layers) or "
                        "full (the real sizes, for the perf tier on a GPU); verdicts are labelled stand_in")
    r.set_defaults(func=cmd_run)

    st = sub.add_parser("standin", help="build a tiny architecture-preserving twin of a model")
    st.add_argument("model", metavar="MODEL_OR_CONFIG", help="model id, local model dir, or a config.json")
    st.add_argument("-o", "--output", required=True, help="directory to write (replaced)")
    st.add_argument("--targets", help="targets TOML (default: the shipped config for this machine)")
    st.add_argument("--target", help="build with this target's env (its transformers); default: the last one")
    st.add_argument("--layers", type=int, default=2, help="decoder layers (default: %(default)s)")
    st.add_argument("--tokenizer-from", metavar="DIR", help="share this twin's tokenizer (for a draft model)")
    st.add_argument("--full-size", action="store_true",
                    help="keep the real sizes (layers, hidden sizes, vocabulary): for speed on a GPU")
    st.add_argument("--cache-dir", default=str(_cache_dir()), help="environments and configs (default: %(default)s)")
    st.set_defaults(func=cmd_standin)
    pl = sub.add_parser("plan", help="what a scheduled run still has to do (JSON: jobs, shards with work)")
    pl.add_argument("snippets", help="snippets.json")
    pl.add_argument("--targets", help="targets TOML (default: the shipped config for this machine)")
    pl.add_argument("--target", action="append", metavar="NAME", help="only these targets (repeatable)")
    pl.add_argument("--tier", choices=TIERS, default="probe")
    pl.add_argument("--shards", type=int, default=1, help="how the run job is split (default: %(default)s)")
    pl.add_argument("--variants", nargs="?", const=["no-spec"], type=_variant_list, metavar="LIST")
    pl.add_argument("--previous", nargs="*", metavar="OUT", help="the previous run's outcomes.jsonl files")
    pl.set_defaults(func=cmd_plan)

    from driftmatrix.history_cli import add_parser as add_history
    from driftmatrix.pipeline import add_parser as add_pipeline
    from driftmatrix.publish_cli import add_parsers
    add_parsers(sub)
    add_pipeline(sub, str(_cache_dir()))
    add_history(sub, str(_cache_dir()))
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
