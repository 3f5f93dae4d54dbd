"""A TCP proxy in front of PostgreSQL that a test can stop, hang and restart: the server under
test sees its database go away (connections closed, new ones refused) or stop answering
(connections held, nothing forwarded), without stopping the PostgreSQL other tests share."""

from __future__ import annotations

import contextlib
import socket
import threading
import time


class Proxy:
    """``127.0.0.1:<port>`` forwarding to ``target``; ``down()``, ``hang()`` and ``up()``."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = 0
        self._listener: socket.socket | None = None
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._paused = threading.Event()
        self.up()

    def up(self) -> None:
        """Listen (on the same port as before) and forward."""
        self._paused.clear()
        if self._listener is not None:
            return
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def hang(self) -> None:
        """Keep every connection open and accept new ones, but forward nothing: a database
        that stopped answering."""
        self._paused.set()

    def down(self) -> None:
        """Close every connection and stop listening: a stopped database."""
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for s in sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    close = down

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while True:
                while self._paused.is_set():
                    time.sleep(0.01)
                data = source.recv(65536)
                if not data:
                    break
                while self._paused.is_set():
                    time.sleep(0.01)
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
