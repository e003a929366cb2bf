"""The section of a trend file (``chbench trend``): the steps found, every query's series
over the versions (each against the first), and in HTML a chart per query plus a
small-multiples overview of all of them."""

from __future__ import annotations

import math
from typing import Any

from chbench.export.sections import Block, Cell, Charts, Column, Details, Section, Table, Text
from chbench.report.charts import chart, key
from chbench.results import RunDocument


def _change(ratio: float | None, ci: list[float] | None) -> str:
    if not ratio:
        return "—"
    text = f"{ratio - 1:+.1%}"
    if ci and all(math.isfinite(x) for x in ci):
        text += f" [{ci[0] - 1:+.0%}, {ci[1] - 1:+.0%}]"
    return text


def trend_section(doc: RunDocument, path: str | None = None, charts: bool = False) -> Section:
    t: dict[str, Any] = doc.trend or {}
    versions: list[str] = t.get("versions") or []
    steps: list[dict[str, Any]] = t.get("steps") or []
    blocks: list[Block] = [Text(_headline(t), kind="summary")]
    if t.get("note"):
        blocks.append(Text(t["note"]))
    if steps:
        table = Table([Column("query", align="left"), Column("step", align="left"), Column("kind", align="left"),
                       Column("change", align="left"), Column("verdict", align="left")],
                      title="Steps between adjacent versions")
        for s in steps:
            verdict = s.get("verdict") or ("answer changed" if s["kind"] == "answer" else "plan changed")
            table.add(s["query"], f"{s['from']} → {s['to']}", s["kind"],
                      _change(s.get("ratio"), s.get("ci")) if s["kind"] == "speed" else (s.get("why") or ""),
                      Cell(verdict, style=verdict))
        blocks.append(table)
    series = Table([Column("query", align="left"), *[Column(v, align="right") for v in versions[1:]]],
                   title=f"Each version against {versions[0] if versions else 'the first'} (paired rounds, 95% "
                         "interval)")
    for q in t.get("queries") or []:
        cells: list[Any] = [q["name"]]
        for p in q["series"][1:]:
            cells.append(Cell(p.get("ratio"), text=_change(p.get("ratio"), p.get("ci")), style=p.get("verdict", "")))
        series.add(*cells)
    blocks.append(series)
    if charts and versions:
        queries = t.get("queries") or []
        blocks.append(Charts([chart(key("trend-overview"), "trend_overview", versions, queries, steps)]))
        for q in queries:
            mine = [s for s in steps if s["query"] == q["name"]]
            blocks.append(Details(f"{q['name']} — {len(mine)} step(s)",
                                  [Charts([chart(key(f"trend-{q['name']}"), "trend_series", q["name"], versions,
                                                 q["series"], mine)])]))
    if path:
        blocks.append(Text(f"results: {path} (a run of {len(versions)} sides: chbench compare reads it too)"))
    return Section(f"chbench trend: {' → '.join(versions)}", "trend", blocks)


def _headline(t: dict[str, Any]) -> str:
    steps = t.get("steps") or []
    n = len(t.get("versions") or [])
    if not steps:
        return f"no step in any query over {n} versions ({t.get('comparisons', 0)} comparisons, false alarms " \
               f"controlled across them at {t.get('alpha', 0.05):g})"
    kinds = {k: sum(1 for s in steps if s["kind"] == k) for k in ("speed", "answer", "plan")}
    what = ", ".join(f"{v} {k}" for k, v in kinds.items() if v)
    return f"{len(steps)} step(s) over {n} versions: {what}"
