"""Inside a docker target's container (runner/serve/docker_target.py): carry a Unix socket in the
directory shared with driftmatrix to the server's loopback port, then become the server.

    python3 container_relay.py SOCKET PORT -- vllm serve ...

The container has no network (`--network none`), so driftmatrix's loopback port cannot reach the
server's; driftmatrix's side (runner/isolation/unix_relay.py) forwards its port to SOCKET instead. The
socket is bound here, before anything else starts, so a bind that fails stops the container with
a message instead of leaving a server nobody can reach. A forked child serves the socket; this
process execs the command, so the server keeps the pid `docker run --init` watches and the
container ends with it. Runs on the image's own python3: standard library only, Python >= 3.8.
"""

import os
import signal
import socket
import sys
import threading

if not __package__:  # run by path (a target's Python, `-I`): PEP 366, as the package this folder is,
    # so that `from . import sibling` finds the files next to this one (and import-linter sees it)
    sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = os.path.basename(os.path.dirname(os.path.abspath(__file__)))

from .sandbox_init import pump


def listen(path):
    try:
        os.unlink(path)  # a socket left by an earlier container in the same directory
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    # driftmatrix connects as its own uid, not the container's (65534): anyone may connect; only
    # driftmatrix can reach the directory on the host (its parent is private to driftmatrix)
    os.chmod(path, 0o666)
    listener.listen(256)  # many streams connect at once in the perf tier
    return listener


def serve(listener, port):
    while True:
        client, _ = listener.accept()
        try:
            upstream = socket.create_connection(("127.0.0.1", port), timeout=5)
            upstream.settimeout(None)
        except OSError:
            client.close()  # the server is not listening yet: the client sees a closed connection
            continue
        threading.Thread(target=pump, args=(upstream, client), daemon=True).start()
        threading.Thread(target=pump, args=(client, upstream), daemon=True).start()


def die_with_parent():
    """In a container, the relay ends with the container; outside one (a test) it must not
    outlive the server either: SIGTERM when the exec'd server exits (Linux prctl)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def main():
    args = sys.argv[1:]
    if len(args) < 4 or args[2] != "--":
        sys.exit("usage: container_relay.py SOCKET PORT -- COMMAND...")
    path, port, cmd = args[0], int(args[1]), args[3:]
    listener = listen(path)
    parent = os.getpid()
    if os.fork() == 0:
        die_with_parent()
        if os.getppid() != parent:  # the server already exited before prctl took effect
            os._exit(0)
        try:
            serve(listener, port)
        finally:
            os._exit(0)
    listener.close()  # only the relay child serves it; the server must not hold it
    os.execvp(cmd[0], cmd)


if __name__ == "__main__":
    main()
