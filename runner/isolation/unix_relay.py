"""Our side of a docker target's port: 127.0.0.1:`port` -> the Unix socket the container's relay
(runner/intarget/container_relay.py) listens on, in a directory shared with the container.

The directory is mounted read-write into the container, whose code comes from the docs and from
model repositories. Whatever the container puts there under the socket's name is untrusted: a
symlink `s -> /var/run/docker.sock` (or to any socket of the host the container may name) would
make a plain `connect("<dir>/s")` hand our probes' bytes — and an attacker's answers — to that
socket, as our uid. So the name is never followed: it is opened with O_PATH | O_NOFOLLOW relative
to a directory fd taken when we made the directory (a symlink yields a descriptor of the link
itself), the descriptor must be a socket (fstat), and we connect to `/proc/self/fd/<fd>`: a magic
link to exactly the inode just checked, with no name left for anyone to swap in between.

The directory sits inside a parent only we may enter (mode 0700), so no other user of the host
reaches the socket; the directory itself is 0777 because the container runs as another uid
(65534) and must create its socket in it.
"""

from __future__ import annotations

import os
import shutil
import socket
import socketserver
import stat
import tempfile
import threading
from pathlib import Path

SOCKET_NAME = "s"
"""The socket's name in the shared directory (the container binds `<mount>/s`)."""


class UnixRelay:
    """127.0.0.1:`port` -> `dir/s`, a socket a container binds. `dir` is ours to mount; `close()`
    stops the listener and removes the directory."""

    def __init__(self, port: int):
        self.port = port
        self._parent = Path(tempfile.mkdtemp(prefix="dm-relay-"))  # 0700: ours alone
        self.dir = self._parent / "shared"
        self.dir.mkdir()
        os.chmod(self.dir, 0o777)  # not masked by umask: the container's uid binds its socket here
        # held for our lifetime: later lookups start from this very directory, never from its path
        self._dir_fd = os.open(self.dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            self.server = _server(port, self.connect)  # OSError: the port is taken
        except OSError:
            self._remove()
            raise
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def connect(self) -> socket.socket:
        """A connection to the socket at `dir/s` as it is now, without following a link.
        OSError when there is none yet, or when `s` is anything but a socket."""
        fd = os.open(SOCKET_NAME, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=self._dir_fd)
        try:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISSOCK(mode):  # a symlink, a regular file, a FIFO, a directory: refused
                raise OSError(f"{self.dir / SOCKET_NAME} is not a socket (mode {stat.filemode(mode)})")
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(f"/proc/self/fd/{fd}")  # that inode; no name looked up again
            except OSError:
                sock.close()
                raise
            return sock
        finally:
            os.close(fd)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._remove()

    def _remove(self) -> None:
        os.close(self._dir_fd)
        # what the container left (its socket, any files) goes with it; anything it made unreadable
        # to us inside a directory of its own stays (ignore_errors), inside our private parent
        shutil.rmtree(self._parent, ignore_errors=True)


def _server(port: int, connect) -> socketserver.ThreadingTCPServer:
    class Pump(socketserver.BaseRequestHandler):
        def handle(self):
            try:
                upstream = connect()
            except OSError:
                return  # not listening yet (or refused): the client sees a closed connection, retries
            pump_both(self.request, upstream)

    class Server(socketserver.ThreadingTCPServer):
        allow_reuse_address = True
        daemon_threads = True
        request_queue_size = 256  # 16 streams connecting at once (the perf tier) must not overflow it

    return Server(("127.0.0.1", port), Pump)


def pump_both(a: socket.socket, b: socket.socket) -> None:
    """Copy both ways until both sides are done, then close `b` (the server closes `a`)."""

    def one_way(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            try:
                dst.shutdown(socket.SHUT_WR)  # the other direction may still be talking
            except OSError:
                pass

    back = threading.Thread(target=one_way, args=(b, a), daemon=True)
    back.start()
    one_way(a, b)
    back.join()
    b.close()
