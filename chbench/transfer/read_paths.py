"""Read paths: one way each of getting a query's result into Python objects.

Each path is a function ``(ctx) -> rows delivered`` run in a process of its own
(``read_process``), so that its peak memory is its own. ``connect()`` happens before the
clock starts; the timed part is the query and the decoding into Python objects (rows,
numpy arrays, an Arrow table or a DataFrame), which the path then hands back to us.
"""

from __future__ import annotations

import gzip
import http.client
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chbench.targets import Protocol
from chbench.transfer.endpoints import Address, RawHttp, Skip, connect_client, driver_client


@dataclass
class ReadContext:
    query: str
    rows: int | None  # expected rows, if known (lets the lean reader allocate once)
    http: Address | None
    native: Address | None
    chdb_path: str | None  # the embedded engine's data ('' in memory), None: no embedded target
    password: str | None
    ca_file: str | None
    settings: dict[str, str] = field(default_factory=dict)
    compress: bool = False
    buffer_bytes: int | None = None  # clickhouse-connect's read-ahead buffer (http_buffer_size)
    state: dict[str, Any] = field(default_factory=dict)  # what connect() opened


@dataclass
class ReadPath:
    name: str
    protocol: Protocol
    description: str
    connect: Callable[[ReadContext], None]
    run: Callable[[ReadContext], int]


# -- raw HTTP ---------------------------------------------------------------------------

def _raw_connect(ctx: ReadContext) -> None:
    if ctx.http is None:
        raise Skip("needs an http:// target")
    ctx.state["raw"] = RawHttp(ctx.http, ctx.password, ctx.ca_file)


def _raw_body(ctx: ReadContext, fmt: str) -> Any:
    """The response of ``query FORMAT fmt``, as a readable stream (decompressed)."""
    raw: RawHttp = ctx.state["raw"]
    params = {"query": f"{ctx.query}\nFORMAT {fmt}", **ctx.settings}
    headers = {}
    if ctx.compress:
        params["enable_http_compression"] = "1"
        headers["Accept-Encoding"] = "gzip"
    resp: http.client.HTTPResponse = raw.post(params, b"", headers)
    if resp.status != 200:
        text = resp.read().decode("utf-8", "replace").strip().splitlines()[0][:300]
        if "Code: 73" in text or "UNKNOWN_FORMAT" in text or "Unknown format" in text:
            raise Skip(f"the server has no FORMAT {fmt}")
        raise RuntimeError(text)
    if resp.getheader("Content-Encoding") == "gzip":
        return gzip.GzipFile(fileobj=resp)
    return resp


def http_native(ctx: ReadContext) -> int:
    from chbench.transfer.native_format import read_native

    cols = read_native(_raw_body(ctx, "Native"), ctx.rows)
    ctx.state["result"] = cols
    return len(next(iter(cols.values()))) if cols else 0


def http_arrowstream(ctx: ReadContext) -> int:
    import pyarrow.ipc as ipc

    table = ipc.open_stream(_raw_body(ctx, "ArrowStream")).read_all()
    ctx.state["result"] = table
    return table.num_rows


def http_parquet(ctx: ReadContext) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(pa.BufferReader(_raw_body(ctx, "Parquet").read()))
    ctx.state["result"] = table
    return table.num_rows


def http_tsv(ctx: ReadContext) -> int:
    body = _raw_body(ctx, "TabSeparatedWithNamesAndTypes")
    body.readline()
    types = body.readline().decode().rstrip("\n").split("\t")
    conv = [int if t.startswith(("UInt", "Int")) else float if t.startswith("Float") else str for t in types]
    rows = [[c(v) for c, v in zip(conv, line.decode().rstrip("\n").split("\t"), strict=True)] for line in body]
    ctx.state["result"] = rows
    return len(rows)


def http_rowbinary(ctx: ReadContext) -> int:
    """RowBinaryWithNamesAndTypes decoded row by row with struct (fixed types, String)."""
    import struct

    body = _raw_body(ctx, "RowBinaryWithNamesAndTypes")
    data = body.read()
    pos = 0

    def varint() -> int:
        nonlocal pos
        shift = result = 0
        while True:
            b = data[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result
            shift += 7

    def text() -> str:
        nonlocal pos
        n = varint()
        s = data[pos:pos + n].decode("utf-8", "replace")
        pos += n
        return s

    ncols = varint()
    [text() for _ in range(ncols)]
    types = [text() for _ in range(ncols)]
    fmts = {"UInt8": "<B", "UInt16": "<H", "UInt32": "<I", "UInt64": "<Q", "Int8": "<b", "Int16": "<h",
            "Int32": "<i", "Int64": "<q", "Float32": "<f", "Float64": "<d", "Date": "<H", "DateTime": "<I"}
    readers: list[Any] = []
    for t in types:
        if t in fmts:
            readers.append(struct.Struct(fmts[t]))
        elif t == "String":
            readers.append(None)
        else:
            raise RuntimeError(f"this RowBinary decoder does not read {t}")
    rows = []
    end = len(data)
    while pos < end:
        row = []
        for r in readers:
            if r is None:
                row.append(text())
            else:
                row.append(r.unpack_from(data, pos)[0])
                pos += r.size
        rows.append(row)
    ctx.state["result"] = rows
    return len(rows)


# -- clickhouse-connect -----------------------------------------------------------------

def _connect_connect(ctx: ReadContext) -> None:
    from clickhouse_connect import common

    if ctx.buffer_bytes:
        common.set_setting("http_buffer_size", ctx.buffer_bytes)
    ctx.state["client"] = connect_client(ctx.http, ctx.password, ctx.ca_file, ctx.compress)


def connect_rows(ctx: ReadContext) -> int:
    rows = ctx.state["client"].query(ctx.query, settings=ctx.settings).result_rows
    ctx.state["result"] = rows
    return len(rows)


def connect_numpy(ctx: ReadContext) -> int:
    arr = ctx.state["client"].query_np(ctx.query, settings=ctx.settings)
    ctx.state["result"] = arr
    return len(arr)


def connect_arrow(ctx: ReadContext) -> int:
    t = ctx.state["client"].query_arrow(ctx.query, settings=ctx.settings)
    ctx.state["result"] = t
    return t.num_rows


def connect_df(ctx: ReadContext) -> int:
    df = ctx.state["client"].query_df(ctx.query, settings=ctx.settings)
    ctx.state["result"] = df
    return len(df)


def connect_stream(ctx: ReadContext) -> int:
    n = 0
    with ctx.state["client"].query_column_block_stream(ctx.query, settings=ctx.settings) as stream:
        for block in stream:
            n += len(block[0]) if block else 0
    return n


# -- clickhouse-driver ------------------------------------------------------------------

def _driver(ctx: ReadContext, numpy: bool = False) -> None:
    client = driver_client(ctx.native, ctx.password, ctx.ca_file, ctx.compress, {"use_numpy": True} if numpy else None)
    client.execute("SELECT 1")
    ctx.state["client"] = client


def driver_execute(ctx: ReadContext) -> int:
    rows = ctx.state["client"].execute(ctx.query, settings=ctx.settings)
    ctx.state["result"] = rows
    return len(rows)


def driver_iter(ctx: ReadContext) -> int:
    n = 0
    for _ in ctx.state["client"].execute_iter(ctx.query, settings=ctx.settings):
        n += 1
    return n


def driver_columnar(ctx: ReadContext) -> int:
    cols = ctx.state["client"].execute(ctx.query, settings=ctx.settings, columnar=True)
    ctx.state["result"] = cols
    return len(cols[0]) if cols else 0


# -- the embedded engine ----------------------------------------------------------------

def _embedded(ctx: ReadContext) -> None:
    if ctx.chdb_path is None:
        raise Skip("needs the embedded target")
    import chdb

    ctx.state["conn"] = chdb.connect(ctx.chdb_path or ":memory:")
    ctx.state["conn"].query("SELECT 1")


def _embedded_query(ctx: ReadContext, fmt: str) -> Any:
    sql = ctx.query
    if ctx.settings:
        sql += " SETTINGS " + ", ".join(f"{k} = {v}" for k, v in ctx.settings.items())
    return ctx.state["conn"].query(sql, fmt)


def embedded_arrow(ctx: ReadContext) -> int:
    t = _embedded_query(ctx, "ArrowTable")
    ctx.state["result"] = t
    return t.num_rows


def embedded_df(ctx: ReadContext) -> int:
    df = _embedded_query(ctx, "DataFrame")
    ctx.state["result"] = df
    return len(df)


PATHS: dict[str, ReadPath] = {p.name: p for p in [
    ReadPath("http-native", Protocol.HTTP, "raw HTTP, FORMAT Native read straight into numpy (chbench's lean reader)",
             _raw_connect, http_native),
    ReadPath("http-arrowstream", Protocol.HTTP, "raw HTTP, FORMAT ArrowStream read by pyarrow", _raw_connect,
             http_arrowstream),
    ReadPath("http-parquet", Protocol.HTTP, "raw HTTP, FORMAT Parquet read by pyarrow", _raw_connect, http_parquet),
    ReadPath("http-tsv", Protocol.HTTP, "raw HTTP, TSV decoded in Python", _raw_connect, http_tsv),
    ReadPath("http-rowbinary", Protocol.HTTP, "raw HTTP, RowBinary decoded in Python (struct)", _raw_connect,
             http_rowbinary),
    ReadPath("connect-rows", Protocol.HTTP, "clickhouse-connect query().result_rows", _connect_connect, connect_rows),
    ReadPath("connect-numpy", Protocol.HTTP, "clickhouse-connect query_np", _connect_connect, connect_numpy),
    ReadPath("connect-arrow", Protocol.HTTP, "clickhouse-connect query_arrow", _connect_connect, connect_arrow),
    ReadPath("connect-df", Protocol.HTTP, "clickhouse-connect query_df", _connect_connect, connect_df),
    ReadPath("connect-stream", Protocol.HTTP, "clickhouse-connect query_column_block_stream, block by block",
             _connect_connect, connect_stream),
    ReadPath("driver-execute", Protocol.NATIVE, "clickhouse-driver execute (rows)", _driver, driver_execute),
    ReadPath("driver-iter", Protocol.NATIVE, "clickhouse-driver execute_iter (streaming rows)", _driver, driver_iter),
    ReadPath("driver-columnar", Protocol.NATIVE, "clickhouse-driver execute(columnar=True)", _driver, driver_columnar),
    ReadPath("driver-numpy", Protocol.NATIVE, "clickhouse-driver use_numpy, columnar", lambda c: _driver(c, numpy=True),
             driver_columnar),
    ReadPath("embedded-arrow", Protocol.EMBEDDED, "embedded engine, ArrowTable result", _embedded, embedded_arrow),
    ReadPath("embedded-df", Protocol.EMBEDDED, "embedded engine, DataFrame result", _embedded, embedded_df),
]}
