"""Embedded target: the chDB engine inside this process.

Settings are applied with ``SET`` on the session before the timed query (the SET
itself is not timed), so two sides of a settings A/B can share one engine. Set-up and
tear-down statements go through a second session on the same data (chDB gives each
connection its own settings): the measuring session may already be read-only, and
``readonly`` cannot be lowered inside a session.

Asked to (``identify_runs``: run's rounds with explain), the engine starts with a
configuration of chbench's own (``logs_config``) that keeps ``system.query_log`` and
``system.processors_profile_log``, so ``chbench explain`` reads each run's counters and
operator times here as on a server. chDB takes no query_id: each
timed query is tagged with ``log_comment`` instead (``SET``, untimed, with the settings).
Builds before 26.9 (24.8, 25.8, 26.1, 26.5, 26.7 tried) read it and keep no logs, and say so.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from typing import Any, ClassVar

from chbench.errors import ChbenchError, ConnectError, QueryError
from chbench.targets.base import (
    Capabilities,
    Credentials,
    Sample,
    ServerInfo,
    Target,
    first_line,
    parse_exception_code,
)
from chbench.targets.result import Result, parse_tsv_with_types, tsv_rows, unescape_tsv
from chbench.targets.url import Protocol, TargetURL

# the engine's configuration: the two logs explain reads, flushed every 7.5 s as a
# server's are (explain flushes them itself when it reads them). Timed without and with
# them (flushed every 1 s there; SELECT 1 and a 20M-row sum, 3 processes each,
# alternated, one SET log_comment before each timed query): medians 0.748/0.748,
# 0.757/0.764, 0.725/0.748 ms and 4.6/4.4, 4.6/4.4, 5.9/4.4 ms — no cost seen
# A data directory of the user's (embedded:./db, ./chbench-hits) keeps them between runs:
# kept 3 days (a run's logs are read when its rounds end), so they do not grow for ever.
LOGS_CONFIG = """<clickhouse>
  <query_log><database>system</database><table>query_log</table>
    <ttl>event_date + INTERVAL 3 DAY DELETE</ttl></query_log>
  <processors_profile_log><database>system</database><table>processors_profile_log</table>
    <ttl>event_date + INTERVAL 3 DAY DELETE</ttl></processors_profile_log>
</clickhouse>
"""
# what a timed run is found by in query_log: chDB's query() takes no query_id
TAG_SETTING = "log_comment"


def logs_config() -> str:
    """The path of the configuration file (written once per content, atomically)."""
    digest = hashlib.sha256(LOGS_CONFIG.encode()).hexdigest()[:12]
    path = os.path.join(tempfile.gettempdir(), f"chbench-embedded-logs-{digest}.xml")
    if not os.path.exists(path):
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".xml")
        with os.fdopen(fd, "w") as f:
            f.write(LOGS_CONFIG)
        os.replace(tmp, path)
    return path


def with_config(path: str, config: str) -> str:
    """A chDB connection string that starts the engine with ``config``."""
    return f"{path}{'&' if '?' in path else '?'}config-file={config}"


class _Session:
    """One chDB connection and the settings SET on it so far."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.applied: dict[str, str] = {}
        self.defaults: dict[str, str] = {}
        self.logs: bool | None = None  # the engine keeps query_log (known at connect)

    def raw(self, sql: str, fmt: str = "TabSeparated") -> Any:
        try:
            return self.conn.query(sql, fmt)
        except Exception as e:  # noqa: BLE001 - chdb raises plain RuntimeErrors
            raise _translate(e) from None

    def text(self, sql: str) -> str:
        r = self.raw(sql)
        return r if isinstance(r, str) else bytes(r.bytes()).decode("utf-8", "replace")

    def read_defaults(self) -> None:
        """Each setting's value as the session starts: what a SET is undone with. Values
        come TSV-escaped, and some releases quote them (24.8: 'auto(2)' for max_threads)."""
        text = self.text("SELECT name, value FROM system.settings FORMAT TabSeparated")
        for line in text.splitlines():
            name, _, value = line.partition("\t")
            value = unescape_tsv(value)
            self.defaults[name] = value[1:-1] if len(value) >= 2 and value[0] == value[-1] == "'" else value

    def apply(self, settings: dict[str, str]) -> None:
        wanted = dict(settings)
        if wanted.get("readonly") == "1" and self.applied.get("readonly", "0") == "0":
            # settings stay for the session: after SET readonly = 1 every SET is refused, so
            # `--setting readonly=1` let the first query through and failed every one after it
            raise QueryError(164, "readonly=1 cannot be used in the embedded engine's session: every SET after it "
                                  "(each query's settings, each run's tag) would be refused; readonly=2, chbench's "
                                  "default, forbids writes and still allows settings")
        for name in self.applied:
            if name not in wanted:
                wanted[name] = self.defaults.get(name, "0")
        changes = {k: v for k, v in wanted.items() if self.applied.get(k) != v}
        # readonly last: once it is set, other settings may still change (readonly=2)
        for name in sorted(changes, key=lambda n: n == "readonly"):
            value = changes[name]
            if name == "readonly" and self.applied.get("readonly", "0") != "0":
                continue  # cannot be lowered again inside this session
            literal = value if _is_number(value) else "'" + value.replace("'", "\\'") + "'"
            self.raw(f"SET {name} = {literal}")
            self.applied[name] = value
        for name in list(self.applied):
            if name not in settings and self.applied[name] == self.defaults.get(name):
                del self.applied[name]


# chDB runs one engine per process: sessions are shared by data path (a second
# connection to the same path sees the same tables with settings of its own)
_SESSIONS: dict[tuple[str, str], _Session] = {}


def _translate(e: Exception) -> Exception:
    """chDB's exceptions (plain RuntimeErrors carrying 'Code: N'), as chbench's: the one
    place they are mapped (used in ``except`` clauses: the success path costs nothing).
    chbench's own (an engine process lost: ``ServerLost``) pass through."""
    if isinstance(e, (QueryError, ChbenchError)):
        return e
    text = str(e)
    return QueryError(parse_exception_code(text), first_line(text))


class EmbeddedTarget(Target):
    protocol = Protocol.EMBEDDED
    capabilities: ClassVar[Capabilities] = Capabilities(
        in_process=True, concurrent_sessions=False, local_files=True, formatted_results=True, kill_query=False,
        query_log=False, server_host=False)

    def __init__(self, url: TargetURL, creds: Credentials | None = None) -> None:
        super().__init__(url.display())
        self.path = url.path
        self._session: _Session | None = None
        self._tag = False  # each timed run tagged for query_log (identify_runs)

    @classmethod
    def from_url(cls, url: TargetURL, creds: Credentials, light: bool, stage: str) -> Target:
        return cls(url, creds)

    def _open(self, role: str) -> _Session:
        key = (self.path or ":memory:", role)
        if key not in _SESSIONS:
            try:
                import chdb
            except ImportError:  # pragma: no cover - chdb is a dependency
                raise ConnectError("the embedded target needs the 'chdb' package (pip install chdb)") from None
            try:
                session = _Session(chdb.connect(with_config(key[0], logs_config()) if self._tag else key[0]))
            except Exception as e:  # noqa: BLE001 - chdb raises plain RuntimeErrors
                raise ConnectError(f"embedded engine at {key[0]}: {first_line(str(e))}") from None
            # the defaults, read before anything is SET: the session is shared by every
            # target on this path in the process, and a SET outlives the target that made it
            session.read_defaults()
            _SESSIONS[key] = session
        return _SESSIONS[key]

    def data_key(self) -> tuple[object, ...]:
        return ("embedded", self.path or ":memory:")  # one engine per process, shared by path

    @property
    def session(self) -> _Session:
        if self._session is None:
            self._session = self._open("measure")
        return self._session

    def connect(self) -> ServerInfo:
        try:
            session = self.session
            version = session.text("SELECT version() FORMAT TabSeparated").strip()
        except QueryError as e:
            raise ConnectError(f"embedded engine at {self.path or ':memory:'}: {e.message}") from None
        info = ServerInfo(version=version, settings=dict(session.defaults), query_log=self.keeps_logs())
        info.notes.append("embedded: server_ms is chDB's own elapsed time"
                          + ("" if info.query_log else "; no system.query_log"))
        self.info = info
        return info

    def keeps_logs(self) -> bool:
        """Whether this engine keeps query_log: only if asked for before it started
        (``identify_runs``); its tables appear at the first flush (untimed, once)."""
        if not self._tag:
            return False
        session = self.session
        if session.logs is None:
            try:
                self.flush_logs()
                session.logs = bool(self.query_rows(
                    "SELECT 1 FROM system.tables WHERE database = 'system' AND name = 'query_log'"))
            except QueryError:
                session.logs = False
        return session.logs

    def flush_logs(self) -> None:
        self._open("admin").raw("SYSTEM FLUSH LOGS")  # the measuring session may be read-only

    def explain_note(self) -> str | None:
        if self.keeps_logs():
            return None
        if self._tag and self.info is not None and self.info.version_tuple() >= (26, 9):
            # a version that keeps them, opened without them earlier in this process
            return (f"{self.url}: this engine was started without its logs earlier in this process: no "
                    "system.query_log to read each run's counters from")
        return (f"{self.url}: this engine keeps no system.query_log to read each run's counters from (chDB keeps "
                "it from 26.9 on; a server target, --target http://… or server@VERSION, has it)")

    def identify_runs(self) -> None:
        """Before connecting: the engine starts with its logs, and each timed run is tagged
        with ``log_comment`` = its query_id (after a value of the user's own: this engine's
        query_log is read by chbench alone), by a SET before it (untimed). Only when asked
        (run's rounds with explain): a load of SELECT 1 for 20 s with the logs ran 1,121
        QPS against 1,194 without, and peaked at 598 MB RSS against 306 (each logged query
        keeps its ProfileEvents until flushed)."""
        self._tag = True

    def log_id_column(self) -> str:
        return f"splitByChar(' ', {TAG_SETTING})[-1]"  # the tag, after a log_comment of the user's own

    def open(self) -> None:
        self.connect()

    def command(self, sql: str) -> None:
        self.session.raw(sql)

    def query_rows(self, sql: str) -> list[list[str]]:
        text = self.session.text(sql + "\nFORMAT TabSeparated")
        return tsv_rows(text)

    def query_bytes(self, sql: str) -> bytes:
        r = self.session.raw(sql)
        return r.encode() if isinstance(r, str) else bytes(r.bytes())

    def statement(self, sql: str, settings: dict[str, str]) -> None:
        admin = self._open("admin")
        admin.apply({k: v for k, v in settings.items() if k != "readonly"})
        admin.raw(sql)

    def _timed(self, sql: str, settings: dict[str, str], query_id: str, fmt: str,
               timeout: float | None = None) -> tuple[Sample, Any]:
        session = self.session
        if self._tag and session.logs:  # found by it in query_log (explain)
            mine = settings.get(TAG_SETTING)  # the user's own (an A/A's "b") goes first
            settings = {**settings, TAG_SETTING: f"{mine} {query_id}" if mine else query_id}
        session.apply(settings)
        conn = session.conn
        self._before_send()
        t0 = time.perf_counter()
        try:
            r = conn.query(sql, fmt) if timeout is None else conn.query(sql, fmt, timeout)
        except Exception as e:  # noqa: BLE001 - chdb raises plain RuntimeErrors
            raise _translate(e) from None
        client_ms = (time.perf_counter() - t0) * 1000.0
        s = Sample(query_id=query_id, client_ms=client_ms)
        if hasattr(r, "elapsed"):
            s.server_ms = r.elapsed() * 1000.0
            if hasattr(r, "storage_rows_read"):  # chDB >= 3.7; older releases count result rows only
                s.read_rows = int(r.storage_rows_read())
                s.read_bytes = int(r.storage_bytes_read())
            s.result_rows = int(r.rows_read())
            s.result_bytes = int(r.bytes_read())
        return s, r

    def _before_send(self) -> None:
        """Untimed, just before the timed call (engine workers wake their process here)."""

    # in this process a query cannot be stopped from outside: max_execution_time bounds it
    # (the runner sets it from --timeout); engine workers (targets/engine.py) take the timeout
    _timeouts = False

    def execute(self, sql: str, settings: dict[str, str], query_id: str, timeout: float | None) -> Sample:
        return self._timed(sql, settings, query_id, "TabSeparated", timeout if self._timeouts else None)[0]

    def fetch(self, sql: str, settings: dict[str, str], query_id: str, timeout: float | None) -> tuple[Sample, Result]:
        s, r = self._timed(sql, settings, query_id, "TabSeparatedWithNamesAndTypes",
                           timeout if self._timeouts else None)
        text = r if isinstance(r, str) else bytes(r.bytes()).decode("utf-8", "replace")
        return s, parse_tsv_with_types(text)

    def kill_query(self, query_id: str) -> None:
        """In-process queries are bounded by max_execution_time instead."""

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "url": self.url, "path": self.path}


def _is_number(v: str) -> bool:
    try:
        float(v)
    except ValueError:
        return False
    return True
