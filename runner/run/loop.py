"""`driftmatrix run`: snippets.json × targets -> outcomes.jsonl.

Exit status: 0 when every job reached a verdict (PASS, WARN, FAIL or SKIP: drift is reported in
the outcomes, not here); EXIT_ERRORS when any job ended in ERROR (ours or the machine's: a broken
shard is red in CI); EXIT_TARGET when a target could not be installed or its helper could not start
(one diagnostic per such target, its jobs not run: runner/jobs/target_check.py), whether or not some
job of another target also ended in ERROR; 2 when the targets or snippets file cannot be used;
EXIT_INTERRUPTED on Ctrl-C / SIGTERM (the outcomes finished so far are kept, nothing half-done is
recorded)."""

from __future__ import annotations

import os
import queue
import signal
import threading
import time

from driftmatrix.common import step_summary
from driftmatrix.common.inert import console_markup, log_json, terminal
from driftmatrix.common.redact import Redactor
from driftmatrix.extractor.snippet_record import Catalog
from driftmatrix.runner.argv.parallel import ranks_of
from driftmatrix.runner.argv.tier import deepest_tier
from driftmatrix.runner.builds.envs import EnvError, TargetEnv, ensure
from driftmatrix.runner.builds.resolve import ResolveError, pinned_at_start
from driftmatrix.runner.builds.targets import TargetConfigError, gpu_devices
from driftmatrix.runner.isolation.sandbox import detection
from driftmatrix.runner.jobs.execute import JobRunner
from driftmatrix.runner.jobs.job import Job, RunContext, host_facts
from driftmatrix.runner.jobs.target_check import build_of, helpers_start
from driftmatrix.runner.models.resolution import ModelResolver
from driftmatrix.runner.outcomes import store
from driftmatrix.runner.outcomes.outcome_record import JobKey, Outcome
from driftmatrix.runner.outcomes.target_diagnostic import TargetDiagnostic
from driftmatrix.runner.outcomes.vocabulary import TIERS
from driftmatrix.runner.run import deadline as leg_deadline
from driftmatrix.runner.run import junit, page_builds, planning, run_summary
from driftmatrix.runner.run.selection import RunOptions, select
from driftmatrix.runner.serve import ranks
from driftmatrix.runner.settings import cpu_slots, default_jobs

EXIT_ERRORS = 3
"""Some job ended in ERROR (its outcome says why; the other outcomes are written as usual)."""
EXIT_TARGET = 4
"""A target could not be installed or its helper could not start: its jobs were not run."""
EXIT_INTERRUPTED = 130
"""Interrupted (the shell's code for SIGINT): what finished is in the outcomes file."""


class GpuPool:
    """The GPUs jobs take turns on (physical indexes: a server gets them as CUDA_VISIBLE_DEVICES). With
    `share` > 1 a one-GPU job may run beside others on a GPU (up to `share` at once, the least used
    first); a job needing several GPUs takes unused ones."""

    def __init__(self, devices: list[int], share: int = 1):
        self.holders, self.share, self.cv = {d: 0 for d in devices}, max(share, 1), threading.Condition()

    @property
    def free(self) -> list[int]:
        """The GPUs no job holds now."""
        return sorted(d for d, n in self.holders.items() if n == 0)

    def _pick(self, k: int) -> list[int] | None:
        if k == 1:
            open_ = sorted((n, d) for d, n in self.holders.items() if n < self.share)
            return [open_[0][1]] if open_ else None
        unused = sorted(d for d, n in self.holders.items() if n == 0)
        return unused[:k] if len(unused) >= k else None

    def acquire(self, k: int) -> list[int]:
        with self.cv:
            while (taken := self._pick(k)) is None:
                self.cv.wait()
            for d in taken:
                self.holders[d] += 1 if k == 1 else self.share
            return taken

    def release(self, ids: list[int]) -> None:
        with self.cv:
            for d in ids:
                self.holders[d] -= 1 if len(ids) == 1 else self.share
            self.cv.notify_all()


def listing(opts: RunOptions) -> list[JobKey]:
    """The jobs `run` would still do with these options, decided as `plan` decides them (by the
    versions the targets pin; the outcomes file given as output and the `--previous` ones count as done)."""
    tfile = pinned_at_start(opts.targets)[0]
    pairs = select(Catalog.read(opts.snippets), opts)
    done = planning.done_by_version(o for path in [opts.output, *opts.previous] for o in store.read(path)[0])
    targets = page_builds.run_targets(tfile, pairs, opts, len(gpu_devices()))
    return [key for t in targets for key in planning.pending(pairs, t, opts.tier, done, opts.pick)[0]]


def run(opts: RunOptions, console=None) -> int:
    from rich.console import Console

    console = console or Console(stderr=True)
    deadline = leg_deadline.monotonic_deadline(opts.stop_after, opts.started_at)
    try:
        tfile, unpinned = pinned_at_start(opts.targets)
    except TargetConfigError as err:
        console.print(f"[red]driftmatrix run: {console_markup(err)}", soft_wrap=True)
        return 2
    if unpinned:
        console.print(f"[yellow]driftmatrix run: {console_markup(unpinned)}", soft_wrap=True)
    try:
        catalog = Catalog.read(opts.snippets)
    except (OSError, ValueError, KeyError, TypeError) as err:
        console.print(
            f"[red]driftmatrix run: {console_markup(opts.snippets)}: not a readable snippets.json "
            f"({type(err).__name__}: {console_markup(err)})",
            soft_wrap=True,
        )
        return 2
    pairs = select(catalog, opts)
    unknown = sorted(set(opts.target_names or []) - {t.name for t in tfile.targets})
    if unknown:
        console.print(f"[red]driftmatrix run: {tfile.path} has no target {', '.join(unknown)}", soft_wrap=True)
        return 2
    if leg_deadline.passed(deadline):  # set-up took the leg's time: installing now would only delay the upload
        return _too_late(opts, console)
    devices = gpu_devices()
    if opts.gpus is not None:  # asked for: the first N visible ones; by index only where no GPU is listed
        # and CUDA_VISIBLE_DEVICES names none (never another runner's GPUs)
        unlisted = not devices and "CUDA_VISIBLE_DEVICES" not in os.environ
        devices = list(range(opts.gpus)) if unlisted else devices[: opts.gpus]
    gpus = len(devices)
    try:
        targets = page_builds.run_targets(tfile, pairs, opts, gpus)
    except ResolveError as err:
        console.print(f"[red]driftmatrix run --for-pages: {console_markup(err)}", soft_wrap=True)
        return 2
    out_store = store.Store(opts.output, opts.previous)
    for problem in out_store.problems:
        console.print(f"[yellow]{console_markup(problem)}", soft_wrap=True)
    workdir = opts.workdir or opts.output.parent / "driftmatrix-work"
    share = opts.share_gpu if gpus else 1
    ctx = RunContext(
        resolver=ModelResolver(tfile.models),
        workdir=workdir,
        base_env=tfile.env,
        start_timeout=opts.start_timeout,
        gpus=gpus,
        devices=devices,
        gpu_mem_gb=opts.gpu_mem,
        share_gpu=share,
        redact=Redactor(),
        stand_ins=opts.stand_ins,
        cache_dir=opts.cache_dir,
        jobs=opts.jobs or default_jobs(gpus) * share,
        declared_device=opts.declared_device,
    )
    if refused := detection.required_missing():  # each job says so too (ERROR): nothing runs plainly
        console.print(f"[red]driftmatrix run: {refused}", soft_wrap=True)
    finished: list[Outcome] = []
    diagnostics: list[TargetDiagnostic] = []
    stopping = threading.Event()
    try:
        jobs, skipped_done = _jobs(targets, pairs, ctx, out_store, opts, console, diagnostics)
        _execute(jobs, ctx, out_store, opts, console, finished, stopping, deadline)
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (run_cli): stop now, keep what finished
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the teardown short
        stopping.set()
        ctx.close(now=True)
        out_store.close()
        console.print(
            f"[yellow]driftmatrix run: interrupted; {len(finished)} finished outcome(s) kept in {opts.output}",
            soft_wrap=True,
        )
        return EXIT_INTERRUPTED
    finally:
        ctx.close()
        out_store.close()
    if opts.junit:
        junit.write(finished, opts.junit)
    if opts.fmt != "json":
        run_summary.print_table(finished, console, opts.tier)
    step_summary.write(
        run_summary.run_markdown(finished, opts.tier, skipped_done, opts.shard)
        + "".join(f"\n\n**{step_summary.escape(d.line(), 600)}**" for d in diagnostics),
        opts.summary,
    )
    if deadline and (left := _not_started(jobs, finished)):
        text = leg_deadline.stopped_text(opts.stop_after, opts.started_at, left)
        console.print(f"[yellow]{text}")
        step_summary.write(f"**{text}.**\n", opts.summary)
    for d in diagnostics:  # last, where a reader of the log looks
        console.print(terminal(d.line()), style="red", soft_wrap=True, markup=False)  # pip's or vLLM's words
    errors = sum(o.verdict == "ERROR" for o in finished)
    if diagnostics:
        console.print(f"[red]{len(diagnostics)} target(s) could not be checked: exit {EXIT_TARGET}")
        return EXIT_TARGET
    if errors:
        console.print(f"[red]{errors} job(s) ended in ERROR (ours or the machine's, not the docs'): exit {EXIT_ERRORS}")
        return EXIT_ERRORS
    return 0


def _too_late(opts: RunOptions, console) -> int:
    """A run whose deadline passed before it began: no job, nothing installed, the outcomes file as
    it was; the exit status of a run its deadline stopped (0: nothing ended in ERROR)."""
    text = leg_deadline.passed_at_start_text(opts.stop_after, opts.started_at, len(listing(opts)))
    console.print(f"[yellow]driftmatrix run: {text}", soft_wrap=True)
    if opts.junit:
        junit.write([], opts.junit)
    step_summary.write(f"{run_summary.run_heading(opts.tier, opts.shard)}\n\n**{text}.**", opts.summary)
    return 0


def _jobs(
    targets,
    pairs,
    ctx: RunContext,
    out_store: store.Store,
    opts: RunOptions,
    console,
    diagnostics: list[TargetDiagnostic],
) -> tuple[list[Job], int]:
    """(the jobs to run, how many were already done). A target whose environment cannot be made,
    or whose helper cannot start, is one diagnostic (written to the outcomes file), its jobs left out."""
    envs: dict[str, TargetEnv] = {}
    by_target: dict[str, list[Job]] = {}
    skipped_done = 0

    def unusable(target, stage: str, why: str, jobs: int) -> None:
        d = TargetDiagnostic(target.name, build_of(target), stage, why[:4000], jobs, host=host_facts())
        diagnostics.append(d)
        out_store.append_record(d.to_dict())
        console.print(f"target {target.name}: {terminal(why)}", style="red", soft_wrap=True, markup=False)

    for target in targets:
        try:
            envs[target.name] = ensure(
                target, opts.cache_dir, log=lambda m: console.print(f"[cyan]{console_markup(m)}"), base_env=ctx.base_env
            )
        except (EnvError, OSError) as err:
            unusable(target, "install", str(err), len(pairs))
            continue
        for snippet, variant in filter(lambda pair: page_builds.covers(target, pair[0]), pairs):
            tier = deepest_tier(snippet, target, opts.asked_tier(snippet.id, variant))
            job = Job(snippet, envs[target.name], tier, variant)
            if job.key() in out_store.done:
                skipped_done += 1
                continue
            by_target.setdefault(target.name, []).append(job)
    if skipped_done:
        where = f"{opts.output}" + (" or --previous" if opts.previous else "")
        console.print(f"{skipped_done} job(s) already in {where}: reused, not re-run")
    # every job asks the target's helper first (parse): started here, side by side, once per target
    broken = helpers_start([envs[name] for name in by_target], ctx)
    for name, why in broken.items():
        unusable(envs[name].target, "helper", why, len(by_target.pop(name)))
    return _interleaved([job for jobs in by_target.values() for job in jobs]), skipped_done


def _not_started(jobs: list[Job], finished: list[Outcome]) -> int:
    ran = {(o.snippet_id, o.variant, o.target.name) for o in finished}
    return sum((j.snippet.id, j.variant, j.target.target.name) not in ran for j in jobs)


class CpuSeats:
    """The places of the jobs side by side on a machine without a GPU. A job whose ranks run as CPU
    worker processes (runner/serve/ranks.py) takes every place, and all the cores: its ranks take the
    memory of the servers that would run beside it (8 ranks of a twin: 14.7 GB)."""

    def __init__(self, places: int):
        self.free, self.places, self.cv = places, places, threading.Condition()

    def needed(self, argv: list[str], gpus: int) -> int:
        """Places a server job takes: one, or all of them for a server of CPU ranks."""
        return self.places if ranks.on_cpu(ranks_of(argv), gpus) else 1

    def acquire(self, k: int) -> int:
        with self.cv:
            while self.free < k:
                self.cv.wait()
            self.free -= k
        return k

    def release(self, k: int) -> None:
        with self.cv:
            self.free += k
            self.cv.notify_all()


def _execute(
    jobs: list[Job],
    ctx: RunContext,
    out_store: store.Store,
    opts: RunOptions,
    console,
    results: list[Outcome],
    stopping: threading.Event,
    deadline: float | None = None,
) -> list[Outcome]:
    """Run the jobs, appending each outcome to `results` and the store as it finishes; once
    `stopping` is set (an interrupted run), a job that ends is not recorded: it was cut short. No
    job starts after `deadline` (a leg's): the rest are left for the next run."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    lock = threading.Lock()
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=opts.fmt == "json" or not jobs,
    )
    task = progress.add_task("jobs", total=len(jobs))

    def on_stage(job: Job, stage: str) -> None:
        progress.update(task, description=f"{job.snippet.id} {job.variant or ''} · {job.target.target.name} · {stage}")

    runner = JobRunner(ctx, on_stage)
    pool = GpuPool(ctx.devices, ctx.share_gpu) if ctx.gpus else None

    def do(job: Job, cores: list[int] | None = None) -> None:
        ids: list[int] = []
        serves = TIERS.index(job.tier) >= 2 and job.snippet.kind != "subcommand"  # a subcommand: parser only
        if pool and serves:
            ids = pool.acquire(min(ranks_of(job.snippet.argv).world, ctx.gpus))
        # every server takes a place, so a server of CPU ranks, taking them all, runs alone
        held = seats.acquire(seats.needed(job.snippet.argv, ctx.gpus)) if seats is not None and serves else 0
        alone = seats is not None and held == seats.places > 1
        try:
            outcome = runner.run(job, ids, None if alone else cores)
        finally:
            if ids:
                pool.release(ids)
            if held:
                seats.release(held)
        if stopping.is_set():
            return
        out_store.append(outcome)
        with lock:
            results.append(outcome)
            progress.advance(task)
            if opts.fmt == "json":
                print(
                    log_json(
                        {
                            "event": "outcome",
                            "snippet_id": outcome.snippet_id,
                            "variant": outcome.variant,
                            "target": outcome.target.name,
                            "stage": outcome.stage,
                            "verdict": outcome.verdict,
                            "reason": outcome.reason,
                        }
                    ),
                    flush=True,
                )

    with progress:
        workers = min(opts.jobs or default_jobs(ctx.gpus) * ctx.share_gpu, max(len(jobs), 1))

        def due() -> bool:  # no job starts after a leg's deadline: what finished is kept and uploaded
            return deadline is None or time.monotonic() < deadline

        seats: CpuSeats | None = None
        if workers == 1:
            for job in jobs:
                if not due():
                    break
                do(job)
        else:  # side by side: one job per GPU (parse/config-only jobs need none), or a few on a CPU
            q: queue.Queue = queue.Queue()
            for job in jobs:
                q.put(job)

            slots = [] if ctx.gpus else cpu_slots(workers)  # GPU jobs are placed by their GPUs
            seats = None if ctx.gpus else CpuSeats(workers)
            failed: list[BaseException] = []

            def worker(slot: int):
                while due() and not failed:
                    try:
                        job = q.get_nowait()
                    except queue.Empty:
                        return
                    try:
                        do(job, slots[slot] if slots else None)
                    except Exception as err:  # noqa: BLE001 — raised again below, in the main thread
                        if not stopping.is_set():  # else its helper or server was killed under it: not a result
                            failed.append(err)  # a thread's exception would only be printed: the run went on, exit 0
                        return

            threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(workers)]
            for t in threads:
                t.start()
            try:
                for t in threads:
                    t.join()
            except BaseException:  # SIGTERM/Ctrl-C reach the main thread: tear down what the workers run
                stopping.set()
                while not q.empty():
                    q.get_nowait()
                runner.abort()
                raise
            if failed:
                raise failed[0]
    return results


def _interleaved(jobs: list[Job]) -> list[Job]:
    """Targets taking turns, so jobs run side by side are mostly of different targets (each with its
    own helper), in each target's own order."""
    by_target: dict[str, list[Job]] = {}
    for job in jobs:
        by_target.setdefault(job.target.target.name, []).append(job)
    queues = list(by_target.values())
    return [q[i] for i in range(max((len(q) for q in queues), default=0)) for q in queues if i < len(q)]
