"""A file of summary numbers only (the upgrade script's JSON, clickhouse-benchmark's
``--json``): what it says, per query and side — its runs, errors and percentiles. Such a
file alone has nothing to compare, and used to make a report with no section at all."""

from __future__ import annotations

from pathlib import Path

from chbench.compare.sides import Sides
from chbench.export.sections import Column, Section, Table, Text
from chbench.stats.compare import side_summary

COLUMNS = [Column("query", align="left", key="name"), Column("side", align="left", key="side"),
           Column("runs", "d"), Column("errors", "d"), Column("min ms", ".2f", key="min_ms"),
           Column("median ms", ".2f", key="median_ms"), Column("p90 ms", ".2f", key="p90_ms"),
           Column("p99 ms", ".2f", key="p99_ms"), Column("max ms", ".2f", key="max_ms")]
SHOWN = ("min", "median", "p90", "p99", "max")


def summary_section(sides: Sides) -> Section:
    table = Table(COLUMNS, row_keys=[])
    for side in sides.sides:
        for name, d in side.queries.items():
            if (said := side_summary(d)) is None:  # as compare --format json prints the side
                continue
            table.add(name, side.label, said.runs, said.errors, *(said.stats.get(k) for k in SHOWN),
                      key=("query", name))
    blocks: list[Text | Table] = [Text(f"{sides.path}: {sides.format}'s summary numbers, no raw samples "
                                       "(a comparison of two such files can test nothing)"), table]
    for side in sides.sides:
        stats = side.meta.get("statistics") or {}
        if stats.get("QPS") is not None:
            blocks.append(Text(f"{side.label}: {float(stats['QPS']):.1f} QPS over "
                               f"{int(stats.get('num_queries') or 0)} queries"))
    return Section(f"Summary: {Path(sides.path).name}", "summary", list(blocks))
