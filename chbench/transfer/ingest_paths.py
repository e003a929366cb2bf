"""Ingest paths: one way each of getting the data set into a table.

Every path gets the data set before timing starts and builds what it sends (a CSV
file, CSV batch bodies, Python columns, an Arrow table) in ``prepare`` — untimed, so the
timed ``send`` measures the client library and the wire, not our generator. A batched
path sends each batch with an ``insert_deduplication_token`` and retries a batch whose
connection failed with the same token, so a retry can never land twice.

The unit of transfer differs: ``http-file`` is one POST of the whole file, the embedded
paths one statement; the others send ``batch_size``-row batches. Reports say so.
"""

from __future__ import annotations

import gzip
import os
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from chbench.targets import Protocol
from chbench.transfer.dataset import COLUMNS, Dataset
from chbench.transfer.endpoints import Endpoints, RawHttp, connect_client, driver_client

RETRIES = 3


class PathError(Exception):
    """The path could not land its data (server error, or retries exhausted)."""


@dataclass
class Context:
    endpoints: Endpoints
    table: str
    batch_size: int
    token_prefix: str
    settings: dict[str, str] = field(default_factory=dict)  # e.g. async_insert
    compress: bool = False
    dedup: bool = True  # the server knows insert_deduplication_token
    retries: int = 0  # batches sent again after a connection failure
    batch_ms: list[float] = field(default_factory=list)


def token(ctx: Context, i: int | str) -> dict[str, str]:
    """The batch's deduplication token, as a setting (nothing on servers without them)."""
    return {"insert_deduplication_token": f"{ctx.token_prefix}-{i}"} if ctx.dedup else {}


def with_retries(ctx: Context, send: Callable[[], None], errors: tuple[type[BaseException], ...]) -> None:
    """Send one batch; on a connection failure send it again (same token), up to RETRIES."""
    for attempt in range(RETRIES + 1):
        t0 = time.perf_counter()
        try:
            send()
        except errors as e:
            if attempt == RETRIES:
                raise PathError(f"connection failed {RETRIES + 1} times: {e}") from None
            ctx.retries += 1
            time.sleep(0.1 * (attempt + 1))
            continue
        ctx.batch_ms.append((time.perf_counter() - t0) * 1000.0)
        return


class IngestPath(ABC):
    name = ""
    protocol: Protocol  # where it sends: HTTP, native protocol, the embedded engine
    batched = True
    description = ""

    def unit(self, ctx: Context) -> str:
        return f"{ctx.batch_size:,}/batch" if self.batched else "1 request"

    def prepare(self, ds: Dataset, ctx: Context) -> None:  # noqa: B027 - optional
        """Build what will be sent (untimed)."""

    @abstractmethod
    def send(self, ds: Dataset, ctx: Context) -> None:
        """Send everything (timed)."""

    def close(self) -> None:  # noqa: B027 - optional
        pass


def _check(resp: Any) -> None:
    data = resp.read()
    if resp.status != 200:
        raise PathError(data.decode("utf-8", "replace").strip().splitlines()[0][:300])


def _http_errors() -> tuple[type[BaseException], ...]:
    import http.client

    return (OSError, http.client.HTTPException)


class HttpFile(IngestPath):
    name = "http-file"
    protocol = Protocol.HTTP
    batched = False
    description = "raw HTTP: the whole CSVWithNames file streamed in one POST"

    def prepare(self, ds: Dataset, ctx: Context) -> None:
        fd, self.path = tempfile.mkstemp(suffix=".csv", prefix="chbench-ingest-")
        with os.fdopen(fd, "wb") as f:
            f.write(ds.csv_bytes())

    def send(self, ds: Dataset, ctx: Context) -> None:
        assert ctx.endpoints.http is not None
        raw = RawHttp(ctx.endpoints.http, ctx.endpoints.password, ctx.endpoints.ca_file)

        def pieces() -> Any:
            with open(self.path, "rb") as f:
                while piece := f.read(1 << 20):
                    yield gzip.compress(piece, 1) if ctx.compress else piece

        params = {"query": f"INSERT INTO {ctx.table} FORMAT CSVWithNames",
                  **token(ctx, "all"), **ctx.settings}
        headers = {"Content-Encoding": "gzip"} if ctx.compress else {}
        with_retries(ctx, lambda: _check(raw.post(params, pieces(), headers, chunked=True)), _http_errors())
        raw.close()

    def close(self) -> None:
        if getattr(self, "path", None):
            os.unlink(self.path)


class _HttpBodies(IngestPath):
    """Raw HTTP, one POST per prepared batch body, on one keep-alive connection."""

    protocol = Protocol.HTTP
    fmt = ""
    bodies: list[bytes]

    def send(self, ds: Dataset, ctx: Context) -> None:
        assert ctx.endpoints.http is not None
        raw = RawHttp(ctx.endpoints.http, ctx.endpoints.password, ctx.endpoints.ca_file)
        for i, body in enumerate(self.bodies):
            params = {"query": f"INSERT INTO {ctx.table} FORMAT {self.fmt}", **token(ctx, i), **ctx.settings}

            def one(body: bytes = body, params: dict[str, str] = params) -> None:
                if ctx.compress:
                    _check(raw.post(params, gzip.compress(body, 1), {"Content-Encoding": "gzip"}))
                else:
                    _check(raw.post(params, body))

            with_retries(ctx, one, _http_errors())
        raw.close()


class HttpBatches(_HttpBodies):
    name = "http-batches"
    fmt = "CSV"
    description = "raw HTTP: one POST of CSV per batch, keep-alive"

    def prepare(self, ds: Dataset, ctx: Context) -> None:
        self.bodies = [ds.csv_bytes(a, b, header=False) for a, b in ds.batches(ctx.batch_size)]


class HttpNative(_HttpBodies):
    name = "http-native"
    fmt = "Native"
    description = "raw HTTP: one POST of a Native-format body per batch (bodies built with numpy before timing)"

    def prepare(self, ds: Dataset, ctx: Context) -> None:
        from chbench.transfer.native_format import encode_dataset

        self.bodies = [encode_dataset(ds, a, b) for a, b in ds.batches(ctx.batch_size)]


def _connect_client(ctx: Context) -> Any:
    return connect_client(ctx.endpoints.http, ctx.endpoints.password, ctx.endpoints.ca_file, ctx.compress)


def _connect_errors() -> tuple[type[BaseException], ...]:
    from clickhouse_connect.driver.exceptions import OperationalError

    return (OSError, OperationalError)


class ConnectColumns(IngestPath):
    name = "connect-native"
    protocol = Protocol.HTTP
    description = "clickhouse-connect: columnar insert (Native format over HTTP)"

    def prepare(self, ds: Dataset, ctx: Context) -> None:
        self.client = _connect_client(ctx)
        cols = ds.python_columns()
        self.batches = [[c[a:b] for c in cols] for a, b in ds.batches(ctx.batch_size)]

    def send(self, ds: Dataset, ctx: Context) -> None:
        for i, batch in enumerate(self.batches):
            settings = {**token(ctx, i), **ctx.settings}
            with_retries(ctx, partial(self.client.insert, ctx.table, batch, column_names=COLUMNS,
                                      column_oriented=True, settings=settings), _connect_errors())

    def close(self) -> None:
        if hasattr(self, "client"):
            self.client.close()


class ConnectArrow(ConnectColumns):
    name = "connect-arrow"
    description = "clickhouse-connect: insert_arrow of an Arrow table (Arrow format over HTTP)"

    def prepare(self, ds: Dataset, ctx: Context) -> None:
        self.client = _connect_client(ctx)
        table = ds.arrow_table()
        self.batches = [table.slice(a, b - a) for a, b in ds.batches(ctx.batch_size)]

    def send(self, ds: Dataset, ctx: Context) -> None:
        for i, batch in enumerate(self.batches):
            settings = {**token(ctx, i), **ctx.settings}
            with_retries(ctx, partial(self.client.insert_arrow, ctx.table, batch, settings=settings),
                         _connect_errors())


def _driver_client(ctx: Context) -> Any:
    return driver_client(ctx.endpoints.native, ctx.endpoints.password, ctx.endpoints.ca_file, ctx.compress)


def _driver_errors() -> tuple[type[BaseException], ...]:
    from clickhouse_driver import errors

    return (OSError, EOFError, errors.NetworkError, errors.SocketTimeoutError)


class DriverRows(IngestPath):
    name = "driver-rows"
    protocol = Protocol.NATIVE
    description = "clickhouse-driver: INSERT … VALUES with a list of row tuples"

    def prepare(self, ds: Dataset, ctx: Context) -> None:
        self.client = _driver_client(ctx)
        cols = ds.python_columns()
        self.batches: list[Any] = [list(zip(*(c[a:b] for c in cols), strict=True))
                                   for a, b in ds.batches(ctx.batch_size)]

    def _send(self, ctx: Context, data: Any, i: int, columnar: bool) -> None:
        settings = {**token(ctx, i), **ctx.settings}

        def one() -> None:
            try:
                self.client.execute(f"INSERT INTO {ctx.table} ({', '.join(COLUMNS)}) VALUES", data,
                                    settings=settings, columnar=columnar)
            except Exception:
                self.client.disconnect()
                raise

        with_retries(ctx, one, _driver_errors())

    def send(self, ds: Dataset, ctx: Context) -> None:
        for i, batch in enumerate(self.batches):
            self._send(ctx, batch, i, False)

    def close(self) -> None:
        if hasattr(self, "client"):
            self.client.disconnect()


class DriverColumns(DriverRows):
    name = "driver-columns"
    description = "clickhouse-driver: INSERT … VALUES with columns (columnar=True)"

    def prepare(self, ds: Dataset, ctx: Context) -> None:
        self.client = _driver_client(ctx)
        cols = ds.python_columns()
        self.batches = [[c[a:b] for c in cols] for a, b in ds.batches(ctx.batch_size)]

    def send(self, ds: Dataset, ctx: Context) -> None:
        for i, batch in enumerate(self.batches):
            self._send(ctx, batch, i, True)


def _chdb(ctx: Context) -> Any:
    """A chDB connection of this path's own, on the embedded engine's data (chDB's own API
    is what these paths measure; a second connection sees the same tables)."""
    import chdb

    return chdb.connect(ctx.endpoints.embedded or ":memory:")


class EmbeddedFile(IngestPath):
    name = "embedded-file"
    protocol = Protocol.EMBEDDED
    batched = False
    description = "embedded engine: INSERT … SELECT * FROM file(CSVWithNames)"

    def prepare(self, ds: Dataset, ctx: Context) -> None:
        self.conn = _chdb(ctx)
        fd, self.path = tempfile.mkstemp(suffix=".csv", prefix="chbench-ingest-")
        with os.fdopen(fd, "wb") as f:
            f.write(ds.csv_bytes())

    def send(self, ds: Dataset, ctx: Context) -> None:
        t0 = time.perf_counter()
        self.conn.query(f"INSERT INTO {ctx.table} SELECT * FROM file('{self.path}', 'CSVWithNames')")
        ctx.batch_ms.append((time.perf_counter() - t0) * 1000.0)

    def close(self) -> None:
        if getattr(self, "path", None):
            os.unlink(self.path)


class EmbeddedArrow(IngestPath):
    name = "embedded-arrow"
    protocol = Protocol.EMBEDDED
    batched = False
    description = "embedded engine: INSERT … SELECT * FROM Python(arrow_table)"

    def prepare(self, ds: Dataset, ctx: Context) -> None:
        self.conn = _chdb(ctx)
        self.arrow = ds.arrow_table()

    def send(self, ds: Dataset, ctx: Context) -> None:
        arrow_table = self.arrow  # noqa: F841 - read by name by chDB's Python() table function
        t0 = time.perf_counter()
        self.conn.query(f"INSERT INTO {ctx.table} SELECT * FROM Python(arrow_table)")
        ctx.batch_ms.append((time.perf_counter() - t0) * 1000.0)


PATHS: dict[str, type[IngestPath]] = {p.name: p for p in (
    HttpFile, HttpBatches, HttpNative, ConnectColumns, ConnectArrow, DriverRows, DriverColumns, EmbeddedFile,
    EmbeddedArrow)}
