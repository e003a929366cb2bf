"""The ClickHouse store: three tables in the database the URL names (``chbench`` when it
names none), created by chbench, readable by Grafana's ClickHouse data source
(docs/grafana-history.json).

* ``chbench_queries``: one row per run and query — ``started_at``, ``query``, ``query_key``,
  ``median_ms``, every sample (``client_ms``, ``server_ms``), the run's labels, version and
  host: what a dashboard plots;
* ``chbench_runs``: one row per run — its header as JSON; written *after* its queries, so
  it marks the run complete: a writer killed midway leaves queries no run row points to,
  which readers ignore (and a later add of the same run replaces);
* ``chbench_reported``: the changes earlier checks reported.

The schema's version is the runs table's comment (``chbench history schema 1``): a table
without one is version 1 (chbench before the comment), a newer version is refused in one
line, as the local store refuses one.

ReplacingMergeTree on the run's id: adding the same run twice (two writers, a retry)
keeps one; readers use FINAL. HTTP through clickhouse-connect, native through
clickhouse-driver (the project's clients); TLS verified; the password from the caller
(CLICKHOUSE_PASSWORD or --password-file), never in the URL or a table.
"""

from __future__ import annotations

import json
import re
import time
from datetime import datetime, timezone
from typing import Any

from chbench.errors import ConnectError, UsageError, quiet_library_log
from chbench.history.record import HistoryRun, QueryRecord
from chbench.history.store import NoHistoryThere, Reported, matches
from chbench.targets.base import first_line
from chbench.targets.url import parse_target_url, shown

DEFAULT_DATABASE = "chbench"
SCHEMA_VERSION = 1
_SCHEMA_COMMENT = "chbench history schema "

_TABLES = {
    "chbench_runs": """(run_id String, started_at DateTime64(3, 'UTC'), added_at DateTime64(3, 'UTC'),
        labels Map(String, String), server_version String, host String, header String)
        ENGINE = ReplacingMergeTree(added_at) ORDER BY run_id""",
    "chbench_queries": """(run_id String, started_at DateTime64(3, 'UTC'), added_at DateTime64(3, 'UTC'),
        query String, query_key String, position UInt32, median_ms Nullable(Float64), runs UInt32, errors UInt32,
        client_ms Array(Float64), server_ms Array(Float64), sql String,
        labels Map(String, String), server_version String, host String)
        ENGINE = ReplacingMergeTree(added_at) ORDER BY (query, query_key, started_at, run_id)""",
    "chbench_reported": """(query String, query_key String, run_id String, kind String, ratio Float64,
        reported_at DateTime64(3, 'UTC'))
        ENGINE = ReplacingMergeTree(reported_at) ORDER BY (query, query_key, run_id, kind)""",
}


class _Connection:
    """The three calls the store makes, over HTTP (clickhouse-connect) or native (clickhouse-driver)."""

    def __init__(self, url: str, password: str | None, ca_file: str | None) -> None:
        try:
            t = parse_target_url(url)
        except Exception as e:  # noqa: BLE001 - the URL parser's own message
            raise UsageError(f"--store {shown(url)}: {e}") from None
        self.database = t.database or DEFAULT_DATABASE
        self.display = f"{t.kind.scheme}://{t.user}@{t.host}:{t.port}/{self.database}"
        self.native = t.protocol.value == "native"
        try:
            if self.native:
                import clickhouse_driver

                quiet_library_log("clickhouse_driver")
                self.driver = clickhouse_driver.Client(
                    host=t.host, port=t.port, user=t.user, password=password or "", secure=t.secure, verify=True,
                    ca_certs=ca_file, connect_timeout=10, send_receive_timeout=120)
                self.driver.execute("SELECT 1")
            else:
                import clickhouse_connect

                quiet_library_log("clickhouse_connect")
                self.http = clickhouse_connect.get_client(
                    host=t.host, port=t.port, username=t.user, password=password or "", secure=t.secure,
                    verify=True, ca_cert=ca_file, connect_timeout=10, send_receive_timeout=120)
        except Exception as e:  # noqa: BLE001 - either client's connection errors
            why = _reason(e).replace(password, "***") if password else _reason(e)
            raise ConnectError(f"--store {self.display}: cannot connect: {why}") from None

    def command(self, sql: str) -> None:
        if self.native:
            self.driver.execute(sql)
        else:
            self.http.command(sql)

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        if self.native:
            return list(self.driver.execute(sql))
        return [tuple(r) for r in self.http.query(sql).result_rows]

    def insert(self, table: str, columns: list[str], rows: list[list[Any]]) -> None:
        if not rows:
            return
        if self.native:
            self.driver.execute(f"INSERT INTO {table} ({', '.join(columns)}) VALUES", rows)
        else:
            self.http.insert(table, rows, column_names=columns)

    def close(self) -> None:
        if self.native:
            self.driver.disconnect()
        else:
            self.http.close()


def _reason(e: BaseException) -> str:
    """What refused the connection, in the words of the OS or the server: either client
    wraps it (clickhouse-connect's OperationalError held urllib3's retries, the pool's
    repr and then "[Errno 111] Connection refused", cut off at 200 characters)."""
    seen: BaseException | None = e
    while seen is not None:
        if isinstance(seen, OSError) and seen.strerror:
            return str(seen.strerror)
        seen = seen.__cause__ or seen.__context__
    m = re.search(r"\[Errno -?\d+\] ([^'\"()]+)", str(e))
    if m:
        return m.group(1).strip()
    message = getattr(e, "message", None)  # clickhouse-driver's, without its "Code: 210." prefix
    return first_line(str(message), 200) if message else f"{type(e).__name__}: {first_line(str(e), 200)}"


def _ts(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=timezone.utc)


def _epoch(v: Any) -> float:
    if isinstance(v, datetime):
        return (v if v.tzinfo else v.replace(tzinfo=timezone.utc)).timestamp()
    return float(v)


class ClickHouseStore:
    def __init__(self, url: str, password: str | None = None, ca_file: str | None = None,
                 create: bool = True) -> None:
        self.conn = _Connection(url, password, ca_file)
        self.location = self.conn.display
        db = self.conn.database
        try:
            if not create:  # a command that reads: the tables are there, or there is no history
                there = int(self.conn.rows(f"EXISTS TABLE `{db}`.chbench_runs")[0][0])
            else:
                self.conn.command(f"CREATE DATABASE IF NOT EXISTS `{db}`")
                new = not int(self.conn.rows(f"EXISTS TABLE `{db}`.chbench_runs")[0][0])
                for name, body in _TABLES.items():
                    self.conn.command(f"CREATE TABLE IF NOT EXISTS `{db}`.{name} {body}")
                if new:  # an ALTER, not a COMMENT clause: a server too old for the tables then says why
                    # (18.16: "Unknown data type family: Map"), not a syntax error at COMMENT
                    self.conn.command(f"ALTER TABLE `{db}`.chbench_runs MODIFY COMMENT "
                                      f"{_quote(_SCHEMA_COMMENT + str(SCHEMA_VERSION))}")
        except Exception as e:  # noqa: BLE001 - the server's refusal, as one line
            self.conn.close()
            raise ConnectError(f"--store {self.location}: cannot {'read' if not create else 'create'} the history "
                               f"tables ({first_line(str(e))})") from None
        if not create and not there:
            self.conn.close()  # nothing to read: the caller gets NoHistory, not this store
            raise NoHistoryThere(self.location)
        version = self._schema_version()
        if version > SCHEMA_VERSION:
            self.conn.close()
            raise UsageError(f"--store {self.location}: a history written by a newer chbench (schema {version}); "
                             "upgrade chbench")

    def _schema_version(self) -> int:
        """The runs table's comment says it; none (chbench before it): 1."""
        rows = self.conn.rows("SELECT comment FROM system.tables WHERE database = "
                              f"{_quote(self.conn.database)} AND name = 'chbench_runs'")
        text = str(rows[0][0]) if rows else ""
        tail = text[len(_SCHEMA_COMMENT):] if text.startswith(_SCHEMA_COMMENT) else ""
        return int(tail) if tail.isdigit() else 1

    def _t(self, name: str) -> str:
        return f"`{self.conn.database}`.{name}"

    def add(self, runs: list[HistoryRun]) -> list[str]:
        if not runs:
            return []
        ids = ", ".join(_quote(r.run_id) for r in runs)
        have = {r[0] for r in self.conn.rows(f"SELECT run_id FROM {self._t('chbench_runs')} FINAL "
                                             f"WHERE run_id IN ({ids})")}
        added = []
        for run in runs:
            if run.run_id in have:
                continue
            now = _ts(time.time())
            version, host = str(run.target.get("server_version") or ""), str(run.baseline[0])
            self.conn.insert(self._t("chbench_queries"),
                             ["run_id", "started_at", "added_at", "query", "query_key", "position", "median_ms",
                              "runs", "errors", "client_ms", "server_ms", "sql", "labels", "server_version", "host"],
                             [[run.run_id, _ts(run.started_at), now, q.name, q.key, i, q.median_ms, len(q.client_ms),
                               q.errors, q.client_ms, q.server_ms, q.sql, run.labels, version, host]
                              for i, q in enumerate(run.queries)])
            # last: the run's row says all of it is there
            self.conn.insert(self._t("chbench_runs"),
                             ["run_id", "started_at", "added_at", "labels", "server_version", "host", "header"],
                             [[run.run_id, _ts(run.started_at), now, run.labels, version, host,
                               json.dumps(run.header())]])
            added.append(run.run_id)
        return added

    def runs(self, since: float | None = None, labels: dict[str, str] | None = None,
             samples: bool = True) -> list[HistoryRun]:
        heads = [HistoryRun.from_json(json.loads(h), queries=[]) for (h,) in self.conn.rows(
            f"SELECT header FROM {self._t('chbench_runs')} FINAL ORDER BY started_at, run_id")]
        chosen = {r.run_id: r for r in heads if matches(r, since, labels)}
        cols = "run_id, query, query_key, median_ms, errors" + (", client_ms, server_ms, sql" if samples else "")
        for row in self.conn.rows(f"SELECT {cols} FROM {self._t('chbench_queries')} FINAL "
                                  "ORDER BY run_id, position"):
            run = chosen.get(row[0])
            if run is None:
                continue  # a run whose write did not finish, or not asked for
            q = QueryRecord(name=row[1], key=row[2], errors=int(row[4]))
            if samples:
                q.client_ms, q.server_ms, q.sql = [float(x) for x in row[5]], [float(x) for x in row[6]], row[7]
            elif row[3] is not None:
                q.client_ms = [float(row[3])]
            run.queries.append(q)
        return list(chosen.values())

    def reported(self) -> list[Reported]:
        return [Reported(r[0], r[1], r[2], r[3], float(r[4]), _epoch(r[5])) for r in self.conn.rows(
            f"SELECT query, query_key, run_id, kind, ratio, reported_at FROM {self._t('chbench_reported')} FINAL")]

    def record_reported(self, changes: list[Reported]) -> None:
        self.conn.insert(self._t("chbench_reported"), ["query", "query_key", "run_id", "kind", "ratio", "reported_at"],
                         [[c.query, c.key, c.run_id, c.kind, c.ratio, _ts(c.reported_at)] for c in changes])

    def close(self) -> None:
        self.conn.close()


def _quote(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"
