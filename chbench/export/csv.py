from __future__ import annotations

import csv
import io

from chbench.export.base import Exporter
from chbench.export.numbers import missing
from chbench.export.sections import Report, Table


class CsvExporter(Exporter):
    """Every table of the report: one header row of machine names, one row per table row
    with the exact values (a blank line between tables)."""

    name = "csv"

    def render(self, report: Report) -> str:
        tables = [b for s in report.sections for b in s.blocks if isinstance(b, Table)]
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        for i, t in enumerate(tables):
            if i:
                buf.write("\n")
            w.writerow([k for c in t.columns for k in (*c.also, *c.keys)])
            for row in t.rows:
                values = []
                for c, cell in zip(t.columns, row, strict=True):
                    vals = [*_fit(cell.also, len(c.also)), *_fit(cell.values(), len(c.keys))]
                    values += ["" if missing(v) else v for v in vals]
                w.writerow(values)
        return buf.getvalue()


def _fit(values: tuple[object, ...], n: int) -> list[object]:
    return [*values[:n], *[None] * (n - len(values))]
