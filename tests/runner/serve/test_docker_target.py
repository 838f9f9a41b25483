"""Docker targets keep the sandbox's promises: real docker CLI calls inspected where no daemon runs,
and the port relay on both sides of the container run for real (without docker).

The docker CLI installed here is pointed (DOCKER_HOST) at a small fake Engine API on a Unix socket:
it answers the version ping, records the body of `POST /containers/create` — exactly what a daemon
would be asked to run — and refuses it, so the CLI exits. The assertions are on that body, so they
hold for what the CLI makes of our argv (its quoting, its defaults), not for our own reading of it.
The argv the docker target had before (host network, host IPC, root, nothing dropped) is checked
against the same assertions and must fail them.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import socket
import socketserver
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from driftmatrix import runner
from driftmatrix.runner.isolation.unix_relay import UnixRelay
from driftmatrix.runner.serve import docker_target
from driftmatrix.runner.serve.docker_target import ContainerLimits
from driftmatrix.runner.serve.server import free_port

IMAGE = "vllm/vllm-openai:v0.20.1"
CANARY = "hf_canary_never_in_a_container"
RELAY = runner.INTARGET / "container_relay.py"
needs_docker_cli = pytest.mark.skipif(shutil.which("docker") is None, reason="no docker CLI installed")


# --- a fake Engine API ----------------------------------------------------------------------------


class _Engine(http.server.BaseHTTPRequestHandler):
    """Answers the ping (so the CLI settles on API 1.45), records everything, creates nothing."""

    def log_message(self, *args):
        pass

    def _answer(self, code: int, body: bytes, ctype: str = "application/json", ping: bool = False) -> None:
        self.send_response(code)
        if ping:
            self.send_header("Api-Version", "1.45")
            self.send_header("OSType", "linux")
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _record(self) -> dict:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.records.append({"method": self.command, "path": self.path, "body": body})
        return self.server.records[-1]

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        self._record()
        if self.path.endswith("/_ping"):
            return self._answer(200, b"OK", "text/plain", ping=True)
        self._answer(404, b'{"message":"not faked"}')

    def do_POST(self):
        self._record()
        self._answer(500, b'{"message":"recorded"}')  # the CLI stops here: nothing else to fake


class _Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True

    def get_request(self):
        conn, _ = super().get_request()
        return conn, ("fake-engine", 0)  # http.server logs a client address; a Unix peer has none


@pytest.fixture
def engine(monkeypatch):
    """(run argv with the real docker CLI against the fake engine -> create body, records)."""
    # canaries in the environment of the CLI: no `-e NAME` may carry them into a container
    monkeypatch.setenv("HF_TOKEN", CANARY)
    monkeypatch.setenv("DM_HOST_CANARY", CANARY)
    home = Path(tempfile.mkdtemp(prefix="dm-engine-", dir="/tmp"))  # short: socket paths max ~107 bytes
    server = _Server(str(home / "docker.sock"), _Engine)
    server.records = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCKER_")}  # a context or API pin
    env |= {"DOCKER_HOST": f"unix://{home}/docker.sock", "DOCKER_CONFIG": str(home / "config")}

    def create_body(argv: list[str]) -> dict:
        assert argv[:2] == ["docker", "run"]
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert done.returncode != 0 and "recorded" in done.stderr, done.stderr
        creates = [r for r in server.records if r["method"] == "POST" and "/containers/create" in r["path"]]
        assert creates, server.records
        return json.loads(creates[-1]["body"])

    yield create_body, server.records
    server.shutdown()
    server.server_close()
    shutil.rmtree(home, ignore_errors=True)


def violations(body: dict, model_dirs: list[str], limits: ContainerLimits) -> list[str]:
    """Every promise the create body breaks (empty: contained)."""
    hc, env = body["HostConfig"], body.get("Env") or []
    ulimits = {u["Name"]: (u["Soft"], u["Hard"]) for u in hc.get("Ulimits") or []}
    binds = hc.get("Binds") or []
    checks = {
        "network none": hc.get("NetworkMode") == "none",
        "private IPC": hc.get("IpcMode") not in ("host", "") and hc.get("IpcMode") is not None,
        "sized /dev/shm": hc.get("ShmSize") == limits.shm_bytes,
        "all capabilities dropped": [c.upper() for c in hc.get("CapDrop") or []] == ["ALL"] and not hc.get("CapAdd"),
        "no new privileges": "no-new-privileges" in (hc.get("SecurityOpt") or []),
        "not privileged": hc.get("Privileged") is False,
        "read-only root": hc.get("ReadonlyRootfs") is True,
        "sized /tmp": f"size={limits.tmp_bytes}" in (hc.get("Tmpfs") or {}).get("/tmp", ""),
        "non-root user": body.get("User") == "65534:65534",
        "pids limit": hc.get("PidsLimit") == limits.pids,
        "memory limit, no swap": hc.get("Memory") == hc.get("MemorySwap") == limits.memory_bytes,
        "file size limit": ulimits.get("fsize") == (limits.file_bytes, limits.file_bytes),
        "no core dumps": ulimits.get("core") == (0, 0),
        "offline": "HF_HUB_OFFLINE=1" in env,
        "HOME in /tmp": "HOME=/tmp" in env,
        "no host variable": not any(CANARY in e for e in env) and not any(e.startswith("HF_TOKEN") for e in env),
        "models read-only": all(f"{d}:{d}:ro" in binds for d in model_dirs),
        "no other writable mount": all(
            b.endswith(":ro") or b.endswith(f":{docker_target.RELAY_MOUNT}:rw") for b in binds
        )
        and not hc.get("Mounts"),
    }
    return [name for name, ok in checks.items() if not ok]


def _old_server_argv(gpu_ids: list[int]) -> list[str]:
    """The docker target's server argv before issue 30 (item 5), verbatim in behaviour."""
    gpus = ["--gpus", f'"device={",".join(map(str, gpu_ids))}"']
    return [
        "docker",
        "run",
        "--rm",
        "--init",
        "--name",
        "dm-old",
        "--network",
        "host",
        "--ipc",
        "host",
        *gpus,
        "-e",
        "HF_HOME=/h",
        "-v",
        "/m/target:/m/target:ro",
        IMAGE,
        "/m/target",
        "--port",
        "9",
    ]


# --- the create body --------------------------------------------------------------------------------


@needs_docker_cli
def test_server_container_is_contained(engine, tmp_path):
    create_body, records = engine
    relay_dir = tmp_path / "relay"
    argv = docker_target.server_command(
        IMAGE,
        "dm-x",
        ["/m/target", "--host", "127.0.0.1", "--port", "9"],
        {
            "HF_HOME": "/h",
            "VLLM_USE_DEEP_GEMM": "1",
            "HF_TOKEN": CANARY,
            "HF_HUB_OFFLINE": "0",
            "VLLM_CACHE_ROOT": "/host/cache",
        },
        ["/m/target", "/m/draft"],
        [2, 3],
        relay_dir=relay_dir,
        port=9,
    )
    body = create_body(argv)
    assert violations(body, ["/m/target", "/m/draft"], docker_target.DEFAULT_LIMITS) == []
    hc, env = body["HostConfig"], body["Env"]
    assert f"{relay_dir.resolve()}:{docker_target.RELAY_MOUNT}:rw" in hc["Binds"]
    assert hc["DeviceRequests"] == [
        {"Driver": "", "Count": 0, "DeviceIDs": ["2", "3"], "Capabilities": [["gpu"]], "Options": {}}
    ]
    assert hc["Init"] is True and hc["AutoRemove"] is True
    assert "/tmp" in hc["Tmpfs"] and "exec" in hc["Tmpfs"]["/tmp"].split(",")  # compiled kernels load from it
    # ours over the caller's: host paths mean nothing inside; offline is not the caller's to undo
    assert "VLLM_CACHE_ROOT=/tmp/vllm-cache" in env and "HF_HOME=/tmp/hf" in env and "HF_HUB_OFFLINE=0" not in env
    assert "VLLM_USE_DEEP_GEMM=1" in env
    assert body["Entrypoint"] == ["python3"] and body["Image"] == IMAGE
    assert body["Cmd"] == [
        f"{docker_target.INNER}/container_relay.py",
        f"{docker_target.RELAY_MOUNT}/s",
        "9",
        "--",
        "vllm",
        "serve",
        "/m/target",
        "--host",
        "127.0.0.1",
        "--port",
        "9",
    ]
    assert any(r["path"].endswith("/containers/create?name=dm-x") for r in records)


@needs_docker_cli
def test_helper_container_is_contained_with_the_given_limits(engine):
    create_body, _ = engine
    limits = ContainerLimits(memory_bytes=3 << 30, pids=321, file_bytes=5 << 20, tmp_bytes=7 << 20, shm_bytes=11 << 20)
    argv = docker_target.helper_command(IMAGE, ["/m/target", "/cache/hub"], {"HF_TOKEN": "", "DM_X": "1"}, limits)
    body = create_body(argv)
    assert violations(body, ["/m/target", "/cache/hub"], limits) == []
    assert not body["HostConfig"].get("DeviceRequests")
    assert body["OpenStdin"] is True and body["Cmd"] == [docker_target.INNER_HELPER]
    assert "DM_X=1" in body["Env"]


@needs_docker_cli
@pytest.mark.parametrize(
    "gpu_ids, request_",
    [
        ([0], {"Count": 0, "DeviceIDs": ["0"]}),
        ([], {"Count": -1, "DeviceIDs": None}),
    ],
)
def test_gpus_as_the_cli_reads_them(engine, tmp_path, gpu_ids, request_):
    create_body, _ = engine
    argv = docker_target.server_command(IMAGE, "dm-g", ["/m"], {}, ["/m"], gpu_ids, relay_dir=tmp_path, port=9)
    (got,) = create_body(argv)["HostConfig"]["DeviceRequests"]
    assert {k: got[k] for k in request_} == request_ and got["Capabilities"] == [["gpu"]]


@needs_docker_cli
def test_gpus_without_the_csv_quotes_would_ask_for_another_device(engine):
    """Why `--gpus` keeps its double quotes with no shell around: the CLI reads the value as a CSV
    record, so an unquoted `device=2,3` is device 2 plus a count of 3."""
    create_body, _ = engine
    (got,) = create_body(["docker", "run", "--rm", "--gpus", "device=2,3", IMAGE])["HostConfig"]["DeviceRequests"]
    assert (got["DeviceIDs"], got["Count"]) == (["2"], 3)


@needs_docker_cli
def test_the_old_argv_breaks_the_promises(engine):
    create_body, _ = engine
    broken = violations(create_body(_old_server_argv([2, 3])), ["/m/target"], docker_target.DEFAULT_LIMITS)
    assert {
        "network none",
        "private IPC",
        "all capabilities dropped",
        "no new privileges",
        "read-only root",
        "non-root user",
        "pids limit",
        "memory limit, no swap",
        "offline",
    } <= set(broken)


def test_env_is_only_the_callers_and_ours():
    argv = docker_target.helper_command(IMAGE, [], {"HF_TOKEN": "x", "MY_API_KEY": "y", "VLLM_API_KEY": "k"})
    envs = [argv[i + 1] for i, a in enumerate(argv) if a == "-e"]
    assert all("=" in e for e in envs)  # `-e NAME` alone would copy the CLI's own value
    assert not any(e.startswith(("HF_TOKEN=", "MY_API_KEY=")) for e in envs) and "VLLM_API_KEY=k" in envs
    with pytest.raises(ValueError):
        docker_target.helper_command(IMAGE, [], {"A=B": "c"})


# --- our side of the relay ----------------------------------------------------------------------


def _listening(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.listen(8)
    sock.settimeout(0.5)
    return sock


def _tcp_roundtrip(port: int, data: bytes = b"ping") -> bytes:
    """What comes back for `data`; b"" when the relay closed the connection without an answer
    (which may happen before our request is even sent: ENOTCONN, EPIPE, ECONNRESET)."""
    chunks = []
    with socket.create_connection(("127.0.0.1", port), timeout=5) as client:
        try:
            client.sendall(data)
            client.shutdown(socket.SHUT_WR)
            while chunk := client.recv(65536):
                chunks.append(chunk)
        except TimeoutError:
            raise  # an answer that never comes is a failure, not a closed connection
        except OSError:
            pass
    return b"".join(chunks)


@pytest.fixture
def relay():
    r = UnixRelay(free_port())
    yield r
    r.close()


def test_relay_directory_is_reachable_only_through_our_private_parent(relay):
    assert stat.S_IMODE(relay.dir.stat().st_mode) == 0o777  # the container's uid binds its socket there
    assert stat.S_IMODE(relay.dir.parent.stat().st_mode) == 0o700


def test_relay_never_follows_a_planted_symlink(relay):
    decoy_path = Path(tempfile.mkdtemp(prefix="dm-decoy-", dir="/tmp")) / "docker.sock"
    decoy = _listening(decoy_path)
    try:
        (relay.dir / "s").symlink_to(decoy_path)
        with pytest.raises(OSError, match="not a socket"):
            relay.connect()
        assert _tcp_roundtrip(relay.port) == b""  # a closed connection, nothing relayed
        with pytest.raises(socket.timeout):
            decoy.accept()
        # the control: a plain connect by name is exactly the attack (the decoy is reached)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as naive:
            naive.connect(str(relay.dir / "s"))
            decoy.accept()[0].close()
    finally:
        decoy.close()
        shutil.rmtree(decoy_path.parent, ignore_errors=True)


def test_relay_refuses_a_regular_file_and_nothing(relay):
    with pytest.raises(FileNotFoundError):
        relay.connect()
    (relay.dir / "s").write_text("not a socket")
    with pytest.raises(OSError, match="not a socket"):
        relay.connect()
    assert _tcp_roundtrip(relay.port) == b""


def test_relay_carries_a_real_socket(relay):
    listener = _listening(relay.dir / "s")
    listener.settimeout(5)

    def echo_upper():
        conn, _ = listener.accept()
        with conn:
            conn.sendall(conn.recv(1024).upper())

    threading.Thread(target=echo_upper, daemon=True).start()
    try:
        assert _tcp_roundtrip(relay.port, b"through the magic link") == b"THROUGH THE MAGIC LINK"
    finally:
        listener.close()


# --- the container's side, run with this machine's python -------------------------------------------


class _Health(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        body = f"served {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _children(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def test_container_relay_carries_the_port_and_becomes_the_server(relay):
    backend = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    threading.Thread(target=backend.serve_forever, daemon=True).start()
    sock = relay.dir / "s"
    server = [sys.executable, "-c", "import time; time.sleep(30)"]
    proc = subprocess.Popen([sys.executable, str(RELAY), str(sock), str(backend.server_address[1]), "--", *server])
    try:
        deadline = time.monotonic() + 10
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert stat.S_ISSOCK(sock.lstat().st_mode) and stat.S_IMODE(sock.lstat().st_mode) == 0o666
        answer = _tcp_roundtrip(relay.port, b"GET /health HTTP/1.0\r\nHost: x\r\n\r\n")
        assert answer.startswith(b"HTTP/1.0 200") and answer.endswith(b"served /health")
        # the server kept the pid (exec), the relay is its forked child and dies with it
        assert Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")[:3] == [s.encode() for s in server]
        (child,) = _children(proc.pid)
        proc.kill()
        proc.wait(10)
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child), "the relay outlived the server"
    finally:
        proc.kill()
        proc.wait(10)
        backend.shutdown()
        backend.server_close()
