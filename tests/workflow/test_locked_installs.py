"""Issue 60, read with GitHub's own parser (steps.mjs): point 5, every job of the scheduled workflow that
holds a token (a secret or `github.token` in a step's env, or a write permission) installs from the
hashed lock before driftmatrix itself, which comes with `--no-deps` (tests/test_lock.py: the lock);
point 4, a leg and the fix check write and upload only the records they made (`run --previous`), not a
copy of the state."""

from __future__ import annotations

import re

from test_sandbox_steps import SCHEDULED, workflow

LOCKED = re.compile(
    r"\.venv/bin/pip install --require-hashes -r requirements/lock\.txt && "
    r"\.venv/bin/pip install --no-deps --no-build-isolation -e \."
)


def _holds_token(job: dict) -> bool:
    perms = job.get("permissions") or {}
    envs = [str(v) for s in job["steps"] for v in (s.get("env") or {}).values()]
    return "write" in perms.values() or any("secrets." in v or "github.token" in v for v in envs)


def test_every_job_holding_a_token_installs_from_the_lock():
    jobs = {j["id"]: j for j in workflow(SCHEDULED)["jobs"]}
    holders = {name for name, job in jobs.items() if _holds_token(job)}
    assert {"extract", "run", "verify-fixes", "save-state", "pull-requests"} <= holders
    for name in holders:
        installs = [s["run"] for s in jobs[name]["steps"] if "pip install" in (s.get("run") or "")]
        if name == "deploy":  # Pages' own permissions; installs nothing
            assert not installs
            continue
        assert installs, name
        for script in installs:
            assert LOCKED.search(script), (name, script)
            # nothing else is pip-installed there: no open range reaches a job with a token
            assert script.count("pip install") == 2, (name, script)


def test_legs_upload_only_the_records_they_wrote():
    jobs = {j["id"]: j for j in workflow(SCHEDULED)["jobs"]}
    for name, previous, out in (
        ("run", "state/outcomes.jsonl", '"outcomes-$ENTRY.jsonl"'),
        ("verify-fixes", "merged.jsonl", "fixes-outcomes.jsonl"),
    ):
        scripts = "\n".join(s.get("run") or "" for s in jobs[name]["steps"])
        runs = [
            s["run"]
            for s in jobs[name]["steps"]
            if "driftmatrix run" in (s.get("run") or "") and "--fetch-only" not in s["run"]
        ]
        assert runs and all(f"--previous {previous} -o {out}" in re.sub(r"\\\n\s*", "", r) for r in runs), runs
        # the output never starts as a copy of earlier outcomes (it used to: `cp state/outcomes.jsonl …`)
        assert not re.search(rf"\bcp\s+\S*{re.escape(previous)}\s", scripts), name
        uploads = [s for s in jobs[name]["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact@")]
        (upload,) = uploads
        paths = [p.strip() for p in upload["with"]["path"].split("\n") if p.strip()]
        assert not any("state" in p or p == previous for p in paths), paths
