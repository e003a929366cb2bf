"""Native TCP protocol target, through clickhouse-driver.

clickhouse-driver does the protocol (handshake, packets, blocks, TLS, compression);
``execute`` drives its ``Connection`` packet by packet instead of going through
``Client.execute``, which spends most of its time on conveniences a benchmark does not
need. Measured here for ``SELECT 1`` on the 26.9 server while building it:
``Client.execute`` in a loop reached 0.75x clickhouse-benchmark's QPS at -c 1, this
path with ``light=True`` 1.03x.

``light=True`` (load runs) announces an older protocol revision (54450), the one
just before per-query ProfileEvents packets, so the server does not send (and we do
not decode) a block of ~100 counters after every query. The price: no server elapsed
time in progress packets, which load runs do not use.
"""

from __future__ import annotations

import datetime as dt
import io
import time
from typing import Any, ClassVar

from clickhouse_driver import Client, defines
from clickhouse_driver import errors as cherrors
from clickhouse_driver.block import BlockInfo
from clickhouse_driver.clientinfo import ClientInfo
from clickhouse_driver.columns.service import read_column
from clickhouse_driver.protocol import ClientPacketTypes, ServerPacketTypes
from clickhouse_driver.reader import read_binary_str, read_binary_uint8
from clickhouse_driver.settings.writer import SettingsFlags, write_settings
from clickhouse_driver.varint import read_varint, write_varint
from clickhouse_driver.writer import write_binary_str

from chbench.errors import ChbenchError, ConnectError, QueryError, ServerLost, quiet_library_log
from chbench.targets.base import (
    AUTH_CODES,
    SETTING_NOT_SENDABLE,
    VALUE_REFUSED,
    Capabilities,
    Credentials,
    Sample,
    ServerInfo,
    Target,
    admin_query_id,
    first_line,
    is_loopback,
)
from chbench.targets.result import Result
from chbench.targets.url import DEFAULT_PORTS, Protocol, TargetURL

quiet_library_log("clickhouse_driver")

LIGHT_REVISION = defines.DBMS_MIN_PROTOCOL_VERSION_WITH_INCREMENTAL_PROFILE_EVENTS - 1
STAGES = {"fetch_columns": 0, "with_mergeable_state": 1, "complete": 2}

_NETWORK_ERRORS = (cherrors.NetworkError, cherrors.SocketTimeoutError, EOFError, ConnectionError, OSError)
_QUERY_ERRORS = (cherrors.Error, EOFError, OSError)  # everything _translate() maps
_NOT_NATIVE = (cherrors.UnexpectedPacketFromServerError, cherrors.UnknownPacketFromServerError)


class NativeTarget(Target):
    protocol = Protocol.NATIVE
    capabilities: ClassVar[Capabilities] = Capabilities(stages=True)

    def __init__(self, url: TargetURL, creds: Credentials, light: bool = False, stage: str = "complete") -> None:
        super().__init__(url.display())
        self.user = url.user
        self.host, self.port = url.host, url.port
        self.stage = STAGES[stage]
        self._kw = dict(
            host=url.host,
            port=url.port,
            user=url.user,
            password=creds.password or "",
            database=url.database or "default",
            secure=url.secure,
            verify=True,
            ca_certs=creds.ca_file,
            connect_timeout=5,
            send_receive_timeout=3600,
            client_name="chbench",
        )
        extra = {"client_revision": LIGHT_REVISION} if light else {}
        self._client = Client(**self._kw, **extra)
        self._admin_client: Client | None = None
        self._reopen = False  # the server closed the connection after refusing a setting's value

    @classmethod
    def from_url(cls, url: TargetURL, creds: Credentials, light: bool, stage: str) -> Target:
        return cls(url, creds, light, stage)

    def _message(self, e: BaseException) -> str:
        msg = getattr(e, "message", None) or str(e)
        password = str(self._kw["password"])
        return first_line(msg.replace(password, "***") if password else msg)

    def query_rows(self, sql: str) -> list[list[str]]:
        try:
            rows = self._client.execute(sql, query_id=admin_query_id())
        except _QUERY_ERRORS as e:
            raise self._translate(e, self._client.connection, None, None) from None
        return [[str(v) for v in row] for row in rows]

    def connect(self) -> ServerInfo:
        try:
            version = self._client.execute("SELECT version()", query_id=admin_query_id())[0][0]
        except _QUERY_ERRORS as e:
            raise self._connect_error(e) from None
        return self.probe(str(version))

    def _connect_error(self, e: BaseException) -> ChbenchError:
        """Why connecting failed, in one line that names the likely mistake."""
        if isinstance(e, cherrors.ServerException):
            if e.code in AUTH_CODES:
                return ConnectError(f"{self.url}: authentication failed for user '{self.user}'")
            return ConnectError(f"{self.url}: {self._message(e)}")
        if isinstance(e, _NOT_NATIVE):  # e.g. an HTTP port: the server answered with HTTP
            http_hint = "an HTTP port" if self.port in (DEFAULT_PORTS["http"], DEFAULT_PORTS["https"]) else \
                "not a native-protocol port"
            return ConnectError(f"cannot connect to {self.url}: port {self.port} does not speak the native protocol "
                                f"({http_hint}? use http://{self.host}:{self.port}, or the native port "
                                f"{DEFAULT_PORTS['clickhouse']})")
        return ConnectError(f"cannot connect to {self.url}: {self._message(e)}")

    def execute(self, sql: str, settings: dict[str, str], query_id: str, timeout: float | None) -> Sample:
        conn = self._client.connection
        conn.send_receive_timeout = (timeout + 5.0) if timeout else 3600
        conn.context.settings = settings
        if self._reopen:  # untimed: the connection the server closed is no part of this query
            self._reopen = False
            try:
                conn.connect()
            except _QUERY_ERRORS as e:
                raise self._translate(e, conn, query_id, timeout) from None
        t0 = time.perf_counter()
        try:
            if not conn.connected:
                conn.connect()
            _send_query(conn, sql, query_id, self.stage)
            s = Sample(query_id=query_id)
            rows = _receive_result(conn, s)
        except _QUERY_ERRORS as e:
            raise self._translate(e, conn, query_id, timeout) from None
        s.client_ms = (time.perf_counter() - t0) * 1000.0
        s.result_rows = rows
        return s

    def fetch(self, sql: str, settings: dict[str, str], query_id: str, timeout: float | None) -> tuple[Sample, Result]:
        """Through clickhouse-driver's ``Client.execute`` (typed rows, decoded into text)."""
        conn = self._client.connection
        conn.send_receive_timeout = (timeout + 5.0) if timeout else 3600
        t0 = time.perf_counter()
        try:
            rows, columns = self._client.execute(sql, settings=settings, query_id=query_id, with_column_types=True)
        except _QUERY_ERRORS as e:
            raise self._translate(e, conn, query_id, timeout) from None
        s = Sample(query_id=query_id, client_ms=(time.perf_counter() - t0) * 1000.0, result_rows=len(rows))
        progress = getattr(self._client.last_query, "progress", None)
        if progress is not None:
            s.read_rows, s.read_bytes = progress.rows, progress.bytes
        elapsed = getattr(self._client.last_query, "elapsed", None)
        if elapsed:
            s.server_ms = float(elapsed) * 1000.0
        names = [c[0] for c in columns]
        types = [c[1] for c in columns]
        return s, Result(names, types, [[_text(v) for v in row] for row in rows])

    def _translate(self, e: BaseException, conn: Any, query_id: str | None, timeout: float | None) -> Exception:
        """A driver or network error, as chbench reports it: the one place clickhouse-driver's
        exceptions are mapped (used in ``except`` clauses: the success path costs nothing)."""
        if isinstance(e, cherrors.ServerException):
            if _connection_spent(e, conn):
                conn.disconnect()
                self._reopen = True
            return QueryError(e.code, self._message(e))
        conn.disconnect()
        if isinstance(e, cherrors.SocketTimeoutError) and query_id is not None:
            self.kill_query(query_id)
            return QueryError(159, f"client timeout: no answer within {timeout or 0:.0f} s (query killed)")
        if isinstance(e, _NETWORK_ERRORS):
            return ServerLost(f"{self.url}: server stopped answering ({self._message(e)})")
        if isinstance(e, _NOT_NATIVE):
            return self._connect_error(e)
        # e.g. a result type the driver cannot decode: the stream is lost
        return QueryError(None, f"client cannot read the result: {self._message(e)}")

    def reconnect(self) -> None:
        self._client.connection.disconnect()

    def kill_query(self, query_id: str) -> None:
        try:
            if self._admin_client is None:
                self._admin_client = Client(**self._kw)
            self._admin_client.execute(f"KILL QUERY WHERE query_id = '{query_id}' ASYNC", query_id=admin_query_id())
        except Exception:  # noqa: BLE001 - best effort only
            pass

    def data_key(self) -> tuple[object, ...]:
        return ("server", self.host, self.port)

    def close(self) -> None:
        self._client.disconnect()
        if self._admin_client is not None:
            self._admin_client.disconnect()

    @property
    def label(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    def is_local(self) -> bool:
        return is_loopback(self.host)


_BLOCK_PACKETS = frozenset({
    ServerPacketTypes.DATA, ServerPacketTypes.TOTALS, ServerPacketTypes.EXTREMES, ServerPacketTypes.LOG,
    ServerPacketTypes.PROFILE_EVENTS, ServerPacketTypes.PART_UUIDS, ServerPacketTypes.READ_TASK_REQUEST,
})


def _read_block_rows(conn: Any, revision: int) -> int:
    """A block's row count, its columns read and dropped (clickhouse-driver's
    ``BlockInputStream.read`` without building a block object; compression is off)."""
    fin = conn.fin
    if revision >= defines.DBMS_MIN_REVISION_WITH_TEMPORARY_TABLES:
        read_binary_str(fin)  # external table name
    if revision >= defines.DBMS_MIN_REVISION_WITH_BLOCK_INFO:
        BlockInfo().read(fin)
    n_columns = read_varint(fin)
    n_rows = read_varint(fin)
    custom = revision >= defines.DBMS_MIN_REVISION_WITH_CUSTOM_SERIALIZATION
    for _ in range(n_columns):
        read_binary_str(fin)  # name
        column_type = read_binary_str(fin)
        has_custom = bool(read_binary_uint8(fin)) if custom else False
        if n_rows:
            read_column(conn.context, column_type, n_rows, fin, use_numpy=False, has_custom_serialization=has_custom)
    return n_rows


def _receive_result(conn: Any, s: Sample) -> int:
    """Finish a query: send the empty external-data block, then read packets until the
    end of the stream, filling ``s``; returns the result rows."""
    revision = conn.server_info.used_revision
    empty = getattr(conn, "_chbench_empty_data", None)
    if empty is None or empty[0] != revision:
        buf = io.BytesIO()
        write_varint(ClientPacketTypes.DATA, buf)
        if revision >= defines.DBMS_MIN_REVISION_WITH_TEMPORARY_TABLES:
            write_binary_str("", buf)
        if revision >= defines.DBMS_MIN_REVISION_WITH_BLOCK_INFO:
            BlockInfo().write(buf)
        write_varint(0, buf)  # columns
        write_varint(0, buf)  # rows
        empty = conn._chbench_empty_data = (revision, buf.getvalue())
    conn.fout.write(empty[1])
    conn.fout.flush()
    if conn.compression:  # not used by chbench; the driver's reader handles compressed blocks
        return _receive_with_driver(conn, s)
    fin = conn.fin
    rows = 0
    while True:
        kind = read_varint(fin)
        if kind in _BLOCK_PACKETS:
            n = _read_block_rows(conn, revision)
            if kind == ServerPacketTypes.DATA:
                rows += n
        elif kind == ServerPacketTypes.PROGRESS:
            _add_progress(s, conn.receive_progress())
        elif kind == ServerPacketTypes.PROFILE_INFO:
            info = conn.receive_profile_info()
            if info.bytes:
                s.result_bytes = info.bytes
        elif kind == ServerPacketTypes.END_OF_STREAM:
            conn.is_query_executing = False
            return rows
        elif kind == ServerPacketTypes.EXCEPTION:
            conn.is_query_executing = False
            raise conn.receive_exception()
        elif kind == ServerPacketTypes.TABLE_COLUMNS:
            conn.receive_multistring_message(kind)
        elif kind == ServerPacketTypes.TIMEZONE_UPDATE:
            read_binary_str(fin)
        else:
            conn.disconnect()
            raise cherrors.UnknownPacketFromServerError(f"unknown packet {kind} from the server")


def _add_progress(s: Sample, p: Any) -> None:
    s.read_rows = (s.read_rows or 0) + p.rows
    s.read_bytes = (s.read_bytes or 0) + p.bytes
    if p.elapsed_ns:  # summed over packets, as clickhouse-driver does
        s.server_ms = (s.server_ms or 0.0) + p.elapsed_ns / 1e6


def _receive_with_driver(conn: Any, s: Sample) -> int:
    rows = 0
    while True:
        packet = conn.receive_packet()
        kind = packet.type
        if kind == ServerPacketTypes.DATA and packet.block is not None:
            rows += packet.block.num_rows
        elif kind == ServerPacketTypes.PROGRESS:
            _add_progress(s, packet.progress)
        elif kind == ServerPacketTypes.PROFILE_INFO and packet.profile_info.bytes:
            s.result_bytes = packet.profile_info.bytes
        elif kind == ServerPacketTypes.END_OF_STREAM:
            return rows
        elif kind == ServerPacketTypes.EXCEPTION:
            conn.is_query_executing = False
            raise packet.exception


# The first server version seen to keep a connection usable after a query's exception.
# 18.16 does not: it reads the empty data block that follows every query as the next
# packet ("Unexpected packet Data received from client"), so the query after a failed one
# failed too. Versions between were not tried: they reconnect, untimed, as 18.16 does.
KEEPS_CONNECTION_FROM = 26


def _connection_spent(e: Any, conn: Any) -> bool:
    """Whether the connection is of no use after this server exception: a refused
    setting's value (the server closes it: the next query met "Connection reset by peer",
    and a run with one bad per-query setting ended as "server lost", 26.9), or any error
    on a server older than KEEPS_CONNECTION_FROM. clickhouse-driver's own Client drops the
    connection after every error; chbench keeps it where it was seen to stay good, so an
    error costs no reconnect there."""
    if e.code in VALUE_REFUSED or "Unexpected value of" in str(e.message):
        return True
    major = getattr(getattr(conn, "server_info", None), "version_major", None)
    return not isinstance(major, int) or major < KEEPS_CONNECTION_FROM


def _send_query(conn: Any, query: str, query_id: str, stage: int) -> None:
    """clickhouse-driver's ``Connection.send_query``, with a processing stage (the
    driver always asks for the complete result; clickhouse-benchmark's --stage can ask
    for less)."""
    c = conn
    fout = c.fout
    revision = c.server_info.used_revision
    as_strings = revision >= defines.DBMS_MIN_REVISION_WITH_SETTINGS_SERIALIZED_AS_STRINGS
    flags = SettingsFlags.IMPORTANT if c.settings_is_important else 0
    typed = None
    if not as_strings:
        # a server before settings went as strings (18.16) gets them typed: the driver encodes
        # them, and max_threads=abc raised its ValueError out of chbench as a traceback.
        # Encoded before the packet starts, so a value it cannot encode leaves nothing half-sent
        typed = io.BytesIO()
        try:
            write_settings(c.context.settings, typed, as_strings, flags)
        except (ValueError, TypeError) as e:
            raise QueryError(None, f"{SETTING_NOT_SENDABLE} to this server (its settings go typed): {e}") from None
    write_varint(ClientPacketTypes.QUERY, fout)
    write_binary_str(query_id or "", fout)
    if revision >= defines.DBMS_MIN_REVISION_WITH_CLIENT_INFO:
        # built once per connection (it looks up the OS user and host name), timed per query
        info = getattr(c, "_chbench_client_info", None)
        if info is None:
            info = ClientInfo(c.client_name, c.context, client_revision=c.client_revision)
            info.query_kind = ClientInfo.QueryKind.INITIAL_QUERY
            c._chbench_client_info = info
        info.initial_query_start_time_microseconds = int(time.time() * 1_000_000)
        info.write(revision, fout)
    if typed is None:
        write_settings(c.context.settings, fout, as_strings, flags)
    else:
        fout.write(typed.getvalue())
    if revision >= defines.DBMS_MIN_REVISION_WITH_INTERSERVER_SECRET:
        write_binary_str("", fout)
    write_varint(stage, fout)
    write_varint(c.compression, fout)
    write_binary_str(query, fout)
    if revision >= defines.DBMS_MIN_PROTOCOL_VERSION_WITH_PARAMETERS:
        write_settings({}, fout, True, SettingsFlags.CUSTOM)
    fout.flush()


def _text(v: Any) -> str:
    """A value from clickhouse-driver as ClickHouse prints it in TSV (unescaped)."""
    if v is None:
        return "\\N"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dt.datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S") + (f".{v.microsecond:06d}" if v.microsecond else "")
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, bytes):
        return v.decode("utf-8", "surrogateescape")
    return str(v)
