"""`chbench explain` and the "why" of compare on real servers: profiles collected after
the rounds, the cause of a known regression found, what a server lacks said once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import load, run_cli
from tests.engines import ModernServer

QUERIES = ("-- name: sum\nSELECT sum(cityHash64(number)) FROM numbers_mt({rows});\n"
           "-- name: one\nSELECT 1;\n")


@pytest.fixture(scope="module")
def threads_file(modern, tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("explain")
    # B: 15 times the rows on one thread — slower beyond any noise of a busy machine
    (d / "a.sql").write_text(QUERIES.format(rows=2_000_000))
    (d / "b.sql").write_text(QUERIES.format(rows=30_000_000))
    out = d / "threads.json"
    r = run_cli("run", "--target", modern.http_url, "--queries", str(d / "a.sql"), "--queries-b", str(d / "b.sql"),
                "--setting-b", "max_threads=1", "--iterations", "10", "--warmup", "1", "--quiet", "--out", str(out))
    assert r.code in (0, 1), r.stderr
    return out


def test_every_run_has_its_server_profile(threads_file):
    doc = load(threads_file)
    info = doc["meta"]["explain"]
    assert info["A"]["counters"] and info["A"]["operators"] and info["B"]["operators"]
    # every counter this version has, for comparisons with another version (stats/explain.py)
    assert {"SelectedRows", "RealTimeMicroseconds", "read_rows", "threads"} <= set(info["A"]["counters_known"])
    assert info["A"]["threads_from"] == "peak_threads_usage"
    samples = [s for q in doc["queries"] for s in q["samples"] if not s["warmup"]]
    assert samples and all(s["profile"]["counters"]["read_rows"] >= 0 for s in samples)
    total = next(s for s in samples if s["target"] == "A")["profile"]
    assert "RealTimeMicroseconds" in total["counters"] and total["operators"]
    op = next(iter(total["operators"].values()))
    assert set(op) >= {"n", "elapsed_us", "input_wait_us", "output_wait_us"}
    assert "threads" not in doc["meta"]["options"] and doc["meta"]["options"]["explain"] is True


def test_compare_says_why_a_slower_query_is_slower(threads_file):
    r = run_cli("compare", str(threads_file), "--format", "json")
    rows = {q["name"]: q for q in r.json()["queries"]}
    slow = rows["sum"]
    assert slow["verdict"] == "slower", slow
    why = slow["why"]
    assert set(why) >= {"counters", "operators", "summary"} and why["counters"]
    assert why["top"][0] in ("read_rows", "SelectedRows", "SelectedBytes", "read_bytes")
    rows_read = next(c for c in why["counters"] if c["name"] == "read_rows")
    assert rows_read["ratio"] == pytest.approx(15.0, rel=0.01) and len(rows_read["ci"]) == 2
    entry = next(c for c in why["counters"] if c["name"] == "threads")
    assert entry["a"] > entry["b"] == 1 and entry["ratio"] < 1
    assert "ran on 1 thread" in why["summary"] and "reads 15× the rows" in why["summary"]
    assert "reasoning" in slow and isinstance(slow["reasoning"], str)
    console = run_cli("compare", str(threads_file)).stdout
    assert "Why sum (" in console
    for row in rows.values():  # a query that did not change has no why (SELECT 1 may, on one thread)
        if row["verdict"] not in ("slower", "faster"):
            assert "why" not in row and f"Why {row['name']} (" not in console


def test_explain_command(threads_file, tmp_path):
    r = run_cli("explain", str(threads_file))
    assert r.code == 1  # a query slower, as compare
    assert "sum: slower" in r.stdout and "ran on 1 thread instead of" in r.stdout and "threads" in r.stdout
    j = run_cli("explain", str(threads_file), "--query", "one", "--format", "json").json()
    assert [q["name"] for q in j["queries"]] == ["one"] and "why" in j["queries"][0]  # asked for: explained
    assert j["sides"]["A"]["operators"] is True
    html = tmp_path / "why.html"
    assert run_cli("explain", str(threads_file), "--format", "html", "--output", str(html)).code == 1
    assert "<svg" in html.read_text() and "threads" in html.read_text()
    bad = run_cli("explain", str(threads_file), "--query", "nope")
    assert bad.code == 2 and "no query named 'nope'" in bad.stderr and "Traceback" not in bad.stderr


def test_nothing_shown_names_the_queries_that_moved_most(modern, tmp_path):
    """3 rounds show nothing (unstable), even 15 times the rows: explain says which moved."""
    (tmp_path / "a.sql").write_text(QUERIES.format(rows=2_000_000))
    (tmp_path / "b.sql").write_text(QUERIES.format(rows=30_000_000))
    out = tmp_path / "few.json"
    r = run_cli("run", "--target", modern.http_url, "--queries", str(tmp_path / "a.sql"), "--queries-b",
                str(tmp_path / "b.sql"), "--iterations", "3", "--warmup", "0", "--quiet", "--out", str(out))
    assert r.code == 0, r.stderr
    text = run_cli("explain", str(out)).stdout
    assert "No query slower or faster" in text and "unstable, moved most: sum +" in text


def test_changed_queries_without_profiles_are_named_not_denied(threads_file, tmp_path):
    """An engine that keeps no query_log (chDB before 26.9) against one that does: the
    queries changed, and explain said "No query slower or faster" (24.8 → 26.9, 9 changed).
    It names them and says the evidence is missing; the JSON carries each one's note."""
    import json

    doc = load(threads_file)
    doc["meta"].pop("explain", None)
    for q in doc["queries"]:
        for s in q["samples"]:
            s.pop("profile", None)
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(doc))
    r = run_cli("explain", str(bare))
    assert r.code == 1, r.stderr  # sum is slower, as compare says
    text = " ".join(r.stdout.split())  # the console wraps its lines
    assert "No query slower or faster" not in text and "sum slower +" in text
    assert "nothing to explain them with" in text
    j = run_cli("explain", str(bare), "--format", "json").json()
    changed = [q for q in j["queries"] if q["verdict"] in ("slower", "faster")]
    assert changed and all(q["why"]["note"] for q in changed)
    # some explained, some not: the rest are named as the others
    from chbench.compare import build_comparison
    from chbench.export import get_exporter
    from chbench.export.sections import Report
    from chbench.report.explain import explain_section
    from chbench.stats.explain import Why

    cmp = build_comparison([str(bare)])
    section = explain_section(cmp, {"one": Why(facts=["a fact"])}, charts=False, info={})
    text = " ".join(get_exporter("markdown").render(Report("", [section], [str(bare)])).split())
    assert "1 other query changed (sum slower +" in text and "a fact" in text


def test_no_explain_collects_nothing_and_explain_says_why(modern, tmp_path):
    out = tmp_path / "off.json"
    r = run_cli("run", "--target", modern.http_url, "--query", "SELECT 1", "--setting-b", "max_threads=1",
                "--iterations", "3", "--warmup", "0", "--quiet", "--no-explain", "--out", str(out))
    assert r.code == 0, r.stderr
    doc = load(out)
    assert "explain" not in doc["meta"] and all("profile" not in s for s in doc["queries"][0]["samples"])
    j = run_cli("explain", str(out), "--query", doc["queries"][0]["name"], "--format", "json").json()
    assert "no server profiles" in j["sides"]["A"]["notes"][0]
    text = run_cli("explain", str(out), "--query", doc["queries"][0]["name"]).stdout
    assert "Nothing to explain" in text and "No query slower or faster" not in text  # asked for: no evidence


def test_a_server_without_operator_times_gives_counters_and_says_so(tmp_path):
    with ModernServer(operator_log=False) as server:
        out = tmp_path / "counters.json"
        r = run_cli("run", "--target", server.http_url, "--query", "SELECT sum(number) FROM numbers_mt(1000000)",
                    "--setting-b", "max_threads=1", "--iterations", "3", "--warmup", "0", "--quiet", "--out", str(out))
        assert r.code in (0, 1), r.stderr
    info = load(out)["meta"]["explain"]
    assert info["A"]["counters"] and not info["A"]["operators"]
    assert info["A"]["notes"] == ["no operator times: this server keeps no system.processors_profile_log "
                                  "(counters only)"]


def test_legacy_server_counters_from_its_arrays(legacy, tmp_path):
    out = tmp_path / "legacy.json"
    r = run_cli("run", "--target", legacy.http_url, "--query",
                "SELECT count() FROM (SELECT number FROM system.numbers LIMIT 2000000)", "--iterations", "3",
                "--warmup", "0", "--quiet", "--out", str(out))
    assert r.code == 0, r.stderr
    doc = load(out)
    assert doc["meta"]["explain"]["A"]["counters"] and not doc["meta"]["explain"]["A"]["operators"]
    assert "counters_known" not in doc["meta"]["explain"]["A"]  # 18.16 cannot list them
    assert doc["meta"]["explain"]["A"]["threads_from"] == "length(thread_numbers)"  # every thread, not the peak
    counters = doc["queries"][0]["samples"][0]["profile"]["counters"]
    assert counters["read_rows"] >= 2_000_000 and "threads" in counters  # 18.16: ProfileEvents.Names/Values
    assert any("log_queries=1 sent" in n for n in doc["targets"][0]["notes"])
    # the run's own table reads CPU, memory and rows from that profile (no --server-metrics)
    from chbench.report.run import side_samples
    from chbench.results import open_results

    d = side_samples(open_results(out).queries[0], "A")
    # (CPU may be 0 for a 1 ms query: the kernel's ticks; see test_targets)
    assert all(x is not None and x >= 0 for x in d.cpu_ms) and all(x is not None and x > 0 for x in d.memory)
    assert min(d.read_rows) >= 2_000_000
    from chbench.report.run import missing_line, run_table

    table = run_table(open_results(out))
    shown = [c.title for c in table.columns]
    assert "server CPU ms" in shown and "memory bytes" in shown and "rows read" in shown
    assert all("CPU" not in line.text for line in missing_line(table))


def test_the_embedded_engine_keeps_each_runs_profile_and_says_why(tmp_path, old_engine):
    """chDB 26.9 keeps query_log with chbench's configuration: each timed run found by its
    log_comment tag, not confused with the untimed queries after it on the same session
    (the calibration query reads 100M rows), B's after a log_comment of the user's own;
    24.8's engine keeps none and says so."""
    (tmp_path / "a.sql").write_text(QUERIES.format(rows=2_000_000))
    (tmp_path / "b.sql").write_text(QUERIES.format(rows=30_000_000))
    out = tmp_path / "emb.json"
    r = run_cli("run", "--queries", str(tmp_path / "a.sql"), "--queries-b", str(tmp_path / "b.sql"),
                "--setting-b", "max_threads=1", "--setting-b", "log_comment=mine", "--iterations", "8", "--warmup",
                "1", "--quiet", "--out", str(out))
    assert r.code in (0, 1), r.stderr
    doc = load(out)
    info = doc["meta"]["explain"]
    assert info["A"]["counters"] and info["A"]["operators"]
    assert info["A"]["runs"] == info["B"]["runs"] == 32  # one engine: both sides' runs
    assert "no sampled stacks" in info["A"]["stacks_note"]
    for name, s in ((q["name"], s) for q in doc["queries"] for s in q["samples"] if not s["warmup"]):
        rows = 1 if name == "one" else 2_000_000 if s["target"] == "A" else 30_000_000
        assert s["profile"]["counters"]["read_rows"] == rows, s
        assert s["profile"]["operators"]
    why = {q["name"]: q for q in run_cli("compare", str(out), "--format", "json").json()["queries"]}["sum"]["why"]
    # chDB's peak_threads_usage counts its own thread too: "ran on 2 threads instead of 4"
    assert "threads instead of" in why["summary"] and "reads 15× the rows" in why["summary"]

    out = tmp_path / "old.json"
    r = run_cli("run", "--target", "embedded@24.8", "--query", "SELECT 1", "--iterations", "2", "--warmup", "0",
                "--quiet", "--out", str(out))
    assert r.code == 0, r.stderr
    notes = load(out)["meta"]["explain"]["A"]["notes"]
    assert len(notes) == 1 and "keeps no system.query_log" in notes[0] and "24.8" in notes[0]
    # no columns of '-' in the run's table: one line naming what no side reported
    from chbench.report.run import missing_line, run_table
    from chbench.results import open_results

    lines = [line.text for line in missing_line(run_table(open_results(out)))]
    assert lines == ["not reported by any side: server CPU ms, memory bytes"]


def test_differential_flame_graph_from_trace_log_rows(tmp_path):
    """No engine here samples stacks, so the rows are made: a materialized view on the
    server's query_log writes, for every logged query, ten samples into a real table of
    trace_log's own schema — B's (max_threads=1) through a slower frame."""
    from tests.engines import http_post

    with ModernServer() as server:
        url, port = server.http_url, server.http_port
        http_post(port, "SELECT 1")
        http_post(port, "SYSTEM FLUSH LOGS")
        http_post(port, "CREATE TABLE default.stacks AS system.trace_log")
        http_post(port, "CREATE MATERIALIZED VIEW default.fake_sampler TO default.stacks AS SELECT "
                       "event_date, event_time, query_id, 'CPU' AS trace_type, [1, 2, 3] AS trace, "
                       "if(Settings['max_threads'] = '1', ['slow_path', 'Aggregator::execute', 'main'], "
                       "['fast_path', 'Aggregator::execute', 'main']) AS symbols "
                       "FROM system.query_log ARRAY JOIN range(10) AS i WHERE type = 'QueryFinish'")
        out = tmp_path / "flame.json"
        r = run_cli("run", "--target", url, "--query", "SELECT sum(number) FROM numbers_mt(3000000)",
                    "--setting-b", "max_threads=1", "--iterations", "4", "--warmup", "0", "--quiet",
                    "--trace-log", "default.stacks", "--out", str(out))
        assert r.code in (0, 1), r.stderr
        plain = tmp_path / "plain.json"
        r = run_cli("run", "--target", url, "--query", "SELECT 1", "--iterations", "2", "--warmup", "0", "--quiet",
                    "--out", str(plain))
        assert r.code == 0, r.stderr
    doc = load(out)
    assert doc["meta"]["explain"]["A"]["stacks"] and doc["meta"]["options"]["trace_log"] == "default.stacks"
    a = next(s for s in doc["queries"][0]["samples"] if s["target"] == "A" and not s["warmup"])
    assert a["profile"]["stacks"] == {"main;Aggregator::execute;fast_path": 10.0}  # root first
    name = doc["queries"][0]["name"]
    html = tmp_path / "flame.html"
    assert run_cli("explain", str(out), "--query", name, "--format", "html", "--output", str(html)).code in (0, 1)
    text = html.read_text()
    assert "slow_path" in text and "fast_path" in text and "sampled stacks" in text
    # the real system.trace_log of this build is empty: said, once per side
    info = load(plain)["meta"]["explain"]["A"]
    assert not info["stacks"] and "no sampled stacks in system.trace_log" in info["stacks_note"]
    bad = run_cli("run", "--query", "SELECT 1", "--trace-log", "x; DROP TABLE y")
    assert bad.code == 2 and "not a table name" in bad.stderr


def test_native_protocol_collects_the_same(modern, tmp_path):
    out = tmp_path / "native.json"
    # --quiet-wait 0: on a busy machine runs set aside and measured again would change the count
    r = run_cli("run", "--target", modern.native_url, "--query", "SELECT sum(number) FROM numbers_mt(2000000)",
                "--iterations", "3", "--warmup", "0", "--quiet", "--quiet-wait", "0", "--out", str(out))
    assert r.code == 0, r.stderr
    doc = load(out)
    info = doc["meta"]["explain"]["A"]
    assert info["counters"] and info["operators"] and info["runs"] == 3
    assert "SelectedRows" in info["counters_known"]
    assert all(s["profile"]["counters"]["read_rows"] == 2_000_000 for s in doc["queries"][0]["samples"])


def test_an_engine_opened_without_its_logs_earlier_in_the_process_says_so():
    """chDB runs one engine per process: one a command opened without the logs (a load, a
    set-up) cannot keep them for a run that asks later — said as that, not as a version
    that keeps none. The other order keeps them."""
    import subprocess
    import sys

    snippet = """
from chbench.targets import Credentials, make_target, parse_target_url
def target(tagged):
    t = make_target(parse_target_url("embedded"), Credentials())
    if tagged:
        t.identify_runs()
    t.connect()
    return t
first, second = [target(t) for t in {order}]
print(repr(second.explain_note() if {order}[1] else first.explain_note()))
"""
    out = {}
    for order in ("(False, True)", "(True, False)"):
        p = subprocess.run([sys.executable, "-c", snippet.format(order=order)], capture_output=True, text=True,
                           timeout=120)
        assert p.returncode == 0, p.stderr
        out[order] = p.stdout.strip()
    assert "started without its logs earlier in this process" in out["(False, True)"]
    assert out["(True, False)"] == "None"
