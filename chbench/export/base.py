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
    from chbench.export.json import JsonExporter
    from chbench.export.markdown import MarkdownExporter

    exporters: dict[str, type[Exporter]] = {
        "console": ConsoleExporter,
        "json": JsonExporter,
        "markdown": MarkdownExporter,
        "csv": CsvExporter,
    }
    if name not in exporters:
        raise UsageError(f"unknown format '{name}': use one of {', '.join(exporters)}")
    return exporters[name]()
