"""Inside a sandbox: listen on ``127.0.0.1:PORT`` and relay each connection to a unix socket mounted in.

This is how the guard becomes ``http://127.0.0.1:8000`` inside a sandbox that has no network: the host
side listens on a unix socket, the backend mounts it at ``/run/forward/<port>.sock`` and starts this
script (stdlib only, any Python 3.8+, so it also runs on the Docker image's ``python3``) before the
command. Usage::

    python relay.py --ready FILE PORT:SOCKET [PORT:SOCKET ...]

It touches ``FILE`` once every port listens. A port already listening (a relay still serving) counts as
listening; one held only by an earlier relay's closed connections is taken over. It never reads the
bytes it relays.
"""

from __future__ import annotations

import argparse
import errno
import socket
import threading
from pathlib import Path

_CHUNK = 65536


def pump(src: socket.socket, dst: socket.socket) -> None:
    """Copy ``src`` to ``dst`` until EOF, then half-close both directions (also used host-side)."""
    try:
        while data := src.recv(_CHUNK):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for sock, how in ((dst, socket.SHUT_WR), (src, socket.SHUT_RD)):
            try:
                sock.shutdown(how)
            except OSError:
                pass


def _serve(listener: socket.socket, target: str) -> None:
    while True:
        client, _ = listener.accept()
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(target)
        except OSError:
            client.close()
            upstream.close()
            continue
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=pump, args=(a, b), daemon=True).start()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ready", required=True)
    parser.add_argument("forwards", nargs="+", metavar="PORT:SOCKET")
    args = parser.parse_args(argv)
    threads = []
    for spec in args.forwards:
        port, target = spec.split(":", 1)
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        # An earlier run's relay was killed with its run; its closed connections linger in TIME_WAIT.
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind(("127.0.0.1", int(port)))
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise
            listener.close()
            continue
        listener.listen(64)
        threads.append(threading.Thread(target=_serve, args=(listener, target), daemon=True))
    for thread in threads:
        thread.start()
    Path(args.ready).touch()
    for thread in threads:
        thread.join()


if __name__ == "__main__":
    main()
