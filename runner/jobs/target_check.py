"""A target that cannot be checked at all — pip cannot install it, or its parse/config helper
cannot start (vLLM's parser cannot be built: a moved name, a broken build) — is one diagnostic for
that target, not one ERROR per job: its jobs are not run, the run's summary and exit status
(EXIT_TARGET) say so, and the diagnostic is written into the outcomes file as a record of its own
kind (runner/outcomes/target_diagnostic.py), which the site shows."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from driftmatrix.runner.builds.envs import TargetEnv
from driftmatrix.runner.builds.targets import Target
from driftmatrix.runner.jobs.job import RunContext
from driftmatrix.runner.serve.helper_client import HelperError


def build_of(target: Target) -> str:
    return target.pip or target.docker or target.python or "?"


def helpers_start(envs: list[TargetEnv], ctx: RunContext) -> dict[str, str]:
    """{target name: why} for the targets whose long-lived helper cannot start, all started side by
    side (each pays its vLLM import now instead of in its first job). A helper that timed out is tried
    once more (a loaded machine); one that answered "not ready" is not: that is the build."""

    def start(env: TargetEnv) -> str | None:
        helper = ctx.helper(env)
        for attempt in (1, 2):
            try:
                helper.start()
                return None
            except HelperError as err:
                if attempt == 2 or "could not be built" in str(err):
                    return str(err)
        return None

    if not envs:
        return {}
    with ThreadPoolExecutor(len(envs)) as pool:
        found = dict(zip((e.target.name for e in envs), pool.map(start, envs)))
    return {name: why for name, why in found.items() if why}
