"""A target that runs nothing: scripted latencies and errors, for fast unit tests of the
runner, the comparison and the exporters (as httpx's ``MockTransport`` lets tests run
without a network).

Not reachable from a URL: chbench never benchmarks a mock of ClickHouse, and its
tests of real behaviour run against real engines.

    def handler(call: Call) -> float:          # client milliseconds, or raise
        if "sleep" in call.sql:
            raise QueryError(159, "timeout")
        return 100.0 if call.settings.get("max_threads") == "1" else 50.0

    target = FakeTarget(handler)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from chbench.targets.base import ADMIN_QUERY_PREFIX, Credentials, Sample, ServerInfo, Target
from chbench.targets.result import Result
from chbench.targets.url import Protocol, TargetURL


@dataclass
class Call:
    """What the code under test asked the target to do."""

    what: str  # execute | fetch | statement | command | query_rows
    sql: str
    settings: dict[str, str] = field(default_factory=dict)
    query_id: str = ""


class FakeTarget(Target):
    protocol = Protocol.FAKE

    def __init__(self, handler: Callable[[Call], float] | None = None, *, version: str = "26.9.0.0",
                 settings: dict[str, str] | None = None, results: dict[str, Result] | None = None,
                 rows: dict[str, list[list[str]]] | None = None, url: str = "fake://scripted") -> None:
        super().__init__(url)
        self.handler = handler or (lambda call: 1.0)
        self.version = version
        self.settings = settings if settings is not None else {
            "readonly": "0", "use_query_cache": "0", "max_threads": "2", "max_execution_time": "0", "log_queries": "1"}
        self.results = results or {}
        self.rows = rows or {}
        self.calls: list[Call] = []
        self.closed = False

    @classmethod
    def from_url(cls, url: TargetURL, creds: Credentials, light: bool, stage: str) -> Target:
        raise NotImplementedError("the fake target is for tests only")

    def connect(self) -> ServerInfo:
        self.info = ServerInfo(version=self.version, settings=dict(self.settings))
        return self.info

    def _reply(self, call: Call) -> Sample:
        self.calls.append(call)
        ms = float(self.handler(call))  # may raise QueryError / ServerLost, as a real target would
        return Sample(query_id=call.query_id, client_ms=ms, server_ms=ms * 0.9, read_rows=1, read_bytes=8,
                      result_rows=1, result_bytes=8)

    def execute(self, sql: str, settings: dict[str, str], query_id: str, timeout: float | None) -> Sample:
        if query_id.startswith(ADMIN_QUERY_PREFIX):  # untimed checks (a setting's value): no handler's business
            self.calls.append(Call("admin", sql, dict(settings), query_id))
            return Sample(query_id=query_id, client_ms=0.0)
        return self._reply(Call("execute", sql, dict(settings), query_id))

    def fetch(self, sql: str, settings: dict[str, str], query_id: str, timeout: float | None) -> tuple[Sample, Result]:
        sample = self._reply(Call("fetch", sql, dict(settings), query_id))
        return sample, self.results.get(sql, Result([], [], []))

    def statement(self, sql: str, settings: dict[str, str]) -> None:
        self._reply(Call("statement", sql, dict(settings)))

    def command(self, sql: str) -> None:
        self.calls.append(Call("command", sql))

    def query_rows(self, sql: str) -> list[list[str]]:
        self.calls.append(Call("query_rows", sql))
        return self.rows.get(sql, [])

    def close(self) -> None:
        self.closed = True

    def executed(self, what: str = "execute") -> list[Call]:
        return [c for c in self.calls if c.what == what]
