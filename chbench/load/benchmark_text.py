"""clickhouse-benchmark's own text report, as it prints it (``chbench load`` on stderr):
a status line per host, the percentile table, then what chbench adds — the comparison
verdicts, the open-loop accounting, errors by code and the concurrency sweep.

Latencies print with microsecond precision ("0.000715 sec."), where clickhouse-benchmark
rounds to milliseconds and so shows sub-millisecond queries as 0.001; any script that
reads the number as a float reads both."""

from __future__ import annotations

from typing import Any

from chbench.export.numbers import change, interval, num
from chbench.load.recorder import Stats
from chbench.load.summary import MIB, PERCENTILES, HostView, per_second, result_rows_per_second


def host_line(h: HostView, seconds: float) -> str:
    """A host's status line: ``queries`` the ones that finished, the rates over ``seconds``
    (with --precise, of each query's time in the interval: load/intervals.py)."""
    st, c = h.stats, h.stats.counted()

    def rate(n: float) -> float:
        return per_second(n, seconds)

    errors = f"errors: {st.errors}, " if st.errors else ""
    result_rps = result_rows_per_second(st, seconds)
    result_rps_text = "n/a" if result_rps is None else f"{result_rps:.3f}"
    return (
        f"{h.label}, queries: {st.queries}, {errors}QPS: {rate(c.queries):.3f}, "
        f"RPS: {rate(c.read_rows):.3f}, MiB/s: {rate(c.read_bytes) / MIB:.3f}, "
        f"result RPS: {result_rps_text}, result MiB/s: {rate(c.result_bytes) / MIB:.3f}."
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


def comparison_lines(rows: list[dict[str, Any]]) -> list[str]:
    lines = []
    for r in rows:
        t = r.get("t_test")
        lines.append(f"{r['b']} vs {r['a']}, Student's t-test on means: "
                     + (t["verdict"] if t else "not enough queries on both sides"))
        k = r.get("rank")
        if k and k.get("ratio") is not None:
            ci_text = f" {interval(k['ci'])}" if k.get("ci") else ""
            lines.append(f"{r['b']} vs {r['a']}, ratio of medians (rank-based, as chbench compare): "
                         f"{change(k['ratio'])}{ci_text}: {k['verdict']}")
    return lines


def open_loop_lines(o: dict[str, Any], total: Stats, limit_ms: float) -> list[str]:
    lines = [
        f"Open loop ({o['arrivals']} arrivals): offered {o['offered_qps']:.3f} QPS, achieved {o['achieved_qps']:.3f} "
        f"QPS; planned {o['planned']}, started {o['started']}, late {o['late']} "
        f"(started > {o['late_threshold_ms']:g} ms behind plan), dropped {o['dropped']} (due but never sent).",
        "Latency counts from each request's planned start (no coordinated omission).",
    ]
    if total.service is not None and total.service.count:
        p50, p99 = total.service.percentile(50), total.service.percentile(99)
        lines.append(f"Service time alone (from send): p50 {num(p50, '.3f')} ms, p99 {num(p99, '.3f')} ms.")
    if limit_ms:
        lines.append(limit_line(total, limit_ms))
    return lines


def limit_line(total: Stats, limit_ms: float) -> str:
    share = total.over_limit / total.queries * 100 if total.queries else 0.0
    return f"Over the latency limit of {limit_ms:g} ms: {total.over_limit} of {total.queries} ({share:.2f}%)."


def error_lines(total: Stats) -> list[str]:
    if not total.errors:
        return []
    parts = [f"Errors: {total.errors}, by ClickHouse error code:"]
    for code, n in sorted(total.error_codes.items(), key=lambda kv: -kv[1]):
        label = f"code {code}" if code else "no code"
        parts.append(f"  {label}: {n} (e.g. {total.error_messages.get(code, '')})")
    return parts


def sweep_lines(levels: list[dict[str, Any]], k: dict[str, Any] | None) -> list[str]:
    lines = ["Concurrency sweep:", f"{'concurrency':>11}  {'QPS':>12}  {'p50 ms':>10}  {'p99 ms':>10}  {'errors':>7}"]
    for lv in levels:
        mark = "  <- knee" if k and lv["concurrency"] == k["concurrency"] else ""
        lines.append(f"{lv['concurrency']:>11}  {lv['qps']:>12.3f}  {num(lv['p50_ms'], '.3f'):>10}  "
                     f"{num(lv['p99_ms'], '.3f'):>10}  {lv['errors']:>7}{mark}")
    if k:
        lines.append(
            f"Knee at concurrency {k['concurrency']}: from {k['concurrency']} to {k['next']} QPS grows "
            f"x{k['qps_growth']:.2f} but p99 x{k['p99_growth']:.2f}."
        )
    else:
        lines.append("No knee: p99 never grew faster than QPS between two levels.")
    return lines


def level_lines(hosts: list[HostView], level: dict[str, Any], total: Stats, limit_ms: float) -> list[str]:
    """The final report of one level: the text report, then comparison, open loop,
    latency limit and errors, as ``chbench load`` prints it."""
    lines = text_report(hosts, level["seconds"], total.queries)
    if level["comparison"]:
        lines += comparison_lines(level["comparison"]) + [""]
    if level["open_loop"]:
        lines += open_loop_lines(level["open_loop"], total, limit_ms) + [""]
    elif limit_ms:
        lines += [limit_line(total, limit_ms), ""]
    el = error_lines(total)
    if el:
        lines += el + [""]
    return lines
