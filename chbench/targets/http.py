"""HTTP(S) interface target.

A lean client on the standard library's ``http.client``: one persistent keep-alive
connection per target (the runner sends one query at a time), SQL as the POST body,
settings as URL parameters, and the server's own timing from the
``X-ClickHouse-Summary`` header.

Why not clickhouse-connect (or urllib3, the pool under it)? Measured here for
``SELECT 1``, median(client_ms - server_ms): clickhouse-connect ~0.55 ms, urllib3
~0.32 ms, http.client ~0.23 ms; our bar is 0.5 ms and a pool buys nothing for one
sequential connection. clickhouse-connect also cannot talk to the 18.16 server (it
asks for the ``readonly`` identifier). TLS uses ``ssl.create_default_context``:
certificates and host names are verified.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import socket
import ssl
import time
from collections.abc import Iterable
from typing import Any, ClassVar
from urllib.parse import urlencode

from chbench.errors import ConnectError, QueryError, ServerLost
from chbench.targets.base import (
    AUTH_CODES,
    Capabilities,
    Credentials,
    Sample,
    ServerInfo,
    Target,
    admin_query_id,
    first_line,
    is_loopback,
    parse_exception_code,
)
from chbench.targets.result import Result, parse_tsv_with_types, tsv_rows
from chbench.targets.url import Protocol, TargetURL

CONNECT_TIMEOUT = 5.0


class _Response:
    __slots__ = ("status", "headers", "data")

    def __init__(self, status: int, headers: http.client.HTTPMessage, data: bytes) -> None:
        self.status, self.headers, self.data = status, headers, data


class _ClientTimeout(Exception):
    pass


class _Unreachable(Exception):
    pass


_TRANSPORT = (_ClientTimeout, _Unreachable)


class HttpTarget(Target):
    protocol = Protocol.HTTP
    capabilities: ClassVar[Capabilities] = Capabilities(streaming_insert=True, formatted_results=True)

    def __init__(self, url: TargetURL, creds: Credentials, light: bool = False) -> None:
        super().__init__(url.display())
        self.host, self.port, self.secure = url.host, url.port, url.secure
        self.user, self.database = url.user, url.database
        token = base64.b64encode(f"{url.user}:{creds.password or ''}".encode()).decode()
        self._headers = {"Authorization": f"Basic {token}", "Connection": "keep-alive"}
        self._ssl = ssl.create_default_context(cafile=creds.ca_file) if url.secure else None
        self._conn: http.client.HTTPConnection | None = None
        self._wire = _Wire(url.host, url.port, self._ssl, f"Basic {token}") if light else None

    @classmethod
    def from_url(cls, url: TargetURL, creds: Credentials, light: bool, stage: str) -> Target:
        return cls(url, creds, light)

    # -- plumbing ----------------------------------------------------------------------
    def _new_connection(self) -> http.client.HTTPConnection:
        if self._ssl is not None:
            return http.client.HTTPSConnection(self.host, self.port, timeout=CONNECT_TIMEOUT, context=self._ssl)
        return http.client.HTTPConnection(self.host, self.port, timeout=CONNECT_TIMEOUT)

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            self._conn = self._new_connection()
        return self._conn

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _request(self, sql: str, params: dict[str, str]) -> tuple[str, bytes]:
        """The request line's path and the body (built before any timing starts)."""
        if self.database:
            params = {"database": self.database, **params}
        return ("/?" + urlencode(params) if params else "/"), sql.encode()

    def _post(self, path: str, body: bytes, timeout: float | None) -> _Response:
        if self._wire is not None:
            return self._wire.post(path, body, timeout)
        for attempt in (0, 1):
            conn = self._connection()
            reused = conn.sock is not None
            if conn.sock is None:
                try:
                    conn.connect()
                except OSError as e:
                    self._drop()
                    raise _Unreachable(_reason(e)) from None
            try:
                conn.sock.settimeout(timeout)
                conn.request("POST", path, body=body, headers=self._headers)
                r = conn.getresponse()
                data = r.read()
            except TimeoutError:
                self._drop()
                raise _ClientTimeout() from None
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as e:
                # a keep-alive connection the server closed while idle: the request never
                # reached a query, so one retry on a fresh connection is safe
                self._drop()
                if attempt or not reused:
                    raise _Unreachable(_reason(e)) from None
                continue
            except (OSError, http.client.HTTPException) as e:
                self._drop()
                raise _Unreachable(_reason(e)) from None
            if r.will_close:
                self._drop()
            return _Response(r.status, r.headers, data)
        raise AssertionError("unreachable")

    def _translate(self, e: Exception, query_id: str | None = None, timeout: float | None = None) -> Exception:
        """The transport's failures, as chbench reports them (one place for every call;
        used in ``except`` clauses, so the success path costs nothing).

        A query's own timeout (``query_id`` given) is that query's error and the query is
        killed; any other timeout or a lost connection means the server stopped answering."""
        if isinstance(e, _ClientTimeout):
            if query_id is None:
                return ServerLost(f"{self.url}: server stopped answering (timed out)")
            self.kill_query(query_id)
            return QueryError(159, f"client timeout: no answer within {timeout or 0:.0f} s (query killed)")
        return ServerLost(f"{self.url}: server stopped answering ({e})")

    def _admin(self, sql: str) -> bytes:
        try:
            r = self._post(*self._request(sql, {"query_id": admin_query_id()}), 30.0)
        except _TRANSPORT as e:
            raise self._translate(e) from None
        _check(r)
        return r.data

    def command(self, sql: str) -> None:
        self._admin(sql)

    def query_rows(self, sql: str) -> list[list[str]]:
        text = self._admin(sql + "\nFORMAT TabSeparated").decode("utf-8", "replace")
        return tsv_rows(text)

    def query_bytes(self, sql: str) -> bytes:
        return self._admin(sql)

    # -- interface ---------------------------------------------------------------------
    def connect(self) -> ServerInfo:
        try:
            text = self._admin("SELECT version()").decode("utf-8", "replace")
        except ServerLost as e:
            raise ConnectError(f"cannot connect to {self.url}: {e.args[0].split('(', 1)[-1].rstrip(')')}") from None
        except QueryError as e:
            if e.code in AUTH_CODES:
                raise ConnectError(f"{self.url}: authentication failed for user '{self.user}'") from None
            raise ConnectError(f"{self.url}: {e.message}") from None
        return self.probe(text.strip())

    def execute(self, sql: str, settings: dict[str, str], query_id: str, timeout: float | None) -> Sample:
        return self._timed(sql, settings, query_id, timeout)[0]

    def fetch(self, sql: str, settings: dict[str, str], query_id: str, timeout: float | None) -> tuple[Sample, Result]:
        s, data = self._timed(sql, {**settings, "default_format": "TabSeparatedWithNamesAndTypes"}, query_id, timeout)
        return s, parse_tsv_with_types(data.decode("utf-8", "replace"))

    def _timed(self, sql: str, settings: dict[str, str], query_id: str, timeout: float | None) -> tuple[Sample, bytes]:
        params = {"query_id": query_id, **settings}
        read_timeout = None if timeout is None else timeout + 5.0
        path, body = self._request(sql, params)
        t0 = time.perf_counter()
        try:
            r = self._post(path, body, read_timeout)
        except _TRANSPORT as e:
            raise self._translate(e, query_id, read_timeout) from None
        client_ms = (time.perf_counter() - t0) * 1000.0
        data = r.data
        _check(r)
        s = Sample(query_id=query_id, client_ms=client_ms, result_bytes=len(data))
        summary = r.headers.get("X-ClickHouse-Summary")
        if summary:
            try:
                j = json.loads(summary)
            except ValueError:
                j = {}
            if "elapsed_ns" in j:
                s.server_ms = int(j["elapsed_ns"]) / 1e6
            s.read_rows = _int(j.get("read_rows"))
            s.read_bytes = _int(j.get("read_bytes"))
            s.memory_bytes = _int(j.get("memory_usage"))
            # the header leaves before the result unless the server buffered all of it: then
            # its result counts read 0 whatever came (SELECT number FROM numbers(1000): "0"
            # and 16 KB of body), so they count only when they say something was sent
            counted = j.get("result_bytes") not in (None, "0")
            if counted or not data:
                s.result_rows = _int(j.get("result_rows"))
            if counted:
                s.result_bytes = _int(j.get("result_bytes"))
        return s, data

    def insert_stream(self, sql: str, body: Iterable[bytes], encoding: str | None = None,
                      params: dict[str, str] | None = None) -> int | None:
        """Stream ``body`` (chunked) as the data of an INSERT: the server parses it, and
        decompresses it when ``encoding`` (a Content-Encoding) is given. Returns the
        server's ``written_rows``. One request on a connection of its own."""
        query = {"query": sql, **(params or {})}
        if self.database:
            query["database"] = self.database
        headers = {k: v for k, v in self._headers.items() if k != "Connection"}
        if encoding:
            headers["Content-Encoding"] = encoding
        conn = self._new_connection()
        try:
            conn.connect()
            assert conn.sock is not None
            conn.sock.settimeout(None)
            conn.request("POST", "/?" + urlencode(query), body=body, headers=headers, encode_chunked=True)
            r = conn.getresponse()
            data = r.read()
        except (OSError, http.client.HTTPException) as e:
            raise ServerLost(f"{self.url}: server stopped answering ({_reason(e)})") from None
        finally:
            conn.close()
        _check(_Response(r.status, r.headers, data))
        try:
            return _int(json.loads(r.headers.get("X-ClickHouse-Summary") or "{}").get("written_rows"))
        except ValueError:
            return None

    def data_key(self) -> tuple[object, ...]:
        return ("server", self.host, self.port)

    def close(self) -> None:
        self._drop()
        if self._wire is not None:
            self._wire.close()

    def reconnect(self) -> None:
        self._drop()
        if self._wire is not None:
            self._wire.close()

    @property
    def label(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.secure else 'http'}://{host}:{self.port}"

    def is_local(self) -> bool:
        return is_loopback(self.host)

    def preferred_settings(self) -> tuple[dict[str, str], list[str]]:
        # the wire format the native protocol carries; row formats cost the server more
        # (SELECT 1 here: ~1,800 QPS with Native, ~1,250 with TabSeparated)
        return {"default_format": "Native"}, ["http: results requested as default_format=Native (a FORMAT in the "
                                              "query wins)"]


def _check(r: _Response) -> None:
    """A response other than 200 is the query's error, with the server's code."""
    if r.status != 200:
        text = r.data.decode("utf-8", "replace")
        code = r.headers.get("X-ClickHouse-Exception-Code")
        raise QueryError(int(code) if code else parse_exception_code(text), first_line(text))


class _Headers(dict[str, str]):
    def get(self, name: str, default: Any = None) -> Any:
        return super().get(name.lower(), default)


class _Wire:
    """HTTP/1.1 keep-alive on a bare socket, for load runs (``light=True``).

    http.client parses every response's headers through the email package, ~100 µs
    per request here — a third of a ``SELECT 1`` round trip; with 4 connections in one
    process that GIL time capped QPS at 0.77x clickhouse-benchmark's. This path sends
    one buffer per request (TCP_NODELAY) and reads the status line, headers and a
    Content-Length or chunked body itself. TLS uses the same verifying context."""

    def __init__(self, host: str, port: int, context: ssl.SSLContext | None, auth: str) -> None:
        self.host, self.port, self.context = host, port, context
        self._prefix = f"Host: {host}:{port}\r\nAuthorization: {auth}\r\nConnection: keep-alive\r\n"
        self.sock: socket.socket | None = None
        self.rfile: Any = None

    def close(self) -> None:
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.rfile.close()
                self.sock.close()
        self.sock = self.rfile = None

    def _connect(self) -> None:
        try:
            sock = socket.create_connection((self.host, self.port), timeout=CONNECT_TIMEOUT)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.context is not None:
                sock = self.context.wrap_socket(sock, server_hostname=self.host)
        except OSError as e:
            raise _Unreachable(_reason(e)) from None
        self.sock = sock
        self.rfile = sock.makefile("rb", buffering=65536)

    def post(self, path: str, body: bytes, timeout: float | None) -> _Response:
        request = f"POST {path} HTTP/1.1\r\n{self._prefix}Content-Length: {len(body)}\r\n\r\n".encode() + body
        for attempt in (0, 1):
            reused = self.sock is not None
            if self.sock is None:
                self._connect()
            assert self.sock is not None
            try:
                self.sock.settimeout(timeout)
                self.sock.sendall(request)
                status_line = self.rfile.readline(65537)
                if not status_line:
                    raise ConnectionResetError("Remote end closed connection")
                return self._response(status_line)
            except TimeoutError:
                self.close()
                raise _ClientTimeout() from None
            except (ConnectionResetError, BrokenPipeError) as e:
                # a keep-alive connection the server closed while idle: safe to retry once
                self.close()
                if attempt or not reused:
                    raise _Unreachable(_reason(e)) from None
            except (OSError, ValueError) as e:
                self.close()
                raise _Unreachable(_reason(e)) from None
            except BaseException:
                # interrupted mid-exchange (Ctrl-C): what is left of the response would be
                # read as the next one's (a tear-down after Ctrl-C failed that way)
                self.close()
                raise
        raise AssertionError("unreachable")

    def _response(self, status_line: bytes) -> _Response:
        rfile = self.rfile
        parts = status_line.split(None, 2)
        status = int(parts[1])
        headers = _Headers()
        while True:
            line = rfile.readline(65537)
            if line in (b"\r\n", b"\n"):
                break
            if not line:
                raise ConnectionResetError("Remote end closed connection")
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        length = headers.get("content-length")
        if length is not None:
            data = rfile.read(int(length))
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            chunks = []
            while True:
                size = int(rfile.readline(65537).split(b";", 1)[0], 16)
                if size == 0:
                    while rfile.readline(65537) not in (b"\r\n", b"\n", b""):  # trailers
                        pass
                    break
                chunks.append(rfile.read(size))
                rfile.read(2)
            data = b"".join(chunks)
        else:
            data = rfile.read()
            self.close()
        if headers.get("connection", "").lower() == "close":
            self.close()
        return _Response(status, headers, data)  # type: ignore[arg-type]


def _int(v: Any) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _reason(e: BaseException) -> str:
    text = str(e)
    for marker in ("Connection refused", "Name or service not known", "timed out", "Connection reset",
                   "Remote end closed connection", "CERTIFICATE_VERIFY_FAILED", "No route to host"):
        if marker.lower() in text.lower():
            return marker
    return first_line(text, 160)
