"""The helper's fork server (runner/intarget/fork_server.py) in the real sandbox: a command's process
leaves nothing for the next — no process it started (a daemon in a session of its own), no file in the
private /tmp or /dev/shm, no SysV shared memory segment, no module or global it changed — and the
parent itself runs nothing a request carries. A stand-in for vllm_helper.py drives the real module
through the real helper client; its payloads are a test's own and run only in a sandbox proven active.
"""

from __future__ import annotations

import json
import sys

import pytest
from runhelp import raw_answer

from driftmatrix import runner
from driftmatrix.runner.isolation import sandbox
from driftmatrix.runner.isolation.sandbox import detection
from driftmatrix.runner.serve import helper_client

STAND_IN = f"""
import ctypes, json, os, sys
sys.path.insert(0, {str(runner.INTARGET)!r})
import fork_server, fork_sweep
PROTO = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
STATE = {{"changed": False, "warmed": None, "parent": os.getpid()}}

def pipes():
    return sum(os.readlink(f"/proc/self/fd/{{fd}}").startswith("pipe:") for fd in os.listdir("/proc/self/fd")
               if os.path.exists(f"/proc/self/fd/{{fd}}"))

def warm(model):
    STATE["warmed"] = model
    return model != "cannot-warm"

def seen():
    keep = fork_sweep.ancestors()
    others = sorted(int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in keep and fork_sweep.running(int(p)))
    with open("/proc/sysvipc/shm") as fh:
        segments = len(fh.readlines()) - 1
    return {{
        "others": others,
        "planted": [p for p in ("/tmp/planted.py", "/dev/shm/planted", "/tmp/home/.cache/planted")
                    if os.path.exists(p)],
        "segments": segments,
        "module": "planted" in sys.modules,
        "changed": STATE["changed"],
        "cap": fork_server.ANSWER_MAX,
    }}

def answer(req):
    if req.get("run"):
        exec(req["run"], {{"STATE": STATE, "fork_server": fork_server}})
    return {{"id": req["id"], "ok": True, "stage": req.get("tier", "parse"), "warnings": [], "seen": seen(),
            "warmed": STATE["warmed"], "from_parent": os.getppid() == STATE["parent"], "pid": os.getpid(),
            "ppid": os.getppid(), "pipes": pipes(), "duration_s": 0.2 if req.get("warm") else 0.0}}

PROTO.write(json.dumps({{"ready": True, "options": [], "parent": os.getpid()}}) + "\\n")
fork_server.ForkServer(answer, PROTO, warm=warm).serve(sys.stdin)
"""

LEAVE_EVERYTHING = """
import ctypes, os, sys, time, types
open("/tmp/planted.py", "w").write("print('planted')")
open("/dev/shm/planted", "w").write("x")
os.makedirs("/tmp/home/.cache", exist_ok=True)
open("/tmp/home/.cache/planted", "w").write("x")
libc = ctypes.CDLL(None, use_errno=True)
assert libc.shmget(0x5EED, 1 << 20, 0o1600) >= 0  # IPC_CREAT | 0600, never removed
sys.modules["planted"] = types.ModuleType("planted")
STATE["changed"] = True
fork_server.ANSWER_MAX = 1
if os.fork() == 0:  # a daemon in a session of its own: not in the command's process group
    os.setsid()
    if os.fork() == 0:
        time.sleep(600)
    os._exit(0)
time.sleep(0.2)
"""


@pytest.fixture
def helper(tmp_path, monkeypatch):
    monkeypatch.setenv("DRIFTMATRIX_SANDBOX", "required")
    if not detection.active():
        pytest.skip("no active sandbox here: the payloads never run plainly")
    monkeypatch.chdir(tmp_path)
    python = sys.executable

    def launch():
        return sandbox.contain([python, "-c", STAND_IN], python=python, env={"PATH": "/usr/bin:/bin"}, kind="helper")

    found = helper_client.Helper(launch, tmp_path / "helper.log")
    yield found
    found.shutdown()


def _seen(helper, run: str = "", warm: str | None = None) -> dict:
    """What a fresh child sees (the `seen` of the stand-in's answer): the helper client reads the answer
    as a HelperAnswer, which keeps only vLLM's fields, so the raw line is read here. `warm`: a config
    request naming that model's folder (a zygote's, from its second request on)."""
    request = {"argv": [], "tier": "config" if warm else "parse", "run": run}
    return raw_answer(helper, {**request, "warm": warm} if warm else request)


def test_a_command_leaves_nothing_for_the_next(helper):
    before = _seen(helper)["seen"]
    assert before == {
        "others": [],
        "planted": [],
        "segments": 0,
        "module": False,
        "changed": False,
        "cap": 64 * 2**20,
    }, before
    during = _seen(helper, LEAVE_EVERYTHING)["seen"]
    assert during["planted"] and during["segments"] == 1 and during["module"] and during["changed"]
    assert during["others"], "the payload's daemon was running while it answered"
    after = _seen(helper)["seen"]
    assert after == before, after
    assert "the scratch is put back" in (helper.log_path.read_text())


def test_a_child_that_dies_is_an_error_for_its_command_only(helper):
    with pytest.raises(helper_client.CommandCrashed, match="killed by signal 9"):
        _crash(helper)
    assert _seen(helper)["seen"]["others"] == []  # the same fork server answers the next command


def _crash(helper):
    answer = _seen(helper, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
    if answer.get("crashed"):
        raise helper_client.CommandCrashed(answer["crashed"])
    return answer


def test_the_real_helper_never_imports_what_a_command_loads(tmp_path, monkeypatch):
    """vllm_helper.py over a fake build whose model code rewires the parser of the process that imports
    it (tests/runner/fake_vllm.py): that code runs in the command's child; the fork server's own
    modules never hold it, and the next command is parsed by vLLM's own parser."""
    from fake_vllm import make_model, make_target

    monkeypatch.setenv("DRIFTMATRIX_SANDBOX", "required")
    if not detection.active():
        pytest.skip("no active sandbox here: the model's code never runs plainly")
    monkeypatch.chdir(tmp_path)
    python = make_target(tmp_path / "fake-env")
    model = make_model(tmp_path / "models" / "alias", tmp_path / "markers", remote=True)
    helper = helper_client.contained(str(python), {}, tmp_path / "helper.log", readable=[str(model)])
    try:
        remote = helper.ask([str(model), "--remote-code", "--max-model-len", "256"], "config")
        assert (remote.result, remote.stage) == ("ok", "config"), remote
        honest = helper.ask([str(model), "--max-model-len", "256", "--no-such-flag", "1"], "parse")
        assert honest.result == "failed" and "--no-such-flag" in honest.error["message"], honest
        with helper.lock:
            helper._seq += 1
            helper.proc.stdin.write((json.dumps({"id": helper._seq, "report": "modules"}) + "\n").encode())
            helper.proc.stdin.flush()
            modules = helper._read(60)["modules"]
        assert "vllm.engine.arg_utils" in modules and "configuration_fake" not in modules
    finally:
        helper.shutdown()


def test_a_slow_model_gets_a_zygote_whose_children_start_clean(helper):
    """A model whose first config took long is configured alone in a zygote; each of its later commands
    runs in a fresh child of it — the model's warm state there, nothing another command left."""
    first = _seen(helper, warm="model-a")
    assert first["from_parent"] and first["warmed"] is None, first
    before = _seen(helper, warm="model-a")
    assert not before["from_parent"] and before["warmed"] == "model-a", before
    clean = {"planted": [], "segments": 0, "module": False, "changed": False, "cap": 64 * 2**20}
    assert {k: v for k, v in before["seen"].items() if k != "others"} == clean, before
    assert len(before["seen"]["others"]) == 1  # the fork server's own waiting child: not in its line
    during = _seen(helper, LEAVE_EVERYTHING, warm="model-a")
    assert during["seen"]["planted"] and during["seen"]["module"] and during["seen"]["changed"]
    after = _seen(helper, warm="model-a")
    assert after["ppid"] == during["ppid"] == before["ppid"] and after["pid"] != during["pid"], (during, after)
    assert after["seen"] == before["seen"], after
    parse = _seen(helper)
    assert parse["from_parent"] and parse["warmed"] is None, parse
    assert {k: v for k, v in parse["seen"].items() if k != "others"} == clean, parse
    zygote, its_waiting_child = parse["seen"]["others"]  # nothing else: the command's daemon is gone
    assert zygote == after["ppid"], parse


def test_no_child_holds_a_pipe_of_another(helper):
    """However many zygotes are alive, a command's process holds the same pipes: none leads to the
    fork server's protocol, another zygote or another child."""
    alone = _seen(helper)["pipes"]
    for model in ("model-a", "model-b"):
        _seen(helper, warm=model)
        assert not _seen(helper, warm=model)["from_parent"]
    assert _seen(helper)["pipes"] == alone
    assert _seen(helper, warm="model-a")["pipes"] == alone


def test_a_model_that_cannot_be_warmed_and_a_zygote_killed_are_answered_cold(helper):
    for _ in range(3):
        assert _seen(helper, warm="cannot-warm")["from_parent"]
    _seen(helper, warm="model-a")
    kill_zygote = "import os, signal\nif os.getppid() != STATE['parent']:\n    os.kill(os.getppid(), signal.SIGKILL)"
    answered = _seen(helper, kill_zygote, warm="model-a")
    assert answered["from_parent"], answered  # its zygote died first: asked again, cold
    again = _seen(helper, warm="model-a")
    assert not again["from_parent"] and len(again["seen"]["others"]) == 1, (
        again
    )  # a zygote made anew; the old one's child gone


def test_the_least_recently_used_zygote_goes_first(helper):
    """At most ZYGOTES_MAX models are warm at once (their memory counts against the sandbox's limit)."""
    zygote_of = {}
    for model in ("model-a", "model-b", "model-c"):
        _seen(helper, warm=model)
        zygote_of[model] = _seen(helper, warm=model)["ppid"]
    assert len(set(zygote_of.values())) == 3
    assert _seen(helper, warm="model-c")["ppid"] == zygote_of["model-c"]
    assert _seen(helper, warm="model-a")["ppid"] != zygote_of["model-a"]  # dropped for model-c, made anew
