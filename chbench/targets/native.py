"""Native TCP protocol target, through clickhouse-driver."""

from __future__ import annotations

import logging
import time

from clickhouse_driver import Client
from clickhouse_driver import errors as cherrors

from chbench.errors import ConnectError, QueryError, ServerLost
from chbench.targets.base import AUTH_CODES, Sample, ServerInfo, Target, first_line

# clickhouse-driver logs each failed connection attempt on stderr; chbench reports the
# failure itself, in one line
_driver_log = logging.getLogger("clickhouse_driver")
_driver_log.addHandler(logging.NullHandler())
_driver_log.propagate = False

_NETWORK_ERRORS = (cherrors.NetworkError, cherrors.SocketTimeoutError, EOFError, ConnectionError, OSError)


class NativeTarget(Target):
    kind = "native"

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
        self.user = user
        self._kw = dict(
            host=host,
            port=port,
            user=user,
            password=password or "",
            database=database or "default",
            secure=secure,
            verify=True,
            ca_certs=ca_file,
            connect_timeout=5,
            send_receive_timeout=3600,
            client_name="chbench",
        )
        self._client = Client(**self._kw)
        self._admin_client: Client | None = None

    def _message(self, e: Exception) -> str:
        msg = getattr(e, "message", None) or str(e)
        return first_line(msg.replace(self._kw["password"], "***") if self._kw["password"] else msg)

    def query_rows(self, sql: str) -> list[list[str]]:
        try:
            rows = self._client.execute(sql)
        except cherrors.ServerException as e:
            raise QueryError(e.code, self._message(e)) from None
        except _NETWORK_ERRORS as e:
            raise ServerLost(f"{self.url}: server stopped answering ({self._message(e)})") from None
        return [[str(v) for v in row] for row in rows]

    def connect(self) -> ServerInfo:
        try:
            version = self._client.execute("SELECT version()")[0][0]
        except cherrors.ServerException as e:
            if e.code in AUTH_CODES:
                raise ConnectError(f"{self.url}: authentication failed for user '{self.user}'") from None
            raise ConnectError(f"{self.url}: {self._message(e)}") from None
        except _NETWORK_ERRORS as e:
            raise ConnectError(f"cannot connect to {self.url}: {self._message(e)}") from None
        return self.probe(str(version))

    def execute(self, sql: str, settings: dict[str, str], query_id: str, timeout: float | None) -> Sample:
        c = self._client
        c.connection.send_receive_timeout = (timeout + 5.0) if timeout else 3600
        t0 = time.perf_counter()
        try:
            rows = c.execute(sql, settings=settings, query_id=query_id)
        except cherrors.ServerException as e:
            raise QueryError(e.code, self._message(e)) from None
        except cherrors.SocketTimeoutError:
            c.disconnect()
            self.kill_query(query_id)
            raise QueryError(159, f"client timeout: no answer within {timeout:.0f} s (query killed)") from None
        except _NETWORK_ERRORS as e:
            c.disconnect()
            raise ServerLost(f"{self.url}: server stopped answering ({self._message(e)})") from None
        client_ms = (time.perf_counter() - t0) * 1000.0
        q = c.last_query
        s = Sample(query_id=query_id, client_ms=client_ms, result_rows=len(rows) if isinstance(rows, list) else None)
        if q is not None:
            if q.progress.elapsed_ns:
                s.server_ms = q.progress.elapsed_ns / 1e6
            s.read_rows = q.progress.rows
            s.read_bytes = q.progress.bytes
            if q.profile_info.bytes:
                s.result_bytes = q.profile_info.bytes
        return s

    def kill_query(self, query_id: str) -> None:
        try:
            if self._admin_client is None:
                self._admin_client = Client(**self._kw)
            self._admin_client.execute(f"KILL QUERY WHERE query_id = '{query_id}' ASYNC")
        except Exception:  # noqa: BLE001 - best effort only
            pass

    def close(self) -> None:
        self._client.disconnect()
        if self._admin_client is not None:
            self._admin_client.disconnect()
