"""`driftmatrix resolve`, `plan` and `run`: which builds, which jobs per shard, running them.

`plan -o plan.json` writes, per (target, shard) with work, the exact `run` arguments; the
workflow's run step is `driftmatrix run --plan plan.json --entry ID -o …`, which takes every
job-choosing argument from the plan (and refuses a second copy of any on its command line).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from driftmatrix.runner.outcomes.vocabulary import TIERS
from driftmatrix.runner.run.budget import GITHUB_JOB_LIMIT_H, LEG_HOURS, MAX_LEGS, QUEUE_HOURS
from driftmatrix.runner.settings import START_TIMEOUT_S
from driftmatrix.sandbox_cli import add_unsandboxed

PLANNED = ("snippets", "targets", "target", "tier", "shard", "variants", "stand_ins", "only", "pick", "stop_after")
"""`run` arguments a plan fixes (runner/run/planning.py `run_args`)."""


def _variant_list(text: str) -> list[str]:
    from driftmatrix.runner.argv.edit import VARIANTS

    names = [v.strip() for v in text.split(",") if v.strip()]
    bad = [v for v in names if v not in VARIANTS]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"unknown variant(s) {', '.join(bad) or text!r}; known: {', '.join(VARIANTS)}")
    return names


def _positive(kind):
    """An argparse type: a number of `kind` above 0."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not value > 0 or value == float("inf"):
            raise argparse.ArgumentTypeError(f"a {'whole ' if kind is int else ''}number above 0, got {text!r}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its own messages
    return parse


def _job_start(text: str) -> float:
    """`--started-at`: Unix seconds, not in the future (runner/run/deadline.py)."""
    from driftmatrix.runner.run.deadline import started_at_error

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a time in Unix seconds (`date +%s`): {text!r}") from None
    if why := started_at_error(value):
        raise argparse.ArgumentTypeError(why)
    return value


def _picks(tokens: list[str] | None) -> dict | None:
    from driftmatrix.runner.run.planning import parse_pick

    if tokens is None:
        return None
    try:
        return dict(parse_pick(t) for t in tokens)
    except ValueError as err:
        raise SystemExit(f"driftmatrix run: {err}") from None


def _declared_device(text: str) -> dict | None:
    """`9.0`, `9.0,140` or `9.0,140,8` (capability, GiB per GPU, GPUs), or `none`."""
    from driftmatrix.runner.settings import DECLARED_DEVICE

    if text.strip().lower() in ("none", "off", "no"):
        return None
    parts = [p.strip() for p in text.split(",")]
    try:
        major, _, minor = parts[0].partition(".")
        int(major), int(minor or 0)
        decl = {**DECLARED_DEVICE, "capability": parts[0]}
        if parts[0] != DECLARED_DEVICE["capability"]:
            decl["name"] = f"declared CUDA {parts[0]} device"
        if len(parts) > 1:
            decl["memory_gib"] = float(parts[1])
        if len(parts) > 2:
            decl["count"] = int(parts[2])
    except ValueError:
        raise argparse.ArgumentTypeError(f"not CAPABILITY[,GIB[,COUNT]]: {text!r}") from None
    if len(parts) > 3:
        raise argparse.ArgumentTypeError(f"not CAPABILITY[,GIB[,COUNT]]: {text!r}")
    return decl


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
        declared_device=args.declared_device,
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


def cmd_plan(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from driftmatrix.runner.builds.resolve import check_exact
    from driftmatrix.runner.builds.targets import TargetConfigError, default_path, load
    from driftmatrix.runner.outcomes import store
    from driftmatrix.runner.run.planning import LegBudget, todo

    path = Path(args.targets) if args.targets else default_path()
    try:
        tfile = load(path)
        if args.require_pinned:
            check_exact(tfile)
    except TargetConfigError as err:
        print(f"driftmatrix plan: {err}", file=sys.stderr)
        return 2
    unknown = sorted(set(args.target or []) - {t.name for t in tfile.targets})
    if unknown:  # a typo must not plan an empty, green run
        print(
            f"driftmatrix plan: {path} has no target {', '.join(unknown)} (it has "
            f"{', '.join(t.name for t in tfile.targets)})",
            file=sys.stderr,
        )
        return 2
    previous = [o for p in args.previous or [] if Path(p).exists() for o in store.read(Path(p))[0]]
    targets = [t for t in tfile.targets if not args.target or t.name in args.target]
    for given, name in ((args.daily_tier, "--daily-tier"), (args.runners, "--runners")):
        if given and not args.leg_hours:
            print(f"driftmatrix plan: {name} needs --leg-hours", file=sys.stderr)
            return 2
    leg = (
        LegBudget(
            args.leg_hours * 3600,
            max(args.max_legs, 1),
            args.daily_tier,
            max(args.shards, 1),
            args.job_hours * 3600,
            args.runners,
            args.queue_hours,
        )
        if args.leg_hours
        else None
    )
    result = asdict(
        todo(
            Path(args.snippets),
            Path(args.targets) if args.targets else path,
            targets,
            args.tier,
            previous,
            args.shards,
            args.variants,
            args.stand_ins,
            detail=args.detail,
            leg=leg,
        )
    )
    result["entries"] = [r["id"] for r in result["runs"]]
    text = json.dumps(result)
    from driftmatrix.common.step_summary import write
    from driftmatrix.runner.run.run_summary import plan_markdown

    write(plan_markdown(result, args.tier, args.daily_tier), full="`plan.json` (in the run's `inputs` artifact)")
    if args.output:
        Path(args.output).write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


def cmd_resolve(args: argparse.Namespace) -> int:
    from driftmatrix.runner.builds.resolve import ResolveError, dump, resolve
    from driftmatrix.runner.builds.targets import TargetConfigError, default_path, load

    source = Path(args.targets) if args.targets else default_path()
    try:
        resolved = resolve(load(source), stable=args.stable or None)
    except (TargetConfigError, ResolveError) as err:
        print(f"driftmatrix resolve: {err}", file=sys.stderr)
        return 2
    dump(resolved, Path(args.output), source)
    from driftmatrix.common.inert import table_cell
    from driftmatrix.common.step_summary import escape, write

    write(
        "### Builds of this run\n\n| target | installs | how it was chosen |\n|---|---|---|\n"
        + "\n".join(
            f"| {escape(t.name)} | {table_cell(t.pip or t.docker or t.python)}"  # as code: no backslash shown
            f"{' from ' + table_cell(', '.join(t.index_urls)) if t.index_urls else ''} | {escape(t.resolved or '')} |"
            for t in resolved.targets
        ),
        full="`targets.resolved.toml` (in the run's `inputs` artifact)",
    )
    for t in resolved.targets:
        print(
            json.dumps(
                {
                    "target": t.name,
                    "pip": t.pip,
                    "docker": t.docker,
                    "python": bool(t.python),
                    "index_urls": t.index_urls,
                    "commit": t.commit,
                    "resolved": t.resolved,
                }
            )
        )
    return 0


def _run_parser(sub, cache: str) -> None:
    r = sub.add_parser("run", help="snippets.json x targets -> outcomes.jsonl")
    r.add_argument("snippets", nargs="?", help="the extractor's snippets.json")
    r.add_argument(
        "-o",
        "--output",
        default="outcomes.jsonl",
        help="outcomes file, appended to; finished jobs in it are not re-run (default: %(default)s)",
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
    r.add_argument("--targets", help="targets TOML (default: the shipped config for this machine, CPU or GPU)")
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
        type=_job_start,
        metavar="EPOCH_S",
        help="when the CI job started, in Unix seconds (`date +%%s` in its first step): --stop-after "
        "(the plan's or this command line's) counts from then, so set-up is inside it; a deadline "
        "already past starts no job (exit 0, the outcomes file as it was)",
    )
    r.add_argument(
        "--variants",
        nargs="?",
        const=["no-spec"],
        type=_variant_list,
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
        type=_declared_device,
        default=_declared_device("9.0"),
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


def add_parsers(sub, cache: str) -> None:
    rs = sub.add_parser("resolve", help="pin every target once (stable: newest release; nightly: one commit)")
    rs.add_argument("--targets", help="targets TOML (default: the shipped config for this machine)")
    rs.add_argument("--stable", metavar="X", help="pin the stable target to this release (the repository's pin)")
    rs.add_argument("-o", "--output", required=True, help="the resolved targets file to write")
    rs.set_defaults(func=cmd_resolve)

    _run_parser(sub, cache)

    pl = sub.add_parser("plan", help="what a scheduled run still has to do (JSON: jobs, the run matrix)")
    pl.add_argument("snippets", help="snippets.json")
    pl.add_argument("--targets", help="targets TOML (default: the shipped config for this machine)")
    pl.add_argument("--target", action="append", metavar="NAME", help="only these targets (repeatable)")
    pl.add_argument("--tier", choices=TIERS, default="probe")
    pl.add_argument(
        "--shards",
        type=int,
        default=1,
        help="how each target's run is split (default: %(default)s; with --leg-hours: legs per target at least)",
    )
    pl.add_argument(
        "--leg-hours",
        type=float,
        metavar="H",
        help="pack each target's jobs into legs predicted under H hours from the recorded durations "
        f"of --previous (GitHub ends a job at {GITHUB_JOB_LIMIT_H:g} h; the workflow uses "
        f"{LEG_HOURS:g}), as many legs as needed up to --max-legs; what does not fit is left for "
        "the next run, the least recently checked first",
    )
    pl.add_argument(
        "--job-hours",
        type=float,
        default=GITHUB_JOB_LIMIT_H,
        metavar="H",
        help="the CI job's limit: a leg stops starting jobs halfway between --leg-hours and this "
        "(default: %(default)s, GitHub's)",
    )
    pl.add_argument(
        "--max-legs",
        type=int,
        default=MAX_LEGS,
        metavar="N",
        help="legs over all targets (default: %(default)s, GitHub's matrix limit)",
    )
    pl.add_argument(
        "--runners",
        type=_positive(int),
        metavar="N",
        help="with --leg-hours: how many runners take the legs (self-hosted); the day has at most "
        "N x floor(--queue-hours / --leg-hours) legs over all targets (at least N), the rest is "
        "left for the next run, the least recently checked first (default: no runner cap, "
        "GitHub-hosted runners)",
    )
    pl.add_argument(
        "--queue-hours",
        type=_positive(float),
        default=QUEUE_HOURS,
        metavar="Q",
        help="with --runners: planned hours of legs that may queue on one runner (default: "
        "%(default)s; GitHub cancels a job queued 24 h)",
    )
    pl.add_argument(
        "--daily-tier",
        choices=TIERS,
        metavar="TIER",
        help="with --leg-hours: every command at this tier every day; the deeper --tier on the "
        "share that fits, the least recently checked first",
    )
    pl.add_argument("--variants", nargs="?", const=["no-spec"], type=_variant_list, metavar="LIST")
    pl.add_argument("--stand-ins", nargs="?", const="tiny", choices=["tiny", "full"], metavar="SIZE")
    pl.add_argument(
        "--previous",
        nargs="*",
        metavar="OUT",
        help="the previous run's outcomes.jsonl files (missing files: a first run)",
    )
    pl.add_argument("--require-pinned", action="store_true", help="refuse targets that are not exact pins")
    pl.add_argument("--detail", action="store_true", help="list each entry's jobs")
    pl.add_argument("-o", "--output", help="also write the plan here (for `run --plan`)")
    pl.set_defaults(func=cmd_plan)
