"""One job = one snippet (or its counterfactual variant) x one target, through the tiers: a loop
over `driftmatrix.runner.jobs.tiers.STEPS` up to the tier the job asks for; the first step that decides ends it.
parse and config run in the target's long-lived helper; start, probe and perf on a real server."""

from __future__ import annotations

import threading
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path

from driftmatrix.runner.isolation.sandbox.limits import for_kind
from driftmatrix.runner.jobs.job import Job, RunContext, host_facts
from driftmatrix.runner.jobs.tiers import STEPS
from driftmatrix.runner.jobs.tiers.state import JobState, apply, error, finish
from driftmatrix.runner.outcomes.outcome_record import Outcome, TargetRef
from driftmatrix.runner.serve.helper_client import HelperError


class JobRunner:
    """Runs jobs; `on_stage(job, stage)` reports progress."""

    def __init__(self, ctx: RunContext, on_stage=lambda job, stage: None):
        self.ctx, self.on_stage = ctx, on_stage
        self.active: dict[int, JobState] = {}
        """The jobs running now (by id of their state), so an interrupted run can stop their servers."""
        self._lock = threading.Lock()

    def abort(self) -> None:
        """Stop every running job's server (the run was interrupted; called from the main thread)."""
        with self._lock:
            running = list(self.active.values())
        for state in running:
            state.close()

    def run(self, job: Job, gpu_ids: list[int] | None = None, cpu_ids: list[int] | None = None) -> Outcome:
        t0 = time.monotonic()
        out = _new_outcome(job)
        if out.host.get("contained"):  # the limits every contained process of this job had
            out.host["sandbox_limits"] = for_kind("server", self.ctx.jobs).describe()
        state = JobState(
            job, self.ctx, out, list(gpu_ids or []), list(cpu_ids or []), report=lambda stage: self.on_stage(job, stage)
        )
        verdict = None
        with self._lock:
            self.active[id(state)] = state
        try:
            for tier, step in STEPS:
                if not state.wants(tier):
                    break
                verdict = step(state)
                if verdict is not None:
                    break
        except HelperError as err:
            verdict = error(f"the parse/config helper failed (ours, not the docs'): {err}")
        except Exception as err:  # noqa: BLE001 — a bug of ours must end in an outcome, never a lost job
            verdict = error(f"driftmatrix failed on this job (ours, not the docs'): {_raised_at(err)}")
        finally:
            state.close()
            with self._lock:
                self.active.pop(id(state), None)
        apply(out, verdict or finish(out))
        out.duration_s = round(time.monotonic() - t0, 2)
        self._redact(out)
        return out

    def _redact(self, out: Outcome) -> None:
        r = self.ctx.redact
        out.argv = r(out.argv)
        out.reason = r(out.reason)
        ev = out.evidence
        ev.exception = ev.exception and ev.exception.rewritten(r)
        ev.warnings, ev.probes = [w.rewritten(r) for w in ev.warnings], [p.rewritten(r) for p in ev.probes]
        ev.log_excerpt, ev.notes, ev.effective_config = r(ev.log_excerpt), r(ev.notes), r(ev.effective_config)


def _raised_at(err: BaseException) -> str:
    """`Type: message (file:line)` of where our code raised, for the ERROR's reason."""
    frames = traceback.extract_tb(err.__traceback__)
    where = f" ({Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    return f"{type(err).__name__}: {str(err)[:500]}{where}"


def _new_outcome(job: Job) -> Outcome:
    info = job.target.info
    return Outcome(
        snippet_id=job.snippet.id,
        variant=job.variant,
        tier=job.tier,
        stage="parse",
        verdict="PASS",
        target=TargetRef(
            job.target.target.name,
            job.target.version,
            job.target.commit,
            info.get("distribution"),
            info.get("torch"),
            info.get("transformers"),
            info.get("torch_cuda"),
            info.get("without") or None,
            job.target.target.label,
        ),
        started=datetime.now(UTC).isoformat(timespec="seconds"),
        host=host_facts(),
    )
