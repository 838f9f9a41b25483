"""The sandbox's limits as the kernel counts them (issue 57 point 4): space reserved on the log with
`fallocate(FALLOC_FL_KEEP_SIZE)` (which has blocks and no size), a helper's stderr log, shared memory
(`MAP_SHARED|MAP_ANONYMOUS`, memfd, SysV) and what one helper answer may add to an outcome — with
real bubblewrap and small Python payloads, no vLLM: the parse/config helper's client is driven by a
stand-in for vllm_helper.py that speaks its protocol.

The payloads run only where the sandbox is proven active and required (nothing may run plainly), from
a scratch folder."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from driftmatrix.runner.isolation import sandbox
from driftmatrix.runner.isolation.sandbox import detection
from driftmatrix.runner.outcomes.evidence_record import LoggedWarning
from driftmatrix.runner.serve import helper_client
from driftmatrix.runner.settings import HELPER_WARNINGS_BYTES, HELPER_WARNINGS_MAX


@pytest.fixture(scope="module")
def python(cpu_envs):
    usable, how = detection.detect()
    assert usable, f"bubblewrap must work here (tests/install_tools.sh): {how}"
    return cpu_envs["nightly"].python


@pytest.fixture(autouse=True)
def scratch(tmp_path, monkeypatch):
    """Hostile payloads only in a sandbox proven active, never plainly, never from the checkout."""
    monkeypatch.setenv("DRIFTMATRIX_SANDBOX", "required")
    if not detection.active():
        pytest.skip("no active sandbox here: the payloads never run plainly")
    monkeypatch.chdir(tmp_path)
    for name, value in {"MEMORY_MIB": "128", "FILE_MIB": "1024", "LOG_MIB": "16"}.items():
        monkeypatch.setenv(f"DRIFTMATRIX_SANDBOX_{name}", value)
    return tmp_path


RESERVE = """
import ctypes, time
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong]
for fd in (1, 2):
    assert libc.fallocate(fd, 1, 0, 256 * 2**20) == 0  # FALLOC_FL_KEEP_SIZE: blocks, no size
time.sleep(SLEEP)
"""


def _logged(python: str, code: str, log: Path) -> tuple[list[dict], float]:
    """A contained process whose stdout and stderr are one log file the runner made, as a server's:
    (what its init reported, seconds to its end)."""
    launch = sandbox.contain([python, "-c", code], python=python, env={"PATH": "/usr/bin:/bin"}, kind="server")
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    t0 = time.monotonic()
    proc = subprocess.Popen(
        launch.argv, env=launch.env, pass_fds=launch.pass_fds, preexec_fn=launch.preexec, stdout=fd, stderr=fd
    )
    os.close(fd)
    launch.started()
    proc.wait(timeout=60)
    return launch.finished(), time.monotonic() - t0


@pytest.mark.parametrize("sleep", [30, 0], ids=["stays", "exits-at-once"])
def test_space_reserved_on_the_log_is_the_log_limit(python, scratch, sleep):
    """256 MiB reserved on stdout and stderr under a 16 MiB log limit: stopped and named, whether the
    command stays (the watchdog's tick) or exits before a tick (measured once more at its end); the
    reservation is given back to the runner's disk."""
    log = scratch / "server.log"
    events, took = _logged(python, RESERVE.replace("SLEEP", str(sleep)), log)
    hit = next(e for e in events if "limit" in e)
    assert hit["limit"] == "log_mib" and hit["value"] >= 256 and hit["max"] == 16, events
    assert took < 10
    held = os.stat(log)
    assert max(held.st_size, held.st_blocks * 512) <= 16 * 2**20 + 2**16, held
    assert "log_mib" in log.read_text(errors="replace")  # the log says which limit


FAKE_HELPER = """
import json, sys, threading
print(json.dumps({"ready": True, "options": ["--model"], "import_s": 0}), flush=True)
def flood():
    for _ in range(100):
        sys.stderr.write("w" * 2**20)
for line in sys.stdin:
    request = json.loads(line)
    WORK
    print(json.dumps({"id": request["id"], "ok": True, "stage": "parse", "warnings": WARNINGS}), flush=True)
AFTER
"""


def _helper(python: str, log: Path, work: str = "", warnings: str = "[]", after: str = ""):
    """The real helper client over a stand-in that speaks vllm_helper.py's protocol; `starts` counts
    the sandboxes it started."""
    code = FAKE_HELPER.replace("WORK", work or "pass").replace("WARNINGS", warnings).replace("AFTER", after)
    starts = []

    def launch():
        starts.append(1)
        return sandbox.contain([python, "-c", code], python=python, env={"PATH": "/usr/bin:/bin"}, kind="helper")

    return helper_client.Helper(launch, log, attempts=2), starts


def test_a_helpers_stderr_log_is_held_to_the_log_limit_and_not_retried(python, scratch):
    """100 MiB on the helper's stderr (its log, a file the runner made) under 16 MiB: the request is an
    ERROR naming the log limit, and the helper is not silently started again for it."""
    helper, starts = _helper(python, scratch / "helper.log", work="flood()")
    with pytest.raises(helper_client.HelperError, match=r"log size \(allocated blocks\) limit of 16 MiB"):
        helper.ask(["--model", "x"], "parse")
    helper.shutdown()
    assert len(starts) == 1
    assert (scratch / "helper.stopped.log").stat().st_size <= 16 * 2**20 + 2**16


SHARED = {
    "map-shared": "import mmap\nm = mmap.mmap(-1, 256 * 2**20, flags=mmap.MAP_SHARED)\n"
    "for i in range(0, len(m), 4096):\n    m[i] = 1\n",
    "memfd": "fd = os.memfd_create('hog')\nfor _ in range(256):\n    os.write(fd, bytes(2**20))\n",
    "memfd-mapped-closed": "import mmap\nfd = os.memfd_create('hog')\nos.ftruncate(fd, 256 * 2**20)\n"
    "m = mmap.mmap(fd, 256 * 2**20)\nos.close(fd)\nfor i in range(0, len(m), 4096):\n    m[i] = 1\n",
    "sysv-detached": "import ctypes\nlibc = ctypes.CDLL(None)\nlibc.shmat.restype = ctypes.c_void_p\n"
    "a = libc.shmat(libc.shmget(0, 256 * 2**20, 0o1600), None, 0)\nctypes.memset(a, 1, 256 * 2**20)\n"
    "libc.shmdt(ctypes.c_void_p(a))\n",
    "undumpable-anon": "import ctypes\nctypes.CDLL(None).prctl(4, 0, 0, 0, 0)\nhog = bytearray(256 * 2**20)\n"
    "for i in range(0, len(hog), 4096):\n    hog[i] = 1\n",
}


@pytest.mark.parametrize("hog", SHARED, ids=list(SHARED))
def test_shared_memory_counts_against_the_memory_limit(python, hog):
    """256 MiB of shared memory no RssAnon shows, under a 128 MiB limit: stopped and named (an
    undumpable process, whose smaps the init cannot read, is counted whole)."""
    t0 = time.monotonic()
    proc, events = sandbox.run(
        [python, "-c", "import os, time\n" + SHARED[hog] + "time.sleep(30)\n"],
        python=python,
        env={"PATH": "/usr/bin:/bin"},
        kind="query",
        timeout=60,
    )
    hit = next((e for e in events if "limit" in e), None)
    assert hit and hit["limit"] == "memory_mib" and proc.returncode != 0, (events, proc.stderr[-500:])
    assert time.monotonic() - t0 < 10


def test_a_region_a_fork_shares_is_counted_once(python):
    """40 MiB shared by five processes is 40 MiB, not 200: under a 128 MiB limit it runs to its end."""
    code = (
        "import mmap, os, time\nm = mmap.mmap(-1, 40 * 2**20, flags=mmap.MAP_SHARED)\nm.write(bytes(40 * 2**20))\n"
        "for _ in range(4):\n    if os.fork() == 0:\n        m.read(40 * 2**20)\n        time.sleep(2)\n"
        "        os._exit(0)\ntime.sleep(2.5)\nprint('done')\n"
    )
    proc, events = sandbox.run(
        [python, "-c", code], python=python, env={"PATH": "/usr/bin:/bin"}, kind="query", timeout=60
    )
    assert proc.stdout.strip() == "done" and not any("limit" in e for e in events), events


def test_a_helper_answer_of_30000_warnings_adds_a_bounded_record(python, scratch, monkeypatch):
    """The red team's answer (30,000 warnings, ~60 MB on the pipe) through the real client: at most
    HELPER_WARNINGS_MAX warnings of at most HELPER_WARNINGS_BYTES reach the outcome, the rest counted."""
    monkeypatch.setenv("DRIFTMATRIX_SANDBOX_MEMORY_MIB", "1024")  # the stand-in builds the 60 MB line
    warnings = '[{"file": "arg_utils.py", "line": 1, "message": "x" * 2000} for _ in range(30000)]'
    helper, _ = _helper(python, scratch / "warn.log", warnings=warnings)
    answer = helper.ask(["--model", "x"], "parse")
    helper.shutdown()
    assert len(answer.warnings) <= HELPER_WARNINGS_MAX
    assert answer.warnings_left_out == 30000 - len(answer.warnings)
    record = json.dumps([LoggedWarning.from_json({**w, "feature": False}).to_json() for w in answer.warnings])
    assert len(record) <= HELPER_WARNINGS_BYTES * 1.1
