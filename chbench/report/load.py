"""A load run's section: per concurrency level QPS and latency percentiles (from the
exact histograms), the sweep with its knee, and per level QPS and p50/p99 over time and
the latency histogram."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chbench.export.sections import Charts, Column, Heading, Section, Table, Text
from chbench.report.charts import chart, key
from chbench.results import LoadDocument, LoadLevel
from chbench.stats.histogram import Histogram, bucket_bounds

COLUMNS = [Column("concurrency", "d"), Column("seconds", ".1f"), Column("queries", ",d"), Column("QPS", ",.2f"),
           Column("p50 ms", ".3f", key="p50_ms"), Column("p90 ms", ".3f", key="p90_ms"),
           Column("p99 ms", ".3f", key="p99_ms"), Column("max ms", ".3f", key="max_ms"), Column("errors", ",d")]


def level_summary(lv: LoadLevel) -> dict[str, Any]:
    """A level's numbers as the report shows them: QPS over the level's time and
    percentiles from its total histogram (within 0.4%)."""
    total = lv.total or {}
    hist = Histogram.from_json(total["histogram"]) if total.get("histogram") else Histogram()
    seconds = lv.seconds or 0
    return {"concurrency": lv.concurrency, "seconds": seconds, "queries": total.get("queries", 0),
            "qps": total.get("queries", 0) / seconds if seconds else 0.0, "p50_ms": hist.percentile(50),
            "p90_ms": hist.percentile(90), "p99_ms": hist.percentile(99), "max_ms": hist.max if hist.count else None,
            "errors": total.get("errors", 0), "errors_by_code": total.get("errors_by_code", {})}


def coarsen(buckets: list[tuple[float, float, int]], max_bars: int = 160) -> list[tuple[float, float, int]]:
    """Merge neighbouring histogram buckets so a chart has at most ``max_bars`` bars."""
    if len(buckets) <= max_bars:
        return buckets
    step = -(-len(buckets) // max_bars)
    out = []
    for i in range(0, len(buckets), step):
        part = buckets[i:i + step]
        out.append((part[0][0], part[-1][1], sum(b[2] for b in part)))
    return out


def _buckets(lv: LoadLevel) -> list[tuple[float, float, int]]:
    raw = ((lv.total or {}).get("histogram") or {}).get("buckets", [])
    return coarsen([(bucket_bounds(int(i))[0] / 1000.0, bucket_bounds(int(i))[1] / 1000.0, int(n)) for i, n in raw])


def load_section(path: str, doc: LoadDocument, charts: bool = True) -> Section:
    targets = "; ".join(str(t.get("label") or t.get("url")) for t in doc.targets)
    levels = [level_summary(lv) for lv in doc.levels]
    table = Table(COLUMNS, filterable=False)
    for s in levels:
        table.add(s["concurrency"], s["seconds"], s["queries"], s["qps"], s["p50_ms"], s["p90_ms"], s["p99_ms"],
                  s["max_ms"], s["errors"])
    blocks: list[Any] = [Text(f"{path} — status {doc.status}; {targets}"), table]
    sweep = doc.sweep or {}
    if sweep.get("levels"):
        knee = (sweep.get("knee") or {}).get("concurrency")
        if charts:
            blocks.append(Charts([chart("sweep", "sweep", sweep["levels"], knee)]))
        blocks.append(Text(f"Knee of the sweep: {knee if knee is not None else 'none'}."))
    if doc.capacity and doc.capacity.get("steps"):
        blocks += capacity_blocks(path, doc.capacity, charts)
        return Section(f"Load: {Path(path).name}", "load", blocks)
    for i, (lv, s) in enumerate(zip(doc.levels, levels, strict=True)):
        k = f"{key(path)}_{i}"
        drawn = []
        if charts and lv.timeline:
            drawn.append(chart(f"timeline-{k}", "load_timeline", lv.timeline))
        buckets = _buckets(lv) if charts else []
        if buckets:
            drawn.append(chart(f"histogram-{k}", "latency_histogram", buckets))
        if drawn:
            blocks += [Heading(f"Concurrency {lv.concurrency}"), Charts(drawn)]
        blocks += breakdown_blocks(lv)
        if lv.open_loop:  # offered against achieved, late and dropped: without them a --rate run's
            # latencies (from each planned start) read as a closed loop's
            from chbench.load.benchmark_text import open_loop_lines
            from chbench.load.recorder import Stats

            limit = float((doc.meta.extra or {}).get("options", {}).get("latency_limit_ms") or 0)
            blocks += [Text(line) for line in open_loop_lines(lv.open_loop, Stats.from_json(lv.total or {}), limit)]
        if s["errors_by_code"]:
            blocks.append(Text("Errors by code: " + ", ".join(f"{c}: {n}" for c, n in s["errors_by_code"].items())))
    return Section(f"Load: {Path(path).name}", "load", blocks)


PART_COLUMNS = [Column("name", align="left"), Column("queries", ",d"), Column("errors", ",d"),
                Column("p50 ms", ".3f", key="p50_ms"), Column("p99 ms", ".3f", key="p99_ms"),
                Column("lost", align="left")]


def breakdown_blocks(lv: LoadLevel) -> list[Any]:
    """A level's rows per target of comparison mode (and the comparison, as the terminal
    says it), per ``--master`` worker (with any that was lost, and when) and per host of a
    cluster target."""
    blocks: list[Any] = []
    # a host's "queries" key holds its per-query list in the file: its count is its histogram's
    targets = [{"label": h.label, **h.stats, "queries": int((h.stats.get("histogram") or {}).get("count", 0))}
               for h in lv.hosts] if len(lv.hosts) > 1 else []
    for title, rows, name in (("Targets", targets, "label"),
                              ("Workers", lv.per_worker if len(lv.per_worker) > 1 else [], "name"),
                              ("Hosts", lv.per_host, "label")):
        if not rows:
            continue
        table = Table(PART_COLUMNS, filterable=False)
        for r in rows:
            hist = Histogram.from_json(r["histogram"]) if r.get("histogram") else Histogram()
            lost = f"at {r['lost_at_s']:.1f} s ({r.get('lost_reason')})" if r.get("lost_at_s") is not None else ""
            table.add(str(r.get(name)), r.get("queries", 0), r.get("errors", 0), hist.percentile(50),
                      hist.percentile(99), lost)
        blocks += [Text(f"{title} of concurrency {lv.concurrency}:"), table]
    if lv.comparison:  # the report showed the two targets' merged totals only, no verdict
        from chbench.load.benchmark_text import comparison_lines

        blocks += [Text(line) for line in comparison_lines(lv.comparison)]
    return blocks


STEP_COLUMNS = [Column("offered QPS", ",.1f", key="offered_qps"), Column("achieved QPS", ",.1f", key="achieved_qps"),
                Column("seconds", ".1f"), Column("p50 ms", ".2f", key="p50_ms"),
                Column("p99 ms", ".2f", key="p99_ms"), Column("p99 95% CI", ".2f", key=("p99_low", "p99_high"),
                                                                sep=" – "),
                Column("errors", ",d"), Column("late", ",d"), Column("dropped", ",d"),
                Column("verdict", align="left")]


def capacity_blocks(path: str, cap: dict[str, Any], charts: bool) -> list[Any]:
    """--slo: every step, the chart of latency against offered rate, the answer."""
    table = Table(STEP_COLUMNS, filterable=False)
    for st in cap["steps"]:
        ci = st.get("p99_ci") or [None, None]
        table.add(st["offered_qps"], st["achieved_qps"], st["seconds"], st["p50_ms"], st["p99_ms"],
                  (ci[0], ci[1]), st["errors"], st["late"], st["dropped"],
                  st["verdict"])
    slos = ", ".join(s["slo"] for s in cap.get("slo") or [])
    blocks: list[Any] = [Heading(f"Capacity under {slos}" if slos else "Capacity"), table,
                         Text("A p99 of '-': past the last request answered (requests never sent count as "
                              "infinitely slow).")]
    if charts:
        blocks.append(Charts([chart(f"capacity-{key(path)}", "capacity", cap["steps"], cap.get("slo") or [],
                                    cap.get("rate"))]))
    if "rate" in cap:
        from chbench.load.capacity import bracket_line, capacity_line

        blocks.append(Text(f"{capacity_line(cap)}. {bracket_line(cap)}",
                           kind="summary"))
    return blocks
