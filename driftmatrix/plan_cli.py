"""`driftmatrix resolve` and `plan`: which builds (one pin per build for the run), which jobs per
shard or leg (`plan -o plan.json`: per (target, shard) with work, the exact `run` arguments that
`driftmatrix run --plan plan.json --entry ID` takes, driftmatrix/run_cli.py)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from driftmatrix.run_arg_types import positive, variant_list
from driftmatrix.runner.outcomes.vocabulary import TIERS
from driftmatrix.runner.run.budget import GITHUB_JOB_LIMIT_H, LEG_HOURS, MAX_LEGS, QUEUE_HOURS


def cmd_plan(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from driftmatrix.runner.builds.resolve import check_exact, pinned_at_start
    from driftmatrix.runner.builds.targets import TargetConfigError, default_path, load
    from driftmatrix.runner.outcomes import store
    from driftmatrix.runner.run.planning import LegBudget, todo

    path = Path(args.targets) if args.targets else default_path()
    try:
        if args.require_pinned:  # the workflow's shards: the extract job pinned them once
            check_exact(tfile := load(path))
        else:  # as `run` would: its open builds pinned now
            tfile = pinned_at_start(path)[0]
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


def add_resolve_parser(sub) -> None:
    rs = sub.add_parser("resolve", help="pin every target once (stable: newest release; nightly: one commit)")
    rs.add_argument(
        "--targets",
        help="targets TOML (default: this machine's: today's stable and the newest CPU build, or the GPU file)",
    )
    rs.add_argument("--stable", metavar="X", help="pin the stable target to this release (the repository's pin)")
    rs.add_argument("-o", "--output", required=True, help="the resolved targets file to write")
    rs.set_defaults(func=cmd_resolve)


def add_plan_parser(sub) -> None:
    pl = sub.add_parser("plan", help="what a scheduled run still has to do (JSON: jobs, the run matrix)")
    pl.add_argument("snippets", help="snippets.json")
    pl.add_argument(
        "--targets",
        help="targets TOML (default: this machine's: today's stable and the newest CPU build, or the GPU file)",
    )
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
        type=positive(int),
        metavar="N",
        help="with --leg-hours: how many runners take the legs (self-hosted); the day has at most "
        "N x floor(--queue-hours / --leg-hours) legs over all targets (at least N), the rest is "
        "left for the next run, the least recently checked first (default: no runner cap, "
        "GitHub-hosted runners)",
    )
    pl.add_argument(
        "--queue-hours",
        type=positive(float),
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
    pl.add_argument("--variants", nargs="?", const=["no-spec"], type=variant_list, metavar="LIST")
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
