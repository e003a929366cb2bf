from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from chbench.errors import UsageError


class Exporter(ABC):
    name = ""

    @abstractmethod
    def comparison(self, doc: dict[str, Any]) -> str:
        """Render a comparison document."""


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
