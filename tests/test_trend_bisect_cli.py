"""``chbench trend`` and ``chbench bisect`` through the real command line on real engines:
chbench's own 26.9 and the 24.8 that tests/test_engines.py installs (bisect's
``--installed`` keeps the range to those two), and the Debian 18.16 server binary as an
``--engines-from`` directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chbench.servers import LEGACY_BINARY
from tests.conftest import assert_one_line_error, run_cli

QUERIES = "-- name: ver\nSELECT version();\n-- name: sum\nSELECT sum(number) FROM numbers(2000000);\n"


@pytest.fixture(scope="module")
def trend(tmp_path_factory, old_engine) -> dict:  # noqa: ARG001 - 24.8 installed first
    d = tmp_path_factory.mktemp("trend")
    (d / "q.sql").write_text(QUERIES)
    out, html = d / "t.json", d / "t.html"
    r = run_cli("trend", "--targets", "embedded@24.8", "embedded@26.9", "embedded@26.9", "--queries",
                str(d / "q.sql"), "--iterations", "6", "--yes", "--out", str(out), "--html", str(html))
    return {"r": r, "out": out, "html": html, "doc": json.loads(out.read_text())}


def test_trend_steps_answers_and_series_over_three_targets(trend):
    r, doc = trend["r"], trend["doc"]
    assert r.code == 1, r.stderr  # version() answers differently: a step that fails the run
    t = doc["trend"]  # the contract: a top-level trend object with its steps
    assert t["versions"] == ["embedded@24.8", "embedded@26.9", "embedded@26.9"]
    answer = [s for s in t["steps"] if s["kind"] == "answer"]
    assert [(s["query"], s["from"], s["to"]) for s in answer] == [("ver", "embedded@24.8", "embedded@26.9")]
    assert not [s for s in t["steps"] if s["from"] == s["to"] == "embedded@26.9" and s["kind"] == "answer"]
    series = {q["name"]: q["series"] for q in t["queries"]}
    assert [p["version"] for p in series["sum"]] == t["versions"] and series["sum"][0]["ratio"] == 1.0
    for p in series["sum"][1:]:
        assert p["ci"][0] <= p["ratio"] <= p["ci"][1]
    assert len(doc["targets"]) == 3 and set(doc["checks"]["answers"]["ver"]) >= {"a", "b", "c", "equal"}
    assert "step(s) over 3 versions" in r.stderr and "Steps between adjacent versions" in r.stdout


def test_trend_html_has_a_chart_per_query_and_the_overview(trend):
    html = trend["html"].read_text()
    assert html.count("<svg") >= 3  # the small multiples and one per query
    assert "ver — " in html and "step(s)" in html and "sum — " in html


def test_compare_reads_the_trend_file_as_three_sides(trend):
    r = run_cli("compare", str(trend["out"]), "--format", "json")
    doc = r.json()
    assert [(c["a"][0], c["b"][0], c["kind"]) for c in doc["comparisons"]] == \
        [("A", "B", "baseline"), ("A", "C", "baseline"), ("B", "C", "adjacent")]
    verdicts = {c["b"][0] + c["a"][0]: {q["name"]: q["verdict"] for q in c["queries"]} for c in doc["comparisons"]}
    assert verdicts["BA"]["ver"] == "answer changed" and verdicts["CB"]["ver"] != "answer changed"


def test_bisect_answer_names_the_version_and_keeps_every_step(tmp_path, old_engine, trend):  # noqa: ARG001
    out = tmp_path / "b.json"
    r = run_cli("bisect", "24.8", "26.9", "--installed", "--query", "SELECT version()", "--out", str(out))
    assert r.code == 0, r.stderr
    doc = json.loads(out.read_text())
    b, versions = doc["bisect"], doc["versions"]  # 24.8, 26.9 and any installed between (--installed)
    assert versions[0] == "24.8.4.1" and versions[-1] == "26.9.2.1"
    assert b["kind"] == "answer" and b["found"] is True
    # version() answers differently on every version: the first change is the next one
    assert (b["last_same"], b["first_changed"]) == ("24.8.4.1", versions[1])
    assert b["steps"] and b["steps"][0]["decision"] == "changed"
    assert len(b["changes"]) == len(versions) - 1  # a change at every step, each named
    head = f"24.8.4.1 → {versions[1]}"
    assert head in r.stdout
    md = tmp_path / "r.md"  # chbench report reads both kinds of file
    rep = run_cli("report", str(out), str(trend["out"]), "--markdown", str(md))
    assert rep.code == 0, rep.stderr
    text = md.read_text()
    assert head in text and "Steps between adjacent versions" in text


def test_bisect_speed_runs_side_by_side_and_keeps_the_runs(tmp_path, old_engine):  # noqa: ARG001
    out, setup = tmp_path / "s.json", tmp_path / "setup.sql"
    setup.write_text("CREATE TABLE t (k UInt64) ENGINE = MergeTree ORDER BY k;\n"
                     "INSERT INTO t SELECT number FROM numbers(3000000);\n")
    r = run_cli("bisect", "24.8", "26.9", "--installed", "--speed", "--query",
                "SELECT sum(cityHash64(k)) FROM t", "--setup", str(setup), "--iterations", "6", "--max-rounds", "12",
                "--out", str(out))
    doc = json.loads(out.read_text())
    b = doc["bisect"]
    assert r.code == (0 if b["found"] else 1), r.stderr
    assert b["kind"] == "speed" and doc["status"] == "complete"
    step = b["steps"][0]
    assert 6 <= step["rounds"] <= 12 and step["decision"] in ("changed", "same", "unknown")
    assert step["ci"][0] <= step["ratio"] <= step["ci"][1]
    run = doc["runs"][0]["run"]
    assert [t["label"] for t in run["targets"]] == ["ClickHouse 24.8.4.1", "ClickHouse 26.9.2.1"]
    assert sum(1 for s in run["queries"][0]["samples"] if not s["warmup"]) >= 12


@pytest.mark.parametrize("args, message", [
    (("bisect", "24.8", "26.9"), "give the query"),
    (("bisect", "24.8", "24.8", "--query", "SELECT 1"), "same version"),
    (("bisect", "24.8", "26.9", "--query", "SELECT 1", "--engines-from", "/nonexistent"), "not a directory"),
    (("trend", "24.8-26.9"), "bad range"),
    (("trend", "--versions", "24.8"), "at least two"),
    (("trend", "--versions", "24.8,26.9", "--suite", "clickbench", "-q", "SELECT 1"), "not both"),
    (("upgrade", "24.8", "26.9", "--suite", "clickbench", "--query", "SELECT 1"), "not both"),
    (("run", "--target", "embedded", "--target", "embedded", "--target", "embedded", "--scale-b", "2"),
     "--scale-b"),
])
def test_bad_input_is_one_line(args, message):
    r = run_cli(*args)
    assert_one_line_error(r)
    assert message in r.stderr


@pytest.mark.skipif(not Path(LEGACY_BINARY).exists(), reason="the Debian clickhouse-server is not installed")
def test_engines_from_a_directory_of_binaries(tmp_path):
    from chbench.versions import BinariesSource

    d = tmp_path / "builds" / "18.16"
    d.mkdir(parents=True)
    (d / "clickhouse-server").symlink_to(LEGACY_BINARY)
    source = BinariesSource(tmp_path / "builds")
    assert source.scan() == {"18.16.1": d / "clickhouse-server"}
    assert json.loads((tmp_path / "builds" / ".chbench-versions.json").read_text())  # remembered
    assert source.pick("18.16") == "18.16.1"
    target = source.target("18.16.1")
    try:
        assert target.connect().version.startswith("18.16") and target.query_rows("SELECT 1 + 1") == [["2"]]
    finally:
        target.close()
        source.close()
    r = run_cli("bisect", "18.16", "18.16", "--engines-from", str(tmp_path / "builds"), "--query", "SELECT 1")
    assert_one_line_error(r)
    assert "same version (18.16.1)" in r.stderr


def test_upgrade_and_trend_take_queries_inline_as_run_does():
    """`-q SQL` (repeatable) in place of a suite, as `run` takes it; with --queries, added."""
    from chbench.upgrade.workload import upgrade_workload

    wl = upgrade_workload("builtin", None, None, 1000, 1.0, inline=["SELECT 1", "SELECT 2"])
    assert [q.sql for q in wl.queries] == ["SELECT 1", "SELECT 2"] and not wl.setup
    assert len(upgrade_workload("builtin", None, None, 1000, 1.0).queries) == 10  # the built-in suite
