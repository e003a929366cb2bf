"""``chbench report`` on real results files (made by the commands against real engines),
opened in headless Chromium."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.browser import Browser, available
from tests.conftest import REPO, assert_one_line_error, run_cli

SHARED = Path("/work/shared/clickbench")
PUBLISHED = [SHARED / "result-clickhouse-c8g.4xlarge-20260822.json", SHARED / "result-chdb-c8g.4xlarge-20260816.json"]
ARTIFACTS = REPO / "artifacts"
needs_browser = pytest.mark.skipif(not available(), reason="chromium and chromium-driver are not installed")

QUERIES = ("-- name: sum\nSELECT sum(number) FROM numbers(2000000);\n"
           "-- name: filter\nSELECT count() FROM numbers(1500000) WHERE number % 7 = 3;\n"
           "-- name: strings\nSELECT count(DISTINCT toString(number % 5000)) FROM numbers(800000);\n")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("report")
    q = d / "q.sql"
    q.write_text(QUERIES)
    out = {}
    for name in ("before", "after"):
        r = run_cli("run", "--queries", str(q), "--iterations", "6", "--out", str(d / f"{name}.json"), "--quiet")
        assert r.code == 0, r.stderr
        out[name] = d / f"{name}.json"
    r = run_cli("load", "-q", "SELECT sum(number) FROM numbers(50000)", "-C", "2", "-t", "1", "--quiet",
                "--out", str(d / "load.json"))
    assert r.code == 0, r.stderr
    out["load"] = d / "load.json"
    db = f"embedded:{d / 'cb'}"
    assert run_cli("clickbench", "load", "--target", db, "--synthetic", "100000", "--quiet").code == 0
    r = run_cli("clickbench", "run", "--target", db, "--out", str(d / "cb.json"), "--quiet")
    assert r.code == 0, r.stderr
    out["clickbench"] = d / "cb.json"
    assert run_cli("ingest", "--rows", "20000", "--out", str(d / "ingest.json"), "--quiet").code == 0
    assert run_cli("read", "--rows", "20000", "--out", str(d / "read.json"), "--quiet").code == 0
    out["ingest"], out["read"] = d / "ingest.json", d / "read.json"
    out["dir"] = d
    return out


def _rows(html: str, attr: str) -> dict[str, list[str]]:
    """data-value cells per table row carrying ``attr``."""
    out = {}
    for m in re.finditer(rf'<tr {attr}="([^"]*)">(.*?)</tr>', html, re.S):
        out[m.group(1)] = re.findall(r'data-value="([^"]*)"', m.group(2))
    return out


def _f(v: str) -> float | None:
    return None if v == "" else float(v)


@pytest.fixture(scope="module")
def browser():
    if not available():
        pytest.skip("chromium and chromium-driver are not installed")
    b = Browser()
    yield b
    b.close()


def _open(browser: Browser, path: Path, shot: str) -> dict:
    res = browser.open(path)
    ARTIFACTS.mkdir(exist_ok=True)
    browser.screenshot(ARTIFACTS / shot)
    assert res["errors"] == [], res["errors"]
    return res


@needs_browser
def test_comparison_report_in_chromium_matches_compare_json(files, browser, tmp_path):
    html_path, md_path = tmp_path / "cmp.html", tmp_path / "cmp.md"
    r = run_cli("report", str(files["before"]), str(files["after"]), "--html", str(html_path),
                "--markdown", str(md_path))
    assert r.code == 0, r.stderr
    _open(browser, html_path, "report-comparison.png")
    plots = browser.js("return Array.from(document.querySelectorAll('svg[data-plot]')).map(e => e.dataset.plot)")
    assert "forest" in plots
    # both sides per query, in the comparison; the runs' sections do not draw them again
    assert sum(p.startswith("dist-") for p in plots) == 3 and sum(p.startswith("order-") for p in plots) == 3
    # the verdict table, then both runs' machine state
    assert browser.js("return document.querySelectorAll('[data-section=comparison] table.sortable').length") == 2
    assert "Machine state during each run" in browser.js(
        "return document.querySelector('[data-section=comparison]').innerText")
    # every number shown equals what `chbench compare --format json` prints
    cmp_json = run_cli("compare", str(files["before"]), str(files["after"]), "--format", "json", "--fail-on",
                       "never").json()
    html = html_path.read_text()
    rows = _rows(html, "data-query")
    for q in cmp_json["queries"]:
        cells = [_f(v) for v in rows[q["name"]]]
        ci = q["ci"] or [None, None]
        assert cells[:8] == [q["a"]["median"], q["b"]["median"], q["ratio"], ci[0], ci[1], q["p_adjusted"],
                             q["a"]["runs"], q["b"]["runs"]]
    assert f'data-geomean="{cmp_json["summary"]["geomean"]["ratio"]!r}"' in html
    # the table sorts and filters in the browser
    browser.js("document.querySelectorAll('[data-section=comparison] th')[4].click()")
    first = "document.querySelector('[data-section=comparison] table.sortable')"
    shown = browser.js(f"return Array.from({first}.querySelectorAll('tbody tr')).map(r => +r.cells[4].dataset.value)")
    assert shown == sorted(shown)
    browser.js("var f = document.querySelector('[data-section=comparison] input.filter'); f.value = 'strings';"
               "f.dispatchEvent(new Event('input'))")
    visible = browser.js(f"return Array.from({first}.querySelectorAll('tbody tr'))"
                         ".filter(r => r.style.display !== 'none').map(r => r.dataset.query)")
    assert visible == ["strings"]
    md = md_path.read_text()
    assert "| query | verdict |" in md and all(q["name"] in md for q in cmp_json["queries"])


@needs_browser
def test_clickbench_report_size_render_time_and_scores(files, browser, tmp_path):
    html_path = tmp_path / "cb.html"
    inputs = [str(files["clickbench"])] + [str(p) for p in PUBLISHED if p.exists()]
    r = run_cli("report", *inputs, "--html", str(html_path), "--markdown", str(tmp_path / "cb.md"))
    assert r.code == 0, r.stderr
    assert html_path.stat().st_size < 3_000_000
    res = _open(browser, html_path, "report-clickbench.png")
    assert res["load_ms"] is not None and res["load_ms"] < 2000
    plots = browser.js("return Array.from(document.querySelectorAll('svg[data-plot]')).map(e => e.dataset.plot)")
    assert plots == ["clickbench-times", "clickbench-ratios"]
    scores = run_cli("clickbench", "compare", *inputs, "--format", "json").json()
    html = html_path.read_text()
    entries = _rows(html, "data-entry")
    for s in scores["scores"]:
        label = f"{s['system']} ({s['machine']})" if s["machine"] else s["system"]
        cells = [_f(v) for v in entries[label]]
        assert cells[:3] == [s["cold"], s["hot"], s["combined"]]
    per_query = _rows(html, "data-query")
    assert len(per_query) == 43
    for q in scores["queries"]:
        cells = [_f(v) for v in per_query[str(q["query"] - 1)]][1:]
        expected = [x for e in q["entries"] for x in (e["cold_s"], e["hot_s"], e["hot_ratio"])]
        assert cells == expected
    assert "ClickBench scores" in (tmp_path / "cb.md").read_text()


@needs_browser
def test_load_ingest_read_and_single_run_reports(files, browser, tmp_path):
    html_path = tmp_path / "all.html"
    r = run_cli("report", str(files["before"]), str(files["load"]), str(files["ingest"]), str(files["read"]),
                "--html", str(html_path), "--markdown", str(tmp_path / "all.md"))
    assert r.code == 0, r.stderr
    _open(browser, html_path, "report-load-ingest-read.png")
    plots = browser.js("return Array.from(document.querySelectorAll('svg[data-plot]')).map(e => e.dataset.plot)")
    assert "sweep" in plots and "throughput-ingest" in plots and "throughput-read" in plots
    assert sum(p.startswith("timeline-") for p in plots) == 2 and sum(p.startswith("histogram-") for p in plots) == 2
    assert sum(p.startswith("dist-") for p in plots) == 3  # the single run: one per query
    sections = browser.js("return Array.from(document.querySelectorAll('section')).map(s => s.dataset.section)")
    assert sections == ["run", "load", "transfer", "transfer"]
    md = (tmp_path / "all.md").read_text()
    assert "## Load:" in md and "Knee of the sweep" in md and "## Run:" in md and "chbench ingest" in md
    # the embedded engine (26.9) keeps query_log: server CPU and memory for every run
    assert "| server CPU ms |" in md and "not reported by any side" not in md


def test_html_is_self_contained(files, tmp_path):
    html_path = tmp_path / "x.html"
    assert run_cli("report", str(files["before"]), str(files["after"]), "--html", str(html_path)).code == 0
    html = html_path.read_text()
    assert not re.search(r'(src|href)="(https?:)?//', html)  # nothing fetched from the network
    assert "<script src" not in html and "<link " not in html and "@import" not in html
    assert [p.name for p in tmp_path.iterdir()] == ["x.html"]  # written whole and renamed: no temporary left
    r = run_cli("report", str(files["before"]), "--markdown", "/dev/stdout")  # not a regular file: written to
    assert r.code == 0 and r.stdout.startswith("# chbench report: before.json"), r.stderr


@pytest.mark.parametrize("case,needle", [
    ("none", "--html FILE"),
    ("not-json", "not a results file"),
    ("three-runs", "at most two run files"),
    ("missing", "results file not found"),
])
def test_bad_input_one_line(files, tmp_path, case, needle):
    bad = tmp_path / "bad.json"
    bad.write_text("hello")
    args = {
        "none": [str(files["before"])],
        "not-json": [str(bad), "--html", str(tmp_path / "o.html")],
        "three-runs": [str(files["before"]), str(files["after"]), str(files["before"]), "--html",
                       str(tmp_path / "o.html")],
        "missing": [str(tmp_path / "nope.json"), "--html", str(tmp_path / "o.html")],
    }[case]
    r = run_cli("report", *args)
    assert_one_line_error(r)
    assert needle in r.stderr
    json.dumps(args)


def test_side_by_side_file_and_compare_html(tmp_path):
    q = tmp_path / "q.sql"
    q.write_text("-- name: s\nSELECT sum(number) FROM numbers(1000000);\n")
    sbs = tmp_path / "sbs.json"
    assert run_cli("run", "--queries", str(q), "--setting-b", "max_threads=1", "--iterations", "4", "--quiet",
                   "--out", str(sbs)).code == 0
    r = run_cli("report", str(sbs), "--html", str(tmp_path / "s.html"), "--markdown", str(tmp_path / "s.md"))
    assert r.code == 0, r.stderr
    html = (tmp_path / "s.html").read_text()
    assert 'data-section="comparison"' in html and 'data-plot="forest"' in html and 'data-query="s"' in html
    assert "| s |" in (tmp_path / "s.md").read_text()
    r = run_cli("compare", str(sbs), "--format", "html", "--output", str(tmp_path / "c.html"), "--fail-on", "never")
    assert r.code == 0, r.stderr
    assert (tmp_path / "c.html").read_text().startswith("<!DOCTYPE html>")


def test_many_charts_are_drawn_on_every_core_as_they_would_be_one_by_one(monkeypatch):
    """From PARALLEL_FROM charts on, the HTML exporter draws them in worker processes:
    each chart's SVG is exactly the one drawn in this process. Where no process can be
    started, each is drawn where it is shown."""
    from chbench.export import html
    from chbench.export.sections import Charts, Report, Section
    from chbench.report.charts import chart

    charts = [chart(f"c{i}", "distribution", [("A", [1.0 + i, 2.0, 3.0]), ("B", [2.0, 3.0 + i])])
              for i in range(html.PARALLEL_FROM)]
    monkeypatch.setattr(html, "_cores", lambda: 2)  # a one-core runner draws in two processes all the same
    drawn = html.draw_all(charts)
    assert drawn == {id(c): c.draw() for c in charts}
    assert html.draw_all(charts[:2]) == {}  # too few: each is drawn where it is shown
    with monkeypatch.context() as m:
        m.setattr(html, "_cores", lambda: 1)
        assert html.draw_all(charts) == {}  # one core: nothing to gain

    def no_processes(*args, **kwargs):
        raise OSError(38, "Function not implemented")  # a container without /dev/shm

    monkeypatch.setattr(html, "ProcessPoolExecutor", no_processes)
    assert html.draw_all(charts) == {}
    page = html.HtmlExporter().render(Report("r", [Section("s", "run", [Charts(charts)])]))
    assert all(svg in page for svg in drawn.values())


def test_the_forest_axis_reads_as_changes_and_its_legend_leaves_the_intervals_alone():
    """A log axis over a narrow range labelled itself "9×10⁻¹" and "10⁰", and the legend sat
    on the end of the lowest interval."""
    from chbench.report.plots import forest
    from chbench.stats.verdict import QueryComparison

    rows = [QueryComparison(name="a", ratio=0.97, ci=(0.91, 1.05), verdict="unstable"),
            QueryComparison(name="b", ratio=1.045, ci=(1.02, 1.12), verdict="slower")]
    svg = forest("forest", rows, 0.05)
    labels = re.findall(r">([^<>]*%|0|×[^<>]*)</text>", svg)
    assert {"-5%", "0", "+5%", "+10%"} <= set(labels), labels
    wide = forest("wide", [QueryComparison(name="c", ratio=6.0, ci=(5.0, 7.5), verdict="slower")], 0.05)
    assert {"×1", "×2", "×4"} <= set(re.findall(r">(×[^<>]*)</text>", wide))
