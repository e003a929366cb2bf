"""A level's ``-d`` intervals: what finished in each, and with ``--precise`` what each
query's time in it counts for.

clickhouse-benchmark's ``--precise`` (its PR 86684, read in programs/benchmark/Benchmark.cpp):
a query that ran across interval boundaries counts in every interval its span
overlapped, weighted by the share of its time spent there (a query's weights sum to 1);
QPS, RPS, MiB/s and the result rates of an interval are these weighted sums over its
length. Latencies (and errors) stay in the interval the query finished in, as its
sampler keeps them. An interval is reported once every query started before its end has
answered, so its numbers are final when printed — a report can come later than ``-d``
while a long query is still running. Without ``--precise`` an interval counts the queries
that finished in it, and is reported as soon as it ends.

Why it matters: with queries as long as the interval (-d 1, 0.7 s queries, -c 1) an
interval holds one query or two by where the boundaries fall, and QPS jumps between 1
and 2 from one report to the next; weighted, it reads ~1.4 each time (tests/test_load_cli.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from chbench.load.recorder import Counted, Key, Span, Stats, merge_all, merge_into


@dataclass
class Interval:
    start: float  # monotonic seconds
    end: float | None = None  # None while open
    finished: dict[Key, Stats] = field(default_factory=dict)  # what finished in it (latencies, errors, counts)
    weighted: dict[int, Counted] = field(default_factory=dict)  # --precise: by host, the queries' time in it
    last: bool = False  # closed when the level ended


class Intervals:
    def __init__(self, start: float, precise: bool) -> None:
        self.precise = precise
        self.open = Interval(start)
        self.closed: list[Interval] = []

    def add(self, part: dict[Key, Stats]) -> None:
        """What finished since the last part: its stats to the open interval; with
        --precise each query's weight to every interval its span overlapped. The spans are
        taken out of the part, so the level's totals never hold them."""
        for (h, _q), st in part.items():
            spans, st.spans = st.spans or [], None
            if self.precise:
                for span in spans:
                    self._weigh(h, span)
        merge_into(self.open.finished, part)

    def _weigh(self, host: int, span: Span) -> None:
        answered = span[1]
        sent = min(span[0], answered - 1e-9)  # a query of no measurable time: all of it where it finished
        counts = Counted(1.0, *span[2:])
        for iv in (*self.closed, self.open):
            if iv.end is not None and iv.end <= sent:
                continue
            if iv.start >= answered:
                break
            overlap = min(answered, iv.end if iv.end is not None else answered) - max(sent, iv.start)
            iv.weighted.setdefault(host, Counted()).add(counts, overlap / (answered - sent))

    def close(self, now: float, last: bool = False) -> None:
        """The open interval ends now; the next one starts."""
        self.open.end, self.open.last = now, last
        self.closed.append(self.open)
        self.open = Interval(now)

    def ready(self, status: dict[str, Any], done: bool) -> list[Interval]:
        """The closed intervals whose numbers are final, in order: all of them without
        --precise, or at the level's end; with it, those that a reading of the lanes
        after their end (``read_at``) found no query in flight started in (``oldest``).
        The lanes are read before their last part is swapped out, so a query they no
        longer hold is in that part, and a query holds its lane until it is recorded."""
        out = []
        read_at, oldest = status.get("read_at", -math.inf), status.get("oldest")
        while self.closed:
            iv = self.closed[0]
            assert iv.end is not None
            if self.precise and not done and (read_at < iv.end or (oldest is not None and oldest < iv.end)):
                break
            out.append(self.closed.pop(0))
        return out

    @staticmethod
    def stats_by_host(iv: Interval) -> dict[int, Stats]:
        """An interval's stats per host, with --precise its weighted counts attached."""
        by_host = merge_all(iv.finished, "host")
        for h, counted in iv.weighted.items():
            by_host.setdefault(h, Stats()).weighted = counted
        if iv.weighted:  # a host with no query in the interval's span counts 0, not its whole queries
            for st in by_host.values():
                if st.weighted is None:
                    st.weighted = Counted()
        return by_host
