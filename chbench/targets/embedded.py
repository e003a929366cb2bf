"""Embedded target: the chDB engine inside this process.

Settings are applied with ``SET`` on the session before the timed query (the SET
itself is not timed), so two sides of a settings A/B can share one engine.
"""

from __future__ import annotations

import time
from typing import Any

from chbench.clickbench.checksum import Result, parse_tsv_with_types
from chbench.errors import ConnectError, QueryError
from chbench.targets.base import Sample, ServerInfo, Target, first_line, parse_exception_code

_SESSIONS: dict[str, Any] = {}  # chDB allows one engine per process: share sessions by path


class EmbeddedTarget(Target):
    kind = "embedded"

    def __init__(self, url: str, path: str | None) -> None:
        super().__init__(url)
        self.path = path
        self._conn: Any = None
        self._applied: dict[str, str] = {}
        self._defaults: dict[str, str] = {}

    def connect(self) -> ServerInfo:
        try:
            import chdb
        except ImportError:  # pragma: no cover - chdb is a dependency
            raise ConnectError("the embedded target needs the 'chdb' package (pip install chdb)") from None
        key = self.path or ":memory:"
        try:
            if key not in _SESSIONS:
                _SESSIONS[key] = chdb.connect(key)
            self._conn = _SESSIONS[key]
            version = self._raw("SELECT version() FORMAT TabSeparated").strip()
            rows = self.query_rows("SELECT name, value FROM system.settings")
        except QueryError as e:
            raise ConnectError(f"embedded engine at {key}: {e.message}") from None
        except Exception as e:  # noqa: BLE001 - chdb raises plain RuntimeErrors
            raise ConnectError(f"embedded engine at {key}: {first_line(str(e))}") from None
        self._defaults = {r[0]: r[1] for r in rows}
        info = ServerInfo(version=version, settings=dict(self._defaults))
        info.notes.append("embedded: server_ms is chDB's own elapsed time; no system.query_log")
        self.info = info
        return info

    def _raw(self, sql: str) -> str:
        try:
            r = self._conn.query(sql, "TabSeparated")
        except Exception as e:  # noqa: BLE001
            text = str(e)
            raise QueryError(parse_exception_code(text), first_line(text)) from None
        if isinstance(r, str):
            return r
        return bytes(r.bytes()).decode("utf-8", "replace")

    def command(self, sql: str) -> None:
        self._raw(sql)

    def query_rows(self, sql: str) -> list[list[str]]:
        text = self._raw(sql + "\nFORMAT TabSeparated")
        return [line.split("\t") for line in text.splitlines()]

    def _apply(self, settings: dict[str, str]) -> None:
        wanted = dict(settings)
        for name in self._applied:
            if name not in wanted:
                wanted[name] = self._defaults.get(name, "0")
        changes = {k: v for k, v in wanted.items() if self._applied.get(k) != v}
        # readonly last: once it is set, other settings may still change (readonly=2)
        for name in sorted(changes, key=lambda n: n == "readonly"):
            value = changes[name]
            if name == "readonly" and self._applied.get("readonly", "0") != "0":
                continue  # cannot be lowered again inside this session
            literal = value if _is_number(value) else "'" + value.replace("'", "\\'") + "'"
            self._raw(f"SET {name} = {literal}")
            self._applied[name] = value
        for name in list(self._applied):
            if name not in settings and self._applied[name] == self._defaults.get(name):
                del self._applied[name]

    def _timed(self, sql: str, settings: dict[str, str], query_id: str, fmt: str) -> tuple[Sample, Any]:
        self._apply(settings)
        t0 = time.perf_counter()
        try:
            r = self._conn.query(sql, fmt)
        except Exception as e:  # noqa: BLE001
            text = str(e)
            raise QueryError(parse_exception_code(text), first_line(text)) from None
        client_ms = (time.perf_counter() - t0) * 1000.0
        s = Sample(query_id=query_id, client_ms=client_ms)
        if hasattr(r, "elapsed"):
            s.server_ms = r.elapsed() * 1000.0
            s.read_rows = int(r.storage_rows_read())
            s.read_bytes = int(r.storage_bytes_read())
            s.result_rows = int(r.rows_read())
            s.result_bytes = int(r.bytes_read())
        return s, r

    def execute(self, sql: str, settings: dict[str, str], query_id: str, timeout: float | None) -> Sample:
        return self._timed(sql, settings, query_id, "TabSeparated")[0]

    def fetch(self, sql: str, settings: dict[str, str], query_id: str, timeout: float | None) -> tuple[Sample, Result]:
        s, r = self._timed(sql, settings, query_id, "TabSeparatedWithNamesAndTypes")
        text = r if isinstance(r, str) else bytes(r.bytes()).decode("utf-8", "replace")
        return s, parse_tsv_with_types(text)

    def kill_query(self, query_id: str) -> None:
        """In-process queries are bounded by max_execution_time instead."""

    def fetch_server_metrics(self, query_ids: list[str]) -> dict[str, dict[str, Any]]:
        raise QueryError(None, "embedded: no system.query_log; samples carry chDB's own statistics")

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "url": self.url, "path": self.path}


def _is_number(v: str) -> bool:
    try:
        float(v)
    except ValueError:
        return False
    return True
