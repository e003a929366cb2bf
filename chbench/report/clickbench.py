"""ClickBench sections: scores of results files (as ClickBench defines them), a run of
the 43 queries with its checksums, a stress test, a load and a crash test."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from chbench.export.sections import Cell, Charts, Column, Heading, Section, Table, Text
from chbench.report.charts import chart
from chbench.results import ClickBenchLoadDocument, ClickBenchRunDocument, CrashTestDocument, StressDocument

SCORING = ("Scores as ClickBench defines them: per query (t + 0.01 s) / (best + 0.01 s), a missing result as "
           "2 × max(300 s, the entry's slowest), geometric mean; cold = try 1, hot = the better of tries 2 and 3; "
           "combined = load 10%, size 10%, cold 20%, hot 60%. Lower is better.")
CHECKSUMS = ("Checksums: order-independent over rows, floats to 9 significant digits; ties mode ignores which of the "
             "rows tied at a LIMIT edge were returned; order-sensitive queries (LIMIT without a visible total order) "
             "are listed, not failed. See docs/clickbench.md.")



def _query_column() -> Column:
    """The ClickBench query number, left-aligned like the text it stands for."""
    return Column("query", "d", align="left")

def _label(s: dict[str, Any]) -> str:
    return f"{s['system']} ({s['machine']})" if s["machine"] else s["system"]


def _labels(scores: list[dict[str, Any]]) -> list[str]:
    """One label an entry; entries of one system on one machine (two runs of it, before
    and after) are told apart by their files' names, else their columns read the same."""
    labels = [_label(s) for s in scores]
    files = [str(s.get("file") or f"#{i + 1}") for i, s in enumerate(scores)]
    names = [Path(f).name for f in files]  # the path as given where names alone repeat (before/, after/)
    return [f"{label} [{name if names.count(name) == 1 else file}]" if labels.count(label) > 1 else label
            for label, name, file in zip(labels, names, files, strict=True)]


def _query(index: int) -> Cell:
    """ClickBench numbers its queries from 0; our files count from 1."""
    return Cell(index - 1, text=f"Q{index - 1}")


def scores_section(doc: dict[str, Any], charts: bool = True) -> Section:
    labels = _labels(doc["scores"])
    scores = Table([Column("entry", align="left"), Column("cold score", ".2f", key="cold"),
                    Column("hot score", ".2f", key="hot"), Column("combined", ".2f"),
                    Column("load s", ",.0f", key="load_time"), Column("data GB", ".2f", key="data_gb"),
                    Column("failed tries", "d", key="failed_tries")], filterable=False)
    for label, s in zip(labels, doc["scores"], strict=True):
        scores.add(label, s["cold"], s["hot"], s["combined"], s["load_time"],
                   None if s["data_size"] is None else s["data_size"] / 1e9, s["failed_tries"],
                   key=("data-entry", label))
    columns = [_query_column()]
    for label in labels:
        columns += [Column(f"{label} cold s", ".3f"), Column(f"{label} hot s", ".3f"),
                    Column(f"{label} hot ratio", ".2f")]
    per_query = Table(columns, title="Per query: cold and hot seconds, hot ratio to the best")
    for q in doc["queries"]:
        per_query.add(_query(q["query"]), *(v for e in q["entries"] for v in (e["cold_s"], e["hot_s"],
                                                                               e["hot_ratio"])),
                      key=("data-query", str(q["query"] - 1)))
    blocks: list[Any] = [Text(SCORING), *(Text(f"Note: {n}", "summary") for n in doc.get("notes") or []), scores]
    if charts:
        blocks.append(Charts([chart("clickbench-times", "clickbench_times", labels, doc["queries"]),
                              chart("clickbench-ratios", "clickbench_ratios", labels, doc["queries"])]))
    blocks.append(per_query)
    return Section("ClickBench scores", "clickbench", blocks)


def run_section(doc: ClickBenchRunDocument) -> Section:
    """What ``clickbench run`` writes next to its results (``--report``)."""
    t, tb, load = doc.target, doc.table, doc.load or {}
    blocks: list[Any] = [
        Text(f"table: {tb.get('rows', 0):,} rows, {tb.get('data_size', 0) / 1e6:,.1f} MB on disk"
             + (f"; loaded from {load.get('source')} in {load.get('seconds', 0):.1f} s" if load else ""), "summary"),
        Text(f"cold try: dropped {', '.join(s.replace('SYSTEM DROP ', '') for s in doc.cold['dropped'])}"
             + ("; OS page cache too" if doc.cold.get("os_page_cache") else "; not the OS page cache")
             if doc.cold else "no cold try (--no-cold): every try is hot", "summary"),
        Text(f"status: {doc.status}; tries per query: {doc.tries}", "summary"),
        _tries_table(doc)]
    ref = doc.reference
    if ref:
        blocks.append(Heading(f"Checksums against {ref['file']}"))
        if not ref["differences"]:
            blocks.append(Text("Every checksum matches."))
        for d in ref["differences"]:
            kind = "correctness regression" if d["counted"] else "listed (order-sensitive)"
            blocks.append(Text(f"Q{d['index'] - 1}: {d['what']} — {kind}: here {d['here']}, reference "
                               f"{d['reference']}", "summary"))
        blocks.append(Text(f"{sum(1 for d in ref['differences'] if d['counted'])} counted difference(s)."))
    if doc.concurrent:
        blocks.append(phase_table(doc.concurrent, "Concurrent"))
    blocks.append(Text(CHECKSUMS))
    version = doc.server.get("version")
    return Section(f"ClickBench on {t.get('url', '?')} (ClickHouse {version})", "clickbench-run", blocks)


def _tries_table(doc: ClickBenchRunDocument) -> Table:
    n = doc.tries or 3
    table = Table([_query_column(), *(Column(f"try {i + 1} s", ".3f") for i in range(n)),
                   Column("rows", "d"), Column("checksum", align="left"), Column("mode", align="left"),
                   Column("notes", align="left")])
    for q in doc.queries:
        err = next((tr["error"]["message"] for tr in q["tries"] if tr.get("error")), "")
        notes = "; ".join(x for x in (q.get("flag") or "", err[:120]) if x)
        seconds = [Cell(tr["seconds"], text="null" if tr["seconds"] is None else None) for tr in q["tries"]]
        seconds += [Cell(None)] * (n - len(seconds))
        table.add(_query(q["index"]), *seconds[:n], q["rows"], q["checksum"] or "-", q["mode"], notes)
    return table


def phase_table(p: dict[str, Any], name: str | None = None) -> Table:
    title = (f"{name or p['phase']}: {p['queries_ok']} queries in {p['seconds']:.1f} s = {p['qps']:.3f} QPS, "
             f"error ratio {p['error_ratio']:.3f}"
             + (f" (after {p['warmup_s']:.0f} s untimed at {p['warmup_qps']:.1f} QPS)" if p.get("warmup_s") else ""))
    table = Table([_query_column(), Column("ok", "d"), Column("errors", "d"), Column("p50 ms", ".1f"),
                   Column("p90 ms", ".1f"), Column("p99 ms", ".1f"), Column("error", align="left")], title=title)
    for q in p["per_query"]:
        table.add(_query(q["query"]), q["ok"], q["errors"], q["p50"], q["p90"], q["p99"], (q["error"] or "")[:80])
    return table


def stress_section(doc: StressDocument) -> Section:
    blocks: list[Any] = [phase_table(p) for p in doc.phases or []]
    m = doc.mixed
    if m and "with_ingest" not in m:  # interrupted before the writer started
        blocks.append(phase_table(m["without_ingest"]))
    elif m:
        a, b, ing = m["without_ingest"], m["with_ingest"], m["ingest"]
        blocks += [
            Text(f"queries only: {a['qps']:.3f} QPS, error ratio {a['error_ratio']:.3f}", "summary"),
            Text(f"queries + ingest: {b['qps']:.3f} QPS, error ratio {b['error_ratio']:.3f}", "summary"),
            Text(f"ingest: {ing['rows']:,} rows in {ing['seconds']:.1f} s = {ing['rows_per_s']:,.0f} rows/s "
                 f"({ing['method']})" + (f"; writer stopped: {ing['error']}" if ing["error"] else ""), "summary")]
        if m.get("windows"):
            at = f" at {m['warmup_qps']:.1f} QPS" if m.get("warmup_qps") is not None else ""
            warm = f" (after {m['warmup_s']:.0f} s untimed{at})" if m.get("warmup_s") else ""
            blocks.append(Text(f"QPS by window{warm}, alone (A) and with the writer (B): " + ", ".join(
                f"{'B' if w['phase'] == b['phase'] else 'A'} {w['qps']:.1f}" for w in m["windows"]), "summary"))
        change = m.get("qps_change") or {}
        if change.get("ratio"):
            ci = change.get("ci")
            blocks.append(Text(f"QPS with the writer: {change['ratio']:.2f}x" + (
                f" [{ci[0]:.2f}, {ci[1]:.2f}] (95%, {change['pairs']} pairs of neighbouring windows; --windows "
                "adds pairs)" if ci else f" ({change['pairs']} pair of windows: no interval; --windows 2 or more)"),
                "summary"))
        table = Table([_query_column(), Column("p50 ms without", ".1f"), Column("p50 ms with", ".1f"),
                       Column("ratio", ".2f"), Column("95% CI", align="left"), Column("with the writer", align="left")],
                      title="p50 per query, without and with the writer")
        for q in m["p50_by_query"]:
            ci = q.get("ci")
            table.add(_query(q["query"]), q["p50_ms_without"], q["p50_ms_with"], q["ratio"],
                      f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "-", q.get("change") or "-")
        blocks.append(table)
        counts = Counter(q["change"] for q in m["p50_by_query"] if q.get("change"))
        if counts:
            blocks.append(Text(f"With the writer: {counts['slower']} queries slower, {counts['faster']} faster, "
                               f"{counts['not shown']} not shown (rank test, Holm across queries)."))
    return Section(f"ClickBench stress: {doc.concurrent} connections, {doc.duration:g} s", "clickbench-stress",
                   blocks)


def load_section(doc: ClickBenchLoadDocument) -> Section:
    r = doc.load or {}
    rate = r["rows"] / r["seconds"] if r.get("seconds") else 0.0
    return Section("ClickBench load", "clickbench-load", [Text(
        f"loaded {r['rows']:,} rows into {r['table']} in {r['seconds']:.1f} s ({rate:,.0f} rows/s); "
        f"{r['data_size'] / 1e6:,.1f} MB on disk (system.parts); row count "
        f"{'verified' if r.get('expected_rows') is not None else 'not checked'}", "summary")])


def crash_test_section(doc: CrashTestDocument) -> Section:
    ok = sum(bool(c["ok"]) for c in doc.cycles)
    ref = doc.reference or {}
    return Section("ClickBench crash test", "clickbench-crash-test", [Text(
        f"crash recovery: {ok} of {len(doc.cycles)} kill -9 cycles ended with the row count and checksum of the "
        f"uninterrupted load ({ref.get('rows', 0):,} rows, {ref.get('checksum')})", "summary")])
