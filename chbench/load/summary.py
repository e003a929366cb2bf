"""What a load run reports, as data: clickhouse-benchmark's JSON shape, the comparison
verdicts, open-loop accounting, and the concurrency sweep with its knee (the text is
``load/benchmark_text.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chbench.load.recorder import Stats
from chbench.stats.compare import Options, SideData, compare_queries
from chbench.stats.ttest import CONFIDENCE_LEVELS, student_t

if TYPE_CHECKING:
    from chbench.load.config import LoadConfig
    from chbench.load.levels import Host

PERCENTILES = (0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.9, 99.99)
MIB = 1024.0 * 1024.0


@dataclass
class HostView:
    label: str  # as clickhouse-benchmark names a connection: host:port
    stats: Stats


def host_views(hosts: list[Host], by_host: dict[int, Stats], cfg: LoadConfig) -> list[HostView]:
    """One report column per target: a host, or a cluster target's hosts merged (with
    --roundrobin every host as one)."""
    views = []
    for members in cfg.members():
        if len(members) == 1:
            views.append(HostView(hosts[members[0]].label, by_host.get(members[0], Stats())))
            continue
        st = Stats()
        for h in members:
            if h in by_host:
                st.merge(by_host[h])
        label = ", ".join(hosts[h].label for h in members) + (" (round robin)" if cfg.roundrobin else "")
        views.append(HostView(label, st))
    return views


def per_second(n: float, seconds: float) -> float:
    return n / seconds if seconds > 0 else 0.0


def result_rows_per_second(st: Stats, seconds: float) -> float | None:
    """None when some query's result rows were not told (over HTTP the server's summary
    leaves before the result): a rate of the rest would read low, 0 for all of them."""
    return None if st.result_rows_unknown else per_second(st.counted().result_rows, seconds)


# -- JSON in clickhouse-benchmark's historical shape ------------------------------------------
def _pkey(p: float) -> str:
    return f"{p:g}"


def benchmark_json_one(st: Stats, seconds: float) -> dict[str, Any]:
    return {
        "statistics": {
            "QPS": per_second(st.queries, seconds),
            "RPS": per_second(st.read_rows, seconds),
            "MiBPS": per_second(st.read_bytes, seconds) / MIB,
            "RPS_result": result_rows_per_second(st, seconds),
            "MiBPS_result": per_second(st.result_bytes, seconds) / MIB,
            "num_queries": st.queries,
            "num_errors": st.errors,
        },
        "query_time_percentiles": {
            _pkey(p): (None if (v := st.hist.percentile(p)) is None else v / 1000.0) for p in PERCENTILES
        },
    }


def benchmark_json(hosts: list[HostView], seconds: float) -> dict[str, Any]:
    """One host: the bare shape; several (comparison mode): keyed by host."""
    if len(hosts) == 1:
        return benchmark_json_one(hosts[0].stats, seconds)
    return {h.label: benchmark_json_one(h.stats, seconds) for h in hosts}


# -- comparison mode --------------------------------------------------------------------------
# Each host's queries go over connections of their own, and a connection has an offset of
# its own for the whole run (its server thread, its socket): the same server named twice,
# SELECT 1 at -c 1, 1,500 queries — the ratio of medians spread 2.6% (sd) over 40 runs
# while each run's interval said ±1.1%, and 3 of 40 were called slower or faster (-8.4%
# [-9.6%, -6.9%]). As for separate runs (stats/compare.py), each side may be shifted by
# this factor times its latencies' spread (relative MAD, ~8% there: 3.4% sd for the pair).
# Measured: 0.25 still let 1 of 40 A/A runs through (+8.1% [+2.4%, +14.1%]); 0.3, 0 of 100
CONNECTION_FACTOR = 0.3


def comparison(hosts: list[HostView], confidence: int) -> list[dict[str, Any]]:
    """Every host against the first: Student's t-test (clickhouse-benchmark) and the
    rank-based verdict of ``chbench compare`` (ratio of medians, bootstrap CI, Mann-Whitney)."""
    out = []
    base = hosts[0]
    for other in hosts[1:]:
        row: dict[str, Any] = {"a": base.label, "b": other.label}
        t = student_t(base.stats.hist, other.stats.hist, confidence)
        row["t_test"] = t.to_json() if t else None
        # a histogram keeps no run order: its values come out sorted, which read as "drifting
        # over the run (+30% from first to last run)" on both sides of an A/A (seen in CI)
        a = SideData(times=base.stats.hist.expand(5000), ordered=False)
        b = SideData(times=other.stats.hist.expand(5000), ordered=False)
        if a.times and b.times:
            # the rank test at the t-test's confidence (99.5% by default): one comparison, one level
            alpha = 1.0 - CONFIDENCE_LEVELS[confidence] / 100.0
            doc = compare_queries(["all queries"], {"all queries": a}, {"all queries": b},
                                  Options(min_runs=5, alpha=alpha, between_run=CONNECTION_FACTOR))
            r = doc.queries[0]
            row["rank"] = {"verdict": r.verdict, "ratio": r.ratio, "ci": list(r.ci) if r.ci else None,
                           "p_value": r.p_value, "alpha": alpha, "reasons": list(r.reasons)}
        else:
            row["rank"] = None
        out.append(row)
    return out


# -- open loop, errors -------------------------------------------------------------------------
def open_loop_summary(rate: float, poisson: bool, seconds: float, due: int, started: int, late: int,
                      completed: int, late_ms: float) -> dict[str, Any]:
    return {
        "offered_qps": rate,
        "arrivals": "poisson" if poisson else "fixed",
        "planned": due,
        "started": started,
        "completed": completed,
        "achieved_qps": per_second(completed, seconds),
        "late": late,
        "late_threshold_ms": late_ms,
        "dropped": max(0, due - started),
    }


# -- concurrency sweep -------------------------------------------------------------------------
def knee(levels: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The first level past which p99 grows faster than QPS (going from c to the next
    level multiplies p99 by more than it multiplies QPS)."""
    for a, b in zip(levels, levels[1:], strict=False):
        if not (a["qps"] and b["qps"] and a["p99_ms"] and b["p99_ms"]):
            continue
        qps_growth = b["qps"] / a["qps"]
        p99_growth = b["p99_ms"] / a["p99_ms"]
        if p99_growth > qps_growth:
            return {"concurrency": a["concurrency"], "next": b["concurrency"], "qps_growth": qps_growth,
                    "p99_growth": p99_growth}
    return None


