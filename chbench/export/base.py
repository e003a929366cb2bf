from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from chbench.errors import UsageError


class Exporter(ABC):
    name = ""

    @abstractmethod
    def comparison(self, doc: dict[str, Any]) -> str:
        """Render a comparison document."""

    def clickbench(self, doc: dict[str, Any]) -> str:
        """Render ClickBench scores (``chbench clickbench compare``)."""
        raise UsageError(f"the {self.name} format cannot show ClickBench scores")

    def report(self, model: dict[str, Any]) -> str:
        """Render a ``chbench report`` (chbench/report/model.py)."""
        raise UsageError(f"the {self.name} format cannot show a report")

    def transfer(self, doc: dict[str, Any]) -> str:
        """Render an ``ingest`` or ``read`` results document."""
        raise UsageError(f"the {self.name} format cannot show transfer results")

    def clickbench_run(self, doc: dict[str, Any]) -> str:
        """Render a ``chbench clickbench run`` results document."""
        raise UsageError(f"the {self.name} format cannot show a ClickBench run")


def clickbench_rows(doc: dict[str, Any]) -> tuple[list[str], list[list[str]], list[list[str]]]:
    """(entry labels, score rows, per-query rows) as text, shared by the text formats."""
    labels = [f"{s['system']} ({s['machine']})" if s["machine"] else s["system"] for s in doc["scores"]]

    def num(v: float | None, fmt: str) -> str:
        return "-" if v is None else format(v, fmt)

    scores = [[labels[i], num(s["cold"], ".2f"), num(s["hot"], ".2f"), num(s["combined"], ".2f"),
               num(s["load_time"], ".0f"), num(None if s["data_size"] is None else s["data_size"] / 1e9, ".2f"),
               str(s["failed_tries"])] for i, s in enumerate(doc["scores"])]
    queries = []
    for q in doc["queries"]:
        row = [f"Q{q['query'] - 1}"]
        for e in q["entries"]:
            row += [num(e["cold_s"], ".3f"), num(e["hot_s"], ".3f") + f" (x{e['hot_ratio']:.2f})"]
        queries.append(row)
    return labels, scores, queries


def _n(v: float | None, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def transfer_table(doc: dict[str, Any]) -> tuple[str, list[str], list[list[str]], list[str]]:
    """(title, header, rows, notes) of an ingest or read document, for the text formats."""
    notes: list[str] = []
    if doc["kind"] == "ingest":
        r = doc["result"]
        title = (f"chbench ingest: {r['rows']:,} rows per path (seed {r['seed']}), "
                 f"expected checksum {r['expected']['checksum']}")
        header = ["path", "unit", "rows/s", "MB/s", "seconds", "CPU s", "batch p50 ms", "batch p99 ms", "retries",
                  "rows", "checksum", "status"]
        rows = []
        for e in r["paths"]:
            if e.get("status") == "skipped":
                rows.append([e["name"], "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", f"skipped: {e['reason']}"])
                continue
            lat = e.get("batch_latency_ms") or {}
            rows.append([e["name"], e.get("unit", "-"), _n(e.get("rows_per_s"), ",.0f"), _n(e.get("mb_per_s"), ".1f"),
                         _n(e.get("seconds"), ".3f"), _n(e.get("cpu_seconds"), ".2f"), _n(lat.get("p50"), ".1f"),
                         _n(lat.get("p99"), ".1f"), str(e.get("retries", "-")), _n(e.get("row_count"), ","),
                         e.get("checksum") or "-", e["status"] if e["status"] == "ok" else
                         f"{e['status']}: {e.get('error', '')}"])
        c = r.get("ceiling")
        if c:
            rows.append(["server ceiling", "INSERT … SELECT", _n(c["rows_per_s"], ",.0f"), "-", _n(c["seconds"], ".3f"),
                         "-", "-", "-", "-", _n(c["row_count"], ","), c["checksum"], "server alone"])
        f = r.get("fastest")
        if f and f.get("of_ceiling"):
            notes.append(f"Fastest path: {f['name']}, {f['of_ceiling']:.0%} of the server's own INSERT … SELECT rate.")
        notes.append("MB/s: the data set's Native size per second (one yardstick for every format). Units differ: "
                     "file/embedded paths send everything in one request, the others in batches.")
        if r["mismatches"]:
            notes.append("WRONG DATA: " + ", ".join(r["mismatches"]))
        return title, header, rows, notes
    r = doc["result"]
    title = f"chbench read: {r['rows']:,} rows of `{r['query']}`"
    header = ["path", "rows/s", "MB/s", "seconds", "of transfer ceiling", "peak RSS MB", "RSS growth MB", "status"]
    rows = []
    for e in r["paths"]:
        if e.get("status") != "ok":
            why = e.get("reason") or e.get("error")
            rows.append([e["name"], "-", "-", "-", "-", "-", "-", f"{e['status']}: {why}"])
            continue
        rows.append([e["name"], _n(e["rows_per_s"], ",.0f"), _n(e.get("mb_per_s"), ".1f"), _n(e["seconds"], ".3f"),
                     _n(e.get("of_transfer_ceiling"), ".0%"), _n(e.get("peak_rss_mb"), ".0f"),
                     _n(e.get("rss_growth_mb"), ".0f"), "ok" if e.get("rows_ok", True) else "WRONG ROW COUNT"])
    for c in r.get("ceilings", []):
        rows.append([c["name"], _n(c["rows_per_s"], ",.0f"), _n(c.get("mb_per_s"), ".1f"), _n(c["seconds"], ".3f"),
                     "-", "-", "-", c["what"]])
    notes.append("MB/s: the result's Native size per second. Ceilings: the engine's own speed (FORMAT Null) and the "
                 "Native bytes drained from the socket without decoding.")
    return title, header, rows, notes


SCORE_HEADER = ["entry", "cold score", "hot score", "combined", "load s", "data GB", "failed tries"]


def fmt_ratio(r: float | None) -> str:
    if r is None:
        return "-"
    return f"{(r - 1) * 100:+.1f}%"


def fmt_ci(ci: list[float] | None) -> str:
    if not ci:
        return "-"
    return f"[{(ci[0] - 1) * 100:+.1f}%, {(ci[1] - 1) * 100:+.1f}%]"


def fmt_ms(side: dict[str, Any] | None) -> str:
    if not side or side.get("median") is None:
        return "-"
    return f"{side['median']:.1f}"


def notes_of(row: dict[str, Any]) -> str:
    return "; ".join(list(row.get("reasons") or []) + list(row.get("flags") or []))


def summary_lines(doc: dict[str, Any]) -> list[str]:
    s = doc["summary"]
    lines = []
    verdicts = ", ".join(f"{v} {k}" for k, v in sorted(s["verdicts"].items(), key=lambda kv: -kv[1]))
    lines.append(f"Verdicts: {verdicts}")
    g = s["geomean"]
    if g["ratio"] is not None:
        ci = f" (95% CI {fmt_ci(g['ci'])})" if g["ci"] else ""
        lines.append(f"Geometric mean of ratios B/A: {fmt_ratio(g['ratio'])}{ci} over {g['queries']} queries")
    t = s["total_median_ms"]
    if t["ratio"] is not None:
        lines.append(f"TOTAL of medians: A {t['a']:.1f} ms, B {t['b']:.1f} ms ({fmt_ratio(t['ratio'])})")
    m = s.get("machine")
    if m:
        word = "materially" if m["material"] else "not materially"
        lines.append(
            f"Machine drift between the runs (calibration query): {fmt_ratio(m['calibration_ratio'])} "
            f"{fmt_ci(m['ci'])}: {word}"
            + (", intervals widened accordingly" if m["material"] else "")
        )
    for note in doc.get("notes", []):
        lines.append(f"Note: {note}")
    lines.append(
        f"Threshold ±{s['threshold']:.0%}, alpha {s['alpha']} with {s['correction']} correction across queries."
    )
    return lines


def get_exporter(name: str) -> Exporter:
    from chbench.export.console import ConsoleExporter
    from chbench.export.csv import CsvExporter
    from chbench.export.html import HtmlExporter
    from chbench.export.json import JsonExporter
    from chbench.export.markdown import MarkdownExporter

    exporters: dict[str, type[Exporter]] = {
        "console": ConsoleExporter,
        "json": JsonExporter,
        "markdown": MarkdownExporter,
        "csv": CsvExporter,
        "html": HtmlExporter,
    }
    if name not in exporters:
        raise UsageError(f"unknown format '{name}': use one of {', '.join(exporters)}")
    return exporters[name]()
