"""Stress on a server: ClickBench's concurrent QPS test, and the same query workers
while a background writer streams rows into another table.

Concurrent test: ``N`` connections, each cycling through its own seeded permutation
of the 43 queries until the time is up — a closed-loop load level (``load/levels.py``)
on the lanes of ``core/lanes.py``. QPS counts successful queries per second of wall
time; the error ratio is failed / started; latencies are kept raw, per query.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from chbench.clickbench.runner import statement
from chbench.clickbench.synthetic import select_sql
from chbench.errors import QueryError, ServerLost, UsageError
from chbench.load.config import LoadConfig
from chbench.load.levels import probe_hosts, run_level
from chbench.targets import Credentials, Target, make_target
from chbench.workload import Query

INGEST_TABLE = "hits_ingest"
INGEST_BATCH_ROWS = 20_000
# --ingest: windows of each side, in A B B A order. Two phases one after the other had
# the machine's own change between them in every query's comparison.
WINDOWS = 2
# the concurrent test alone: untimed seconds of the same load first. Right after
# 'clickbench load' (200,000 rows, 26.9 server, 2 connections) 2-s phases one after the
# other ran at 116 and 121 QPS, then 131–136; a 6-s phase right after a load read 103.5
# against 127–132 for the next three. With --ingest the warm-up is one window.
WARMUP_S = 5.0


@dataclass
class Phase:
    name: str
    seconds: float = 0.0
    latencies: dict[int, list[float]] = field(default_factory=dict)  # query index -> ms
    errors: dict[int, int] = field(default_factory=dict)
    error_messages: dict[int, str] = field(default_factory=dict)  # one per query
    lost: str | None = None
    interrupted: bool = False  # Ctrl-C ended it early: what it holds was measured
    notes: list[str] = field(default_factory=list)  # the target's, as load keeps them (probe_hosts)
    warmup: Phase | None = None  # the untimed load before it, if any (alone)

    def add(self, w: Phase) -> None:
        """A window of this phase: its time, latencies and errors added to the rest."""
        self.seconds += w.seconds
        for q, lat in w.latencies.items():
            self.latencies.setdefault(q, []).extend(lat)
        for q, k in w.errors.items():
            self.errors[q] = self.errors.get(q, 0) + k
        for q, m in w.error_messages.items():
            self.error_messages.setdefault(q, m)
        self.lost = self.lost or w.lost
        self.interrupted = self.interrupted or w.interrupted
        self.notes = self.notes or w.notes

    @property
    def ok(self) -> int:
        return sum(len(v) for v in self.latencies.values())

    @property
    def failed(self) -> int:
        return sum(self.errors.values())

    @property
    def qps(self) -> float:
        return self.ok / self.seconds if self.seconds > 0 else 0.0

    @property
    def error_ratio(self) -> float:
        started = self.ok + self.failed
        return self.failed / started if started else 0.0

    def to_json(self) -> dict[str, Any]:
        per_query = []
        for q in sorted(set(self.latencies) | set(self.errors)):
            lat = self.latencies.get(q, [])
            pct = dict(zip(("p50", "p90", "p99"), np.percentile(lat, [50, 90, 99]).tolist(), strict=True)) \
                if lat else {"p50": None, "p90": None, "p99": None}
            per_query.append({"query": q, "ok": len(lat), "errors": self.errors.get(q, 0), **pct,
                              "error": self.error_messages.get(q), "latencies_ms": lat})
        return {"phase": self.name, "seconds": self.seconds, "queries_ok": self.ok, "queries_failed": self.failed,
                "qps": self.qps, "error_ratio": self.error_ratio, "lost": self.lost, "interrupted": self.interrupted,
                "notes": self.notes, "per_query": per_query,
                **({"warmup_s": self.warmup.seconds, "warmup_qps": self.warmup.qps} if self.warmup else {})}


@dataclass(frozen=True)
class Connect:
    """Where stress connects: the target's spec and credentials (the lanes open their own
    connections from them; called, a fresh connection for the writer)."""
    spec: str
    credentials: Credentials

    def __call__(self) -> Target:
        return make_target(self.spec, self.credentials, light=True)


def concurrent(connect: Connect, queries: list[Query], n: int, duration: float, seed: int,
               name: str = "concurrent", timeout: float | None = None) -> Phase:
    """``n`` connections for ``duration`` seconds, each cycling through its own seeded
    permutation of the queries, on load's lanes (closed loop, every latency kept). Ctrl-C
    ends the phase early: it is returned with what it measured, marked ``interrupted``."""
    cfg = LoadConfig(targets=[connect.spec], credentials=connect.credentials,
                     queries=[replace(q, sql=statement(q.sql)) for q in queries], concurrency=n, timelimit=duration,
                     seed=seed, delay=0.0, continue_on_errors=True, timeout=timeout, lane_order=True, raw=True,
                     query_id_prefix=f"chbench-cbstress-{seed}-")  # load sends --timeout as max_execution_time
    hosts = probe_hosts(cfg)
    res = run_level(cfg, hosts, n, [])  # nothing shows while a phase runs: its report comes after
    phase = Phase(name, seconds=min(res.seconds, duration), lost=res.fatal, interrupted=res.interrupted,
                  notes=list(hosts[0].notes))
    for (_, q), st in sorted(res.totals.items()):
        if st.samples:
            phase.latencies[q + 1] = st.samples
        if st.errors:
            phase.errors[q + 1] = st.errors
            phase.error_messages[q + 1] = next(iter(st.error_messages.values()), "")
    return phase


def alone(connect: Connect, queries: list[Query], n: int, duration: float, seed: int,
          timeout: float | None = None, warmup: float | None = None) -> Phase:
    """The concurrent test after ``warmup`` seconds (``WARMUP_S`` unless given) of the same
    load, untimed (kept as the phase's ``warmup_s`` and ``warmup_qps``); Ctrl-C or a lost
    server during the warm-up returns an empty phase that says why."""
    seconds = WARMUP_S if warmup is None else warmup
    warm = concurrent(connect, queries, n, seconds, seed - 1, "warm-up", timeout) if seconds > 0 else None
    if warm is not None and (warm.interrupted or warm.lost):
        return Phase("concurrent", lost=warm.lost, interrupted=warm.interrupted, warmup=warm)
    phase = concurrent(connect, queries, n, duration, seed, timeout=timeout)
    phase.warmup = warm
    return phase


@dataclass
class IngestResult:
    rows: int = 0
    batches: int = 0
    seconds: float = 0.0
    method: str = ""
    error: str | None = None

    def add(self, w: IngestResult) -> None:
        self.rows += w.rows
        self.batches += w.batches
        self.seconds += w.seconds
        self.method = w.method
        self.error = self.error or w.error

    def to_json(self) -> dict[str, Any]:
        return {"rows": self.rows, "batches": self.batches, "seconds": self.seconds,
                "rows_per_s": self.rows / self.seconds if self.seconds else 0.0, "method": self.method,
                "error": self.error}


class Writer(threading.Thread):
    """Streams batches of synthetic rows into ``hits_ingest`` until stopped.

    Over HTTP the rows travel: one batch is made once (``FORMAT Native`` from the
    engine's generator) and POSTed again and again for the server to parse. Over the
    native protocol the batch is made by the server (``INSERT … SELECT``), as
    clickhouse-driver would otherwise build rows in Python."""

    def __init__(self, make: Callable[[], Target], seed: int) -> None:
        super().__init__(daemon=True)
        self.make, self.seed = make, seed
        self.stop_event = threading.Event()
        self.result = IngestResult()
        self.target = make()
        self.target.connect()
        self.target.command(f"DROP TABLE IF EXISTS {INGEST_TABLE}")
        self.target.command(f"CREATE TABLE {INGEST_TABLE} AS hits")
        self.body: bytes | None = None
        caps = self.target.capabilities
        if caps.streaming_insert and caps.formatted_results:
            self.body = self.target.query_bytes(select_sql(seed, INGEST_BATCH_ROWS, 0, INGEST_BATCH_ROWS)
                                                + "\nFORMAT Native")
            self.result.method = f"HTTP POST of {INGEST_BATCH_ROWS:,}-row Native batches ({len(self.body):,} bytes)"
        else:
            self.result.method = f"INSERT … SELECT of {INGEST_BATCH_ROWS:,}-row batches generated by the server"

    def run(self) -> None:
        t0 = time.monotonic()
        try:
            while not self.stop_event.is_set():
                if self.body is not None:
                    self.target.insert_stream(f"INSERT INTO {INGEST_TABLE} FORMAT Native", [self.body])
                else:
                    self.target.command(f"INSERT INTO {INGEST_TABLE} "
                                        + select_sql(self.seed, INGEST_BATCH_ROWS, 0, INGEST_BATCH_ROWS))
                self.result.rows += INGEST_BATCH_ROWS
                self.result.batches += 1
        except (QueryError, ServerLost) as e:
            self.result.error = getattr(e, "message", None) or str(e)
        finally:
            self.result.seconds = time.monotonic() - t0

    def finish(self) -> IngestResult:
        self.stop_event.set()
        self.join(120)
        with contextlib.suppress(QueryError, ServerLost):
            self.target.command(f"DROP TABLE IF EXISTS {INGEST_TABLE}")
        self.target.close()
        return self.result


def abba(windows: int) -> list[bool]:
    """Whether the writer runs in each window: A B B A A B …, ``windows`` of each, so a
    machine drifting steadily through the test weighs on both alike."""
    return [(i % 4) in (1, 2) for i in range(2 * windows)]


def mixed(connect: Connect, queries: list[Query], n: int, duration: float, seed: int,
          timeout: float | None = None, windows: int = WINDOWS, warmup: float | None = None) -> dict[str, Any]:
    """The query workers alone and with the writer, each for ``duration`` seconds in all,
    taken in ``windows`` windows a side in A B B A order after ``warmup`` seconds (one
    window unless given) of the queries alone, untimed (docs/clickbench.md): latency
    without and with ingest, and the QPS change. Ctrl-C ends the window under way and
    keeps what was measured (``interrupted`` says so)."""
    phases = {False: Phase("queries only"), True: Phase("queries + ingest")}
    ingest = IngestResult()
    spans: list[dict[str, Any]] = []
    # one untimed window first: right after 'clickbench load' the first window ran at 121
    # QPS, the later windows alone at 177–188 (the new table's merges, cold caches), which
    # the A B B A order does not cancel: a step in one window is not a drift
    seconds = duration / windows if warmup is None else warmup
    warm = concurrent(connect, queries, n, seconds, seed - 1, "warm-up", timeout) if seconds > 0 else Phase("warm-up")
    warmed = {"warmup_s": warm.seconds, "warmup_qps": warm.qps}
    interrupted = warm.interrupted
    if interrupted or warm.lost:  # nothing timed yet: the phase says only why it ended
        phases[False].lost = warm.lost
        return {"without_ingest": phases[False].to_json(), "windows": spans, "interrupted": interrupted, **warmed}
    for i, with_writer in enumerate(abba(windows)):
        writer = Writer(connect, seed) if with_writer else None
        if writer:
            writer.start()
        try:
            w = concurrent(connect, queries, n, duration / windows, seed + i, phases[with_writer].name, timeout)
        finally:
            if writer:
                ingest.add(writer.finish())
        phases[with_writer].add(w)
        spans.append({"window": i, "phase": w.name, "seconds": w.seconds, "qps": w.qps})
        if w.interrupted or w.lost:
            interrupted = w.interrupted
            break
    base, loaded = phases[False], phases[True]
    out: dict[str, Any] = {"without_ingest": base.to_json(), "windows": spans, "interrupted": interrupted,
                           **warmed}
    if not loaded.seconds:  # interrupted before the writer ran
        return out
    out["qps_change"] = qps_change(spans)
    rows = [_with_writer(q, base.latencies.get(q) or [], loaded.latencies.get(q) or [])
            for q in range(1, len(queries) + 1)]
    _judge_writer(rows, base.latencies, loaded.latencies)
    return {**out, "with_ingest": loaded.to_json(), "ingest": ingest.to_json(), "p50_by_query": rows}


def qps_change(spans: list[dict[str, Any]]) -> dict[str, Any]:
    """QPS with the writer against without, from the windows: each two neighbours (A B,
    then B A, …) give a log ratio, and their mean the estimate — a steady drift of the
    machine adds to one pair what it takes from the next. The 95% interval is Student's
    over those pairs (2 pairs: 1 degree of freedom, so wide; ``--windows`` adds pairs);
    a drift left in a pair widens it, never narrows it."""
    logs = []
    for x, y in zip(spans[::2], spans[1::2], strict=False):
        a, b = (x, y) if x["phase"] == "queries only" else (y, x)
        if a["qps"] > 0 and b["qps"] > 0 and a["phase"] != b["phase"]:
            logs.append(math.log(b["qps"] / a["qps"]))
    if not logs:
        return {"ratio": None, "ci": None, "pairs": 0}
    mean = float(np.mean(logs))
    out: dict[str, Any] = {"ratio": math.exp(mean), "ci": None, "pairs": len(logs)}
    if len(logs) >= 2:
        from scipy.stats import t as student

        half = float(student.ppf(0.975, len(logs) - 1)) * float(np.std(logs, ddof=1)) / math.sqrt(len(logs))
        out["ci"] = [math.exp(mean - half), math.exp(mean + half)]
    return out


def _with_writer(q: int, a: list[float], b: list[float]) -> dict[str, Any]:
    """A query's p50 without and with the writer, the ratio and its 95% interval (the
    bootstrap of the ratio of medians, as ``compare`` reads two samples; fixed seed)."""
    pa = float(np.median(a)) if a else None
    pb = float(np.median(b)) if b else None
    row: dict[str, Any] = {"query": q, "p50_ms_without": pa, "p50_ms_with": pb,
                           "ratio": (pb / pa) if pa and pb else None, "ci": None, "change": None}
    if len(a) >= 5 and len(b) >= 5:
        from chbench.stats.compare import SEED, ratio_interval

        _, lo, hi = ratio_interval(a, b, SEED)  # of the log ratio
        row["ci"] = [math.exp(lo), math.exp(hi)]
    return row


def _judge_writer(rows: list[dict[str, Any]], a: dict[int, list[float]], b: dict[int, list[float]]) -> None:
    """``change`` per query: ``slower``/``faster`` where a rank test (Mann–Whitney) says
    the two sides differ, Holm-corrected across the queries, and the interval agrees;
    else ``not shown``. The windows' A B B A order keeps a steady drift of the machine
    out of it; a sudden change inside one window is not (docs/clickbench.md)."""
    tested = [r for r in rows if r["ci"] is not None]
    if not tested:
        return
    from scipy.stats import mannwhitneyu

    from chbench.stats.compare import holm

    adjusted = holm([float(mannwhitneyu(a[r["query"]], b[r["query"]]).pvalue) for r in tested])
    for r, p in zip(tested, adjusted, strict=True):
        lo, hi = r["ci"]
        r["p_holm"] = p
        r["change"] = "slower" if p < 0.05 and lo > 1 else "faster" if p < 0.05 and hi < 1 else "not shown"


def require_server(target: Target, what: str) -> None:
    if not target.capabilities.concurrent_sessions:
        raise UsageError(f"{what} needs a server target (http:// or clickhouse://): the embedded engine runs "
                         "inside this process, one query at a time")
