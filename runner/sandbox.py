"""Contain what the docs make us run: `vllm serve` and the parse/config helper execute model
repositories' code (`--trust-remote-code`) on machines that hold tokens.

Where the host allows it (bubblewrap from Debian, user namespaces permitted; detected once per
run), each such process runs in `bwrap` with: no network but its own loopback, its own process
and IPC namespaces (it cannot see or signal ours, nor read our environment in /proc), a private
/tmp, and the whole file system read-only except the target's compile cache and the run's log
directory. The server's HTTP port is carried across the network namespace by two small relays:
inside, a Unix socket in a directory shared with us forwards to the server's loopback port;
outside, our loopback port forwards to that socket, so probes reach it as before.

Where bubblewrap is missing or not permitted the processes run plainly, and every outcome says so
(`host.sandbox`). `DRIFTMATRIX_SANDBOX=off` turns it off; `=required` makes its absence an ERROR.
The home directory is hidden too (a private tmpfs): only driftmatrix's cache (environments,
models, twins), its own files and interpreter, and the model folders a job is given are put back,
read-only.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

INIT = Path(__file__).resolve().parent / "intarget" / "sandbox_init.py"
SANDBOX_ENV = {"HF_HUB_OFFLINE": "1", "HF_MODULES_CACHE": "/tmp/hf-modules", "VLLM_NO_USAGE_STATS": "1",
               "DO_NOT_TRACK": "1"}
"""Inside: nothing to download, remote code's module cache in the private /tmp, no usage reports."""


class SandboxError(RuntimeError):
    """`DRIFTMATRIX_SANDBOX=required` and the host cannot provide one (ours, not the docs')."""


@functools.lru_cache(maxsize=1)
def detect() -> tuple[bool, str]:
    """(usable, how processes from the docs run here) — asked once per process."""
    mode = os.environ.get("DRIFTMATRIX_SANDBOX", "auto").lower()
    if mode == "off":
        return False, "none: DRIFTMATRIX_SANDBOX=off (plain processes)"
    bwrap = shutil.which("bwrap")
    if not bwrap:
        return False, "none: bubblewrap (bwrap) is not installed (plain processes)"
    probe = subprocess.run([bwrap, "--die-with-parent", "--unshare-net", "--unshare-pid", "--ro-bind", "/", "/",
                            "--dev", "/dev", "--proc", "/proc", "true"], capture_output=True, text=True, timeout=60)
    if probe.returncode:
        return False, f"none: bubblewrap cannot make namespaces here ({probe.stderr.strip()[-200:]}) (plain processes)"
    return True, ("bubblewrap: no network but loopback, own pid/ipc namespaces, private /tmp, read-only file "
                  "system except the compile cache and the logs")


def describe() -> str:
    return detect()[1]


def required_missing() -> str | None:
    """Why a run must not start plainly (`DRIFTMATRIX_SANDBOX=required` without a sandbox)."""
    usable, how = detect()
    if not usable and os.environ.get("DRIFTMATRIX_SANDBOX", "auto").lower() == "required":
        return f"DRIFTMATRIX_SANDBOX=required but {how}"
    return None


def wrap(cmd: list[str], env: dict[str, str], writable: list[Path], gpu: bool, inside_port: int | None = None,
         socket_dir: Path | None = None, readable: list[str] | None = None) -> list[str]:
    """`cmd` inside bubblewrap (unchanged where there is none). `readable`: model folders and files
    the command is given (those under /tmp would otherwise be hidden by the private /tmp). With
    `inside_port`, the inside relay carries `socket_dir/s` to that port."""
    if not detect()[0]:
        return cmd
    args = ["bwrap", "--die-with-parent", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--ro-bind", "/", "/", *(["--dev-bind", "/dev", "/dev", "--tmpfs", "/dev/shm"] if gpu else ["--dev", "/dev"]),
            "--proc", "/proc", "--tmpfs", "/tmp"]
    home = Path.home().resolve()
    if home != Path("/"):  # credentials live there (~/.ssh, ~/.cache/huggingface/token, a runner's files)
        args += ["--tmpfs", str(home)]
    for given in [*_ours(), *(readable or [])]:
        path = Path(given).resolve()
        if path.exists():
            args += ["--ro-bind", str(path), str(path)]
    for path in [*writable, *([socket_dir] if socket_dir else [])]:
        path = path.resolve()
        path.mkdir(parents=True, exist_ok=True)
        args += ["--bind", str(path), str(path)]
    inside = dict(SANDBOX_ENV)
    if env.get("VLLM_CACHE_ROOT"):  # torch's and triton's compile caches default to /tmp, private here:
        cache = env["VLLM_CACHE_ROOT"]  # kept beside vLLM's own, so a second start stays warm
        inside |= {"TORCHINDUCTOR_CACHE_DIR": f"{cache}/torchinductor", "TRITON_CACHE_DIR": f"{cache}/triton"}
        # Inductor's precompiled C++ headers stay in /tmp/torchinductor_<user>/precompiled_headers
        # whatever TORCHINDUCTOR_CACHE_DIR says ("persistent past program runtime": outside a
        # sandbox only the first start builds them); without this every start rebuilds them with g++.
        headers = Path(cache) / "torchinductor-tmp"
        headers.mkdir(parents=True, exist_ok=True)
        args += ["--bind", str(headers.resolve()), f"/tmp/torchinductor_{_torch_user(env)}"]
    for key, value in inside.items():
        args += ["--setenv", key, value]
    env.update(inside)
    if inside_port is not None and socket_dir is not None:
        cmd = [sys.executable, str(INIT), str(socket_dir / "s"), str(inside_port), "--", *cmd]
    return [*args, "--", *cmd]


def _torch_user(env: dict[str, str]) -> str:
    """The user name torch's default cache dir (`/tmp/torchinductor_<user>`) is named after inside:
    getpass.getuser() on the environment the sandboxed process gets, sanitized as torch does."""
    name = next((env[k] for k in ("LOGNAME", "USER", "LNAME", "USERNAME") if env.get(k)), None)
    if name is None:
        try:
            import pwd
            name = pwd.getpwuid(os.getuid()).pw_name
        except (ImportError, KeyError):
            name = f"uid_{os.getuid()}"
    return re.sub(r'[\\/:*?"<>|]', "_", name)


def _ours() -> list[str]:
    """What the sandboxed process needs from us even under a hidden home: our interpreter (a target
    env's python links to it) and driftmatrix's own files (the helper, the relay)."""
    return [sys.prefix, sys.base_prefix, str(Path(__file__).resolve().parents[1])]


class Relay:
    """Our side of the port: 127.0.0.1:`port` -> the Unix socket the inside relay listens on."""

    def __init__(self, port: int):
        self.port = port
        self.dir = Path(tempfile.mkdtemp(prefix="dm-sock-", dir="/tmp"))  # short: socket paths max ~107 bytes
        sock_path = str(self.dir / "s")

        class Pump(socketserver.BaseRequestHandler):
            def handle(self):
                try:
                    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    upstream.connect(sock_path)
                except OSError:
                    return  # not listening yet: the client sees a closed connection and retries
                _pump_both(self.request, upstream)

        class Server(socketserver.ThreadingTCPServer):
            allow_reuse_address = True
            daemon_threads = True
            request_queue_size = 256  # 16 streams connecting at once (the perf tier) must not overflow it

        self.server = Server(("127.0.0.1", port), Pump)  # OSError: the port is taken
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        shutil.rmtree(self.dir, ignore_errors=True)


def _pump_both(a: socket.socket, b: socket.socket) -> None:
    def one_way(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (dst,):
                try:
                    s.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
    back = threading.Thread(target=one_way, args=(b, a), daemon=True)
    back.start()
    one_way(a, b)
    back.join()
    b.close()
