"""Where captured queries come from: a server's ``system.query_log`` (read in pages, in
start-time order) or a query_log the user exported to a file (Parquet, TSVWithNames,
JSONEachRow; read streamed, in any order). Both give :class:`LogRow` — one shape,
whatever the server's version called its columns.

Why a file is not read by the embedded engine: importing chDB and running one query
makes this process resident at 268 MB (measured: 200 MB of it is the engine's own code
mapped in), which leaves nothing of the 300 MB a million-row capture may use. pyarrow
streams a Parquet file batch by batch; the text formats are read line by line."""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from datetime import timezone as dt_timezone
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from chbench.errors import QueryError, UsageError
from chbench.targets import Target
from chbench.targets.result import unescape_tsv

PAGE_ROWS = 20_000  # rows per query_log page: ~20 MB of Python objects at most
TYPE_NAMES = {1: "QueryStart", 2: "QueryFinish", 3: "ExceptionBeforeStart", 4: "ExceptionWhileProcessing"}
INTERFACES = {0: "Unknown", 1: "TCP", 2: "HTTP", 3: "gRPC", 4: "MySQL", 5: "PostgreSQL", 6: "Local"}
_CODE = re.compile(r"Code:\s*(\d+)")


@dataclass(slots=True)
class LogRow:
    start_us: int
    query_id: str
    query: str
    database: str | None
    user: str
    settings: dict[str, str]
    hash: str | None
    duration_ms: float  # to the microsecond where the log has both times (query_duration_ms: whole ms)
    read_rows: int
    read_bytes: int
    result_rows: int
    memory_usage: int
    exception_code: int
    type: str
    kind: str | None
    initial: bool
    session: str


@dataclass
class LogFilter:
    """What the server (or the reader) can filter before a row reaches Python."""

    since_us: int
    until_us: int
    types: tuple[str, ...] = ("QueryFinish",)
    users: list[str] = field(default_factory=list)
    databases: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)  # empty: every kind
    min_duration_ms: int = 0


def session_of(address: str, port: Any, interface: Any) -> str:
    iface = INTERFACES.get(int(interface), str(interface)) if str(interface).isdigit() else str(interface)
    host = address[7:] if address.startswith("::ffff:") else address
    return f"{host}:{port}/{iface}"


# -- a server's system.query_log ----------------------------------------------------------
class ServerLog:
    """``system.query_log`` (or ``clusterAllReplicas(c, system.query_log)``) of a target,
    read in keyset pages ordered by start time: memory stays one page on both ends, and
    the server never sorts the whole window (a top-N per page)."""

    def __init__(self, target: Target, cluster: str | None, mark: str = "") -> None:
        self.target = target
        self.mark = mark  # a comment in every query of the capture, so no capture captures another
        self.table = f"clusterAllReplicas('{cluster}', system.query_log)" if cluster else "system.query_log"
        try:
            rows = target.query_rows("SELECT name, type FROM system.columns "
                                     "WHERE database = 'system' AND table = 'query_log'")
        except QueryError as e:
            raise UsageError(f"{target.url}: cannot read system.columns ({e.message})") from None
        self.columns = {r[0]: r[1] for r in rows}
        if not self.columns:
            raise UsageError(f"{target.url} has no system.query_log (it needs a <query_log> section in the server's "
                             "config; on 18.x queries are logged with the log_queries=1 setting)")
        self.missing = [c for c in ("query_start_time_microseconds", "current_database", "normalized_query_hash",
                                    "query_kind", "exception_code") if c not in self.columns]
        c = self.columns
        self.start = ("toUnixTimestamp64Micro(query_start_time_microseconds)" if "query_start_time_microseconds" in c
                      else "toUInt64(toUInt32(query_start_time)) * 1000000")
        # query_duration_ms is whole milliseconds (a 0.7 ms query logs 0): the start and
        # the finish (event_time) to the microsecond, where the log has both
        duration = ("(toUnixTimestamp64Micro(event_time_microseconds) - "
                    "toUnixTimestamp64Micro(query_start_time_microseconds)) / 1000"
                    if {"event_time_microseconds", "query_start_time_microseconds"} <= set(c) else "query_duration_ms")
        enum = c.get("type", "").startswith("Enum")
        self.type_value = (lambda name: f"'{name}'") if enum else \
            (lambda name: str({v: k for k, v in TYPE_NAMES.items()}[name]))
        if "Settings.Names" in c:
            keys, values = "Settings.Names", "Settings.Values"
        else:
            keys, values = "mapKeys(Settings)", "mapValues(Settings)"
        address = "IPv6NumToString(address)" if c.get("address", "").startswith("FixedString") else "toString(address)"
        self.select = ", ".join([
            f"toString({self.start})", "query_id", "query",
            "current_database" if "current_database" in c else "''", "user",
            f"arrayStringConcat(arrayMap((k, v) -> concat(k, '\\x1F', v), {keys}, {values}), '\\x1E')",
            "toString(normalized_query_hash)" if "normalized_query_hash" in c else "''",
            duration, "read_rows", "read_bytes", "result_rows", "memory_usage",
            "toString(exception_code)" if "exception_code" in c else "substring(exception, 1, 200)",
            "toString(type)", "query_kind" if "query_kind" in c else "''", address, "toString(port)",
            "toString(interface)"])

    @property
    def time_precision(self) -> str:
        return "us" if "query_start_time_microseconds" in self.columns else "s"

    def where(self, f: LogFilter) -> str:
        def quoted(values: list[str]) -> str:
            return ", ".join("'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'" for v in values)

        parts = ["is_initial_query = 1", f"type IN ({', '.join(self.type_value(t) for t in f.types)})",
                 f"event_date >= toDate(toDateTime({f.since_us // 1_000_000}))",
                 f"{self.start} >= {f.since_us}", f"{self.start} < {f.until_us}"]
        if f.users:
            parts.append(f"user IN ({quoted(f.users)})")
        if f.databases:
            if "current_database" not in self.columns:
                raise UsageError(f"{self.target.url}: this query_log has no current_database column (ClickHouse "
                                 f"{self.target.info.version if self.target.info else '?'}): --database cannot "
                                 "filter it")
            parts.append(f"current_database IN ({quoted(f.databases)})")
        if f.kinds and "query_kind" in self.columns:
            parts.append(f"query_kind IN ({quoted(f.kinds)})")
        if f.min_duration_ms:
            parts.append(f"query_duration_ms >= {int(f.min_duration_ms)}")
        return " AND ".join(parts)

    def rows(self, f: LogFilter) -> Iterator[LogRow]:
        where = self.where(f)
        after: tuple[int, str] | None = None
        while True:
            cond = where
            if after is not None:
                qid = after[1].replace("\\", "\\\\").replace("'", "\\'")
                cond += f" AND ({self.start} > {after[0]} OR ({self.start} = {after[0]} AND query_id > '{qid}'))"
            page = self.target.query_rows(f"SELECT {self.mark} {self.select} FROM {self.table} WHERE {cond} "
                                          f"ORDER BY {self.start}, query_id LIMIT {PAGE_ROWS}")
            for r in page:
                yield self._row(r)
            if len(page) < PAGE_ROWS:
                return
            after = (int(page[-1][0]), page[-1][1])

    def _row(self, r: list[str]) -> LogRow:
        settings = dict(kv.split("\x1f", 1) for kv in r[5].split("\x1e") if "\x1f" in kv) if r[5] else {}
        code_text = r[12]
        code = int(code_text) if code_text.lstrip("-").isdigit() else _code_of(code_text)
        type_name = TYPE_NAMES.get(int(r[13]), r[13]) if r[13].isdigit() else r[13]
        return LogRow(start_us=int(r[0]), query_id=r[1], query=r[2], database=r[3] or None, user=r[4],
                      settings=settings, hash=r[6] or None, duration_ms=float(r[7]), read_rows=int(r[8]),
                      read_bytes=int(r[9]), result_rows=int(r[10]), memory_usage=int(r[11]), exception_code=code,
                      type=type_name, kind=r[14] or None, initial=True, session=session_of(r[15], r[16], r[17]))


def _code_of(exception: str) -> int:
    m = _CODE.search(exception or "")
    return int(m.group(1)) if m else 0


# -- an exported file ---------------------------------------------------------------------
FILE_FORMATS = {"parquet": "Parquet", "tsv": "TSVWithNames", "tsvwithnames": "TSVWithNames",
                "tabseparatedwithnames": "TSVWithNames", "jsonl": "JSONEachRow", "ndjson": "JSONEachRow",
                "json": "JSONEachRow", "jsoneachrow": "JSONEachRow"}
NEEDED = ("clickhouse_version", "type", "is_initial_query", "query_start_time_microseconds", "query_start_time",
          "event_time_microseconds",
          "query_id", "query",
          "current_database", "user", "Settings", "Settings.Names", "Settings.Values", "normalized_query_hash",
          "query_duration_ms", "read_rows", "read_bytes", "result_rows", "memory_usage", "exception_code",
          "exception", "query_kind", "address", "port", "interface")


def file_format(path: str, given: str | None) -> str:
    name = (given or Path(path).suffix.lstrip(".")).lower()
    fmt = FILE_FORMATS.get(name)
    if fmt is None:
        raise UsageError(f"{path}: cannot tell the format of an exported query_log from "
                         f"'{name or 'no extension'}' (give --from-format Parquet, TSVWithNames or JSONEachRow)")
    return fmt


class FileLog:
    """A query_log exported by the user (``SELECT * FROM system.query_log … INTO OUTFILE``)."""

    def __init__(self, path: str, fmt: str | None, timezone: str) -> None:
        p = Path(path)
        if not p.is_file():
            raise UsageError(f"exported query_log not found: {path}" if not p.exists() else
                             f"exported query_log is not a file: {path}")
        self.path = path
        self.format = file_format(path, fmt)
        try:
            self.tz: tzinfo = dt_timezone.utc if timezone.upper() == "UTC" else ZoneInfo(timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise UsageError(f"unknown time zone '{timezone}' (--from-timezone)") from None
        self.columns: set[str] = set()
        self.missing: list[str] = []
        self.version: str | None = None  # the server's, from the export's clickhouse_version column

    @property
    def time_precision(self) -> str:
        return "us" if "query_start_time_microseconds" in self.columns else "s"

    def rows(self) -> Iterator[LogRow]:
        if self.format == "Parquet":
            yield from self._parquet()
        else:
            yield from self._text()

    def _found(self, names: set[str]) -> None:
        self.columns = names
        if not ({"query", "query_id"} <= names and names & {"query_start_time_microseconds", "query_start_time"}):
            raise UsageError(f"{self.path}: not a query_log export (it needs the columns query, query_id and "
                             "query_start_time_microseconds or query_start_time)")
        self.missing = [c for c in ("query_start_time_microseconds", "current_database", "normalized_query_hash",
                                    "query_kind", "exception_code") if c not in names]

    def _parquet(self) -> Iterator[LogRow]:
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            pf = pq.ParquetFile(self.path)
        except (pa.ArrowInvalid, OSError) as e:
            raise UsageError(f"{self.path}: not a readable Parquet file ({e})") from None
        names = set(pf.schema_arrow.names)
        self._found(names)
        wanted = [n for n in NEEDED if n in names]
        for batch in pf.iter_batches(batch_size=10_000, columns=wanted):
            cols: dict[str, list[Any]] = {}
            for name in wanted:
                arr = batch.column(name)
                if pa.types.is_timestamp(arr.type):
                    scale = {"s": 1_000_000, "ms": 1_000, "us": 1, "ns": 0}[arr.type.unit]
                    ints = arr.cast(pa.int64()).to_pylist()
                    cols[name] = [v // 1000 if scale == 0 else v * scale for v in ints] if scale != 1 else ints
                else:
                    cols[name] = arr.to_pylist()
            for i in range(batch.num_rows):
                yield self._row({n: c[i] for n, c in cols.items()})

    def _text(self) -> Iterator[LogRow]:
        try:
            f = open(self.path, encoding="utf-8", errors="surrogateescape")  # noqa: SIM115 - a with below
        except OSError as e:
            raise UsageError(f"cannot read {self.path}: {e.strerror}") from None
        with f:
            if self.format == "TSVWithNames":
                header = f.readline().rstrip("\n").split("\t")
                self._found(set(header))
                for number, line in enumerate(f, start=2):
                    values = line.rstrip("\n").split("\t")
                    if len(values) != len(header):
                        raise UsageError(f"{self.path}:{number}: {len(values)} values, the header names "
                                         f"{len(header)} columns")
                    yield self._row({n: unescape_tsv(v) for n, v in zip(header, values, strict=True) if n in NEEDED})
            else:
                first = True
                for number, line in enumerate(f, start=1):
                    if not line.strip():
                        continue
                    try:
                        d = json.loads(line)
                    except json.JSONDecodeError as e:
                        raise UsageError(f"{self.path}:{number}: not a JSONEachRow line ({e.msg})") from None
                    if first:
                        self._found(set(d))
                        first = False
                    yield self._row(d)

    def _row(self, d: dict[str, Any]) -> LogRow:
        if self.version is None and d.get("clickhouse_version"):
            self.version = _text(d["clickhouse_version"])
        start = d.get("query_start_time_microseconds")
        start_us = self._micros(start if start is not None else d.get("query_start_time"))
        settings = d.get("Settings")
        if settings is None and d.get("Settings.Names") is not None:
            settings = list(zip(_array(d["Settings.Names"]), _array(d.get("Settings.Values") or []), strict=False))
        kind = _text(d.get("query_kind")) or None
        code = d.get("exception_code")
        type_value = _text(d.get("type", "QueryFinish"))
        address = d.get("address") or ""
        if isinstance(address, bytes) and len(address) == 16:
            ip = ipaddress.IPv6Address(address)
            address = str(ip.ipv4_mapped or ip)
        h = d.get("normalized_query_hash")
        return LogRow(
            start_us=start_us, query_id=_text(d.get("query_id")), query=_text(d.get("query")),
            database=_text(d.get("current_database")) or None, user=_text(d.get("user")),
            settings=_map(settings), hash=str(h) if h not in (None, "") else None,
            duration_ms=self._duration_ms(d, start, start_us), read_rows=int(d.get("read_rows") or 0),
            read_bytes=int(d.get("read_bytes") or 0), result_rows=int(d.get("result_rows") or 0),
            memory_usage=int(d.get("memory_usage") or 0),
            exception_code=int(code) if code not in (None, "") else _code_of(_text(d.get("exception"))),
            type=TYPE_NAMES.get(int(type_value), type_value) if type_value.isdigit() else type_value,
            kind=kind, initial=str(d.get("is_initial_query", 1)) in ("1", "True", "true"),
            session=session_of(_text(address), d.get("port", 0), _text(d.get("interface", 0))))

    def _duration_ms(self, d: dict[str, Any], start: Any, start_us: int) -> float:
        """From the start and the finish to the microsecond where the file has both, as the
        server's log is read; else query_duration_ms (whole milliseconds)."""
        finish = d.get("event_time_microseconds")
        if start is not None and finish not in (None, ""):
            return max(0.0, (self._micros(finish) - start_us) / 1000.0)
        return float(d.get("query_duration_ms") or 0)

    def _micros(self, v: Any) -> int:
        if isinstance(v, int):
            return v
        text = _text(v)
        if text.isdigit():
            return int(text) * 1_000_000
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            raise UsageError(f"{self.path}: '{text}' is not a start time") from None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=self.tz)
        return int(dt.timestamp()) * 1_000_000 + dt.microsecond


def _text(v: Any) -> str:
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return "" if v is None else str(v)


_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'")


def _array(v: Any) -> list[str]:
    """A list, or ClickHouse's text form of an array of strings (``['a','b']``)."""
    if isinstance(v, list):
        return [_text(x) for x in v]
    return [unescape_tsv(m) for m in _QUOTED.findall(_text(v))]


def _map(v: Any) -> dict[str, str]:
    """A dict, (key, value) pairs, or the text form of a map (``{'k':'v'}``)."""
    if v is None:
        return {}
    if isinstance(v, dict):
        return {str(k): _text(x) for k, x in v.items()}
    if isinstance(v, list):
        return {_text(k): _text(x) for k, x in v}
    items = _array(v)
    return dict(zip(items[::2], items[1::2], strict=False))
