"""Every exporter against golden files: one report holding every kind of block, and a
comparison section built from fixed samples. ``CHBENCH_UPDATE_GOLDEN=1 pytest
tests/test_exporters.py`` rewrites the files after an intended change (then read the
diff)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from chbench.compare import Comparison, Side
from chbench.compare.document import ComparisonDoc
from chbench.compare.findings import findings
from chbench.export import EXPORTERS, get_exporter
from chbench.export.console import ConsoleExporter
from chbench.export.sections import Cell, Chart, Charts, Column, Details, Heading, Report, Section, Table, Text
from chbench.report.comparison import comparison_section
from chbench.stats.compare import Options, SideData, compare_queries

GOLDEN = Path(__file__).parent / "golden"


def _blocks_report() -> Report:
    table = Table([Column("query", align="left", key="name"), Column("verdict", align="left"),
                   Column("A ms", ".1f", key="a_ms"), Column("change", "change", key="ratio"),
                   Column("95% CI", "interval", key=("ci_low", "ci_high")),
                   Column("runs A / B", "d", key=("a_runs", "b_runs")), Column("notes", align="left")],
                  title="a table")
    table.add("q|1", Cell("slower", style="slower"), 101.25, 1.0625, (1.01, 1.12), (10, 12), "pipe | in text",
              key=("data-query", "q|1"))
    table.add("q2", Cell("no change", style="no change"), None, None, (None, None), (3, None), "",
              key=("data-query", "q2"))
    return Report("golden report", [
        Section("Every block", "demo", [
            Text("A = first side"), Text("Verdicts: 1 slower, 1 no change", "summary", {"data-geomean": "1.5"}),
            table, Charts([Chart("stub", lambda: '<svg data-plot="stub"></svg>')]), Heading("Per query"),
            Details("q|1 — slower +6.2%", [Charts([Chart("stub-q1", lambda: '<svg data-plot="stub-q1"></svg>')])],
                    style="slower"),
        ]),
        Section("Second section", "demo", [Text("the end")]),
    ], files=["a.json", "b.json"], data={"answer": 42})


def _comparison_report() -> Report:
    a = {"steady": SideData(times=[100.0 + (i % 5) * 0.2 for i in range(20)]),
         "slower": SideData(times=[50.0 + (i % 3) * 0.1 for i in range(20)]),
         "gone": SideData(times=[10.0] * 5)}
    b = {"steady": SideData(times=[100.1 + (i % 5) * 0.2 for i in range(20)]),
         "slower": SideData(times=[60.0 + (i % 3) * 0.1 for i in range(20)]),
         "new": SideData(times=[5.0] * 5)}
    names = ["steady", "slower", "gone", "new"]
    doc = ComparisonDoc(compare_queries(names, a, b, Options()), a_label="before.json (A: embedded)",
                        b_label="after.json (A: embedded)", files=["before.json", "after.json"], metric="client_ms",
                        notes=["a note for the reader"])
    doc.findings = findings(doc, separate=True)
    section = comparison_section(Comparison(doc, Side("A", a), Side("B", b)), charts=False)
    return Report("", [section], ["before.json", "after.json"], data=doc.to_json())


def _render(name: str, report: Report) -> str:
    exporter = ConsoleExporter(color=False, width=150) if name == "console" else get_exporter(name)
    text = exporter.render(report)
    # the HTML header says when and by which version: not part of the layout
    return re.sub(r'<p class="meta">.*?</p>', '<p class="meta">…</p>', text)


@pytest.mark.parametrize("report", ["blocks", "comparison"])
@pytest.mark.parametrize("fmt", list(EXPORTERS))
def test_exporter_output_is_the_golden_file(fmt, report):
    built = _blocks_report() if report == "blocks" else _comparison_report()
    text = _render(fmt, built)
    assert text.endswith("\n")
    ext = {"console": "txt", "markdown": "md"}.get(fmt, fmt)
    path = GOLDEN / f"{report}.{ext}"
    if os.environ.get("CHBENCH_UPDATE_GOLDEN"):
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{path} differs: rerun with CHBENCH_UPDATE_GOLDEN=1 and diff"


def test_json_is_the_document_and_csv_has_every_exact_value():
    report = _comparison_report()
    assert json.loads(get_exporter("json").render(report)) == json.loads(json.dumps(report.data))
    rows = get_exporter("csv").render(report).splitlines()
    assert rows[0] == ("name,verdict,a_median_ms,b_median_ms,ratio,ci_low,ci_high,p_value,p_adjusted,a_runs,b_runs,"
                       "notes")
    slower = next(r for r in report.data["queries"] if r["name"] == "slower")
    assert repr(slower["ratio"]) in next(r for r in rows if r.startswith("slower,"))


def test_html_keeps_exact_values_and_escapes_text():
    html = _render("html", _blocks_report())
    assert '<tr data-query="q|1">' in html and 'data-value="101.25"' in html and 'data-value="1.0625"' in html
    assert '<span data-value="1.01">+1.0%</span>' in html and 'data-geomean="1.5"' in html
    assert "pipe | in text" in html and 'data-plot="stub-q1"' in html and "<script>" in html
    md = _render("markdown", _blocks_report())
    assert "pipe \\| in text" in md and "🔴 slower" in md and "stub" not in md  # charts are for HTML


def test_an_unbounded_interval_reads_as_one():
    """Five paired rounds cannot give a 95% signed-rank interval: it is (0, ∞), shown as
    such, not as '+inf%'."""
    from chbench.export.numbers import change, interval

    assert interval([0.0, float("inf")]) == "[-100.0%, +∞]"
    assert change(1.053) == "+5.3%" and interval(None) == "-"


@pytest.mark.parametrize("kind", ["ingest", "read"])
def test_a_transfer_file_stopped_early_reports_what_it_holds(kind, tmp_path):
    """Ctrl-C before the first path (``result: {}``) and after one: the report says so,
    no traceback (it read ``result['rows']`` of an empty result)."""
    from tests.conftest import run_cli

    head = {"schema": {"name": "chbench.results", "version": 1}, "kind": kind, "status": "interrupted",
            "meta": {"stop_reason": "interrupted"}, "targets": {"http": "http://127.0.0.1:1"}}
    empty, partial = tmp_path / "empty.json", tmp_path / "partial.json"
    empty.write_text(json.dumps({**head, "result": {}}))
    path = {"name": "http-file", "status": "ok", "rows_per_s": 1.2e6, "seconds": 0.8, "checksum": "6000a8fe",
            "row_count": 1000}
    partial.write_text(json.dumps({**head, "result": {"rows": 1000, "seed": 1, "query": "SELECT 1",
                                                     "expected": {"checksum": "6000a8fe"}, "paths": [path],
                                                     "mismatches": []}}))
    r = run_cli("report", str(empty), str(partial), "--markdown", str(tmp_path / "r.md"))
    assert r.code == 0, r.stderr
    text = (tmp_path / "r.md").read_text()
    assert f"chbench {kind}: interrupted before any client path was measured" in text
    assert "status interrupted: only the paths measured before it stopped are here" in text
    assert "| http-file |" in text


def test_counts_in_sentences_agree_with_their_number():
    """'1 queries corrected for each other', '1 queries' in history list: now one noun rule."""
    from chbench.export.numbers import count

    assert [count(1, "query"), count(2, "query"), count(0, "error"), count(1200, "run"), count(2, "day")] == \
        ["1 query", "2 queries", "0 errors", "1,200 runs", "2 days"]
