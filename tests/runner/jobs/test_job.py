"""What a run shares between its jobs (runner/jobs/job.py)."""

from __future__ import annotations

import threading
import time

from runner.builds.envs import TargetEnv
from runner.jobs.job import RunContext
from runner.models.resolution import ModelResolver
from runner.builds.targets import Target


def test_jobs_side_by_side_share_one_helper_per_target(tmp_path, monkeypatch):
    """`run --jobs 2` on one target: both workers ask for its helper at the same moment. One
    helper must be made; a second one would import vLLM again and, dropped from the run's
    list, outlive the run (seen: a leftover vllm_helper.py after a --jobs 2 perf run)."""
    ctx = RunContext(ModelResolver({}, hub=False), tmp_path)
    target = TargetEnv(Target("nightly"), "/no/python", ["vllm"])
    made = ctx._new_helper

    def slow_new_helper(*args, **kwargs):  # widen the window in which a second worker could make its own
        time.sleep(0.2)
        return made(*args, **kwargs)
    monkeypatch.setattr(ctx, "_new_helper", slow_new_helper)
    barrier, got = threading.Barrier(4), []

    def ask():
        barrier.wait()
        got.append(ctx.helper(target))
    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(h) for h in got}) == 1 and list(ctx.helpers) == ["nightly"]
