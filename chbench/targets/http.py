"""HTTP(S) interface target.

Built on urllib3 (the pooling library clickhouse-connect itself uses) rather than on
clickhouse-connect: measured here, clickhouse-connect adds ~0.2 ms per query on top of
urllib3 (its median overhead for ``SELECT 1`` would exceed our 0.5 ms bar), and it
cannot talk to the 18.16 server at all (it asks for the ``readonly`` identifier). We
send the SQL as the POST body and settings as URL parameters, and read the server's
own timing from the ``X-ClickHouse-Summary`` header.
"""

from __future__ import annotations

import base64
import json
import time
from typing import Any
from urllib.parse import urlencode

import urllib3
from urllib3.exceptions import HTTPError, NewConnectionError, ProtocolError, ReadTimeoutError

from chbench.errors import ConnectError, QueryError, ServerLost
from chbench.targets.base import AUTH_CODES, Sample, ServerInfo, Target, first_line, parse_exception_code


class HttpTarget(Target):
    kind = "http"

    def __init__(
        self,
        url: str,
        host: str,
        port: int,
        secure: bool,
        user: str,
        password: str | None,
        database: str | None,
        ca_file: str | None = None,
    ) -> None:
        super().__init__(url)
        self.host, self.port, self.secure = host, port, secure
        self.user, self.database = user, database
        headers = {"Connection": "keep-alive"}
        token = base64.b64encode(f"{user}:{password or ''}".encode()).decode()
        headers["Authorization"] = f"Basic {token}"
        self._headers = headers
        kw: dict[str, Any] = {"maxsize": 4, "retries": False, "headers": headers, "block": False}
        if secure:
            self._pool: urllib3.HTTPConnectionPool = urllib3.HTTPSConnectionPool(
                host, port, cert_reqs="CERT_REQUIRED", ca_certs=ca_file, **kw
            )
        else:
            self._pool = urllib3.HTTPConnectionPool(host, port, **kw)

    # -- plumbing ----------------------------------------------------------------------
    def _post(self, sql: str, params: dict[str, str], timeout: float | None) -> urllib3.BaseHTTPResponse:
        if self.database:
            params = {"database": self.database, **params}
        path = "/?" + urlencode(params) if params else "/"
        t = urllib3.Timeout(connect=5.0, read=timeout)
        body = sql.encode()
        for attempt in (0, 1):
            try:
                return self._pool.urlopen("POST", path, body=body, timeout=t, preload_content=True)
            except ReadTimeoutError:
                raise
            except ProtocolError:
                # A keep-alive connection the server closed while idle: the request
                # never reached a query, so one retry on a fresh connection is safe.
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def _admin(self, sql: str) -> str:
        try:
            r = self._post(sql, {}, 30.0)
        except (NewConnectionError, ProtocolError, ReadTimeoutError, HTTPError) as e:
            raise ServerLost(f"{self.url}: server stopped answering ({_reason(e)})") from None
        text = r.data.decode("utf-8", "replace")
        if r.status != 200:
            raise QueryError(parse_exception_code(text), first_line(text))
        return text

    def command(self, sql: str) -> None:
        self._admin(sql)

    def query_rows(self, sql: str) -> list[list[str]]:
        text = self._admin(sql + "\nFORMAT TabSeparated")
        return [line.split("\t") for line in text.splitlines()]

    # -- interface ---------------------------------------------------------------------
    def connect(self) -> ServerInfo:
        try:
            text = self._admin("SELECT version()")
        except ServerLost as e:
            raise ConnectError(f"cannot connect to {self.url}: {e.args[0].split('(', 1)[-1].rstrip(')')}") from None
        except QueryError as e:
            if e.code in AUTH_CODES:
                raise ConnectError(f"{self.url}: authentication failed for user '{self.user}'") from None
            raise ConnectError(f"{self.url}: {e.message}") from None
        version = text.strip()
        settings = {r[0]: r[1] for r in self.query_rows("SELECT name, value FROM system.settings")}
        info = ServerInfo(version=version, settings=settings)
        try:
            self._admin("SELECT 1 FROM system.query_log LIMIT 0")
            info.query_log = True
        except QueryError:
            info.notes.append("system.query_log is not readable: --server-metrics unavailable")
        self.info = info
        return info

    def execute(self, sql: str, settings: dict[str, str], query_id: str, timeout: float | None) -> Sample:
        params = {"query_id": query_id, **settings}
        read_timeout = None if timeout is None else timeout + 5.0
        t0 = time.perf_counter()
        try:
            r = self._post(sql, params, read_timeout)
            data = r.data
        except ReadTimeoutError:
            self.kill_query(query_id)
            raise QueryError(159, f"client timeout: no answer within {read_timeout:.0f} s (query killed)") from None
        except (NewConnectionError, ProtocolError, HTTPError) as e:
            raise ServerLost(f"{self.url}: server stopped answering ({_reason(e)})") from None
        client_ms = (time.perf_counter() - t0) * 1000.0
        if r.status != 200:
            text = data.decode("utf-8", "replace")
            code = r.headers.get("X-ClickHouse-Exception-Code")
            raise QueryError(int(code) if code else parse_exception_code(text), first_line(text))
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
            s.result_rows = _int(j.get("result_rows"))
            s.memory_bytes = _int(j.get("memory_usage"))
            if j.get("result_bytes") not in (None, "0"):
                s.result_bytes = _int(j.get("result_bytes"))
        return s

    def close(self) -> None:
        self._pool.close()


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
