"""What a load run reports: clickhouse-benchmark's text and JSON shapes, the comparison
verdicts, open-loop accounting, errors by code, and the concurrency sweep with its knee.

Latencies print with microsecond precision ("0.000715 sec."), where clickhouse-benchmark
rounds to milliseconds and so shows sub-millisecond queries as 0.001; any script that
reads the number as a float reads both."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chbench.load.recorder import Stats
from chbench.stats.compare import Options, SideData, compare_queries
from chbench.stats.ttest import CONFIDENCE_LEVELS, student_t

if TYPE_CHECKING:
    from chbench.load.engine import Host

PERCENTILES = (0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.9, 99.99)
MIB = 1024.0 * 1024.0


@dataclass
class HostView:
    label: str  # as clickhouse-benchmark names a connection: host:port
    stats: Stats


def host_views(hosts: list[Host], by_host: dict[int, Stats], roundrobin: bool) -> list[HostView]:
    """One report column per host; with --roundrobin one combined column."""
    if roundrobin:
        label = ", ".join(h.label for h in hosts) + " (round robin)"
        return [HostView(label, by_host.get(0, Stats()))]
    return [HostView(h.label, by_host.get(i, Stats())) for i, h in enumerate(hosts)]


def _rate(n: float, seconds: float) -> float:
    return n / seconds if seconds > 0 else 0.0


def host_line(h: HostView, seconds: float) -> str:
    st = h.stats
    errors = f"errors: {st.errors}, " if st.errors else ""
    return (
        f"{h.label}, queries: {st.queries}, {errors}QPS: {_rate(st.queries, seconds):.3f}, "
        f"RPS: {_rate(st.read_rows, seconds):.3f}, MiB/s: {_rate(st.read_bytes, seconds) / MIB:.3f}, "
        f"result RPS: {_rate(st.result_rows, seconds):.3f}, result MiB/s: {_rate(st.result_bytes, seconds) / MIB:.3f}."
    )


def percentile_lines(hosts: list[HostView]) -> list[str]:
    lines = []
    for p in PERCENTILES:
        cells = []
        for h in hosts:
            v = h.stats.hist.percentile(p)
            cells.append("-" if v is None else f"{v / 1000.0:.6f} sec.")
        lines.append(f"{p:.3f}%\t\t" + "\t".join(cells) + "\t")
    return lines


def text_report(hosts: list[HostView], seconds: float, executed: int | None = None) -> list[str]:
    lines = []
    if executed is not None:
        lines += [f"Queries executed: {executed}.", ""]
    for h in hosts:
        lines.append(host_line(h, seconds))
    lines.append("")
    lines += percentile_lines(hosts)
    lines.append("")
    return lines


# -- JSON in clickhouse-benchmark's historical shape ------------------------------------------
def _pkey(p: float) -> str:
    return f"{p:g}"


def benchmark_json_one(st: Stats, seconds: float) -> dict[str, Any]:
    return {
        "statistics": {
            "QPS": _rate(st.queries, seconds),
            "RPS": _rate(st.read_rows, seconds),
            "MiBPS": _rate(st.read_bytes, seconds) / MIB,
            "RPS_result": _rate(st.result_rows, seconds),
            "MiBPS_result": _rate(st.result_bytes, seconds) / MIB,
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
def comparison(hosts: list[HostView], confidence: int) -> list[dict[str, Any]]:
    """Every host against the first: Student's t-test (clickhouse-benchmark) and the
    rank-based verdict of ``chbench compare`` (ratio of medians, bootstrap CI, Mann-Whitney)."""
    out = []
    base = hosts[0]
    for other in hosts[1:]:
        row: dict[str, Any] = {"a": base.label, "b": other.label}
        t = student_t(base.stats.hist, other.stats.hist, confidence)
        row["t_test"] = t.to_json() if t else None
        a = SideData(times=base.stats.hist.expand(5000))
        b = SideData(times=other.stats.hist.expand(5000))
        if a.times and b.times:
            # the rank test at the t-test's confidence (99.5% by default): one comparison, one level
            alpha = 1.0 - CONFIDENCE_LEVELS[confidence] / 100.0
            doc = compare_queries(["all queries"], {"all queries": a}, {"all queries": b},
                                  Options(min_runs=5, alpha=alpha))
            r = doc["queries"][0]
            row["rank"] = {"verdict": r["verdict"], "ratio": r["ratio"], "ci": r["ci"], "p_value": r["p_value"],
                           "alpha": alpha, "reasons": r.get("reasons") or []}
        else:
            row["rank"] = None
        out.append(row)
    return out


def comparison_lines(rows: list[dict[str, Any]]) -> list[str]:
    lines = []
    for r in rows:
        t = r.get("t_test")
        lines.append(f"{r['b']} vs {r['a']}, Student's t-test on means: "
                     + (t["verdict"] if t else "not enough queries on both sides"))
        k = r.get("rank")
        if k and k.get("ratio") is not None:
            ci = k.get("ci")
            ci_text = f" [{(ci[0] - 1) * 100:+.1f}%, {(ci[1] - 1) * 100:+.1f}%]" if ci else ""
            lines.append(f"{r['b']} vs {r['a']}, ratio of medians (rank-based, as chbench compare): "
                         f"{(k['ratio'] - 1) * 100:+.1f}%{ci_text}: {k['verdict']}")
    return lines


# -- open loop, errors -------------------------------------------------------------------------
def open_loop_summary(rate: float, poisson: bool, seconds: float, due: int, started: int, late: int,
                      completed: int, late_ms: float) -> dict[str, Any]:
    return {
        "offered_qps": rate,
        "arrivals": "poisson" if poisson else "fixed",
        "planned": due,
        "started": started,
        "completed": completed,
        "achieved_qps": _rate(completed, seconds),
        "late": late,
        "late_threshold_ms": late_ms,
        "dropped": max(0, due - started),
    }


def open_loop_lines(o: dict[str, Any], total: Stats, limit_ms: float) -> list[str]:
    lines = [
        f"Open loop ({o['arrivals']} arrivals): offered {o['offered_qps']:.3f} QPS, achieved {o['achieved_qps']:.3f} "
        f"QPS; planned {o['planned']}, started {o['started']}, late {o['late']} "
        f"(started > {o['late_threshold_ms']:g} ms behind plan), dropped {o['dropped']} (due but never sent).",
        "Latency counts from each request's planned start (no coordinated omission).",
    ]
    if total.service is not None and total.service.count:
        p50, p99 = total.service.percentile(50), total.service.percentile(99)
        lines.append(f"Service time alone (from send): p50 {p50:.3f} ms, p99 {p99:.3f} ms.")
    if limit_ms:
        share = total.over_limit / total.queries * 100 if total.queries else 0.0
        lines.append(f"Over the latency limit of {limit_ms:g} ms: {total.over_limit} of {total.queries} "
                     f"({share:.2f}%).")
    return lines


def error_lines(total: Stats) -> list[str]:
    if not total.errors:
        return []
    parts = [f"Errors: {total.errors}, by ClickHouse error code:"]
    for code, n in sorted(total.error_codes.items(), key=lambda kv: -kv[1]):
        label = f"code {code}" if code else "no code"
        parts.append(f"  {label}: {n} (e.g. {total.error_messages.get(code, '')})")
    return parts


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


def sweep_lines(levels: list[dict[str, Any]], k: dict[str, Any] | None) -> list[str]:
    lines = ["Concurrency sweep:", f"{'concurrency':>11}  {'QPS':>12}  {'p50 ms':>10}  {'p99 ms':>10}  {'errors':>7}"]
    for lv in levels:
        p50 = "-" if lv["p50_ms"] is None else f"{lv['p50_ms']:.3f}"
        p99 = "-" if lv["p99_ms"] is None else f"{lv['p99_ms']:.3f}"
        mark = "  <- knee" if k and lv["concurrency"] == k["concurrency"] else ""
        lines.append(f"{lv['concurrency']:>11}  {lv['qps']:>12.3f}  {p50:>10}  {p99:>10}  {lv['errors']:>7}{mark}")
    if k:
        lines.append(
            f"Knee at concurrency {k['concurrency']}: from {k['concurrency']} to {k['next']} QPS grows "
            f"x{k['qps_growth']:.2f} but p99 x{k['p99_growth']:.2f}."
        )
    else:
        lines.append("No knee: p99 never grew faster than QPS between two levels.")
    return lines
