"""Inside the sandbox (runner/sandbox.py): relay a Unix socket shared with driftmatrix to the
server's loopback port in this network namespace, then become the server.

    python sandbox_init.py SOCKET PORT -- vllm serve ...

A forked child runs the relay; this process execs the command, so the server keeps the pid
bubblewrap watches, and the relay dies with the namespace when the server exits.
"""

import os
import socket
import sys
import threading


def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def serve(path, port):
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(256)
    while True:
        client, _ = listener.accept()
        try:
            upstream = socket.create_connection(("127.0.0.1", port), timeout=5)
            upstream.settimeout(None)
        except OSError:
            client.close()  # the server is not listening yet
            continue
        threading.Thread(target=pump, args=(upstream, client), daemon=True).start()
        threading.Thread(target=pump, args=(client, upstream), daemon=True).start()


def main():
    path, port, sep, *cmd = sys.argv[1:]
    assert sep == "--" and cmd, "usage: sandbox_init.py SOCKET PORT -- COMMAND..."
    if os.fork() == 0:
        try:
            serve(path, int(port))
        finally:
            os._exit(0)
    os.execvp(cmd[0], cmd)


if __name__ == "__main__":
    main()
