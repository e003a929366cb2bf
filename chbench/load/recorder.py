"""Counting what a load run did, in constant memory.

Every finished query lands in a :class:`Stats` for its (host, query) pair: a latency
histogram (log-bucketed, so memory does not grow with the run) and counters. The
collector swaps the live stats out every few hundred milliseconds; interval stats and
run totals are merges of those swaps, and stats from worker processes merge the same
way, exactly."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from chbench.stats.histogram import Histogram

Key = tuple[int, int]  # (host index, query index)
# one answered query, kept for --precise (load/intervals.py): sent and answered (monotonic
# seconds), read rows, read bytes, result rows, result bytes
Span = tuple[float, float, int, int, int, int]


@dataclass(slots=True)
class Counted:
    """What an interval's rates count: whole queries, or with ``--precise`` each query's
    share of its time spent in the interval (``load/intervals.py``)."""

    queries: float = 0.0
    read_rows: float = 0.0
    read_bytes: float = 0.0
    result_rows: float = 0.0
    result_bytes: float = 0.0

    def add(self, o: Counted, weight: float = 1.0) -> Counted:
        self.queries += weight * o.queries
        self.read_rows += weight * o.read_rows
        self.read_bytes += weight * o.read_bytes
        self.result_rows += weight * o.result_rows
        self.result_bytes += weight * o.result_bytes
        return self


class Stats:
    __slots__ = ("hist", "service", "queries", "errors", "error_codes", "error_messages", "read_rows", "read_bytes",
                 "result_rows", "result_bytes", "over_limit", "samples", "result_rows_unknown", "spans", "weighted")

    def __init__(self) -> None:
        self.hist = Histogram()  # latency (open loop: from the planned time)
        self.service: Histogram | None = None  # open loop only: from the moment the query was sent
        self.queries = 0
        self.errors = 0
        self.error_codes: dict[int, int] = {}  # ClickHouse error code (0: unknown) -> count
        self.error_messages: dict[int, str] = {}  # one message per code
        self.read_rows = 0
        self.read_bytes = 0
        self.result_rows = 0
        self.result_rows_unknown = 0  # queries whose result rows the target could not tell (HTTP)
        self.result_bytes = 0
        self.over_limit = 0
        self.samples: list[float] | None = None  # every latency, when the run keeps them (cfg.raw)
        self.spans: list[Span] | None = None  # --precise: each query's span, until load/intervals.py takes them
        self.weighted: Counted | None = None  # --precise: an interval's overlap-weighted counts

    def counted(self) -> Counted:
        """The counts an interval's rates divide by its length: weighted with --precise."""
        if self.weighted is not None:
            return self.weighted
        return Counted(self.queries, self.read_rows, self.read_bytes, self.result_rows, self.result_bytes)

    def merge(self, o: Stats) -> Stats:
        self.hist.merge(o.hist)
        if o.service is not None:
            if self.service is None:
                self.service = Histogram()
            self.service.merge(o.service)
        self.queries += o.queries
        self.errors += o.errors
        for c, n in o.error_codes.items():
            self.error_codes[c] = self.error_codes.get(c, 0) + n
        for c, m in o.error_messages.items():
            self.error_messages.setdefault(c, m)
        self.read_rows += o.read_rows
        self.read_bytes += o.read_bytes
        self.result_rows += o.result_rows
        self.result_rows_unknown += o.result_rows_unknown
        self.result_bytes += o.result_bytes
        self.over_limit += o.over_limit
        if o.samples is not None:
            if self.samples is None:
                self.samples = list(o.samples)
            else:
                self.samples.extend(o.samples)
        if o.spans is not None:
            if self.spans is None:
                self.spans = list(o.spans)
            else:
                self.spans.extend(o.spans)
        if o.weighted is not None:
            self.weighted = (self.weighted or Counted()).add(o.weighted)
        return self

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "queries": self.queries,
            "errors": self.errors,
            "errors_by_code": {str(c): n for c, n in sorted(self.error_codes.items())},
            "error_messages": {str(c): m for c, m in sorted(self.error_messages.items())},
            "read_rows": self.read_rows,
            "read_bytes": self.read_bytes,
            "result_rows": self.result_rows,  # of the queries whose target told them
            "result_rows_unknown": self.result_rows_unknown,
            "result_bytes": self.result_bytes,
            "over_latency_limit": self.over_limit,
            "histogram": self.hist.to_json(),
        }
        if self.service is not None:
            d["service_histogram"] = self.service.to_json()
        if self.samples is not None:
            d["latencies_ms"] = self.samples
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Stats:
        s = cls()
        s.hist = Histogram.from_json(d["histogram"])
        if d.get("service_histogram"):
            s.service = Histogram.from_json(d["service_histogram"])
        s.queries = int(d.get("queries", 0))
        s.errors = int(d.get("errors", 0))
        s.error_codes = {int(c): int(n) for c, n in (d.get("errors_by_code") or {}).items()}
        s.error_messages = {int(c): str(m) for c, m in (d.get("error_messages") or {}).items()}
        for k in ("read_rows", "read_bytes", "result_rows", "result_bytes"):
            setattr(s, k, int(d.get(k) or 0))
        s.result_rows_unknown = int(d.get("result_rows_unknown") or 0)
        s.over_limit = int(d.get("over_latency_limit", 0))
        if d.get("latencies_ms") is not None:
            s.samples = [float(x) for x in d["latencies_ms"]]
        return s


def merged(parts: Iterable[Stats]) -> Stats:
    """One Stats of several (hosts, queries, seconds)."""
    out = Stats()
    for st in parts:
        out.merge(st)
    return out


def merge_all(parts: dict[Key, Stats], by: str) -> dict[int, Stats]:
    """Merge (host, query) stats by host ('host') or by query ('query')."""
    out: dict[int, Stats] = {}
    for (h, q), st in parts.items():
        k = h if by == "host" else q
        out.setdefault(k, Stats()).merge(st)
    return out


def merge_into(total: dict[Key, Stats], part: dict[Key, Stats]) -> None:
    for k, st in part.items():
        if k in total:
            total[k].merge(st)
        else:
            total[k] = Stats().merge(st)


class Recorder:
    """Thread-safe sink for one process's connections."""

    def __init__(self, latency_limit_ms: float, open_loop: bool, raw: bool = False, spans: bool = False) -> None:
        self._lock = threading.Lock()
        self._cur: dict[Key, Stats] = {}
        self.limit = latency_limit_ms
        self.open_loop = open_loop
        self.raw = raw
        self.spans = spans

    def _stats(self, key: Key) -> Stats:
        st = self._cur.get(key)
        if st is None:
            st = self._cur[key] = Stats()
            if self.open_loop:
                st.service = Histogram()
            if self.raw:
                st.samples = []
            if self.spans:
                st.spans = []
        return st

    def ok(self, key: Key, latency_ms: float, service_ms: float, read_rows: int | None, read_bytes: int | None,
           result_rows: int | None, result_bytes: int | None, span: tuple[float, float] | None = None) -> None:
        with self._lock:
            st = self._stats(key)
            if st.spans is not None and span is not None:
                st.spans.append((*span, read_rows or 0, read_bytes or 0, result_rows or 0, result_bytes or 0))
            st.hist.record(latency_ms)
            if st.samples is not None:
                st.samples.append(latency_ms)
            if st.service is not None:
                st.service.record(service_ms)
            st.queries += 1
            st.read_rows += read_rows or 0
            st.read_bytes += read_bytes or 0
            st.result_rows += result_rows or 0
            st.result_rows_unknown += result_rows is None
            st.result_bytes += result_bytes or 0
            if self.limit and latency_ms > self.limit:
                st.over_limit += 1

    def error(self, key: Key, code: int | None, message: str) -> None:
        with self._lock:
            st = self._stats(key)
            st.errors += 1
            c = code or 0
            st.error_codes[c] = st.error_codes.get(c, 0) + 1
            st.error_messages.setdefault(c, message)

    def swap(self) -> dict[Key, Stats]:
        with self._lock:
            cur, self._cur = self._cur, {}
        return cur
