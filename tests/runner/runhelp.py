"""Helpers shared by the runner tests (imported by conftest and the test modules)."""

from __future__ import annotations

import copy
import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from driftmatrix.extractor.catalog import extract
from driftmatrix.runner.builds.resolve import stable_pin
from driftmatrix.runner.builds.targets import SEED_CPU
from driftmatrix.runner.outcomes.outcome_record import Outcome
from driftmatrix.runner.settings import cache_dir

HERE = Path(__file__).resolve().parent
CACHE = cache_dir()


def docs_tree(root: Path, markdown: str) -> Path:
    (root / "docs").mkdir(parents=True, exist_ok=True)
    (root / "mkdocs.yaml").write_text("site_name: under test\n")
    (root / "docs" / "index.md").write_text(markdown)
    return root


def catalog_of(root: Path) -> tuple[Path, dict[str, list[str]]]:
    """Extract with the real extractor; return snippets.json and {heading anchor: [ids]}."""
    catalog, unusable = extract(stable=stable_pin(SEED_CPU), sources=[root])
    assert not unusable
    path = root / "snippets.json"
    catalog.write(path)
    by_anchor: dict[str, list[str]] = {}
    for s in catalog.snippets:
        by_anchor.setdefault(s.sources[0].anchor, []).append(s.id)
    return path, by_anchor


def run_argv(*args: str) -> list[str]:
    """`driftmatrix run ARGS...` as an argv list."""
    return [sys.executable, "-m", "driftmatrix.cli", "run", *args]


def run_cli(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(run_argv(*args, "--cache-dir", str(CACHE)), cwd=cwd, capture_output=True, text=True)
    if check and proc.returncode:
        raise AssertionError(f"driftmatrix run exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def outcomes(path: Path) -> list[Outcome]:
    return [Outcome.from_dict(json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


def pick(items: list[Outcome], snippet_id: str, target: str, variant: str | None = None) -> Outcome:
    found = [o for o in items if o.snippet_id == snippet_id and o.target.name == target and o.variant == variant]
    assert len(found) == 1, f"{snippet_id}/{target}/{variant}: {len(found)} outcomes"
    return found[0]


def once_per_session(tmp_path_factory, name: str, make: Callable[[Path], object]) -> Path:
    """A folder that `make` fills once for the whole test session, even with pytest-xdist: the
    first worker to ask makes it under the workers' shared base directory, the others wait for it
    and read it (pytest-xdist's recipe for session fixtures that run once)."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    work, done = root / name, root / f"{name}.done"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir()
            make(work)
            done.touch()
    return work


def rejudged(o: Outcome, device: str = "gpu") -> str:
    """A recorded outcome's verdict by today's rules (runner/jobs/tiers/state.judge_failure): a FAIL may
    now be the twin's or the machine's; other verdicts stand."""
    from driftmatrix.runner.jobs.tiers.state import judge_failure

    if o.verdict != "FAIL":
        return o.verdict
    twins = [copy.copy(t) for t in o.evidence.twins]  # reason() marks a twin as not counting: not the record's
    return judge_failure(twins, o.stage, o.evidence.exception, o.target.version, device)[0].verdict


def raw_answer(helper, request: dict, timeout: float = 60) -> dict:
    """The helper's answer to `request` (given an id here) as it wrote it: the client's HelperAnswer
    keeps only vLLM's fields, and the fork server's tests read more (a stand-in's, `zygote`)."""
    with helper.lock:
        if helper.proc is None:
            helper._start()
        helper._seq += 1
        helper.proc.stdin.write((json.dumps({"id": helper._seq, **request}) + "\n").encode())
        helper.proc.stdin.flush()
        return helper._read(timeout)


def run_judged(snippets: Path, targets: Path, tier: str, target: str, cwd: Path):
    """`driftmatrix run` of `snippets` at `tier` on one target of `targets`, then the publisher's reading
    of it: (outcomes, Results, Judge)."""
    from driftmatrix.publisher.judgement import Judge
    from driftmatrix.publisher.results import load

    out = cwd / "outcomes.jsonl"
    run_cli(str(snippets), "--targets", str(targets), "--tier", tier, "--target", target, "-o", str(out), cwd=cwd)
    results = load(snippets, [out])
    return outcomes(out), results, Judge(results)
