"""ClickBench data as shipped, and ClickBench scores on the two published results files."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from chbench.clickbench import create_table_sql, queries
from tests.conftest import assert_one_line_error, run_cli

SHARED = Path(__file__).resolve().parents[2] / "shared" / "clickbench"
if not SHARED.is_dir():  # a fresh clone elsewhere: the shared directory sits next to the repository
    SHARED = Path("/work/shared/clickbench")
CLICKHOUSE = SHARED / "result-clickhouse-c8g.4xlarge-20260822.json"
CHDB = SHARED / "result-chdb-c8g.4xlarge-20260816.json"

needs_shared = pytest.mark.skipif(not CLICKHOUSE.exists(), reason="../shared/clickbench is not on this machine")


def test_queries_and_schema_are_clickbench_verbatim():
    qs = queries()
    assert len(qs) == 43 and qs[0] == "SELECT COUNT(*) FROM hits;"
    assert "TABLE hits" in create_table_sql() and "WatchID" in create_table_sql()
    data = Path(__file__).resolve().parents[1] / "chbench" / "clickbench" / "data"
    assert "CC BY-NC-SA 4.0" in (data / "README.md").read_text()  # the attribution travels with the copy
    if SHARED.is_dir():
        assert (data / "queries.sql").read_text() == (SHARED / "queries.sql").read_text()
        assert (data / "create.sql").read_text() == (SHARED / "create.sql").read_text()


@needs_shared
def test_scores_of_the_published_files():
    r = run_cli("clickbench", "compare", str(CLICKHOUSE), str(CHDB), "--format", "json")
    assert r.code == 0, r.stderr
    doc = r.json()
    ch, chdb = doc["scores"]
    assert {"system", "machine", "cold", "hot", "combined"} <= set(ch)
    assert (ch["system"], chdb["system"]) == ("ClickHouse", "chDB")
    raw = [json.loads(p.read_text())["result"] for p in (CLICKHOUSE, CHDB)]
    # query 2 (index 1), hot: min of tries 2 and 3, ratio with the 0.01 s constant
    hot = [min(r_[1][1], r_[1][2]) for r_ in raw]
    q = doc["queries"][1]["entries"]
    assert q[1]["hot_ratio"] == pytest.approx((hot[1] + 0.01) / (min(hot) + 0.01))
    assert q[0]["cold_s"] == raw[0][1][0]
    # every query has a best entry at ratio 1, and the score is the geometric mean
    for entry_q in doc["queries"]:
        assert min(e["hot_ratio"] for e in entry_q["entries"]) == pytest.approx(1.0)
    hot_ratios = [qq["entries"][1]["hot_ratio"] for qq in doc["queries"]]
    assert chdb["hot"] == pytest.approx(math.exp(sum(map(math.log, hot_ratios)) / 43))
    # combined: load time 10%, data size 10%, cold 20%, hot 60% (weighted geometric mean)
    expected = math.exp(0.1 * math.log(578 / 276) + 0.1 * math.log(24761635965 / 15268584432)
                        + 0.2 * math.log(chdb["cold"]) + 0.6 * math.log(chdb["hot"]))
    assert chdb["combined"] == pytest.approx(expected)
    assert ch["hot"] < chdb["hot"] and ch["cold"] > chdb["cold"]


@needs_shared
def test_missing_results_count_as_twice_the_slowest_or_300_s(tmp_path):
    doc = json.loads(CHDB.read_text())
    doc["result"][4] = [None, 0.5, None]  # cold failed; hot needs both tries 2 and 3
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(doc))
    r = run_cli("clickbench", "compare", str(CLICKHOUSE), str(broken), "--format", "json")
    assert r.code == 0, r.stderr
    out = r.json()
    q = out["queries"][4]["entries"]
    assert q[1]["cold_s"] is None and q[1]["hot_s"] is None
    best_cold = json.loads(CLICKHOUSE.read_text())["result"][4][0]
    assert q[1]["cold_ratio"] == pytest.approx((2 * 300 + 0.01) / (best_cold + 0.01))
    assert out["scores"][1]["failed_tries"] == 2
    md = run_cli("clickbench", "compare", str(CLICKHOUSE), str(broken), "--format", "markdown")
    assert md.code == 0 and "| entry | cold score |" in md.stdout and "| Q4 |" in md.stdout


@needs_shared
def test_an_entry_with_two_tries_is_said_to_have_no_hot_time(tmp_path):
    doc = json.loads(CHDB.read_text())
    doc["result"] = [row[:2] for row in doc["result"]]  # 'clickbench run --tries 2'
    two = tmp_path / "two.json"
    two.write_text(json.dumps(doc))
    out = run_cli("clickbench", "compare", str(CLICKHOUSE), str(two), "--format", "json").json()
    assert out["notes"] == [f"{two}: 2 tries per query; ClickBench's hot time is the better of tries 2 and 3, so "
                            "this entry's hot results count as missing (run it with --tries 3)"]
    assert out["queries"][0]["entries"][1]["hot_s"] is None
    text = run_cli("clickbench", "compare", str(CLICKHOUSE), str(two)).stdout
    assert "Note: " in text and "2 tries per query" in " ".join(text.split())
    assert run_cli("clickbench", "compare", str(CLICKHOUSE), str(CHDB), "--format", "json").json()["notes"] == []


@needs_shared
def test_entries_of_other_data_are_said_not_to_compare(tmp_path):
    doc = json.loads(CLICKHOUSE.read_text())
    doc["data_size"] = 42_164_030  # 'clickbench load --synthetic 200000': 0.04 GB, not the 15 GB of hits
    small = tmp_path / "small.json"
    small.write_text(json.dumps(doc))
    notes = run_cli("clickbench", "compare", str(small), str(CHDB), "--format", "json").json()["notes"]
    assert len(notes) == 1 and notes[0].startswith("data sizes differ 587×") and "do not compare" in notes[0]


@pytest.mark.parametrize(
    "content,needle",
    [
        ("not json", "not JSON"),
        (json.dumps({"result": [[1, 1, 1]] * 42}), "has 42 rows"),
        (json.dumps({"schema": {"name": "chbench.results"}, "queries": []}), "no 'result' list"),
        (json.dumps({"result": [[-1, 1, 1]] * 43}), "not a non-negative number"),
    ],
)
def test_not_a_clickbench_file_is_one_line(tmp_path, content, needle):
    f = tmp_path / "x.json"
    f.write_text(content)
    r = run_cli("clickbench", "compare", str(f))
    assert_one_line_error(r)
    assert needle in r.stderr


@needs_shared
def test_one_system_twice_is_told_apart_by_file_and_by_path_where_names_repeat(tmp_path):
    """Before and after of one system: the same 'system (machine)', told apart by the
    files' names; where those repeat too (before/x.json, after/x.json), by the paths."""
    for d in ("before", "after"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "x.json").write_text(CLICKHOUSE.read_text())
    paths = [str(tmp_path / d / "x.json") for d in ("before", "after")]
    text = run_cli("clickbench", "compare", *paths, str(CHDB), "--format", "markdown").stdout
    assert all(text.count(f"[{p}]") >= 2 for p in paths) and "chDB" in text and "[result-chdb" not in text, text
