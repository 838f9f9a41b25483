"""What a run shares between its jobs (runner/jobs/job.py)."""

from __future__ import annotations

import threading
import time

from driftmatrix.runner.builds.envs import TargetEnv
from driftmatrix.runner.builds.targets import Target
from driftmatrix.runner.jobs.job import RunContext
from driftmatrix.runner.models.resolution import ModelResolver


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


def _job(tmp_path, i: int = 1):
    from driftmatrix.extractor.snippet_record import Snippet
    from driftmatrix.runner.jobs.job import Job

    snippet = Snippet(
        id=f"s-{i:012d}",
        kind="serve",
        argv=["org/m-1B"],
        env={},
        model="org/m-1B",
        speculative_config=None,
        runnable=True,
    )
    return Job(snippet, TargetEnv(Target("nightly"), "/no/python", ["vllm"]), "parse")


def _a_bug_of_ours(state):
    raise KeyError("a bug of ours")


def test_a_job_our_code_fails_on_ends_in_error_with_where_it_raised(tmp_path, monkeypatch):
    """A job whose step raised was lost: with `--jobs 2` its worker thread died, the run went on and
    exited 0 without an outcome for it (seen: the over-budget twin of test_hub, once). Now it is an
    ERROR (ours, not the docs'), naming the exception and the line of ours that raised it."""
    from driftmatrix.runner.jobs import execute

    monkeypatch.setattr(execute, "STEPS", (("parse", _a_bug_of_ours),))
    out = execute.JobRunner(RunContext(ModelResolver({}, hub=False), tmp_path)).run(_job(tmp_path))
    assert out.verdict == "ERROR" and "ours, not the docs'" in out.reason
    assert "KeyError: 'a bug of ours'" in out.reason and "test_job.py:" in out.reason, out.reason


def test_side_by_side_a_failure_outside_a_job_stops_the_run_instead_of_vanishing(tmp_path, monkeypatch):
    """What fails around a job (its outcome cannot be stored) raises in the run's own thread,
    side by side as alone: a worker thread's exception is otherwise only printed."""
    import pytest

    from driftmatrix.runner.jobs import execute
    from driftmatrix.runner.outcomes import store
    from driftmatrix.runner.run import loop
    from driftmatrix.runner.run.selection import RunOptions

    def unwritable(self, outcome):
        raise OSError("no space left on device")

    monkeypatch.setattr(execute, "STEPS", ())
    monkeypatch.setattr(store.Store, "append", unwritable)
    ctx = RunContext(ModelResolver({}, hub=False), tmp_path)
    opts = RunOptions(snippets=tmp_path / "s.json", output=tmp_path / "o.jsonl", jobs=2, fmt="json")
    for jobs in ([_job(tmp_path)], [_job(tmp_path, i) for i in range(4)]):
        with pytest.raises(OSError, match="no space left"):
            loop._execute(jobs, ctx, store.Store(tmp_path / "o.jsonl"), opts, None, [], threading.Event())


def test_the_helper_sees_twins_built_after_it_started(tmp_path):
    """The sandbox binds only folders that exist when a process starts, and a target's helper starts at
    the first parse, before any twin is built or model fetched. On a fresh cache (a GitHub runner's
    /mnt, the lent H100 of issue 47) the twins folder did not exist yet: the config tier then handed
    vLLM a twin's path it could not see (HFValidationError, judged a FAIL). The run's model folders
    are made before the helper, so its real bubblewrap command binds them."""
    import shutil
    import sys

    import pytest

    if not shutil.which("bwrap"):
        pytest.fail("bubblewrap is missing: run tests/install_tools.sh (the README's test command does)")
    cache = tmp_path / "fresh-cache"
    ctx = RunContext(ModelResolver({}, hub=False), tmp_path / "work", cache_dir=cache)
    (tmp_path / "work").mkdir()
    helper = ctx.helper(TargetEnv(Target("nightly"), sys.executable, ["vllm"]))
    argv = helper.launcher().argv
    binds = {(a, b, c) for a, b, c in zip(argv, argv[1:], argv[2:]) if a == "--ro-bind"}
    for folder in ("standins", "hub", "sdists"):
        assert (cache / folder).is_dir()
        assert ("--ro-bind", str(cache / folder), str(cache / folder)) in binds, folder
