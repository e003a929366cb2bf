"""The comparison section: verdict table, summary, forest plot and, per query, both
distributions and the samples in run order."""

from __future__ import annotations

from typing import Any

from chbench.compare import Comparison
from chbench.compare.document import ComparisonDoc
from chbench.export.numbers import change, count, interval
from chbench.export.sections import Cell, Charts, Column, Details, Heading, Section, Table, Text
from chbench.report.charts import chart, key
from chbench.stats.verdict import CommonShift, QueryComparison

COLUMNS = [
    Column("query", align="left", key="name"),
    Column("verdict", align="left", key="verdict"),
    Column("A ms", ".1f", key="a_median_ms"),
    Column("B ms", ".1f", key="b_median_ms"),
    Column("change", "change", key="ratio"),
    Column("95% CI", "interval", key=("ci_low", "ci_high")),
    Column("p adj.", ".3g", key="p_adjusted", also=("p_value",)),
    Column("runs A / B", "d", key=("a_runs", "b_runs")),
    Column("notes", align="left", key="notes"),
]


def notes_of(row: QueryComparison, full: bool = True) -> str:
    """Why the verdict, then the flags: in full (the HTML report, ``--verbose``), or one
    short reason (console and Markdown tables a person scans; the findings below the
    table say the rest)."""
    if not full:
        return row.reason or "; ".join(row.reasons[:1] or row.flags[:1])
    why = [row.reasoning] if row.reasoning else list(row.reasons)
    return "; ".join(why + list(row.flags))


def verdict_table(doc: ComparisonDoc, full: bool = True) -> Table:
    t = Table(COLUMNS)
    for r in doc.queries:
        a, b = r.a, r.b
        ci = r.ci or (None, None)
        t.add(r.name, Cell(r.verdict, style=r.verdict), a.median if a else None, b.median if b else None, r.ratio,
              (ci[0], ci[1]), Cell(r.p_adjusted, also=(r.p_value,)), (a.runs if a else None, b.runs if b else None),
              notes_of(r, full), key=("data-query", r.name))
    return t


def summary(doc: ComparisonDoc, full: bool = True, why: list[Text] | None = None) -> list[Text]:
    """The lines under the verdict table; ``why``: one per changed query, after the findings."""
    s = doc.summary
    verdicts = ", ".join(f"{n} {v}" for v, n in sorted(s.verdicts.items(), key=lambda kv: -kv[1]))
    out = [Text(f"Verdicts: {verdicts}", "summary")]
    g = s.geomean
    if g.ratio is not None:
        ci = f" (95% CI {interval(g.ci)})" if g.ci else ""
        out.append(Text(f"Geometric mean of ratios B/A: {change(g.ratio)}{ci} over {count(g.queries, 'query')}",
                        "summary", {"data-geomean": repr(g.ratio)}))
    t = s.total_median_ms
    if t["ratio"] is not None:
        over = "" if t.get("queries") in (None, len(doc.queries)) else f" (the {t['queries']} measured on both sides)"
        out.append(Text(f"TOTAL of medians{over}: A {t['a']:.1f} ms, B {t['b']:.1f} ms ({change(t['ratio'])})",
                        "summary"))
    out += [Text(f"Finding: {f}", "summary", {"data-finding": str(i)}) for i, f in enumerate(doc.findings)]
    out += why or []
    if full:
        out += machine_lines(s.machine, s.shift)
    out += [Text(f"Note: {note}", "summary") for note in doc.notes]
    if doc.method == "clickhouse":
        out.append(Text("Decided by ClickHouse CI's rule (--method clickhouse): randomization test on medians, "
                        "10,000 splits; changed when |diff| > max(10%, the test's threshold) and ≥ the 0.99 "
                        "quantile; unstable when that quantile > max(20%, threshold + 10%). The interval and p "
                        "shown are chbench's.", "summary", {"data-method": "clickhouse"}))
    else:
        how = "paired rounds where both sides ran side by side, " if s.paired else ""
        out.append(Text(f"Decided by chbench's rule: {how}threshold ±{s.threshold:.0%} (or a test's own, if "
                        f"larger), alpha {s.alpha:.3g} with {s.correction} correction across queries.", "summary",
                        {"data-method": "chbench"}))
    return out


TEST_COLUMNS = [
    Column("test", align="left", key="name"), Column("queries", "d"), Column("slower", "d"), Column("faster", "d"),
    Column("unstable", "d"), Column("no change", "d", key="no_change"), Column("skipped", "d"),
    Column("failed", "d"), Column("geometric mean", "change", key="geomean"),
    Column("notes", align="left", key="notes"),
]


def test_table(doc: ComparisonDoc) -> Table | None:
    """Per performance test: its queries' verdicts and the geometric mean of their ratios."""
    if not doc.tests:
        return None
    t = Table(TEST_COLUMNS, title="Per test")
    for r in doc.tests:
        v = r.verdicts
        failed = sum(n for k, n in v.items() if k in ("failed", "fails on B only"))
        notes = [r.note] if r.note else []
        if r.threshold is not None and r.threshold != 0.05:
            notes.append(f"threshold {r.threshold:.0%}")
        t.add(r.name, r.queries, v.get("slower", 0), v.get("faster", 0), v.get("unstable", 0),
              v.get("no change", 0), v.get("skipped", 0), failed, r.geomean, "; ".join(notes),
              key=("data-test", r.name))
    return t


def machine_lines(m: dict[str, Any] | None, shift: CommonShift | None) -> list[Text]:
    """What the machine did during each run, what was decided from it, and why."""
    out = []
    if m:
        out.append(Text(f"Machine: {m['description']}", "summary"))
        if "calibration_ratio" in m:
            cal = (f"Calibration query between the runs: {change(m['calibration_ratio'])} {interval(m['ci'])}, "
                   f"p {m['p_value']:.2g}: ")
            if not m["calibration_material"]:
                cal += "not material (needs p < 0.01 and beyond ±2%)"
            elif shift is not None:
                cal += "material; a common shift was measured instead of widening intervals"
            elif m.get("probes"):
                cal += ("material, but it runs on the engine under test: the machine probes decide, intervals "
                        "not widened")
            else:
                cal += "material: intervals widened by it (no machine probes in these files)"
            out.append(Text(cal, "summary"))
    if shift is not None:
        word = "Warning" if shift.explained_by_machine and shift.verdict != "no change" else "Common shift"
        out.append(Text(f"{word}: {shift.why}", "summary", {"data-shift": repr(shift.ratio)}))
    return out


PROBE_ROWS = [
    ("client", "others_share", "client: other processes' CPU (share of all CPUs)", ".1%"),
    ("client", "busy", "client: CPU busy", ".1%"),
    ("client", "steal", "client: steal", ".1%"),
    ("client", "iowait", "client: iowait", ".1%"),
    ("client", "load1", "client: load average (1 min)", ".2f"),
    ("client", "freq_mhz", "client: CPU MHz", ".0f"),
    ("server", "busy", "server: CPU busy (user + system)", ".1%"),
    ("server", "steal", "server: steal", ".1%"),
    ("server", "iowait", "server: iowait", ".1%"),
    ("server", "load1", "server: load average (1 min)", ".2f"),
]


def machine_table(m: dict[str, Any] | None) -> Table | None:
    """Both runs' machine state, side by side (medians over their rounds)."""
    probes = (m or {}).get("probes")
    if not probes:
        return None
    t = Table([Column("machine probe", align="left", key="probe"), Column("A", ".4g", key="a"),
               Column("B", ".4g", key="b")], title="Machine state during each run (median over rounds)")
    for where, k, label, fmt in PROBE_ROWS:
        va, vb = (probes["a"].get(where) or {}).get(k), (probes["b"].get(where) or {}).get(k)
        if va is None and vb is None:
            continue
        t.add(label, *(None if v is None else Cell(v, text=format(v, fmt)) for v in (va, vb)))
    ref = (m or {}).get("reference")
    if ref:
        t.add(f"reference task in its own process, ms (B/A {ref['ratio'] - 1:+.1%})",
              *(Cell(v, text=f"{v:.2f}") for v in ref["median_ms"]))
    return t


def per_query_charts(cmp: Comparison) -> list[Details]:
    out = []
    for r in cmp.doc.queries:
        a, b = cmp.a.queries.get(r.name), cmp.b.queries.get(r.name)
        # as measured: round factors taken out for the verdict are not drawn
        ta, tb = ((a.raw_times or a.times) if a else []), ((b.raw_times or b.times) if b else [])
        if not (ta or tb):
            continue
        k = key(r.name)
        charts = Charts([
            chart(f"dist-{k}", "distribution", [("A", ta), ("B", tb)]),
            chart(f"order-{k}", "run_order", [("A", ta, a.server_times if a else []),
                                              ("B", tb, b.server_times if b else [])]),
        ])
        out.append(Details(f"{r.name} — {r.verdict} {change(r.ratio)}", [charts], style=r.verdict))
    return out


def side_lines(doc: ComparisonDoc) -> list[Text]:
    """"A = …" and "B = …", without repeating the side's name where its label already
    starts with it (a side-by-side run's labels read "A: ClickHouse 24.8.4.1")."""
    return [Text(label if label.startswith(f"{name}: ") else f"{name} = {label}")
            for name, label in (("A", doc.a_label), ("B", doc.b_label))]


def comparison_section(cmp: Comparison, charts: bool = True, verbose: bool | None = None) -> Section:
    """The comparison: ``charts`` for the HTML report; ``verbose`` (default: with charts)
    gives every query's full reasoning and the machine lines instead of short reasons."""
    doc = cmp.doc
    full = charts if verbose is None else verbose
    blocks: list[Any] = side_lines(doc)
    tests = test_table(doc)
    if tests is not None:
        blocks.append(tests)
    from chbench.report.explain import why_lines

    blocks += [verdict_table(doc, full), *summary(doc, full, why_lines(cmp))]
    probes = machine_table(doc.summary.machine) if full else None
    if probes is not None:
        blocks.append(probes)
    if cmp.checks:
        from chbench.report.upgrade import upgrade_blocks

        blocks += upgrade_blocks(doc, cmp.checks, full=charts)
    if charts:
        blocks.append(Charts([chart("forest", "forest", doc.queries, doc.summary.threshold)]))
        details = per_query_charts(cmp)
        if details:
            blocks += [Heading("Per query: both distributions, and samples in run order"), *details]
    return Section("Comparison", "comparison", blocks)
