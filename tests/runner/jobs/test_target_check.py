"""The targets' helpers start side by side (runner/jobs/target_check.py) and are the very processes the
jobs then ask: a process forked from a pool's thread got SIGKILL when that thread ended (bubblewrap's
--die-with-parent follows the forking thread), so every run imported vLLM twice per target."""

from __future__ import annotations

import threading
import time

from runhelp import CACHE

from driftmatrix.runner.jobs.job import RunContext
from driftmatrix.runner.jobs.target_check import helpers_start
from driftmatrix.runner.models.resolution import ModelResolver
from driftmatrix.runner.serve.server import Server


def test_helpers_started_side_by_side_live_on_for_the_jobs(cpu_envs, tmp_path):
    ctx = RunContext(ModelResolver({}, hub=False), tmp_path, cache_dir=CACHE)
    envs = [cpu_envs["nightly"], cpu_envs["stable"]]
    try:
        assert helpers_start(envs, ctx) == {}  # started in a pool whose threads have ended now
        started = {e.target.name: ctx.helper(e).proc.pid for e in envs}
        for env in envs:
            helper = ctx.helper(env)
            answer = helper.ask(["Qwen/Qwen3-0.6B", "--max-model-len", "512"], "parse")
            assert answer.result == "ok", answer.error
            assert helper.proc.pid == started[env.target.name] and helper.proc.poll() is None  # not started again
    finally:
        ctx.close()


def test_a_server_started_in_a_thread_outlives_the_thread(tmp_path):
    """The same for a server: it is stopped by the runner, never by the end of the thread that
    started it."""
    server = Server(["sleep", "60"], {}, tmp_path / "server.log", port=1)
    thread = threading.Thread(target=server.start)
    thread.start()
    thread.join()
    try:
        time.sleep(1)  # SIGKILL on the thread's end would have come by now
        assert server.alive()
    finally:
        server.stop()
    assert not server.alive()
