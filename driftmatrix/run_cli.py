"""`driftmatrix run`: the jobs of snippets.json x targets, run into outcomes.jsonl.

`plan -o plan.json` (driftmatrix/plan_cli.py) writes, per (target, shard) with work, the exact `run`
arguments; the workflow's run step is `driftmatrix run --plan plan.json --entry ID -o …`, which takes
every job-choosing argument from the plan (and refuses a second copy of any on its command line).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from driftmatrix.run_arg_types import declared_device, job_start, variant_list
from driftmatrix.runner.outcomes.vocabulary import TIERS
from driftmatrix.runner.settings import START_TIMEOUT_S
from driftmatrix.sandbox_cli import add_unsandboxed

PLANNED = ("snippets", "targets", "target", "tier", "shard", "variants", "stand_ins", "only", "pick", "stop_after")
"""`run` arguments a plan fixes (runner/run/planning.py `run_args`)."""


def _picks(tokens: list[str] | None) -> dict | None:
    from driftmatrix.runner.run.planning import parse_pick

    if tokens is None:
        return None
    try:
        return dict(parse_pick(t) for t in tokens)
    except ValueError as err:
        raise SystemExit(f"driftmatrix run: {err}") from None


def _from_plan(args: argparse.Namespace, parser: argparse.ArgumentParser) -> argparse.Namespace:
    """The run arguments of one plan entry, with this command line's output options."""
    try:
        plan = json.loads(Path(args.plan).read_text(encoding="utf-8"))
        entry = next(r for r in plan["runs"] if r["id"] == args.entry)
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise SystemExit(f"driftmatrix run: {args.plan}: not a readable plan ({type(err).__name__}: {err})") from None
    except StopIteration:
        ids = ", ".join(r.get("id", "?") for r in plan.get("runs", [])) or "none"
        raise SystemExit(f"driftmatrix run: {args.plan} has no entry {args.entry!r} (entries: {ids})") from None
    defaults = parser.parse_args(["run", "-"])
    twice = [a for a in PLANNED if a != "snippets" and getattr(args, a) != getattr(defaults, a)]
    if args.snippets or twice:
        raise SystemExit(
            f"driftmatrix run: --plan fixes {', '.join(['snippets', *twice] if args.snippets else twice)}; "
            "give them in the plan, not here"
        )
    planned = parser.parse_args(entry["args"])
    for name in PLANNED:
        setattr(args, name, getattr(planned, name))
    return args


def cmd_run(args: argparse.Namespace) -> int:
    import signal

    from driftmatrix.runner.run.loop import listing, run
    from driftmatrix.runner.run.selection import RunOptions

    if args.plan:
        args = _from_plan(args, args.root_parser)
    elif not args.snippets:
        print("driftmatrix run: give a snippets.json (or --plan FILE --entry ID)", file=sys.stderr)
        return 2

    def stop(signum, frame):  # CI cancellation: unwind so servers are torn down
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, stop)

    opts = RunOptions(
        snippets=Path(args.snippets),
        output=Path(args.output),
        targets=Path(args.targets) if args.targets else None,
        tier=args.tier,
        only=args.only,
        shard=args.shard,
        variants=args.variants,
        gpus=args.gpus,
        gpu_mem=args.gpu_mem,
        start_timeout=args.start_timeout,
        cache_dir=Path(args.cache_dir),
        workdir=Path(args.workdir) if args.workdir else None,
        fmt=args.format,
        junit=Path(args.junit) if args.junit else None,
        target_names=args.target,
        stand_ins=args.stand_ins,
        jobs=args.jobs,
        summary=args.summary,
        share_gpu=args.share_gpu,
        pick=_picks(args.pick),
        stop_after=args.stop_after,
        started_at=args.started_at,
        for_pages=args.for_pages,
        declared_device=args.declared_device,
        previous=[Path(p) for p in args.previous or []],
    )
    if args.fetch_only:
        from driftmatrix.runner.run.prefetch import prefetch

        return prefetch(opts)
    if args.list:
        for key in listing(opts):
            print(json.dumps([key.snippet_id, key.variant, key.target, key.tier]))
        return 0
    from driftmatrix.sandbox_cli import banner

    print(f"driftmatrix run: {banner()}", file=sys.stderr)
    return run(opts)


def add_parser(sub, cache: str) -> None:
    r = sub.add_parser("run", help="snippets.json x targets -> outcomes.jsonl")
    r.add_argument("snippets", nargs="?", help="the extractor's snippets.json")
    r.add_argument(
        "-o",
        "--output",
        default="outcomes.jsonl",
        help="outcomes file, appended to; finished jobs in it are not re-run (default: %(default)s)",
    )
    r.add_argument(
        "--previous",
        action="append",
        metavar="OUT",
        help="outcomes of earlier runs (the state's outcomes.jsonl), read only: their finished jobs are not "
        "re-run, and only this run's records go to --output (what a CI leg hands in; repeatable)",
    )
    r.add_argument(
        "--plan",
        metavar="FILE",
        help="run one entry of `driftmatrix plan -o FILE` (with --entry): "
        "the plan gives the snippets, targets, tier, shard and variants",
    )
    r.add_argument("--entry", metavar="ID", help="the plan entry (`stable-2`)")
    r.add_argument("--list", action="store_true", help="print the jobs still to do (JSON lines) and run nothing")
    r.add_argument(
        "--fetch-only",
        action="store_true",
        help="fetch the models the jobs need from the hub (configs; weights within the budget) and run "
        "nothing: the workflow's step that holds the HF token",
    )
    r.add_argument(
        "--targets",
        help="targets TOML (default: this machine's: today's stable and, without a GPU, the newest CPU build; "
        "open builds are pinned at the start as `driftmatrix resolve` pins them)",
    )
    r.add_argument(
        "--for-pages",
        action="store_true",
        help="also run each page's commands on the newest release its versions allow where no target "
        "covers them (installed on first use; without a GPU its CUDA wheel, parse and config)",
    )
    r.add_argument("--target", action="append", metavar="NAME", help="only these targets of the config (repeatable)")
    r.add_argument(
        "--tier",
        choices=TIERS,
        default="probe",
        help="the last tier to run (default: %(default)s; perf = decode tok/s, 1 and 16 streams, meant for GPUs)",
    )
    r.add_argument("--only", nargs="+", metavar="ID", help="only these snippet ids")
    r.add_argument("--shard", metavar="i/n", help="run the i-th of n cost-balanced shards (1-based)")
    r.add_argument(
        "--pick",
        nargs="+",
        metavar="ID[+VARIANT]:TIER",
        help="only these jobs, each at its own tier (what a plan gives a leg)",
    )
    r.add_argument(
        "--stop-after",
        type=float,
        metavar="S",
        help="start no job after S seconds (a leg's deadline; the jobs in flight finish, every "
        "finished outcome is kept, the rest is left for the next run)",
    )
    r.add_argument(
        "--started-at",
        type=job_start,
        metavar="EPOCH_S",
        help="when the CI job started, in Unix seconds (`date +%%s` in its first step): --stop-after "
        "(the plan's or this command line's) counts from then, so set-up is inside it; a deadline "
        "already past starts no job (exit 0, the outcomes file as it was)",
    )
    r.add_argument(
        "--variants",
        nargs="?",
        const=["no-spec"],
        type=variant_list,
        metavar="LIST",
        help="extra runs, comma-separated: no-spec (each snippet with a speculative config, "
        "without it; the default), self-spec (the served model as its own draft)",
    )
    r.add_argument(
        "--gpus",
        type=int,
        help="GPUs to use (default: those nvidia-smi lists that CUDA_VISIBLE_DEVICES leaves visible; 0 = CPU)",
    )
    r.add_argument("--gpu-mem", type=float, metavar="GB", help="memory per GPU: SKIP models that cannot fit")
    r.add_argument(
        "--declared-device",
        type=declared_device,
        default=declared_device("9.0"),
        metavar="CAP[,GIB[,N]]",
        help="a CUDA build's config tier on a machine without a GPU: build the engine config over this "
        "declared device (compute capability, GiB per GPU, GPUs; default: 9.0,140,8, an H200 host), "
        "or `none` to SKIP it",
    )
    r.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        help="jobs at once (default: one per GPU; without a GPU, two servers side by side when the memory allows)",
    )
    r.add_argument(
        "--share-gpu",
        type=int,
        default=1,
        metavar="N",
        help="up to N servers side by side on each GPU, each with --gpu-memory-utilization "
        "0.9/N instead of the documented value (noted in its outcome): for tiny twins on a "
        "large GPU (default: %(default)s)",
    )
    r.add_argument(
        "--start-timeout",
        type=float,
        default=START_TIMEOUT_S,
        metavar="S",
        help="deadline for a server to answer /health (default: %(default)s)",
    )
    r.add_argument("--cache-dir", default=cache, help="target environments (default: %(default)s)")
    r.add_argument("--workdir", help="server and helper logs (default: next to the output)")
    r.add_argument(
        "--format",
        choices=["rich", "json"],
        default="rich",
        help="rich progress bar, or JSON lines on stdout for machines",
    )
    r.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report")
    r.add_argument(
        "--summary", metavar="FILE", help="append a Markdown summary (default: $GITHUB_STEP_SUMMARY when set)"
    )
    r.add_argument(
        "--stand-ins",
        nargs="?",
        const="tiny",
        choices=["tiny", "full"],
        metavar="SIZE",
        help="replace models that cannot be had (incl. drafts in speculative configs) by "
        "architecture-preserving twins with random weights: tiny (the default; 2 layers) or "
        "full (the real sizes, for the perf tier on a GPU); verdicts are labelled stand_in",
    )
    add_unsandboxed(r)
    r.set_defaults(func=cmd_run)
