"""Filling ClickBench's ``hits`` table: synthetic rows made by the engine, or a real
hits file streamed to the server, which parses it.

Both paths end the same way: the row count is checked against what was sent (a
partial load is an error, not a result), and the size on disk comes from
``system.parts``.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from chbench.clickbench import create_table_sql
from chbench.clickbench.synthetic import TABLE, insert_sql
from chbench.errors import EXIT_FINDING, ChbenchError, QueryError, UsageError
from chbench.targets import Target

DEDUP_WINDOW = 10000  # non_replicated_deduplication_window: batches a retry can repeat
DEFAULT_BATCH_ROWS = 250_000

# the server's format names and the request-body encodings it decodes itself
FORMATS = {".parquet": "Parquet", ".tsv": "TabSeparated", ".csv": "CSV"}
ENCODINGS = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd", ".xz": "xz", ".bz2": "bz2", ".lz4": "lz4", ".br": "br"}


class LoadFailed(ChbenchError):
    """The table does not hold what was sent."""

    exit_code = EXIT_FINDING


@dataclass
class LoadReport:
    source: str
    table: str
    rows: int  # rows in the table afterwards
    expected_rows: int | None
    seconds: float
    data_size: int  # bytes on disk (system.parts)
    batches: int = 0
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


# -- the table -----------------------------------------------------------------------

_TYPES = {"BIGINT": "Int64", "SMALLINT": "Int16", "INTEGER": "Int32", "TEXT": "String", "TIMESTAMP": "DateTime",
          "DATE": "Date", "CHAR": "String", "VARCHAR": "String"}


def legacy_create_sql(table: str = TABLE) -> str:
    """create.sql in ClickHouse's own type names and MergeTree syntax, for servers too old
    for its SQL-standard spelling (18.x): same columns, same order, same primary key."""
    text = create_table_sql()
    cols = re.findall(r"^\s+(\w+)\s+([A-Za-z]+)(?:\(\d+\))?\s+NOT NULL,", text, re.M)
    key = re.search(r"PRIMARY KEY \(([^)]*)\)", text)
    assert key is not None
    body = ",\n    ".join(f"{name} {_TYPES.get(t.upper(), 'String')}" for name, t in cols)
    return f"CREATE TABLE {table}\n(\n    {body}\n)\nENGINE = MergeTree() ORDER BY ({key.group(1)})"


def table_rows(target: Target, table: str = TABLE) -> int:
    return int(target.query_rows(f"SELECT count() FROM {table}")[0][0])


def data_size(target: Target, table: str = TABLE) -> int:
    rows = target.query_rows(
        "SELECT sum(bytes_on_disk) FROM system.parts "
        f"WHERE database = currentDatabase() AND table = '{table}' AND active"
    )
    return int(rows[0][0] or 0) if rows else 0


def table_exists(target: Target, table: str = TABLE) -> bool:
    rows = target.query_rows(f"EXISTS TABLE {table}")
    return bool(rows) and rows[0][0] == "1"


def create_table(target: Target, replace: bool, table: str = TABLE) -> list[str]:
    """ClickBench's create.sql verbatim (the legacy spelling on old servers), plus a
    deduplication window so a retried batch never lands twice. Returns notes."""
    notes: list[str] = []
    if table_exists(target, table) and table_rows(target, table) > 0 and not replace:
        raise UsageError(f"table '{table}' already holds rows: add --replace to drop and reload it")
    sql = create_table_sql() if table == TABLE else create_table_sql().replace(" hits\n", f" {table}\n", 1)
    try:
        target.command(_statement(sql))
    except QueryError as e:
        if e.code not in (62, 115, 36):  # SYNTAX_ERROR, UNKNOWN_SETTING, BAD_ARGUMENTS: an older server
            raise UsageError(f"cannot create table '{table}': {e.message}") from None
        target.command(f"DROP TABLE IF EXISTS {table}")
        target.command(legacy_create_sql(table))
        notes.append(f"the server cannot run create.sql ({e.message[:80]}…); created the same columns "
                     "with ClickHouse type names")
    info = target.info
    if info is not None and info.knows("insert_deduplication_token"):
        with contextlib.suppress(QueryError):
            target.command(f"ALTER TABLE {table} MODIFY SETTING non_replicated_deduplication_window = {DEDUP_WINDOW}")
    return notes


def _statement(sql: str) -> str:
    """One statement: the text up to its terminating ';' (create.sql ends in a comment)."""
    depth_free = sql.split(";")[0] if sql.count(";") else sql
    return depth_free.strip()


# -- synthetic -----------------------------------------------------------------------

def batch_token(seed: int, total: int, start: int, count: int) -> str:
    return f"chbench-synthetic-{seed}-{total}-{start}-{count}"


def synthetic_batches(total: int, batch_rows: int) -> list[tuple[int, int]]:
    return [(s, min(batch_rows, total - s)) for s in range(0, total, batch_rows)]


def insert_batch(target: Target, seed: int, total: int, start: int, count: int, table: str = TABLE) -> None:
    """One batch, with its deduplication token where the server has them: sending it
    again (after a crash, a timeout) is a no-op if it was committed."""
    settings = ""
    info = target.info
    if info is not None and info.knows("insert_deduplication_token"):
        settings = (f"\nSETTINGS insert_deduplication_token = '{batch_token(seed, total, start, count)}', "
                    f"max_insert_block_size = {max(count, 1)}, min_insert_block_size_rows = {max(count, 1)}")
    target.command(insert_sql(seed, total, start, count, table) + settings)


def load_synthetic(target: Target, rows: int, seed: int, batch_rows: int = DEFAULT_BATCH_ROWS,
                   progress: Callable[[int, int], None] | None = None, table: str = TABLE) -> LoadReport:
    before = table_rows(target, table)
    t0 = time.perf_counter()
    batches = synthetic_batches(rows, batch_rows)
    done = 0
    for start, count in batches:
        insert_batch(target, seed, rows, start, count, table)
        done += count
        if progress:
            progress(done, rows)
    seconds = time.perf_counter() - t0
    report = LoadReport(source=f"synthetic:{rows}:seed={seed}", table=table, rows=table_rows(target, table),
                        expected_rows=before + rows, seconds=seconds, data_size=data_size(target, table),
                        batches=len(batches))
    verify(report)
    return report


def verify(report: LoadReport) -> None:
    if report.expected_rows is not None and report.rows != report.expected_rows:
        raise LoadFailed(f"partial load: table '{report.table}' holds {report.rows:,} rows, "
                         f"expected {report.expected_rows:,}")


# -- from a file ---------------------------------------------------------------------

def file_format(path: str, override: str | None) -> tuple[str, str | None]:
    """(ClickHouse format, Content-Encoding or None) from the file name."""
    name = Path(path).name.lower()
    encoding = None
    for ext, enc in ENCODINGS.items():
        if name.endswith(ext):
            encoding, name = enc, name[: -len(ext)]
            break
    if override:
        return override, encoding
    for ext, fmt in FORMATS.items():
        if name.endswith(ext):
            return fmt, encoding
    raise UsageError(f"cannot tell the format of {path}: name it .parquet/.tsv/.csv (optionally .gz/.zst) "
                     "or give --format")


def expected_rows(path: str, fmt: str, encoding: str | None) -> int | None:
    """Rows in the file when it can be known cheaply: Parquet metadata."""
    if fmt == "Parquet" and encoding is None:
        try:
            import pyarrow.parquet as pq

            return int(pq.read_metadata(path).num_rows)
        except Exception as e:  # noqa: BLE001 - a broken file is the user's to fix
            raise UsageError(f"{path} is not a readable Parquet file: {str(e).splitlines()[0]}") from None
    return None


def chunks(path: str, size: int, seen: Callable[[int], None]) -> Iterator[bytes]:
    """The file in ``size``-byte pieces; memory stays at one piece."""
    with open(path, "rb") as f:
        while True:
            piece = f.read(size)
            if not piece:
                return
            seen(len(piece))
            yield piece


def check_file_source(target: Target, path: str, fmt_override: str | None) -> tuple[str, str | None, int | None]:
    """Everything that can be wrong before the table is touched: (format, encoding, rows)."""
    if not os.path.isfile(path):
        raise UsageError(f"no such file: {path}")
    if not (target.capabilities.local_files or target.capabilities.streaming_insert):
        raise UsageError("--from needs an HTTP(S) or embedded target: over the native protocol the rows would "
                         "have to be parsed in Python (the server parses the file over HTTP)")
    fmt, encoding = file_format(path, fmt_override)
    return fmt, encoding, expected_rows(path, fmt, encoding)


def load_file(target: Target, path: str, fmt_override: str | None = None,
              progress: Callable[[int, int], None] | None = None, table: str = TABLE) -> LoadReport:
    fmt, encoding, expect = check_file_source(target, path, fmt_override)
    before = table_rows(target, table)
    size = os.path.getsize(path)
    t0 = time.perf_counter()
    notes: list[str] = []
    if target.capabilities.local_files:
        # the engine reads the file itself, streaming (compression from the extension)
        literal = "'" + str(Path(path).resolve()).replace("\\", "\\\\").replace("'", "\\'") + "'"
        try:
            target.command(f"INSERT INTO {table} SELECT * FROM file({literal}, '{fmt}')")
        except QueryError as e:
            raise LoadFailed(f"loading {path} failed: {e.message}") from None
        written = None
    else:
        sent = 0

        def seen(n: int) -> None:
            nonlocal sent
            sent += n
            if progress:
                progress(sent, size)

        try:
            written = target.insert_stream(f"INSERT INTO {table} FORMAT {fmt}", chunks(path, 1 << 20, seen),
                                           encoding)
        except QueryError as e:
            now = table_rows(target, table) - before
            raise LoadFailed(f"loading {path} failed after {now:,} rows landed: {e.message}") from None
    seconds = time.perf_counter() - t0
    rows = table_rows(target, table)
    if expect is None and written is not None:
        expect = written
        notes.append("row count checked against the server's written_rows")
    report = LoadReport(source=f"file:{path}", table=table, rows=rows,
                        expected_rows=None if expect is None else before + expect, seconds=seconds,
                        data_size=data_size(target, table), notes=notes)
    if expect is None:
        report.notes.append("the file's row count is not known in advance: not checked")
    verify(report)
    return report
