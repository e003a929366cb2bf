"""The local store: one SQLite file.

Why SQLite: it is in Python's standard library (nothing to install or start); a run is
written in one transaction, so a writer killed midway (``kill -9``) leaves the file as
it was before that run (the journal rolls it back on the next open) and two writers at
once queue on its lock instead of losing a run (measured: 4 writers × 50 runs → 200
runs, bench/history_bars.py --only store); and ``history check`` reads the medians of
1,000 runs × 50 queries without parsing every sample (the samples are one column, read
only for the changes being confirmed). A directory of JSON files would need its own
locking and index; CSV (Otava's) keeps no samples.

Tables: ``meta`` (the schema version), ``runs`` (one row per run: its header as JSON),
``queries`` (one row per run and query: median, samples as JSON), ``reported`` (what
earlier checks reported). A newer chbench adds columns or keys, never changes these.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

from chbench.errors import UsageError
from chbench.history.record import HistoryRun, QueryRecord
from chbench.history.store import Reported, matches

SCHEMA_VERSION = 1
OPEN_WAIT_S = 60.0  # how long a writer waits for another (its transaction, or its creating the file)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, started_at REAL NOT NULL, added_at REAL NOT NULL,
                                 header TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS queries (run_id TEXT NOT NULL, name TEXT NOT NULL, key TEXT NOT NULL,
                                    median_ms REAL, errors INTEGER NOT NULL, samples TEXT NOT NULL,
                                    PRIMARY KEY (run_id, name));
CREATE TABLE IF NOT EXISTS reported (query TEXT NOT NULL, key TEXT NOT NULL, run_id TEXT NOT NULL,
                                     kind TEXT NOT NULL, ratio REAL, reported_at REAL NOT NULL,
                                     PRIMARY KEY (query, key, run_id, kind));
CREATE INDEX IF NOT EXISTS runs_started ON runs (started_at);
"""


class LocalStore:
    def __init__(self, path: Path) -> None:
        self.location = str(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            deadline = time.monotonic() + OPEN_WAIT_S
            while True:
                try:
                    self._open(path)
                    break
                except sqlite3.OperationalError as e:
                    # two writers creating the store at once: switching a new file to WAL
                    # takes its lock without waiting on the busy timeout (seen in CI:
                    # "database is locked" at once); the other writer is done in moments
                    if "locked" not in str(e) or time.monotonic() > deadline:
                        raise
                    self.db.close()
                    time.sleep(0.05)
        except sqlite3.DatabaseError as e:
            raise UsageError(f"--store {path}: not a chbench history ({e})") from None
        except OSError as e:
            raise UsageError(f"--store {path}: {e.strerror or e}") from None

    def _open(self, path: Path) -> None:
        # a writer waits for another's transaction (up to 60 s) instead of failing
        self.db = sqlite3.connect(str(path), timeout=OPEN_WAIT_S, isolation_level=None)
        if self.db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":  # WAL persists in the file
            self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        with self._write():
            for statement in filter(str.strip, _SCHEMA.split(";")):
                self.db.execute(statement)
            row = self.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if row is None:
                self.db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            elif int(row[0]) > SCHEMA_VERSION:
                raise UsageError(f"{path}: a history written by a newer chbench (schema {row[0]}); upgrade chbench")

    def _write(self) -> _Transaction:
        return _Transaction(self.db)

    def add(self, runs: list[HistoryRun]) -> list[str]:
        added = []
        for run in runs:  # one transaction per run: all of it or nothing
            with self._write():
                if self.db.execute("SELECT 1 FROM runs WHERE run_id = ?", (run.run_id,)).fetchone():
                    continue
                self.db.executemany(
                    "INSERT INTO queries VALUES (?, ?, ?, ?, ?, ?)",
                    [(run.run_id, q.name, q.key, q.median_ms, q.errors,
                      json.dumps({"client_ms": q.client_ms, "server_ms": q.server_ms, "sql": q.sql}))
                     for q in run.queries])
                self.db.execute("INSERT INTO runs VALUES (?, ?, ?, ?)",
                                (run.run_id, run.started_at, time.time(), json.dumps(run.header())))
                added.append(run.run_id)
        return added

    def runs(self, since: float | None = None, labels: dict[str, str] | None = None,
             samples: bool = True) -> list[HistoryRun]:
        heads = [HistoryRun.from_json(json.loads(h), queries=[])
                 for (h,) in self.db.execute("SELECT header FROM runs ORDER BY started_at, run_id")]
        chosen = {r.run_id: r for r in heads if matches(r, since, labels)}
        cols = "run_id, name, key, median_ms, errors" + (", samples" if samples else "")
        for row in self.db.execute(f"SELECT {cols} FROM queries ORDER BY run_id, rowid"):
            run = chosen.get(row[0])
            if run is None:
                continue
            q = QueryRecord(name=row[1], key=row[2], errors=int(row[4]))
            if samples:
                s = json.loads(row[5])
                q.client_ms, q.server_ms, q.sql = s.get("client_ms") or [], s.get("server_ms") or [], s.get("sql", "")
            elif row[3] is not None:
                q.client_ms = [float(row[3])]  # the median stands for the run
            run.queries.append(q)
        return list(chosen.values())

    def reported(self) -> list[Reported]:
        return [Reported(*row) for row in
                self.db.execute("SELECT query, key, run_id, kind, ratio, reported_at FROM reported")]

    def record_reported(self, changes: list[Reported]) -> None:
        with self._write():
            self.db.executemany("INSERT OR IGNORE INTO reported VALUES (?, ?, ?, ?, ?, ?)",
                                [(c.query, c.key, c.run_id, c.kind, c.ratio, c.reported_at) for c in changes])

    def close(self) -> None:
        self.db.close()


class _Transaction:
    """BEGIN IMMEDIATE … COMMIT (ROLLBACK on any error): writers queue on the lock."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *_: object) -> None:
        self.db.execute("COMMIT" if exc_type is None else "ROLLBACK")
