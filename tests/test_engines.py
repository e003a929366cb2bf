"""ClickHouse versions on demand: the catalog, installs, embedded@VERSION workers,
server@VERSION, and chbench upgrade — on real chDB releases.

Besides chbench's own engine (26.9) these tests install one more: ClickHouse 24.8
(chdb 3.3.0, ~600 MB unpacked), into the user's engine cache, where it stays between runs;
the install test itself uses a temporary directory and pip's download cache."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from chbench.engines.catalog import load_catalog, parse_catalog
from chbench.engines.store import EngineStore, engines_dir
from chbench.errors import QueryError, ServerLost, UsageError
from chbench.targets import Credentials, make_target, parse_target_url
from tests.conftest import assert_one_line_error, load, run_cli, spawn_cli, wait_for_results

OLD = "24.8"


# -- the catalog --------------------------------------------------------------------

def test_catalog_resolves_every_spelling():
    cat = load_catalog()
    assert cat.resolve("24.8").clickhouse == "24.8.4.1"
    assert cat.resolve("24.8").api == "connect"  # the newest release with sessions, not chdb 2.1.1
    assert cat.resolve("24.8.4.1").clickhouse == "24.8.4.1"
    assert cat.resolve("23.10").clickhouse == "23.10.1.1"
    latest = cat.resolve("latest")
    newest = max((r.clickhouse for r in cat.engines()), key=lambda v: [int(x) for x in v.split(".")])
    assert latest.clickhouse == newest
    for bad in ("24", "24.8.x", "abc", "24.8.4.1.7", ""):
        with pytest.raises(UsageError, match="bad engine version"):
            cat.resolve(bad)
    with pytest.raises(UsageError, match=r"unknown ClickHouse version 24\.9: the nearest known are .*24\.8"):
        cat.resolve("24.9")
    with pytest.raises(UsageError, match="unknown ClickHouse version 24.8.9.9"):
        cat.resolve("24.8.9.9")


def test_catalog_is_data_with_its_provenance():
    doc = json.loads((Path(__file__).parent.parent / "chbench/engines/catalog.json").read_text())
    assert doc["generated_by"] == "scripts/engine_catalog.py" and "SELECT version()" in doc["method"]
    seen = {(r["package"], r["version"]): r for r in doc["releases"]}
    # facts read off the releases (../shared/SERVERS.md saw the same)
    assert seen[("chdb", "1.4.1")]["clickhouse"] == "23.10.1.1"
    assert seen[("chdb", "2.1.1")]["clickhouse"] == "24.8.4.1"
    assert seen[("chdb", "3.7.2")]["clickhouse"] == "25.8.2.1"
    assert seen[("chdb-core", "26.9.0")]["clickhouse"] == "26.9.2.1" and seen[("chdb-core", "26.9.0")]["listens"]
    assert seen[("chdb-core", "26.5.0")]["listens"] is False
    assert seen[("chdb", "4.4.0")]["engine_from"].startswith("chdb-core")  # no engine of its own
    assert all("seen" in r for r in doc["releases"])


def test_a_version_without_a_wheel_for_this_python_says_which_it_has():
    cat = parse_catalog({"releases": [
        {"package": "chdb", "version": "9.0.0", "clickhouse": "30.1.1.1", "api": "connect", "python": ["3.8", "3.9"]}]})
    with pytest.raises(UsageError, match=r"has wheels for Python 3\.8, 3\.9, not for this Python 3\.11"):
        cat.resolve("30.1", py=(3, 11))
    assert cat.resolve("30.1", py=(3, 9)).version == "9.0.0"


def test_versioned_target_urls():
    u = parse_target_url("embedded@24.8:/tmp/dir")
    assert (u.kind.scheme, u.version, u.path) == ("embedded@", "24.8", "/tmp/dir")
    assert u.display() == "embedded@24.8:/tmp/dir"
    assert parse_target_url("server@latest").version == "latest"
    with pytest.raises(UsageError, match="names no version"):
        parse_target_url("embedded@")


@pytest.mark.parametrize("args,match", [
    (("engines", "install", "24.9"), "unknown ClickHouse version 24.9"),
    (("engines", "install", "24"), "bad engine version"),
    (("engines", "path", "23.6"), "is not installed"),
    (("engines", "remove", "26.9"), "chbench's own chDB engine"),
    (("engines", "install"), "needs at least one VERSION"),
    (("run", "--target", "embedded@99.1", "--query", "SELECT 1"), "unknown ClickHouse version 99.1"),
    (("run", "--target", "server@24.8", "--query", "SELECT 1"), "cannot serve HTTP .* use embedded@24.8"),
    (("upgrade", "24.8", "nope"), "bad engine version 'nope'"),
])
def test_bad_versions_are_one_line(args, match, tmp_path, old_engine):
    # "path" of a version not installed: an empty engines dir (the user's may hold any version)
    where = tmp_path if args[:2] == ("engines", "path") else engines_dir()
    r = run_cli(*args, env={"CHBENCH_ENGINES_DIR": str(where)})
    assert_one_line_error(r)
    import re
    assert re.search(match, r.stderr), r.stderr


# -- installs ---------------------------------------------------------------------------

def test_install_list_path_offline_reuse_and_remove(tmp_path):
    env = {"CHBENCH_ENGINES_DIR": str(tmp_path / "engines")}
    (tmp_path / "engines" / ".partial-24.8.4.1-999999").mkdir(parents=True)  # an install killed half-way
    listed = run_cli("engines", "list", "--format", "json", env=env).json()
    by = {e["clickhouse"]: e for e in listed["engines"]}
    assert by["26.9.2.1"]["installed"] and by["26.9.2.1"]["own"]  # chbench's own chDB
    assert not by["24.8.4.1"]["installed"]  # the half-finished install does not count …
    assert not (tmp_path / "engines" / ".partial-24.8.4.1-999999").exists()  # … and is cleaned away
    r = run_cli("engines", "install", OLD, env=env, timeout=600)
    assert r.code == 0, r.stderr
    assert "installing ClickHouse 24.8.4.1 (chdb==3.3.0" in r.stderr and "installed, " in r.stdout
    meta = json.loads((tmp_path / "engines" / "24.8.4.1" / "engine.json").read_text())
    assert meta["package"] == "chdb" and meta["version"] == "3.3.0" and meta["bytes"] > 100e6
    assert "installed already" in run_cli("engines", "install", "24.8.4.1", env=env).stdout
    path = run_cli("engines", "path", OLD, env=env).stdout.strip()
    assert path == str(tmp_path / "engines" / "24.8.4.1" / "site") and (Path(path) / "chdb").is_dir()
    # offline: nothing is fetched once installed (pip would fail without an index)
    offline = {**env, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": "", "PIP_INDEX_URL": "http://127.0.0.1:9/"}
    r = run_cli("run", "--target", f"embedded@{OLD}", "--query", "SELECT version()", "--iterations", "2",
                "--out", str(tmp_path / "v.json"), "--no-calibration", env=offline)
    assert r.code == 0, r.stderr
    assert load(tmp_path / "v.json")["targets"][0]["server_version"] == "24.8.4.1"
    listed = run_cli("engines", "list", "--format", "json", env=env).json()
    assert {e["clickhouse"]: e for e in listed["engines"]}["24.8.4.1"]["installed"]
    r = run_cli("engines", "remove", OLD, env=env)
    assert r.code == 0 and "removed" in r.stdout
    assert not (tmp_path / "engines" / "24.8.4.1").exists()


def test_a_failed_install_leaves_nothing_installed(tmp_path):
    cat = parse_catalog({"releases": [
        {"package": "chdb", "version": "0.0.0", "clickhouse": "1.1.1.1", "api": "connect", "python": ["3.11"]}]})
    store = EngineStore(tmp_path, cat)
    from chbench.engines.store import InstallFailed

    with pytest.raises(InstallFailed, match=r"installing chdb==0\.0\.0 failed"):
        store.install(cat.resolve("1.1", py=(3, 11)), progress=False)
    assert list(tmp_path.iterdir()) == [] and store.find(cat.releases[0]) is None


# -- embedded@VERSION -------------------------------------------------------------------

def test_worker_target_measures_like_the_embedded_one(old_engine):
    t = make_target(f"embedded@{OLD}", Credentials())
    try:
        info = t.connect()
        assert info.version == old_engine and "worker process" in info.notes[0]
        s = t.execute("SELECT sum(number) FROM numbers(1000000) FORMAT Null", {"max_threads": "1"}, "q", None)
        assert s.client_ms is not None and s.server_ms is not None and s.client_ms >= s.server_ms > 0
        assert s.result_rows is not None
        with pytest.raises(QueryError) as e:
            t.execute("SELECT nosuchfunction(1)", {}, "q", None)
        assert e.value.code == 46
        _, result = t.fetch("SELECT toTypeName(if(1, 1, -1)) AS t, getSetting('max_threads') AS m",
                            {"max_threads": "1"}, "q", None)
        assert result.rows == [["Int16", "1"]]  # answers from 24.8's engine, with the session's settings
        t.statement("CREATE TABLE t (x UInt32) ENGINE = MergeTree ORDER BY x", {})
        t.statement("INSERT INTO t SELECT number FROM numbers(10)", {})
        assert t.query_rows("SELECT count() FROM t") == [["10"]]
    finally:
        t.close()


def test_timeout_kills_the_worker_and_the_next_query_gets_a_fresh_one():
    t = make_target("embedded@26.9", Credentials())
    try:
        t.connect()
        t.statement("CREATE TABLE kept (x UInt8) ENGINE = MergeTree ORDER BY x", {})
        t.statement("INSERT INTO kept VALUES (1)", {})
        first = t.pid
        started = time.monotonic()
        with pytest.raises(QueryError) as e:  # no max_execution_time here: the worker is killed
            t.execute("SELECT sum(cityHash64(number)) FROM numbers(100000000000) FORMAT Null", {}, "q", 1.0)
        assert e.value.code == 159 and time.monotonic() - started < 10
        assert t.query_rows("SELECT count() FROM kept") == [["1"]]  # same data, new process
        assert t.pid != first
    finally:
        t.close()


def test_after_a_timeout_the_fresh_worker_gets_every_setting_again_and_lost_memory_tables_are_said():
    t = make_target("embedded@26.9", Credentials())
    slow = "SELECT sum(cityHash64(number)) FROM numbers(100000000000) FORMAT Null"
    try:
        t.connect()
        t.execute("SELECT 1", {"max_threads": "3"}, "a", 10.0)
        with pytest.raises(QueryError):
            t.execute(slow, {"max_threads": "3"}, "b", 1.0)
        t.execute("SELECT 1", {"max_threads": "3"}, "c", 10.0)  # the fresh process, told max_threads again
        assert t.query_rows("SELECT getSetting('max_threads')") == [["3"]]
        t.statement("CREATE TABLE held (x UInt8) ENGINE = Memory", {})
        t.statement("INSERT INTO held VALUES (1)", {})
        with pytest.raises(QueryError):
            t.execute(slow, {}, "d", 1.0)
        with pytest.raises(ServerLost, match="the rows of default.held were lost"):
            t.execute("SELECT count() FROM held", {}, "e", 10.0)
    finally:
        t.close()


def test_a_session_keeps_the_process_while_a_memory_table_holds_rows():
    """run --sessions on an engine whose tables hold their rows in its process: a new one
    would measure them empty, so the process stays and the file says why."""
    t = make_target("embedded@26.9", Credentials())
    try:
        t.connect()
        t.statement("CREATE TABLE held (x UInt8) ENGINE = Memory", {})
        t.statement("INSERT INTO held VALUES (1)", {})
        first = t.pid
        note = t.new_session()
        assert note is not None and "default.held" in note and t.pid == first and t.keeps_compiled_code()
        assert t.query_rows("SELECT count() FROM held") == [["1"]]
    finally:
        t.close()


def test_run_sessions_with_a_memory_table_set_up_keep_its_rows(tmp_path):
    script, out = tmp_path / "mem.sql", tmp_path / "m.json"
    script.write_text("-- setup\nCREATE TABLE t (x UInt64) ENGINE = Memory;\n-- setup\n"
                      "INSERT INTO t SELECT number FROM numbers(1000);\n-- name: rows\nSELECT count() FROM t;\n")
    r = run_cli("run", "--queries", str(script), "--sessions", "2", "--session-gap", "0", "--iterations", "2",
                "--warmup", "0", "--no-probes", "--quiet", "--out", str(out))
    assert r.code == 0, r.stderr
    doc = load(out)
    assert doc["targets"][0]["url"].startswith("embedded@26.9")
    assert any("kept one process for all sessions: the rows of default.t" in n for n in doc["meta"]["notes"])
    assert {s["session"] for s in doc["queries"][0]["samples"]} == {0, 1}


def test_a_session_reconnect_starts_a_fresh_worker_process():
    """What `run --sessions N` does between sessions (runner._next_session: close, then
    connect): a new process, so a level a process gives one query for its life is in the
    sessions' spread (docs/run.md); the in-process engine cannot do this."""
    t = make_target("embedded@26.9", Credentials())
    try:
        t.connect()
        assert t.query_rows("SELECT 1") == [["1"]]
        first = t.pid
        assert t.new_session() is None
        assert t.query_rows("SELECT 1") == [["1"]] and t.pid != first
        assert not t.keeps_compiled_code()  # its JIT starts empty: warmed up as the first session was
    finally:
        t.close()


def test_every_session_in_a_new_process_is_warmed_up_past_the_jit(tmp_path):
    """Warmed up once, a new process's first timed runs were still compiling and its
    session stood above the first one's level (runner._warmup_runs; docs/run.md)."""
    out = tmp_path / "s.json"
    r = run_cli("run", "--query", "SELECT sum(number * 3) FROM numbers(1000)", "--sessions", "2", "--session-gap",
                "0", "--iterations", "2", "--no-probes", "--no-calibration", "--quiet", "--out", str(out))
    assert r.code == 0, r.stderr
    doc = load(out)
    warm = [sum(1 for s in doc["queries"][0]["samples"] if s["warmup"] and s["session"] == k) for k in (0, 1)]
    assert warm[0] == doc["meta"]["warmup_runs"]["A"] > 1 and warm[1] == warm[0]


def test_sessions_put_the_in_process_engine_in_a_worker_and_leave_other_targets_alone(tmp_path):
    from chbench.targets.engine import EngineTarget, process_per_session

    moved = process_per_session(make_target(f"embedded:{tmp_path}", Credentials()))
    assert isinstance(moved, EngineTarget) and moved.url.startswith("embedded@26.9") and moved.path == str(tmp_path)
    for spec in ("embedded@26.9", "http://127.0.0.1:1"):
        kept = make_target(spec, Credentials())
        assert process_per_session(kept) is kept


def test_a_killed_engine_process_is_a_lost_target_and_keeps_the_results(tmp_path):
    out = tmp_path / "lost.json"
    proc = spawn_cli("run", "--target", "embedded@26.9", "--query", "SELECT sleep(0.2)", "--iterations", "200",
                     "--no-calibration", "--out", str(out))
    try:
        wait_for_results(out, proc, lambda d: len(d["queries"][0]["samples"]) >= 3)
        workers = [c for c in psutil.Process(proc.pid).children(recursive=True)
                   if any("child.py" in part for part in c.cmdline())]
        assert len(workers) == 1
        workers[0].kill()
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 3, err
    assert "engine process lost (killed by signal 9)" in err and "Traceback" not in err
    doc = load(out)
    assert doc["status"] == "server_lost" and len(doc["queries"][0]["samples"]) >= 3


def test_worker_lost_mid_query_raises_server_lost():
    t = make_target("embedded@26.9", Credentials())
    try:
        t.connect()
        assert t.pid is not None
        os.kill(t.pid, 9)
        with pytest.raises(ServerLost, match="engine process lost"):
            t.execute("SELECT 1", {}, "q", None)
    finally:
        t.close()


# -- server@VERSION -----------------------------------------------------------------------

def _servers_of(pid: int) -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["cmdline"])
            if "chdb._chdb" in " ".join(p.info["cmdline"] or []) and p.pid != pid]


def test_server_version_serves_load_and_is_stopped_after(tmp_path):
    before = {p.pid for p in _servers_of(os.getpid())}  # the session's test servers
    out = tmp_path / "load.json"
    r = run_cli("load", "--target", "server@26.9", "--query", "SELECT 1", "-c", "4", "-t", "2", "--workers", "2",
                "--out", str(out))
    assert r.code == 0, r.stderr
    doc = load(out)
    assert doc["targets"][0]["server_version"] == "26.9.2.1" and doc["targets"][0]["label"] == "server@26.9"
    level = doc["levels"][0]
    assert level["workers"] == 2 and level["total"]["queries"] > 100 and level["total"]["errors"] == 0
    time.sleep(0.5)
    assert {p.pid for p in _servers_of(os.getpid())} - before == set()  # nothing left behind


# -- chbench upgrade -----------------------------------------------------------------------

QUERIES = """\
-- name: sums
SELECT sum(number) FROM numbers(2000000);
-- name: tuple_names
SELECT toTypeName(tuple(number AS x)) FROM numbers(1);
-- name: join_plan
SELECT count() FROM numbers(100000) AS a INNER JOIN (SELECT number * 3 AS number FROM numbers(10000)) AS b
  ON a.number = b.number;
-- name: snowflake
-- settings: allow_deprecated_snowflake_conversion_functions=1
SELECT dateTimeToSnowflake(toDateTime('2021-08-15 18:57:56', 'UTC'));
"""


def test_upgrade_finds_answers_plans_settings_and_failures(tmp_path, old_engine):
    q = tmp_path / "q.sql"
    q.write_text(QUERIES)
    out, html = tmp_path / "up.json", tmp_path / "up.html"
    r = run_cli("upgrade", OLD, "26.9", "--queries", str(q), "--iterations", "3", "--out", str(out),
                "--html", str(html), timeout=400)
    assert r.code == 1, r.stderr
    assert "1 answer changed, 1 fails on B only" in r.stderr
    doc = load(out)
    assert [t["server_version"] for t in doc["targets"]] == [old_engine, "26.9.2.1"]
    cmp = run_cli("compare", str(out), "--format", "json")
    assert cmp.code == 1
    rows = cmp.json()["queries"]
    by = {row["name"]: row for row in rows}
    # 24.8 names the tuple's element, 26.9 does not (enable_named_columns_in_function_tuple)
    assert rows[0]["name"] == "tuple_names" and rows[0]["verdict"] == "answer changed"
    assert by["tuple_names"]["answers"]["equal"] is False
    assert by["tuple_names"]["answers"]["a"]["rows"] == by["tuple_names"]["answers"]["b"]["rows"] == 1
    assert by["snowflake"]["verdict"] == "fails on B only"  # the function is gone in 26.9
    assert by["sums"]["answers"]["equal"] is True and by["sums"]["verdict"] in ("no change", "unstable", "faster",
                                                                                 "slower")
    assert by["join_plan"]["plan_changed"] is True  # 26.9 adds a runtime filter to the join
    assert by["sums"]["plan_changed"] is False
    plans = doc["checks"]["plans"]["join_plan"]
    assert "Join" in plans["a"]["plan"] and "BuildRuntimeFilter" in plans["b"]["plan"]
    changed = {s["name"]: s for s in doc["checks"]["settings"]["changed_defaults"]}
    assert changed["enable_named_columns_in_function_tuple"]["a"] == "1"
    assert changed["enable_named_columns_in_function_tuple"]["b"] == "0"
    assert doc["checks"]["settings"]["only_in_b"] > 500  # 26.9 knows many settings 24.8 did not
    text = html.read_text()
    assert "answer changed" in text and "BuildRuntimeFilter" in text


def test_upgrade_aa_answers_equal(tmp_path):
    out = tmp_path / "aa.json"
    r = run_cli("upgrade", "26.9", "26.9", "--scale", "0.05", "--iterations", "3", "--out", str(out), "--quiet",
                timeout=400)
    doc = load(out)
    answers = doc["checks"]["answers"]
    assert len(answers) == 10
    # quantiles() varies with thread scheduling: compared single-threaded when two asks with
    # threads differ (most runs; now and then the threads finish in the same order twice)
    assert all(a["equal"] is True for a in answers.values()), {k: a["equal"] for k, a in answers.items()}
    q = answers["quantiles"]["a"]
    assert q["stable"] is True and q.get("settings", {"max_threads": "1"}) == {"max_threads": "1"}
    assert not any(p["changed"] for p in doc["checks"]["plans"].values())
    assert doc["checks"]["settings"]["changed_defaults"] == []
    assert r.code in (0, 1), r.stderr  # speed verdicts of a short run may flag; answers never differ
    # 3 rounds decide no speed: said before the run, and not summed up as "nothing slower"
    assert "chbench: warning: 3 rounds: a side-by-side speed verdict needs 6 or more" in r.stderr
    assert "3 rounds: a side-by-side" in doc["meta"]["notes"][0]
    if r.code == 0:
        assert "queries unstable (not decided" in r.stderr.strip().splitlines()[-1], r.stderr


def test_upgrade_clickbench_builds_equal_data(tmp_path, old_engine):
    out = tmp_path / "cb.json"
    r = run_cli("upgrade", OLD, "26.9", "--suite", "clickbench", "--rows", "5000", "--iterations", "2",
                "--out", str(out), "--quiet", timeout=400)
    doc = load(out)
    data = doc["checks"]["data"]
    assert data["equal"] is True and data["a"][0][0] == "5000", data
    answers = doc["checks"]["answers"]
    assert len(answers) == 43
    assert answers["Q17"]["equal"] is None  # LIMIT without ORDER BY: not compared
    assert sum(1 for a in answers.values() if a["equal"] is True) >= 40
    assert r.code in (0, 1) and "Traceback" not in r.stderr


def test_upgrade_file_reads_in_report_and_compare(tmp_path):
    out = tmp_path / "aa.json"
    r = run_cli("upgrade", "26.9", "26.9", "--scale", "0.02", "--iterations", "2", "--out", str(out), "--quiet",
                timeout=400)
    assert "Traceback" not in r.stderr
    md = tmp_path / "r.md"
    rep = run_cli("report", str(out), "--markdown", str(md))
    assert rep.code == 0, rep.stderr
    assert "aggregation" in md.read_text()


def test_catalog_script_reads_a_release(tmp_path):
    """The script that regenerates the catalog, on one small release."""
    shutil.copy(Path(__file__).parent.parent / "chbench/engines/catalog.json", tmp_path / "c.json")
    p = subprocess.run([sys.executable, "scripts/engine_catalog.py", "--only", "chdb==4.4.0", "--out",
                        str(tmp_path / "c.json")], cwd=Path(__file__).parent.parent, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp_path / "c.json").read_text())
    entry = next(r for r in doc["releases"] if r["package"] == "chdb" and r["version"] == "4.4.0")
    assert entry["engine_from"].startswith("chdb-core") and entry["seen"]["on"].startswith("Python 3.")


def test_server_version_serves_ingest_on_both_protocols(tmp_path):
    out = tmp_path / "ingest.json"
    r = run_cli("ingest", "--target", "server@26.9", "--rows", "50000", "--paths", "http-batches,driver-columns",
                "--out", str(out))
    assert r.code == 0, r.stderr
    doc = load(out)
    paths = {p["name"]: p for p in doc["result"]["paths"]}
    assert set(paths) == {"http-batches", "driver-columns"}
    assert all(p["status"] == "ok" and p["row_count"] == 50000 for p in paths.values()), paths


def test_a_worker_engine_refuses_concurrent_load():
    r = run_cli("load", "--target", "embedded@26.9", "-c", "2", "--query", "SELECT 1", "-t", "1")
    assert_one_line_error(r)
    assert "server@VERSION" in r.stderr
    r = run_cli("load", "--target", "embedded@26.9", "--query", "SELECT 1", "-t", "1")
    assert r.code == 0, r.stderr
