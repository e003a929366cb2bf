"""A TCP proxy that loses one HTTP response: the Nth INSERT request reaches the real
server (which commits it and answers), but the client sees its connection drop instead
of the answer — the case a retry with the same deduplication token exists for."""

from __future__ import annotations

import contextlib
import socket
import threading

from tests.engines import free_port


class DropOneResponse:
    def __init__(self, upstream_port: int, drop_nth: int) -> None:
        self.upstream_port = upstream_port
        self.drop_nth = drop_nth  # the response to the Nth INSERT (1-based) is never delivered
        self.inserts = 0
        self.dropped = 0
        self.lock = threading.Lock()
        self.port = free_port()
        self.sock = socket.create_server(("127.0.0.1", self.port))
        self.stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopped:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            state = {"drop": False}
            threading.Thread(target=self._requests, args=(client, upstream, state), daemon=True).start()
            threading.Thread(target=self._responses, args=(upstream, client, state), daemon=True).start()

    @staticmethod
    def _kill(*socks: socket.socket) -> None:
        for s in socks:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def _requests(self, client: socket.socket, upstream: socket.socket, state: dict[str, bool]) -> None:
        try:
            while data := client.recv(65536):
                if data.startswith(b"POST") and b"query=INSERT" in data.split(b"\r\n", 1)[0]:
                    with self.lock:
                        self.inserts += 1
                        if self.inserts == self.drop_nth:
                            state["drop"] = True
                upstream.sendall(data)
        except OSError:
            pass
        self._kill(client, upstream)

    def _responses(self, upstream: socket.socket, client: socket.socket, state: dict[str, bool]) -> None:
        try:
            while data := upstream.recv(65536):
                if state["drop"] and data.startswith(b"HTTP/1.1"):
                    self.dropped += 1
                    break
                client.sendall(data)
        except OSError:
            pass
        self._kill(client, upstream)

    def close(self) -> None:
        self.stopped = True
        self.sock.close()
