"""``embedded@VERSION``: a chosen ClickHouse version's engine in a worker process.

Two ClickHouse versions cannot share one process (the same native symbols), so each
``embedded@VERSION`` target runs its release (``chbench/engines``) in a process of its
own, driven over a pipe (``engines/child.py``). Everything else is the embedded target's:
the same sessions and ``SET``s, the same samples (client_ms around the round trip,
server_ms from the engine's own elapsed time).

* The data directory is ``embedded@VERSION:/path`` or a temporary one removed at close
  (on disk rather than in memory, so that a worker killed after a ``--timeout`` restarts
  on the same tables).
* A worker that dies is a lost target (``ServerLost``: exit 3, results kept), never a hang.
* ``--timeout``: the engine stops the query at max_execution_time; a worker silent 2 s
  longer is killed and the next query starts a fresh one.
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from typing import Any, ClassVar

from chbench.errors import ConnectError, QueryError, ServerLost
from chbench.targets.base import Capabilities, Credentials, ServerInfo, Target, first_line, parse_exception_code
from chbench.targets.embedded import EmbeddedTarget, _Session, logs_config
from chbench.targets.url import TargetURL, parse_target_url

KILL_GRACE_S = 2.0


class _WorkerResult:
    """A worker's answer, with the methods of a chDB result the embedded target reads."""

    __slots__ = ("_body", "_head")

    def __init__(self, head: dict[str, Any], body: bytes) -> None:
        self._head, self._body = head, body

    def bytes(self) -> bytes:
        return self._body

    def elapsed(self) -> float:
        return float(self._head.get("elapsed") or 0.0)

    def rows_read(self) -> int:
        return int(self._head.get("rows_read") or 0)

    def bytes_read(self) -> int:
        return int(self._head.get("bytes_read") or 0)

    def __getattr__(self, name: str) -> Any:
        # storage counters exist from chDB 3.7 on: absent when the release has none
        if name in ("storage_rows_read", "storage_bytes_read") and self._head.get(name) is not None:
            value = int(self._head[name])
            return lambda: value
        raise AttributeError(name)


class _WorkerConn:
    """One session (role) inside the worker, shaped like a chDB connection."""

    def __init__(self, target: EngineTarget, role: str) -> None:
        self.target, self.role = target, role

    def query(self, sql: str, fmt: str = "TabSeparated", timeout: float | None = None) -> Any:
        from chbench.engines.process import EngineLost, EngineTimeout

        worker = self.target.worker()
        # the engine stops a query itself at max_execution_time (the runner sets it from
        # --timeout); the worker is killed only when even that does not answer
        deadline = None if timeout is None else timeout + KILL_GRACE_S
        try:
            head, body = worker.query(self.role, sql, fmt, deadline)
        except EngineTimeout:
            raise QueryError(159, f"timeout: no answer within {deadline or 0:.0f} s (engine process killed; "
                                  "the next query starts a fresh one)") from None
        except EngineLost as e:
            raise ServerLost(str(e)) from None
        if not head.get("ok"):
            text = str(head.get("error") or "engine error")
            raise QueryError(parse_exception_code(text), first_line(text))
        if "elapsed" not in head:  # a SET answered by an older release's worker
            return body.decode("utf-8", "replace")
        return _WorkerResult(head, body)


class EngineTarget(EmbeddedTarget):
    capabilities: ClassVar[Capabilities] = Capabilities(
        in_process=False, concurrent_sessions=False, local_files=True, formatted_results=True, kill_query=False,
        query_log=False, server_host=False, logs_outlive_session=False)
    _timeouts = True

    def __init__(self, url: TargetURL, creds: Credentials | None = None) -> None:
        Target.__init__(self, url.display())
        from chbench.engines.store import EngineStore

        self.engine = EngineStore().ensure(url.version or "latest")
        self.path = url.path
        self._tmp = None if url.path else tempfile.mkdtemp(prefix="chbench-engine-")
        if self._tmp:  # kept across close() (sessions reconnect), removed with the target
            weakref.finalize(self, shutil.rmtree, self._tmp, True)
        self._worker: Any = None
        self._tag = False
        self._session: _Session | None = None
        self._sessions: dict[str, _Session] = {}
        self._fresh = False  # the current session's process was started for it (new_session)

    @classmethod
    def from_url(cls, url: TargetURL, creds: Credentials, light: bool, stage: str) -> Target:
        return cls(url, creds)

    def worker(self) -> Any:
        from chbench.engines.process import EngineLost, WorkerProcess

        if self._worker is None:
            label = f"embedded@{self.engine.release.clickhouse}"
            worker = WorkerProcess(self.engine.site, self.path or self._tmp or "", label,
                                   logs_config() if self._tag else None)
            try:
                worker.start()
            except EngineLost as e:
                worker.close()
                raise ConnectError(str(e)) from None
            self._worker = worker
        return self._worker

    def _before_send(self) -> None:
        # wake the worker, untimed: after the pause between rounds (the machine probes,
        # ~30 ms) its process sleeps; told a query is coming, it polls its pipe until it
        # arrives (engines/child.py) — SELECT 1's overhead went from 0.63 to 0.47 ms
        from chbench.engines.process import EngineLost

        try:
            self.worker().prepare()
        except EngineLost as e:
            raise ServerLost(str(e)) from None

    @property
    def session(self) -> _Session:
        self._restart_if_killed()
        return super().session

    def _restart_if_killed(self) -> None:
        """After a timeout killed the worker: a fresh one before anything else is sent (so
        untimed, ahead of the next timed query), with sessions read anew, so every setting
        is SET again (the new process has its defaults) — unless tables lost their rows
        with the old one."""
        if self._worker is None or not self._worker.killed:
            return
        self.close()  # the killed worker's pipes and log
        held = self.in_memory_tables()  # starts the worker
        if held:
            raise ServerLost(f"{self.url}: its process was restarted after a timeout, and the rows of "
                             f"{_tables(held)} were lost with it (they live in the process only)")

    def _open(self, role: str) -> _Session:
        self._restart_if_killed()
        if role not in self._sessions:
            session = _Session(_WorkerConn(self, role))
            session.read_defaults()
            self._sessions[role] = session
        return self._sessions[role]

    def connect(self) -> ServerInfo:
        info = super().connect()
        info.notes[:] = [f"embedded@{self.engine.release.clickhouse}: {self.engine.release.requirement} in a "
                         "worker process; server_ms is chDB's own elapsed time"
                         + ("" if info.query_log else "; no system.query_log")]
        if self.engine.release.api != "connect":
            info.notes.append(f"{self.engine.release.requirement} has no persistent sessions: every query starts "
                              "the engine anew (its start-up is in client_ms, not in server_ms)")
        return info

    def in_memory_tables(self) -> list[str]:
        """Tables whose rows live in the engine's process only: a new process finds them
        empty (their definitions are on disk, so they are still there)."""
        return [r[0] for r in self.query_rows(
            "SELECT database || '.' || name FROM system.tables WHERE engine IN ('Memory', 'Set', 'Join', 'Buffer') "
            "AND NOT is_temporary AND database NOT IN ('system', 'INFORMATION_SCHEMA', 'information_schema')")]

    def new_session(self) -> str | None:
        """A new process for the next session, unless tables hold their rows in this one
        (its query_log starts empty: the runner reads the old one's first)."""
        held = self.in_memory_tables()
        self._fresh = not held
        if held:
            return (f"{self.url} kept one process for all sessions: the rows of {_tables(held)} live in it only "
                    "(a new one would find them empty)")
        return super().new_session()

    def keeps_compiled_code(self) -> bool:
        """Not after a new process: its JIT starts empty. Measured (2026-12-07, `run
        --sessions 3`, built-in suite, 8 files): warmed up once, the later sessions' first
        timed runs were still compiling (`group_by_large` 152, 149, 141, then 125–130 ms),
        which left the first session, warmed up 4 times, below both others' level in 7 of 8
        files (by 0.1–5.4%, median 1.2%; the median over the queries of each session's
        median against the query's own)."""
        return not self._fresh

    @property
    def pid(self) -> int | None:
        w = self._worker
        return w.proc.pid if w is not None and w.proc is not None else None

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()
            self._worker = None
        self._sessions.clear()
        self._session = None

    def is_local(self) -> bool:
        return True  # a process of this host: the client host's machine probes are its own

    def data_key(self) -> tuple[object, ...]:
        return ("worker", id(self))  # each worker process runs an engine (and data) of its own

    def describe(self) -> dict[str, Any]:
        r = self.engine.release
        return {"kind": self.kind, "url": self.url, "path": self.path, "engine": {
            "clickhouse": r.clickhouse, "package": r.package, "version": r.version, "api": r.api,
            "own": self.engine.own}}


def _tables(names: list[str]) -> str:
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def process_per_session(target: Target) -> Target:
    """``run --sessions N`` on the in-process engine: the same engine (chbench's own chDB)
    in a worker process that each session starts anew, as separate runs would be. The
    in-process engine cannot restart inside one process, and a process can give one query
    a level of its own for its whole life (2026-12-07: ``group_by_large`` 117 ms in all
    three sessions of one run, mostly 128–145 ms in seven others), which sessions in one
    process leave out of their spread. A/A verdicts flagged, built-in suite (docs/measured.md,
    2026-12-07): 3 of 340 in one process, 1 of 230 with a process per session; issue 12's
    bar (≤ 2 of 10 ``unstable``) met in 0 of 6 and 2 of 6 pairings run in the same half
    hour. Other targets, and a chDB the catalog does not know, are returned as they are
    (the runner's note then says the sessions share the process)."""
    from chbench.engines.catalog import load_catalog
    from chbench.engines.store import own_release

    if not isinstance(target, EmbeddedTarget) or not target.capabilities.in_process:
        return target
    own = own_release(load_catalog())
    if own is None:
        return target
    spec = f"embedded@{own.clickhouse}" + (f":{target.path}" if target.path else "")
    return EngineTarget(parse_target_url(spec))
