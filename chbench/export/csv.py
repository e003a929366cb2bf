from __future__ import annotations

import csv
import io
from typing import Any

from chbench.export.base import Exporter, notes_of


class CsvExporter(Exporter):
    name = "csv"

    def comparison(self, doc: dict[str, Any]) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["name", "verdict", "a_median_ms", "b_median_ms", "ratio", "ci_low", "ci_high",
                    "p_value", "p_adjusted", "a_runs", "b_runs", "notes"])
        for r in doc["queries"]:
            a, b = r.get("a") or {}, r.get("b") or {}
            ci = r.get("ci") or [None, None]
            w.writerow([r["name"], r["verdict"], a.get("median"), b.get("median"), r.get("ratio"), ci[0], ci[1],
                        r.get("p_value"), r.get("p_adjusted"), a.get("runs"), b.get("runs"), notes_of(r)])
        return buf.getvalue()
