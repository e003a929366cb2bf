"""``--metrics-port``: a load run's live counters and latency histograms for Prometheus.

prometheus_client serves them (its own HTTP server on a thread); what it serves is a
custom collector over the totals the parent process already merges from every lane and
worker process (``levels.run_level``), so the endpoint shows exactly what the results
file will say, and a scrape costs a pass over the merged histograms, never the lanes'
time. Latency buckets are fixed edges in seconds (what Grafana's heatmaps read), filled
from chbench's own log-bucketed histograms (each of its buckets, < 0.8% wide, counted
under the first edge at or above its midpoint).

Series: ``chbench_queries_total{host,query,worker}``, ``chbench_errors_total{host,query,
code}``, ``chbench_latency_seconds{host,query}`` (histogram, from the planned start in
open loop), ``chbench_started_total``, ``chbench_late_total``, ``chbench_dropped_total``
(open loop: due but never sent), ``chbench_in_flight``, ``chbench_offered_qps``,
``chbench_achieved_qps`` (over the last interval)."""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Iterator
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import ThreadingWSGIServer

from chbench.errors import UsageError
from chbench.load.recorder import Key, Stats
from chbench.observer import Observer
from chbench.stats.histogram import bucket_bounds

# bucket edges in seconds: 100 µs to a minute, about three per decade
EDGES = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
         30.0, 60.0)


class _Handler(WSGIRequestHandler):
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        """Scrapes are not logged."""


def parse_bind(text: str) -> tuple[str, int]:
    """``PORT`` (loopback only: safe by default) or ``HOST:PORT``."""
    host, _, port = text.rpartition(":")
    try:
        number = int(port)
    except ValueError:
        raise UsageError(f"--metrics-port '{text}': not PORT or HOST:PORT") from None
    if not 0 <= number < 65536:
        raise UsageError(f"--metrics-port '{text}': no such port")
    return (host.strip("[]") or "127.0.0.1"), number


class LoadMetrics(Observer):
    """The collector: cumulative totals over the whole run (every level), fed by the
    parent's level loop, read by scrapes."""

    def __init__(self, hosts: list[str], queries: list[str], offered_qps: float) -> None:
        self.hosts, self.queries = hosts, queries
        self.offered = offered_qps
        self.lock = threading.Lock()
        self.totals: dict[tuple[int, int, int], Stats] = {}  # (host, query, worker)
        self.started = self.late = self.dropped = 0
        self._level_base = {"started": 0, "late": 0, "dropped": 0}  # counters of finished levels
        self._level: dict[str, int] = {"started": 0, "late": 0, "dropped": 0}
        self._window: list[tuple[float, int]] = []  # (time, queries so far): the achieved rate
        self.server: Any = None

    def serve(self, bind: tuple[str, int]) -> int:
        """prometheus_client's WSGI app and threading server, with Nagle's algorithm off:
        the response goes out in two writes (headers, body), and with Nagle on a scrape
        now and then waited for the client's delayed ACK — measured: a maximum of 43.5 ms
        in two of four 20 s rounds at full load, 40 ms of it that wait."""
        registry = CollectorRegistry(auto_describe=False)
        registry.register(self)
        try:
            self.server = make_server(bind[0], bind[1], make_wsgi_app(registry), ThreadingWSGIServer,
                                      handler_class=_Handler)
        except OSError as e:
            raise UsageError(f"--metrics-port {bind[0]}:{bind[1]}: cannot listen ({e.strerror})") from None
        threading.Thread(target=self.server.serve_forever, name="chbench-metrics", daemon=True).start()
        return int(self.server.server_port)

    def close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    # -- fed by the level loop ------------------------------------------------------------
    def add(self, worker: int, part: dict[Key, Stats]) -> None:
        with self.lock:
            for (h, q), st in part.items():
                key = (h, q, worker)
                if key in self.totals:
                    self.totals[key].merge(st)
                else:
                    self.totals[key] = Stats().merge(st)

    def status(self, status: dict[str, Any], final: bool = False) -> None:
        level = {"started": int(status.get("started") or 0), "late": int(status.get("late") or 0),
                 "dropped": max(0, int(status.get("due") or 0) - int(status.get("started") or 0))
                 if final and status.get("due") is not None else 0}
        with self.lock:
            self._level = level
            self.started = self._level_base["started"] + level["started"]
            self.late = self._level_base["late"] + level["late"]
            self.dropped = self._level_base["dropped"] + level["dropped"]
            if final:  # the level is over: its counters become the base of the next
                self._level_base = {"started": self.started, "late": self.late, "dropped": self.dropped}
                self._level = {"started": 0, "late": 0, "dropped": 0}
            now = time.monotonic()
            done = sum(st.queries + st.errors for st in self.totals.values())
            self._window = [(t, n) for t, n in self._window if now - t <= 5.0] + [(now, done)]

    # -- read by scrapes ------------------------------------------------------------------
    def collect(self) -> Iterator[Metric]:
        with self.lock:
            totals = {k: Stats().merge(v) for k, v in self.totals.items()}
            started, late, dropped, window = self.started, self.late, self.dropped, list(self._window)
        queries = CounterMetricFamily("chbench_queries", "queries answered", labels=["host", "query", "worker"])
        errors = CounterMetricFamily("chbench_errors", "queries failed, by ClickHouse error code",
                                     labels=["host", "query", "code"])
        latency = HistogramMetricFamily("chbench_latency_seconds", "latency (open loop: from the planned start)",
                                        labels=["host", "query"])
        per_series: dict[tuple[int, int], Stats] = {}
        for (h, q, w), st in sorted(totals.items()):
            host, query = self._names(h, q)
            queries.add_metric([host, query, str(w)], st.queries)
            per_series.setdefault((h, q), Stats()).merge(st)
        for (h, q), st in sorted(per_series.items()):
            host, query = self._names(h, q)
            for code, n in sorted(st.error_codes.items()):
                errors.add_metric([host, query, str(code)], n)
            latency.add_metric([host, query], _buckets(st), st.hist.total / 1000.0)
        yield queries
        yield errors
        yield latency
        done = sum(st.queries + st.errors for st in totals.values())
        yield CounterMetricFamily("chbench_started", "queries sent", value=started)
        yield CounterMetricFamily("chbench_late", "open loop: sent more than 5 ms after their planned time", value=late)
        yield CounterMetricFamily("chbench_dropped", "open loop: due but never sent", value=dropped)
        yield GaugeMetricFamily("chbench_in_flight", "queries sent and not answered", value=max(0, started - done))
        yield GaugeMetricFamily("chbench_offered_qps", "open loop: the offered rate (0: closed loop)",
                                value=self.offered)
        rate = 0.0
        if len(window) > 1 and window[-1][0] > window[0][0]:
            rate = (window[-1][1] - window[0][1]) / (window[-1][0] - window[0][0])
        yield GaugeMetricFamily("chbench_achieved_qps", "queries answered per second over the last 5 s", value=rate)

    def _names(self, h: int, q: int) -> tuple[str, str]:
        host = self.hosts[h] if h < len(self.hosts) else str(h)
        query = self.queries[q] if q < len(self.queries) else str(q)
        return host, query


def _buckets(st: Stats) -> list[tuple[str, float]]:
    """Cumulative counts at the fixed edges (and +Inf)."""
    counts = [0] * (len(EDGES) + 1)
    for i, n in st.hist.counts.items():
        lo, hi = bucket_bounds(i)
        seconds = (lo + hi) / 2e6
        counts[bisect.bisect_left(EDGES, seconds)] += n
    out, running = [], 0
    for edge, n in zip([*(f"{e:g}" for e in EDGES), "+Inf"], counts, strict=True):
        running += n
        out.append((edge, float(running)))
    return out
