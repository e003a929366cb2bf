"""``chbench run`` end to end through the real command line, on real engines."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import (
    PASSWORD,
    assert_interrupted,
    assert_one_line_error,
    interrupt,
    load,
    run_cli,
    spawn_cli,
    wait_for_results,
)
from tests.engines import ModernServer

FAST = ["--scale", "0.02", "--iterations", "3", "--warmup", "0", "--quiet"]


def samples(doc, name=None, target=None):
    return [
        s
        for q in doc["queries"]
        if name is None or q["name"] == name
        for s in q["samples"]
        if not s["warmup"] and (target is None or s["target"] == target)
    ]


def test_default_suite_on_embedded_engine(tmp_path):
    out = tmp_path / "r.json"
    # --quiet-wait 0: a round set aside on a busy CI machine would add samples to the count below
    r = run_cli("run", "--out", str(out), "--scale", "0.02", "--iterations", "3", "--quiet-wait", "0")
    assert r.code == 0, r.stderr
    doc = load(out)
    assert doc["schema"] == {"name": "chbench.results", "version": 1}
    assert doc["status"] == "complete"
    assert [q["name"] for q in doc["queries"]][:3] == ["aggregation", "group_by_small", "group_by_large"]
    assert len(doc["queries"]) == 10
    t = doc["targets"][0]
    assert t["kind"] == "embedded" and t["server_version"].startswith("26.")
    assert t["settings_sent"]["use_query_cache"] == "0" and t["settings_sent"]["readonly"] == "2"
    meta = doc["meta"]
    assert meta["tool"]["name"] == "chbench" and meta["host"]["cpu_count"] >= 1 and meta["host"]["python"]
    for q in doc["queries"]:
        assert q["sql_sent"].endswith("\nFORMAT Null")
        runs = [s for s in q["samples"] if not s["warmup"]]
        assert len(runs) == 3 and all(s["error"] is None and s["client_ms"] > 0 for s in runs)
        assert all(s["server_ms"] is not None and s["query_id"] for s in runs)
        # the default warm-up reads the engine's JIT settings: compiled on the 4th use
        assert sum(1 for s in q["samples"] if s["warmup"]) == 4
    assert meta["warmup_runs"] == {"A": 4} and meta["options"]["warmup"] is None
    # between rounds at most every 0.5 s while it has fewer than 5; the rest after the last
    # round; warmed up past the JIT's compile before the first
    cal = doc["calibration"][0]["samples"]
    measured = [s for s in cal if not s["warmup"]]
    assert len(measured) == 5 and {s["round"] for s in measured} <= {0, 1, 2, 3}
    assert [s["warmup"] for s in cal[:4]] == [True] * 4 and len(cal) == 9
    assert "aggregation" in r.stdout  # the summary table


def test_queries_file_names_format_stripping_and_read_only(tmp_path):
    qf = tmp_path / "q.sql"
    qf.write_text(
        "-- name: small\nSELECT count() FROM numbers(1000) FORMAT JSON;\n"
        "-- name: writer\nCREATE TABLE chbench_should_not_exist (x UInt8) ENGINE = Memory;\n"
    )
    out = tmp_path / "r.json"
    r = run_cli("run", "--queries", str(qf), "--out", str(out), *FAST)
    assert r.code == 1, r.stderr  # a query failed: recorded, run finished, non-zero exit
    doc = load(out)
    by = {q["name"]: q for q in doc["queries"]}
    assert by["small"]["sql_sent"] == "SELECT count() FROM numbers(1000)\nFORMAT Null"
    assert by["small"]["errors"] == 0
    errs = [s["error"] for s in samples(doc, "writer")]
    assert errs and all(e["code"] == 164 for e in errs)  # READONLY: the refusal is the error
    assert doc["status"] == "complete"
    assert "writer" in r.stderr


def test_stdin_and_repeated_query_flags(tmp_path):
    out = tmp_path / "r.json"
    r = run_cli("run", "--queries", "-", "--query", "SELECT 2", "-q", "SELECT 3", "--out", str(out), *FAST,
                stdin="SELECT 1\n")
    assert r.code == 0, r.stderr
    assert [q["sql"] for q in load(out)["queries"]] == ["SELECT 1", "SELECT 2", "SELECT 3"]


def test_side_by_side_settings_ab_alternates(tmp_path):
    out = tmp_path / "ab.json"
    r = run_cli("run", "--query", "SELECT sum(number) FROM numbers_mt(2000000)", "--setting-b", "max_threads=1",
                "--out", str(out), "--iterations", "4", "--warmup", "0", "--quiet")
    assert r.code == 0, r.stderr
    doc = load(out)
    assert [t["id"] for t in doc["targets"]] == ["A", "B"]
    assert doc["targets"][1]["settings_sent"]["max_threads"] == "1"
    assert "max_threads" not in doc["targets"][0]["settings_sent"]
    order = [s["target"] for s in samples(doc)]
    assert order == ["A", "B", "B", "A", "A", "B", "B", "A"]
    cmp_ = run_cli("compare", str(out), "--format", "json")
    assert cmp_.code in (0, 1) and cmp_.json()["queries"][0]["b"]["runs"] == 4


def test_scale_b_side_by_side_matches_by_name(tmp_path):
    out = tmp_path / "s.json"
    r = run_cli("run", "--scale", "0.01", "--scale-b", "0.02", "--iterations", "2", "--warmup", "0", "--quiet",
                "--out", str(out))
    assert r.code == 0, r.stderr
    q = load(out)["queries"][0]
    assert "numbers_mt(1500000)" in q["sides"]["A"]["sql"] and "numbers_mt(3000000)" in q["sides"]["B"]["sql"]


def test_two_targets_http_and_native(modern, tmp_path):
    out = tmp_path / "t.json"
    r = run_cli("run", "--target", modern.http_url, "--target", modern.native_url, "--query",
                "SELECT count() FROM numbers_mt(1000000)", "--iterations", "3", "--warmup", "0", "--quiet",
                "--out", str(out))
    assert r.code == 0, r.stderr
    doc = load(out)
    assert [t["kind"] for t in doc["targets"]] == ["http", "native"]
    assert all(s["server_ms"] is not None for s in samples(doc))


def test_legacy_server_probe_unsupported_settings_and_missing_functions(legacy, modern, tmp_path):
    out = tmp_path / "l.json"
    r = run_cli("run", "--target", f"http://127.0.0.1:{legacy.http_port}", "--out", str(out), *FAST,
                "--server-metrics")
    assert r.code == 1, r.stderr  # two functions 18.16 lacks fail, per query
    assert "Traceback" not in r.stderr
    doc = load(out)
    t = doc["targets"][0]
    assert t["server_version"] == "18.16.1"
    assert "use_query_cache" in t["unsupported_settings"] and "use_query_cache" not in t["settings_sent"]
    by = {q["name"]: q for q in doc["queries"]}
    # no numbers_mt() on 18.16: the suite reads numbers() there, and says so
    assert all("numbers_mt(" not in q["sql"] for q in doc["queries"])
    assert any("no numbers_mt() on A (18.16.1)" in n for n in doc["meta"]["notes"])
    assert "rows from numbers()" in t["workload"]["source"]
    assert {n for n, q in by.items() if q["errors"]} == {"hashing", "math"}  # xxHash64, log1p: not in 18.16
    assert all(s["error"]["code"] == 46 for s in samples(doc, "math"))  # unknown function
    for name in ("aggregation", "join"):
        ok = samples(doc, name)
        assert ok and all(s["error"] is None for s in ok)
        assert all(s["server_metrics"]["profile_events"]["RealTimeMicroseconds"] > 0 for s in ok)
        assert all(s["server_ms"] is not None for s in ok)  # from query_log: 18.16 has no summary header

    # side by side with a server that has numbers_mt(): both sides run the same SQL
    out2 = tmp_path / "l2.json"
    r = run_cli("run", "--target", f"http://127.0.0.1:{legacy.http_port}", "--target", modern.http_url,
                "--out", str(out2), *FAST, "--query", "SELECT 1")  # --query: not the suite, nothing changes
    assert r.code == 0, r.stderr
    assert not any("numbers_mt" in n for n in load(out2)["meta"].get("notes", []))
    out3 = tmp_path / "l3.json"
    r = run_cli("run", "--target", modern.http_url, "--target", f"http://127.0.0.1:{legacy.http_port}",
                "--out", str(out3), *FAST)
    doc = load(out3)
    assert any("no numbers_mt() on B (18.16.1)" in n for n in doc["meta"]["notes"])
    agg = next(q for q in doc["queries"] if q["name"] == "aggregation")
    assert "FROM numbers(" in agg["sides"]["A"]["sql"] and agg["sides"]["A"]["sql"] == agg["sides"]["B"]["sql"]
    assert all(s["error"] is None for s in samples(doc, "aggregation"))


def test_timeout_is_an_error_sample_and_run_goes_on(modern, tmp_path):
    out = tmp_path / "t.json"
    r = run_cli("run", "--target", modern.http_url, "--query", "SELECT sleep(3)", "--query", "SELECT 1",
                "--timeout", "1", "--iterations", "2", "--warmup", "0", "--quiet", "--out", str(out))
    assert r.code == 1
    doc = load(out)
    slow, fast = doc["queries"]
    assert all(s["error"]["code"] == 159 for s in samples(doc, slow["name"]))
    assert all(s["error"] is None for s in samples(doc, fast["name"]))
    assert doc["targets"][0]["settings_sent"]["max_execution_time"] == "1"


def test_a_timeout_under_a_second_stops_an_embedded_query(tmp_path):
    """The embedded engine cannot stop a query from outside: max_execution_time must carry
    the fraction (it went out as 1, and sleep(0.5) was a success)."""
    out = tmp_path / "t.json"
    r = run_cli("run", "--query", "SELECT sleep(0.5)", "--timeout", "0.2", "--iterations", "2", "--warmup", "0",
                "--quiet", "--out", str(out))
    assert r.code == 1
    doc = load(out)
    assert [s["error"]["code"] for s in samples(doc, doc["queries"][0]["name"])] == [159, 159]
    assert doc["targets"][0]["settings_sent"]["max_execution_time"] == "0.2"


def test_password_from_env_and_file_never_stored(legacy, tmp_path):
    out = tmp_path / "p.json"
    url = f"http://bench@127.0.0.1:{legacy.http_port}"
    r = run_cli("run", "--target", url, "--query", "SELECT 1", "--out", str(out), *FAST,
                env={"CLICKHOUSE_PASSWORD": PASSWORD})
    assert r.code == 0, r.stderr
    pw = tmp_path / "pw"
    pw.write_text(PASSWORD + "\n")
    r2 = run_cli("run", "--target", url, "--query", "SELECT 1", "--out", str(out), "--password-file", str(pw), *FAST)
    assert r2.code == 0, r2.stderr
    r3 = run_cli("run", "--target", url, "--query", "SELECT 1", "--out", str(out), "--password", PASSWORD, *FAST)
    assert r3.code == 0 and "process list" in r3.stderr
    text = out.read_text()
    assert PASSWORD not in text and PASSWORD not in r.stderr + r2.stderr + r3.stderr + r3.stdout
    assert "***" in json.dumps(load(out)["meta"]["command"])


def _spawn(args: list[str]) -> subprocess.Popen[str]:
    return spawn_cli(*args)


def _wait_for_samples(out: Path, proc: subprocess.Popen[str], n: int, timeout: float = 60) -> None:
    wait_for_results(out, proc, lambda doc: len(samples(doc)) >= n, timeout)


def test_ctrl_c_keeps_everything_measured(modern, tmp_path):
    out = tmp_path / "c.json"
    proc = _spawn(["run", "--target", modern.http_url, "--query", "SELECT sleep(0.2)", "--iterations", "500",
                   "--warmup", "0", "--out", str(out)])
    _wait_for_samples(out, proc, 4)
    err = interrupt(proc)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err
    doc = assert_interrupted(out)
    assert len(samples(doc)) >= 4


@pytest.mark.parametrize("kind", ["native", "http"])
def test_killed_server_mid_run_leaves_valid_results(tmp_path, kind):
    server = ModernServer()
    try:
        out = tmp_path / "k.json"
        url = server.native_url if kind == "native" else server.http_url
        proc = _spawn(["run", "--target", url, "--query", "SELECT sleep(0.2)", "--iterations",
                       "500", "--warmup", "0", "--out", str(out)])
        _wait_for_samples(out, proc, 3)
        server.kill()
        _, err = proc.communicate(timeout=60)
    finally:
        server.stop()
    assert proc.returncode == 3, err
    assert "Traceback" not in err and "stopped answering" in err
    doc = load(out)
    assert doc["status"] == "server_lost" and len([s for s in samples(doc) if not s["error"]]) >= 3


@pytest.mark.parametrize(
    "args,needle",
    [
        (["run", "--target", "mysql://x"], "unknown target scheme"),
        (["run", "--iterations", "0"], "must be a positive number"),
        (["run", "--iterations", "-3"], "must be a positive number"),
        (["run", "--queries", "/nonexistent/q.sql"], "query file not found"),
        (["frobnicate"], "invalid choice"),
        (["run", "--setting", "novalue"], "is not name=value"),
    ],
)
def test_bad_input_one_line_exit_2(args, needle, tmp_path):
    r = run_cli(*args, "--out", str(tmp_path / "x.json")) if args[0] == "run" else run_cli(*args)
    assert_one_line_error(r)
    assert needle in r.stderr


@pytest.mark.parametrize("content,needle", [("", "empty query file"), ("SELECT 'x", "unterminated"),
                                            ("-- nothing\n", "no query found")])
def test_bad_query_files(tmp_path, content, needle):
    qf = tmp_path / "q.sql"
    qf.write_text(content)
    r = run_cli("run", "--queries", str(qf), "--out", str(tmp_path / "x.json"))
    assert_one_line_error(r)
    assert needle in r.stderr
    assert not (tmp_path / "x.json").exists()


def test_unreachable_server_and_wrong_password(legacy, tmp_path):
    from tests.engines import free_port

    r = run_cli("run", "--target", f"http://127.0.0.1:{free_port()}", "--out", str(tmp_path / "x.json"))
    assert_one_line_error(r)
    assert "cannot connect" in r.stderr
    r = run_cli("run", "--target", f"clickhouse://bench@127.0.0.1:{legacy.tcp_port}", "--out",
                str(tmp_path / "x.json"), env={"CLICKHOUSE_PASSWORD": "not-it"})
    assert_one_line_error(r)
    assert "authentication failed" in r.stderr and "not-it" not in r.stderr


def test_syntax_error_query_is_recorded(tmp_path):
    out = tmp_path / "s.json"
    r = run_cli("run", "--query", "SELEC 1", "--query", "SELECT 1", "--out", str(out), *FAST)
    assert r.code == 1 and "Traceback" not in r.stderr
    doc = load(out)
    assert doc["queries"][0]["errors"] >= 1 and samples(doc)[0]["error"]["code"] == 62
    assert doc["queries"][1]["errors"] == 0


def test_results_file_permissions_follow_umask(tmp_path):
    out = tmp_path / "p.json"
    assert run_cli("run", "--query", "SELECT 1", "--out", str(out), *FAST).code == 0
    assert oct(os.stat(out).st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


def test_query_dash_reads_stdin(tmp_path):
    out = tmp_path / "r.json"
    r = run_cli("run", "--query", "-", "--out", str(out), *FAST, stdin="-- name: one\nSELECT 1;\nSELECT 2;\n")
    assert r.code == 0, r.stderr
    assert [q["name"] for q in load(out)["queries"]][0] == "one"
    r2 = run_cli("run", "--query", "-", "--queries", "-", "--out", str(out), stdin="SELECT 1")
    assert_one_line_error(r2)


def test_live_progress_on_a_terminal(tmp_path):
    """The rich live view (used when stderr is a terminal) draws the queries as they run."""
    import io

    from rich.console import Console

    from chbench.plan import Plan, SidePlan
    from chbench.runner import run_plan
    from chbench.targets import Credentials, make_target
    from chbench.ui.progress import LiveProgress
    from chbench.workload import parse_workload

    buf = io.StringIO()
    progress = LiveProgress()
    progress.console = Console(file=buf, force_terminal=True, width=120)
    target = make_target("embedded", Credentials())
    plan = Plan(sides=[SidePlan("A", target, parse_workload("-- name: live_q\nSELECT 1"))], warmup=0, iterations=3)
    outcome = run_plan(plan, str(tmp_path / "live.json"), progress)
    assert outcome.exit_code == 0
    text = buf.getvalue()
    assert "live_q" in text and "done" in text and "3 runs" in text


def test_server_metrics_on_the_modern_server_and_the_embedded_engine(modern, tmp_path):
    out = tmp_path / "m.json"
    r = run_cli("run", "--target", modern.native_url, "--query", "SELECT count() FROM numbers_mt(2000000)",
                "--server-metrics", "--out", str(out), *FAST)
    assert r.code == 0, r.stderr
    runs = samples(load(out))
    assert all(s["server_metrics"]["profile_events"]["SelectedRows"] == 2_000_000 for s in runs)
    emb = tmp_path / "e.json"  # the embedded engine keeps query_log too (chbench's configuration, 26.9)
    assert run_cli("run", "--query", "SELECT count() FROM numbers(300000)", "--server-metrics", "--out", str(emb),
                   *FAST).code == 0
    doc = load(emb)
    assert "server_metrics_notes" not in doc["meta"]
    assert all(s["server_metrics"]["read_rows"] == 300_000 for s in samples(doc))


SETUP_WORKLOAD = """\
-- setup
CREATE TABLE chbench_setup_t ENGINE = MergeTree ORDER BY k
  AS SELECT number % 100 AS k, number AS v FROM numbers(100000);
-- name: group_by
SELECT k, sum(v) FROM chbench_setup_t GROUP BY k;
-- name: one_thread
-- settings: max_threads=1
SELECT k, sum(v) FROM chbench_setup_t GROUP BY k;
-- teardown
DROP TABLE chbench_setup_t;
"""


def test_setup_and_teardown_write_in_a_read_only_run(modern, tmp_path):
    """Set-up creates and fills a table although the measured queries are read-only; the
    tear-down drops it after them (on the embedded engine too, whose measuring session
    cannot leave readonly=2 once it is set)."""
    from chbench.plan import Plan, SidePlan
    from chbench.runner import run_plan
    from chbench.targets import Credentials, make_target
    from chbench.ui.progress import Progress
    from chbench.workload import parse_workload

    embedded = make_target("embedded", Credentials())
    outcome = run_plan(Plan([SidePlan("A", embedded, parse_workload(SETUP_WORKLOAD))], warmup=0, iterations=2,
                            calibration=False), str(tmp_path / "e.json"), Progress())
    assert outcome.exit_code == 0, outcome.message
    assert embedded.query_rows("EXISTS TABLE chbench_setup_t") == [["0"]]
    assert all(s.error is None for q in outcome.doc.queries for s in q.samples)
    qf = tmp_path / "w.sql"
    qf.write_text(SETUP_WORKLOAD)
    for url in (modern.http_url, modern.native_url):
        out = tmp_path / "s.json"
        r = run_cli("run", "--target", url, "--queries", str(qf), "--out", str(out), *FAST)
        assert r.code == 0, r.stderr
        doc = load(out)
        assert doc["targets"][0]["settings_sent"]["readonly"] == "2"
        assert doc["queries"][1]["sides"]["A"]["settings"] == {"max_threads": "1"}
        admin = make_target(url, Credentials())
        assert admin.query_rows("EXISTS TABLE chbench_setup_t") == [["0"]]
        admin.close()
    bad = tmp_path / "bad.sql"
    bad.write_text("-- setup\nCREATE TABLE chbench_broken (;\n-- name: q\nSELECT 1;\n")
    r = run_cli("run", "--queries", str(bad), "--out", str(tmp_path / "b.json"), *FAST)
    assert r.code == 1 and "set-up failed" in r.stderr and "Traceback" not in r.stderr
    assert load(tmp_path / "b.json")["targets"][0]["setup_error"]["error"]["code"] == 62


def test_a_query_whose_own_setting_the_server_refuses_fails_alone_over_native(modern, tmp_path):
    """A query file's per-query setting with a value the server refuses: that query's runs
    fail with the server's message and the next query runs. Over the native protocol the
    server closes the connection after such a refusal, and the run used to end there as
    "server stopped answering"."""
    queries = tmp_path / "q.sql"
    queries.write_text("-- name: bad\n-- settings: max_threads=abc\nSELECT 1;\n-- name: good\nSELECT 2;\n")
    out = tmp_path / "n.json"
    r = run_cli("run", "--target", modern.native_url, "--queries", str(queries), "--iterations", "3",
                "--warmup", "0", "--quiet", "--out", str(out))
    assert r.code == 1 and "1 query failed: bad" in r.stderr, r.stderr
    doc = load(out)
    assert doc["status"] == "complete"
    assert len(samples(doc, "good")) == 3 and all(s["error"] is None for s in samples(doc, "good"))
    assert all("Cannot parse" in s["error"]["message"] for s in samples(doc, "bad"))
