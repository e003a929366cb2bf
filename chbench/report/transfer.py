"""Ingest and read sections: per client path its throughput, check and status, next to
the ceilings measured in the same run, and a throughput chart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chbench.export.sections import Cell, Charts, Column, Section, Table, Text
from chbench.report.charts import chart
from chbench.results import TransferDocument

INGEST_COLUMNS = [Column("path", align="left", key="name"), Column("unit", align="left"),
                  Column("rows/s", ",.0f", key="rows_per_s"), Column("MB/s", ".1f", key="mb_per_s"),
                  Column("seconds", ".3f"), Column("CPU s", ".2f", key="cpu_seconds"),
                  Column("batch p50 ms", ".1f", key="batch_p50_ms"), Column("batch p99 ms", ".1f", key="batch_p99_ms"),
                  Column("retries", "d"), Column("rows", ",d", key="row_count"), Column("checksum", align="left"),
                  Column("status", align="left")]
READ_COLUMNS = [Column("path", align="left", key="name"), Column("rows/s", ",.0f", key="rows_per_s"),
                Column("MB/s", ".1f", key="mb_per_s"), Column("seconds", ".3f"),
                Column("of transfer ceiling", "percent", key="of_transfer_ceiling"),
                Column("peak RSS MB", ".0f", key="peak_rss_mb"), Column("RSS growth MB", ".0f", key="rss_growth_mb"),
                Column("status", align="left")]


def _status(e: dict[str, Any]) -> Cell:
    """A path's status; a skipped one's reason goes under the table (``skipped_notes``)."""
    status = str(e.get("status", "?"))
    if status == "ok":
        return Cell("ok")
    why = e.get("reason") or e.get("error") or ""
    return Cell(f"{status}: {why}" if why and status != "skipped" else status, style=status)


def skipped_notes(paths: list[dict[str, Any]]) -> list[str]:
    """One line per reason paths were skipped, naming them (a reason in every row made
    the table three times as tall)."""
    by_reason: dict[str, list[str]] = {}
    for e in paths:
        if e.get("status") == "skipped":
            by_reason.setdefault(str(e.get("reason") or "no reason given"), []).append(e["name"])
    return [f"Skipped {', '.join(names)}: {why}." for why, names in by_reason.items()]


def ingest_table(r: dict[str, Any]) -> tuple[Table, list[str]]:
    t = Table(INGEST_COLUMNS)
    for e in r["paths"]:
        lat = e.get("batch_latency_ms") or {}
        t.add(e["name"], e.get("unit", "-"), e.get("rows_per_s"), e.get("mb_per_s"), e.get("seconds"),
              e.get("cpu_seconds"), lat.get("p50"), lat.get("p99"), e.get("retries"), e.get("row_count"),
              e.get("checksum") or "-", _status(e))
    c = r.get("ceiling")
    if c:
        t.add("server ceiling", "INSERT … SELECT", c["rows_per_s"], None, c["seconds"], None, None, None, None,
              c["row_count"], c["checksum"], "server alone")
    notes = skipped_notes(r["paths"])
    f = r.get("fastest") or {}
    share = "" if not f.get("of_ceiling") else (
        f"{f['name']} reached {_pct(f['of_ceiling'], f.get('of_ceiling_ci'))} of the server's own INSERT … SELECT "
        "rate.")
    notes += ranking_notes(r, share)
    notes.append("MB/s: the data set's Native size per second (one yardstick for every format). Units differ: "
                 "file/embedded paths send everything in one request, the others in batches.")
    if r["mismatches"]:
        notes.append("WRONG DATA: " + ", ".join(r["mismatches"]))
    return t, notes


def _pct(v: float, ci: list[float] | None) -> str:
    return f"{v:.0%}" + (f" [{ci[0]:.0%}, {ci[1]:.0%}]" if ci else "")


def _times(v: float, ci: list[float] | None) -> str:
    return f"{v:.2f}×" + (f" [{ci[0]:.2f}×, {ci[1]:.2f}×]" if ci else "")


def ranking_notes(r: dict[str, Any], share: str = "") -> list[str]:
    """Which path is fastest and whether the rounds can tell it from the next: each other
    path's time as a multiple of the leader's, paired by round, with its interval
    (simultaneous over the paths at 95%: stats/ranking.py)."""
    rk = r.get("ranking")
    if not rk:  # a file of chbench before rounds: its fastest path, one run each
        f = r.get("fastest")
        return ([f"Fastest path: {f['name']} (one run a path)."] if f else []) + ([share] if share else [])
    rounds = int(r.get("rounds") or r.get("repeat") or 1)
    leader, others = rk["leader"], rk["others"]
    times = f"Times are each path's median over {rounds} rounds." if rounds > 1 else ""
    if rounds < 2 or not others:
        why = " (one round: no interval; --repeat 3 or more tells paths apart)" if others else ""
        return [f"Fastest path: {leader}{why}.", *([share] if share else [])]
    tied = [g for g in others if not g["behind"]]
    if tied:
        near = ", ".join(f"{g['path']} ({_times(g['ratio'], g['ci'])} its time)" for g in tied)
        head = (f"Fastest path: {leader}, or within noise of it over {rounds} rounds: {near}; more rounds "
                "(--repeat) narrow the intervals.")
    else:
        g = others[0]
        head = (f"Fastest path: {leader}; the next, {g['path']}, took {_times(g['ratio'], g['ci'])} its time "
                f"({rounds} rounds, paired by round).")
    return [head, *([share] if share else []), times]


# a transfer ceiling shorter than this is too short to compare with: at 200,000 rows, paths at 105-269% of it
SHORT_S = 0.25


def read_table(r: dict[str, Any]) -> tuple[Table, list[str]]:
    t = Table(READ_COLUMNS)
    for e in r["paths"]:
        status = _status(e) if e.get("status") != "ok" else (
            Cell("ok") if e.get("rows_ok", True) else Cell("WRONG ROW COUNT", style="WRONG ROW COUNT"))
        t.add(e["name"], e.get("rows_per_s"), e.get("mb_per_s"), e.get("seconds"), e.get("of_transfer_ceiling"),
              e.get("peak_rss_mb"), e.get("rss_growth_mb"), status)
    for c in r.get("ceilings", []):
        t.add(c["name"], c["rows_per_s"], c.get("mb_per_s"), c["seconds"], None, None, None, c["what"])
    lead: dict[str, Any] = next((p for p in r["paths"] if r.get("ranking") and p["name"] == r["ranking"]["leader"]), {})
    share = "" if not lead.get("of_transfer_ceiling") else (
        f"{lead['name']} reached {_pct(lead['of_transfer_ceiling'], lead.get('of_transfer_ceiling_ci'))} of the "
        "transfer ceiling.")
    notes = [*skipped_notes(r["paths"]), *ranking_notes(r, share), "MB/s: the result's Native size per second. "
             "Ceilings: the engine's own speed (FORMAT Null) and the Native bytes drained from the socket without "
             "decoding."]
    wire = next((c for c in r.get("ceilings", []) if c["name"] == "ceiling: native"), None)
    if wire and wire["seconds"] < SHORT_S:
        # the paths' ranking among themselves is judged round by round and stands; their
        # shares of a ceiling this short do not
        notes.append(f"Too short to compare with the wire: the transfer ceiling took {wire['seconds']:.3f} s, where "
                     "fixed costs (the query's start, the first block) weigh as much as the transfer; shares of it, "
                     "and a path beyond 100%, say the sample is too small, not that a path beats the wire. Read "
                     "more --rows.")
    return t, notes


def transfer_section(doc: TransferDocument, path: str = "", charts: bool = True) -> Section:
    r = doc.result
    name = "Ingest" if doc.kind == "ingest" else "Read"
    heading = f"{name}: {Path(path).name}" if path else name
    if not r.get("paths"):  # stopped (Ctrl-C, a lost server) before the first path was measured
        return Section(heading, "transfer", [Text(f"chbench {doc.kind}: {doc.status} before any client path was "
                                                  "measured: the file holds no result.", "summary")])
    if doc.kind == "ingest":
        title = (f"chbench ingest: {r['rows']:,} rows per path (seed {r['seed']}), "
                 f"expected checksum {r['expected']['checksum']}")
        table, notes = ingest_table(r)
        ceilings = [("server INSERT … SELECT", r["ceiling"]["rows_per_s"])] if r.get("ceiling") else []
    else:
        title = f"chbench read: {r['rows']:,} rows of `{r['query']}`" if r.get("rows") else \
            f"chbench read: `{r['query']}`"
        table, notes = read_table(r)
        ceilings = [(c["name"], c["rows_per_s"]) for c in r.get("ceilings", []) if c.get("rows_per_s")]
    blocks: list[Any] = [Text(title, "summary"), table]
    if doc.status != "complete":  # Ctrl-C or a lost server: the paths after the last row never ran
        blocks.insert(1, Text(f"status {doc.status}: only the paths measured before it stopped are here", "summary"))
    bars = [(p["name"], p["rows_per_s"]) for p in r["paths"] if p.get("rows_per_s")]
    if charts and bars:
        blocks.append(Charts([chart(f"throughput-{doc.kind}", "throughput", bars, ceilings)]))
    blocks += [Text(n) for n in notes]
    return Section(heading, "transfer", blocks)
