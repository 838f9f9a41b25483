"""Deadlines, teardown and interrupted runs: no process left behind, no finished result lost."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from runhelp import CACHE, catalog_of, docs_tree, outcomes, run_cli

from driftmatrix.runner.run.loop import EXIT_ERRORS

BATCH = """# batch

```bash
vllm serve Qwen/Qwen3-0.6B --max-model-len 512 --disable-log-requests
```

```bash
vllm serve Qwen/Qwen3-0.6B --max-model-len 512 --max-num-seqs 4
```
"""


def alive(pids: set[int]) -> set[int]:
    out = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            out.add(pid)
    return out


def descendants(root: int) -> set[int]:
    """Every live process under `root` (servers, their workers, the sandbox around them): host pids,
    which a server's own log cannot give when it runs in its own pid namespace."""
    children: dict[int, list[int]] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def mentioning(text: str) -> set[int]:
    """Live processes whose command line names `text` (the sandbox names the run's log directory)."""
    found = set()
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            if text in Path(f"/proc/{entry}/cmdline").read_bytes().decode(errors="replace"):
                found.add(int(entry))
        except OSError:
            continue
    return alive(found)


def test_killed_runner_keeps_finished_outcomes_and_rerun_skips_them(targets_toml, tmp_path):
    snippets, _ = catalog_of(docs_tree(tmp_path / "docs", BATCH))
    out = tmp_path / "o.jsonl"
    cmd = [
        sys.executable,
        "-m",
        "driftmatrix.cli",
        "run",
        str(snippets),
        "--targets",
        str(targets_toml),
        "--target",
        "nightly",
        "--cache-dir",
        str(CACHE),
        "-o",
        str(out),
        "--format",
        "json",
    ]
    runner = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    logs = tmp_path / "driftmatrix-work" / "logs"
    deadline = time.monotonic() + 600
    # wait for the first (parse-tier) outcome and for the second job's engine to be up
    while time.monotonic() < deadline:
        if out.exists() and out.read_text().count("\n") >= 1 and logs.exists():
            started = [p for p in logs.glob("*.log") if "EngineCore" in p.read_text(errors="replace")]
            if started:
                break
        assert runner.poll() is None, runner.stderr.read().decode()[-2000:]
        time.sleep(1)
    else:
        raise AssertionError("the server never started")
    pids = descendants(runner.pid)
    assert alive(pids)
    runner.send_signal(signal.SIGKILL)  # the hardest way to die: no cleanup code runs
    runner.wait()
    before = out.read_text()
    assert before.count("\n") == 1
    end = time.monotonic() + 60
    while alive(pids) and time.monotonic() < end:
        time.sleep(1)
    assert not alive(pids), "server processes outlived the runner"
    # rerun: the finished outcome is kept byte for byte and not re-run; the unfinished job runs
    # again, under a start deadline it cannot meet: its server is killed at the deadline
    summary = tmp_path / "summary.md"
    proc = run_cli(
        str(snippets),
        "--targets",
        str(targets_toml),
        "--target",
        "nightly",
        "-o",
        str(out),
        "--start-timeout",
        "5",
        "--summary",
        str(summary),
        cwd=tmp_path,
        check=False,
    )
    assert "1 job(s) already in" in proc.stderr
    after = out.read_text()
    assert after.startswith(before) and after.count("\n") == 2
    assert proc.returncode == EXIT_ERRORS, proc.stderr[-2000:]  # an ERROR is ours: the run is red
    text = summary.read_text()  # what the CI job page shows ($GITHUB_STEP_SUMMARY in a workflow)
    assert "**1 ERROR**" in text and "this job is red" in text and "| nightly · vLLM" in text
    o = outcomes(out)[-1]
    assert (o.verdict, o.stage) == ("ERROR", "start") and "deadline" in o.reason
    why = f"ERROR {o.snippet_id} on nightly at start: no /health 200 within our deadline"
    assert why in proc.stderr, proc.stderr[-2000:]  # the log says why, not only how many
    assert o.evidence.server.state == "timeout" and o.evidence.server.left_processes == 0
    assert not mentioning(str(tmp_path)), "the deadline left server processes behind"


def test_sigterm_tears_the_server_down(targets_toml, tmp_path):
    snippets, _ = catalog_of(
        docs_tree(tmp_path / "docs", BATCH.split("```bash", 2)[0] + "```bash" + BATCH.split("```bash", 2)[2])
    )
    out = tmp_path / "o.jsonl"
    cmd = [
        sys.executable,
        "-m",
        "driftmatrix.cli",
        "run",
        str(snippets),
        "--targets",
        str(targets_toml),
        "--target",
        "nightly",
        "--cache-dir",
        str(CACHE),
        "-o",
        str(out),
    ]
    runner = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    logs = tmp_path / "driftmatrix-work" / "logs"
    end = time.monotonic() + 600
    while time.monotonic() < end and not (
        logs.exists() and any("EngineCore" in p.read_text(errors="replace") for p in logs.glob("*.log"))
    ):
        time.sleep(1)
    pids = descendants(runner.pid)
    assert alive(pids)
    os.kill(runner.pid, signal.SIGTERM)
    runner.wait(timeout=120)
    assert not alive(pids)
