"""ClickHouse's performance-test format (tests/performance/*.xml) as a workload: the
parser on chbench's own small test files (tests/perftests/, none copied from ClickHouse),
ClickHouse CI's decision rule, and whole runs on the embedded engine and a server."""

from __future__ import annotations

import json
import shutil
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from chbench.errors import UsageError
from chbench.stats.clickhouse import decide, stat_threshold
from chbench.stats.compare import SideData
from chbench.workload import PerfTestOptions, load_workload, parse_workload
from chbench.workload.formats.perftest import expand_test_paths, read_tests
from chbench.workload.sql import tables_named
from tests.conftest import (
    assert_interrupted,
    assert_one_line_error,
    interrupt,
    load,
    run_cli,
    spawn_cli,
    wait_for_results,
)

HERE = Path(__file__).parent / "perftests"
GOOD = sorted(str(p) for p in HERE.glob("*.xml"))


def parse(text: str, source: str = "/tmp/t.xml"):
    return parse_workload(text, source, "perftest")


# -- the format ------------------------------------------------------------------------------
def test_substitutions_expand_only_the_names_used_in_sorted_key_order():
    wl = load_workload([str(HERE / "subst.xml")], [])
    g = wl.groups[0]
    assert g.name == "subst" and g.threshold == 0.15
    assert g.settings == {"max_threads": "1", "max_block_size": "4096"}
    # {agg} × {rows}: keys sorted (agg before rows), the unused substitution multiplies nothing
    assert [q.sql for q in wl.queries[:6]] == [f"SELECT {a}(x) FROM pt_subst_{r} FORMAT Null"
                                               for a in ("sum", "max", "min") for r in (1000, 2000)]
    assert [q.name for q in wl.queries] == [f"subst.query{i}" for i in range(7)]
    assert wl.queries[6].sql.startswith("SELECT JSONExtractUInt('{\"b\": 4096}', 'b')")  # {{ }} are literal
    assert [s.sql for s in g.setup] == [
        "CREATE TABLE pt_subst_1000 (x UInt64) ENGINE = MergeTree ORDER BY x",
        "CREATE TABLE pt_subst_2000 (x UInt64) ENGINE = MergeTree ORDER BY x",
        "INSERT INTO pt_subst_1000 SELECT number FROM numbers(1000)",
        "INSERT INTO pt_subst_2000 SELECT number FROM numbers(2000)"]
    assert [s.origin for s in g.setup] == ["<create_query> #1"] * 2 + ["<fill_query> #1"] * 2
    assert [s.sql for s in g.cleanup] == [s.sql for s in g.teardown] == [
        "DROP TABLE IF EXISTS pt_subst_1000", "DROP TABLE IF EXISTS pt_subst_2000"]
    assert g.expanded == 7 and g.tables == [] and all(q.tables == [] for q in wl.queries)


def test_query_from_a_file_beside_the_test():
    wl = load_workload([str(HERE / "reads_file.xml")], [])
    assert [q.sql for q in wl.queries] == [f"SELECT count() FROM numbers({n}) WHERE number % 7 = 1"
                                           for n in (10000, 20000)]


def test_a_query_file_of_several_statements_and_a_settings_file():
    wl = load_workload([str(HERE / "view_file.xml")], [])
    g = wl.groups[0]
    assert g.settings == {"max_threads": "1", "max_block_size": "2000"}  # inline over the file's
    assert [q.sql for q in wl.queries] == [f"SELECT max(total), getSetting('max_block_size') FROM pt_view_{n}"
                                           for n in (10, 100)]
    assert [s.sql.splitlines()[-1].split(" AS ")[0] for s in g.setup] == ["CREATE VIEW pt_view_10",
                                                                         "CREATE VIEW pt_view_100"]
    assert [s.sql for s in g.teardown] == ["DROP VIEW IF EXISTS pt_view_10", "DROP VIEW IF EXISTS pt_view_100"]
    assert all(q.tables == [] for q in wl.queries)  # the views are the test's own


def test_a_query_file_with_two_timed_statements_is_refused(tmp_path):
    (tmp_path / "two.sql").write_text("SELECT 1; SELECT 2;")
    (tmp_path / "two.xml").write_text('<test><query file="two.sql"/></test>')
    with pytest.raises(UsageError, match=r"two.xml: <query> #1: 2 timed statements in the file"):
        load_workload([str(tmp_path / "two.xml")], [])


def test_tables_a_test_needs_but_does_not_create():
    wl = load_workload([str(HERE / "mixed_missing.xml")], [])
    assert [q.tables for q in wl.queries] == [["hits_100m_single"], [], [], [], ["nosuchdb_pt.t"]]
    assert load_workload([str(HERE / "needs_hits.xml")], []).groups[0].requires == ["hits_10m_single"]
    assert tables_named("SELECT extract(DAY FROM d), trim(BOTH ' ' FROM s) FROM t1 ARRAY JOIN a "
                        "JOIN (SELECT k FROM db.t2) USING k WHERE x IN (SELECT y FROM t3)") == ["t1", "db.t2", "t3"]
    assert tables_named("WITH c AS (SELECT 1) SELECT * FROM c JOIN numbers(3) AS n ON 1") == []
    assert tables_named("INSERT INTO TABLE t SELECT * FROM src") == ["t", "src"]


@pytest.mark.parametrize(("text", "where"), [
    ("<test><query>SELECT 1</test>", "malformed XML"),
    ("<tests><query>SELECT 1</query></tests>", "root element is <tests>"),
    ("<test><substitutions><substitution><name>n</name><values/></substitution></substitutions>"
     "<query>SELECT {n}</query></test>", "<substitution> n: no <value>"),
    ("<test><query>SELECT {n}</query></test>", "<query> #1: uses {n}, but no <substitution> is named 'n'"),
    ("<test><query>SELECT 1</query><drop_query>DROP TABLE {t}</drop_query></test>", "<drop_query> #1: uses {t}"),
    ("<test><query>SELECT '}'</query></test>", "<query> #1: Single '}'"),
    ("<test><settings><max_threads>1</max_threads></settings></test>", "<test>: no <query> element"),
    ("<test max_ignored_relative_change='x'><query>SELECT 1</query></test>", "not a number"),
    ("<test><query file='nope.sql'/></test>", "<query> #1 file='nope.sql'"),
    ("<test><settings file='nope.json'/><query>SELECT 1</query></test>", "<settings file='nope.json'>"),
    ("<test><substitutions><substitution><name>n</name><value>1</value></substitution></substitutions>"
     "<query>SELECT {n}</query></test>", "its <value>s must be inside <values>"),
])
def test_bad_input_is_one_line_naming_file_and_element(text, where):
    with pytest.raises(UsageError) as e:
        parse(text)
    assert str(e.value).startswith("/tmp/t.xml: ") and where in str(e.value) and "\n" not in str(e.value)


def test_long_tests_are_skipped_unless_asked_and_max_queries_samples_with_the_seed():
    wl = load_workload([], [], tests=[str(HERE)])
    assert {g.name: g.skip for g in wl.groups}["long_one"] == "tagged long (--long runs it)"
    assert load_workload([], [], tests=[str(HERE / "long_one.xml")],
                         test_options=PerfTestOptions(long=True)).groups[0].skip is None
    picks = [load_workload([], [], tests=[str(HERE / "subst.xml")],
                           test_options=PerfTestOptions(max_queries=3, seed=s)).groups[0] for s in (1, 1, 2)]
    assert picks[0].queries == picks[1].queries != picks[2].queries
    assert len(picks[0].queries) == 3 and len(picks[0].not_chosen) == 4 and picks[0].expanded == 7
    assert picks[0].queries == sorted(picks[0].queries, key=lambda n: int(n.rsplit("query", 1)[1]))
    only = read_tests([str(HERE / "*.xml")], "^(subst|reads)")
    assert [g.name for g in only.groups] == ["reads_file", "subst"]


def test_unreadable_files_become_groups_with_their_error_and_others_still_load():
    wl = read_tests([str(HERE / "bad"), str(HERE / "reads_file.xml")])
    errors = {g.name: g.error for g in wl.groups}
    assert errors["reads_file"] is None and len(wl.queries) == 2
    assert "malformed XML" in errors["malformed"]
    assert "<substitution> n: no <value>" in errors["no_values"]
    assert "<create_query> #1: uses {m}" in errors["unknown_name"]
    with pytest.raises(UsageError, match="no such file"):
        expand_test_paths([str(HERE / "absent.xml")])
    with pytest.raises(UsageError, match="no test name matches"):
        read_tests([str(HERE)], "^zzz")


# -- ClickHouse CI's rule ------------------------------------------------------------------------
def test_clickhouse_rule_on_known_cases():
    rng = np.random.default_rng(7)
    base = list(rng.normal(100, 1, 9))
    verdict, _, same = decide(SideData(times=base), SideData(times=list(rng.normal(100, 1, 9))), "q", None)
    assert verdict == "no change" and same.changed_threshold == 0.1 and same.unstable_threshold == 0.2
    verdict, _, slower = decide(SideData(times=base), SideData(times=list(rng.normal(130, 1, 9))), "q", None)
    assert verdict == "slower" and slower.diff == pytest.approx(0.3, abs=0.02)
    # a test's own threshold above 10% raises the bar: 30% is not enough for 0.35
    assert decide(SideData(times=base), SideData(times=list(rng.normal(130, 1, 9))), "q", 0.35)[0] == "no change"
    wild = [100.0, 300.0, 50.0, 400.0, 90.0, 250.0, 60.0]
    verdict, _, noisy = decide(SideData(times=wild), SideData(times=list(reversed(wild))), "q", None)
    assert verdict == "unstable" and noisy.stat_threshold > 0.2
    assert stat_threshold(base, base, 1) == stat_threshold(base, base, 1)  # fixed seed: same answer


# -- whole runs ------------------------------------------------------------------------------------
def _queries(doc):
    return {q["name"]: q for q in doc["queries"]}


def test_run_on_embedded_accounts_for_every_expanded_query(tmp_path):
    tests = tmp_path / "t"
    shutil.copytree(HERE, tests)
    out = tmp_path / "r.json"
    r = run_cli("run", "--tests", str(tests), str(tests / "bad"), "--iterations", "3", "--out", str(out))
    assert r.code == 2, r.stderr  # unreadable files: bad input, reported after the other tests ran
    assert "Traceback" not in r.stderr
    for line in ("test malformed: ", "test no_values: ", "test unknown_name: ",
                 "test long_one: skipped on A: tagged long",
                 "test needs_hits: skipped on A: table hits_10m_single is missing (<table_exists>)",
                 "test unknown_setting: skipped on A: setting chbench_no_such_setting unknown"):
        assert line in r.stderr, r.stderr
    doc = load(out)
    assert doc["status"] == "complete"
    q = _queries(doc)
    tests_ = {t["name"]: t for t in doc["tests"]}
    for t in tests_.values():  # every expanded query is in the file, measured or skipped with its reason
        for name in t["queries"]:
            side = q[name]["sides"]["A"]
            measured = [s for s in q[name]["samples"] if not s["warmup"] and not s["error"]]
            assert bool(measured) != bool(side.get("skipped") or side.get("failed")), (name, side)
            assert q[name]["test"] == t["name"]
    assert tests_["subst"]["expanded"] == 7 and tests_["subst"]["threshold"] == 0.15
    assert tests_["malformed"]["error"].startswith(str(tests / "bad" / "malformed.xml") + ": malformed XML")
    miss = {n: q[n]["sides"]["A"].get("skipped") for n in tests_["mixed_missing"]["queries"]}
    assert miss["mixed_missing.query0"] == "table hits_100m_single is missing"
    assert miss["mixed_missing.query1"].startswith("writes")
    assert miss["mixed_missing.query2"] is None
    assert miss["mixed_missing.query3"].startswith("missing: ") and "pt_no_such_table" in miss["mixed_missing.query3"]
    assert miss["mixed_missing.query4"] == "table nosuchdb_pt.t is missing"
    # the missing table found by the warm-up: not one timed run
    assert all(s["warmup"] for s in q["mixed_missing.query3"]["samples"])
    # the test's settings reach its queries: max_block_size=4096 (and the tables were built)
    got = q["subst.query6"]
    assert got["sides"]["A"].get("skipped") is None and not got["errors"]
    assert all(t["teardown_errors"] == [] for t in doc["tests"])


def test_side_by_side_embedded_and_server_and_both_rules(modern, tmp_path):
    out = tmp_path / "ab.json"
    files = [str(HERE / f) for f in ("subst.xml", "reads_file.xml", "fill_fails_single_thread.xml",
                                     "mixed_missing.xml")]
    r = run_cli("run", "--tests", *files, "--target", "embedded", "--target", modern.http_url,
                "--setting-b", "max_threads=1", "--iterations", "5", "--out", str(out))
    assert r.code == 1, r.stderr  # the fill failed on B
    assert "test fill_fails_single_thread: set-up failed on B: " in r.stderr
    assert "fill_fails_single_thread.xml: <fill_query> #1: " in r.stderr and "no fill single-threaded" in r.stderr
    doc = load(out)
    tests = {t["name"]: t for t in doc["tests"]}
    assert tests["fill_fails_single_thread"]["failed"]["B"]["element"] == "<fill_query> #1"
    assert "A" not in tests["fill_fails_single_thread"]["failed"]
    # set-up and tear-down ran on the server: nothing of the tests is left there
    assert _server_tables(modern.http_url) == "0"
    cmp = json.loads(run_cli("compare", str(out), "--format", "json", "--fail-on", "never").stdout)
    assert cmp["method"] == "chbench"
    rows = {x["name"]: x for x in cmp["queries"]}
    assert rows["mixed_missing.query0"]["verdict"] == "skipped"
    assert rows["fill_fails_single_thread.query0"]["verdict"] == "fails on B only"
    assert rows["fill_fails_single_thread.query0"]["reasons"] == ["B: set-up of the test failed: <fill_query> #1"]
    assert rows["subst.query0"].get("threshold") == 0.15  # the test's own threshold, above chbench's 5%
    per = {t["name"]: t for t in cmp["tests"]}
    assert per["subst"]["queries"] == 7 and sum(per["subst"]["verdicts"].values()) == 7
    assert per["reads_file"]["geomean"] is not None
    ch = json.loads(run_cli("compare", str(out), "--format", "json", "--method", "clickhouse",
                            "--fail-on", "never").stdout)
    assert ch["method"] == "clickhouse"
    decided = [x for x in ch["queries"] if "clickhouse" in x]
    assert decided and all(x["verdict"] in ("slower", "faster", "unstable", "no change") for x in decided)
    assert all(x["clickhouse"]["changed_threshold"] == 0.15 for x in decided if x["name"].startswith("subst."))
    html = tmp_path / "r.html"
    r = run_cli("compare", str(out), "--format", "html", "--method", "clickhouse", "--output", str(html),
                "--fail-on", "never")
    text = html.read_text()
    assert 'data-test="subst"' in text and 'data-method="clickhouse"' in text


def _server_tables(url: str) -> str:
    sql = "SELECT count() FROM system.tables WHERE name LIKE 'pt\\_%'"
    with urllib.request.urlopen(f"{url}/?query={urllib.parse.quote(sql)}", timeout=30) as resp:
        return resp.read().decode().strip()


def test_ctrl_c_in_a_test_keeps_the_samples_and_still_tears_down(modern, tmp_path):
    out = tmp_path / "i.json"
    proc = spawn_cli("run", "--tests", str(HERE / "subst.xml"), "--target", modern.http_url, "--iterations",
                     "100000", "--no-calibration", "--out", str(out))
    wait_for_results(out, proc, lambda d: sum(len(q["samples"]) for q in d["queries"]) > 20)
    interrupt(proc)
    doc = assert_interrupted(out)
    assert sum(len(q["samples"]) for q in doc["queries"]) > 20
    assert _server_tables(modern.http_url) == "0"  # the test's drop queries ran on the way out
    assert doc["tests"][0]["teardown_errors"] == []


def test_quiet_still_says_what_failed(tmp_path):
    r = run_cli("run", "--tests", str(HERE / "reads_file.xml"), str(HERE / "long_one.xml"), str(HERE / "bad"),
                "--iterations", "1", "--quiet", "--out", str(tmp_path / "q.json"))
    assert r.code == 2
    assert "test malformed: " in r.stderr and "test no_values: " in r.stderr  # problems: always shown
    assert "skipped" not in r.stderr  # a skip is in the file, not said when quiet
    assert load(tmp_path / "q.json")["tests"][1]["skipped"] == {"A": "tagged long (--long runs it)"}


def test_two_targets_on_one_engine_build_the_test_once(tmp_path):
    out = tmp_path / "aa.json"
    r = run_cli("run", "--tests", str(HERE / "subst.xml"), "--target", "embedded", "--target", "embedded",
                "--iterations", "2", "--quiet", "--out", str(out))
    assert r.code == 0, r.stderr
    doc = load(out)
    assert doc["tests"][0]["failed"] == {} and all(not q["errors"] for q in doc["queries"])
    # sent as written: a performance test's author adds FORMAT Null where wanted, chbench adds nothing
    assert {q["name"]: q["sql_sent"] for q in doc["queries"]}["subst.query6"].endswith("LIMIT 1")


def test_upgrade_runs_a_performance_test_and_checks_answers_before_its_tear_down(tmp_path):
    out = tmp_path / "up.json"
    r = run_cli("upgrade", "26.9", "26.9", "--tests", str(HERE / "subst.xml"), "--iterations", "3", "--quiet",
                "--out", str(out))
    assert r.code == 0, r.stderr
    doc = load(out)
    answers = doc["checks"]["answers"]
    assert len(answers) == 7 and all(a["equal"] for a in answers.values())
    assert not any("error" in a["a"] for a in answers.values())  # asked while the test's tables existed


def test_flags_for_tests_need_tests(tmp_path):
    assert_one_line_error(run_cli("run", "--long", "--out", str(tmp_path / "x.json")))
    assert_one_line_error(run_cli("run", "--tests", str(tmp_path / "absent"), "--out", str(tmp_path / "x.json")))
    r = run_cli("run", "--tests", str(HERE / "bad"), "--out", str(tmp_path / "x.json"))
    assert_one_line_error(r)  # nothing can run: bad input before anything starts
    assert "more test files that cannot be read" in r.stderr
    r = run_cli("load", "--queries", str(HERE / "subst.xml"), "-t", "1")
    assert_one_line_error(r)
    assert "chbench run --tests" in r.stderr
