"""A TCP proxy in front of the embedded PostgreSQL's Unix socket that can cut connections.

With `cut_on` set, a connection whose client sends a message containing those bytes is closed
at once in both directions — what a client sees when the server crashes or its backend is
killed in the middle of a command. Real PostgreSQL behind it, real sockets in front: no mock.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from pathlib import Path

from psycopg.conninfo import conninfo_to_dict, make_conninfo


class PgProxy:
    def __init__(self, dsn: str) -> None:
        params = conninfo_to_dict(dsn)
        port = params.get("port") or 5432
        self.target = str(Path(str(params["host"])) / f".s.PGSQL.{port}")
        self.upstream_dsn = dsn
        self.cut_on: bytes | None = None
        self.cuts = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._stopped = False
        threading.Thread(target=self._accept, daemon=True, name="pg-proxy").start()

    @property
    def dsn(self) -> str:
        return make_conninfo(self.upstream_dsn, host="127.0.0.1", port=str(self.port))

    def _accept(self) -> None:
        while not self._stopped:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.connect(self.target)
            with self._lock:
                self._open.update((client, server))
            for src, dst, watch in ((client, server, True), (server, client, False)):
                threading.Thread(
                    target=self._pump, args=(src, dst, watch, (client, server)), daemon=True
                ).start()

    def _pump(
        self,
        src: socket.socket,
        dst: socket.socket,
        watch: bool,
        pair: tuple[socket.socket, socket.socket],
    ) -> None:
        try:
            while data := src.recv(65536):
                if watch and self.cut_on is not None and self.cut_on in data:
                    self.cuts += 1
                    break
                dst.sendall(data)
        except OSError:
            pass
        for sock in pair:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def close(self) -> None:
        self._stopped = True
        self._listener.close()
        with self._lock:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.close()
