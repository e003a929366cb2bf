"""``chbench load`` end to end, on the real servers and next to the real
clickhouse-benchmark 18.16."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import time

import pytest
from scipy.stats import ttest_ind_from_stats

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

STATUS_LINE = re.compile(
    r"^(?P<host>\S+), queries: (?P<queries>\d+), (errors: (?P<errors>\d+), )?QPS: [\d.]+, RPS: [\d.]+, "
    r"MiB/s: [\d.]+, result RPS: [\d.]+, result MiB/s: [\d.]+\.$",
    re.MULTILINE,
)
PERCENTILE_LINE = re.compile(r"^(\d+\.\d{3})%\t\t([\d.]+ sec\.\t)+$", re.MULTILINE)


def clickhouse_benchmark(*args: str, stdin: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("clickhouse-benchmark")
    assert exe, "clickhouse-benchmark (Debian clickhouse-tools) is installed by .ci/run"
    return subprocess.run([exe, *args], input=stdin, capture_output=True, text=True, timeout=120)


def test_same_flags_as_clickhouse_benchmark_and_same_json_shape(modern, tmp_path):
    flags = ["--port", str(modern.tcp_port), "-c", "2", "-i", "300", "-d", "0"]
    cb = clickhouse_benchmark(*flags, "--json", str(tmp_path / "cb.json"), stdin="SELECT number FROM numbers(10)\n")
    assert cb.returncode == 0, cb.stderr
    ours = run_cli("load", *flags, "--json", str(tmp_path / "ours.json"), stdin="SELECT number FROM numbers(10)\n")
    assert ours.code == 0, ours.stderr
    theirs, mine = load(tmp_path / "cb.json"), load(tmp_path / "ours.json")
    assert set(theirs) == set(mine) == {"statistics", "query_time_percentiles"}
    assert set(theirs["statistics"]) <= set(mine["statistics"]) and "num_errors" in mine["statistics"]
    assert set(theirs["query_time_percentiles"]) == set(mine["query_time_percentiles"])
    assert mine["statistics"]["num_queries"] == theirs["statistics"]["num_queries"] == 300
    # result rows and rows read per second are counted the way clickhouse-benchmark counts them
    assert mine["statistics"]["RPS_result"] / mine["statistics"]["QPS"] == pytest.approx(10)
    assert mine["statistics"]["RPS"] / mine["statistics"]["QPS"] == pytest.approx(10)
    # the report on stderr has clickhouse-benchmark's shape
    assert "Loaded 1 queries." in ours.stderr and "Queries executed: 300." in ours.stderr
    m = STATUS_LINE.search(ours.stderr)
    assert m and m.group("host") == f"localhost:{modern.tcp_port}" and m.group("queries") == "300"
    assert len(PERCENTILE_LINE.findall(ours.stderr)) == 14
    pct = mine["query_time_percentiles"]
    assert 0 < pct["0"] <= pct["50"] <= pct["99.99"] < 1


def test_intermediate_reports_and_multi_line_script(modern, tmp_path):
    script = "SELECT\n  number\nFROM numbers(5);\nSELECT 2;\n"
    r = run_cli("load", "--port", str(modern.tcp_port), "--queries-format", "script", "-t", "2.5", "-d", "1",
                "--precise", "--out", str(tmp_path / "o.json"), stdin=script)
    assert r.code == 0, r.stderr
    assert "Loaded 2 queries." in r.stderr
    assert "warning" not in r.stderr  # clickhouse-benchmark's --precise (PR 86684) is what the intervals do
    assert r.stderr.count("Queries executed:") >= 3  # two intermediate reports and the final one
    doc = load(tmp_path / "o.json")
    assert doc["kind"] == "load" and doc["status"] == "complete"
    lvl = doc["levels"][0]
    assert len(lvl["timeline"]) >= 2 and all("p99_ms" in row for row in lvl["timeline"])
    # as clickhouse-benchmark: a report per full interval, none for the part-interval the
    # run ended in (kept in the file, marked), then the final one
    assert lvl["timeline"][-1].get("last") and not any(row.get("last") for row in lvl["timeline"][:-1])
    assert r.stderr.count("Queries executed:") == len(lvl["timeline"]) - 1 + 1
    assert doc["queries"][0]["sql"] == "SELECT\n  number\nFROM numbers(5)"  # one query over three lines
    counts = [q["queries"] for q in lvl["hosts"][0]["queries"]]
    assert len(counts) == 2 and abs(counts[0] - counts[1]) <= 1  # in order: alternating


def test_precise_intervals_count_each_query_by_its_time_in_them(modern, tmp_path):
    """Queries of 0.7 s, one at a time, 1 s intervals: an interval holds one or two of
    them by where its boundaries fall (QPS 1 or 2 without --precise); weighted by their
    time in it, each full interval reads the run's own rate."""
    r = run_cli("load", "--target", modern.http_url, "-q", "SELECT sleep(0.7)", "-d", "1", "-t", "4.5", "--precise",
                "--out", str(tmp_path / "p.json"))
    assert r.code == 0, r.stderr
    qps = [float(x) for x in re.findall(r"QPS: ([\d.]+)", r.stderr)]
    *intermediate, total = qps
    assert len(intermediate) >= 4
    assert all(abs(q / total - 1) < 0.05 for q in intermediate), qps  # each a full interval
    finished = [int(x) for x in re.findall(r"queries: (\d+)", r.stderr)]
    assert set(finished[:-2]) <= {1, 2}
    rows = load(tmp_path / "p.json")["levels"][0]["timeline"]
    full = [row for row in rows if not row.get("last")]  # the part-interval at the end is not printed
    assert [row["queries"] for row in full] == finished[:-1]
    assert sum(row["queries"] for row in rows) == finished[-1]
    assert [row["qps"] for row in full] == pytest.approx(intermediate, rel=0.01)


def test_comparison_mode_same_server_twice_and_two_different_servers(modern, legacy, tmp_path):
    same = run_cli("load", "--port", str(modern.tcp_port), "--port", str(modern.tcp_port), "-i", "1500", "-d", "0",
                   "--json", str(tmp_path / "same.json"), "--out", str(tmp_path / "same-out.json"),
                   stdin="SELECT 1\n")
    assert same.code == 0, same.stderr
    # same server twice: the t-test says "no difference proven" in ~24 of 25 runs here (bench/load_bars.py
    # --only aa) and sometimes "proves" a few percent of noise — as clickhouse-benchmark does, which is
    # why the rank-based verdict stands next to it. What is asserted is that the test is computed right.
    assert re.search(r"Student's t-test on means: (no difference proven|difference of [+-]\d+\.\d% ± \d+\.\d%) "
                     r"at 99\.5%", same.stderr), same.stderr
    assert "rank-based" in same.stderr
    keyed = load(tmp_path / "same.json")
    assert len(keyed) == 2 and all(set(v) == {"statistics", "query_time_percentiles"} for v in keyed.values())
    level = load(tmp_path / "same-out.json")["levels"][0]
    cmp_ = level["comparison"][0]
    t = cmp_["t_test"]
    assert t["proven"] == (abs(t["difference_ms"]) > t["halfwidth_ms"])
    assert t["difference_ms"] == pytest.approx(t["mean_b_ms"] - t["mean_a_ms"])
    assert t["relative_percent"] == pytest.approx(t["difference_ms"] / t["mean_a_ms"] * 100)
    hosts = [h["histogram"] for h in level["hosts"]]
    assert [t["mean_a_ms"], t["mean_b_ms"]] == pytest.approx([h["sum_ms"] / h["count"] for h in hosts])
    # the same test by scipy from the same sums: proven exactly when p < 0.5%
    n = [h["count"] for h in hosts]
    sd = [math.sqrt((h["sum_sq_ms2"] - h["sum_ms"] ** 2 / h["count"]) / (h["count"] - 1)) for h in hosts]
    p = ttest_ind_from_stats(t["mean_b_ms"], sd[1], n[1], t["mean_a_ms"], sd[0], n[0], equal_var=True).pvalue
    assert t["proven"] == (p < 0.005)
    assert not any("drifting" in r for r in cmp_["rank"]["reasons"])  # a histogram has no run order
    # the report shows each target and the comparison (it showed their merged totals only)
    md = tmp_path / "same.md"
    assert run_cli("report", str(tmp_path / "same-out.json"), "--markdown", str(md)).code == 0
    text = md.read_text()
    assert "Targets of concurrency 1:" in text and "Student's t-test on means" in text and "rank-based" in text
    assert all(f"| {h['histogram']['count']} |" in text for h in level["hosts"])
    # the rank verdict's false alarms are rare, not impossible: 0 of 40 A/A runs flagged here
    # (bench/load_bars.py --only aa, 2026-12-06), and one in a CI run the same day, +8.7%
    # [+2.8%, +14.7%] with the means +1.8% apart (the median fell between two of SELECT 1's
    # latency modes). Flagged once, a second A/A must not be
    if cmp_["rank"]["verdict"] not in ("no change", "unstable"):
        again = run_cli("load", "--port", str(modern.tcp_port), "--port", str(modern.tcp_port), "-i", "1500", "-d",
                        "0", "--out", str(tmp_path / "again.json"), stdin="SELECT 1\n")
        assert again.code == 0, again.stderr
        cmp_ = load(tmp_path / "again.json")["levels"][0]["comparison"][0]
    assert cmp_["rank"]["verdict"] in ("no change", "unstable")

    diff = run_cli("load", "--target", modern.http_url, "--target", legacy.http_url, "-i", "600", "-d", "0",
                   "--confidence", "3", stdin="SELECT count() FROM (SELECT number FROM system.numbers LIMIT 200000)\n",
                   env={"CLICKHOUSE_PASSWORD": ""})
    assert diff.code == 0, diff.stderr
    assert re.search(r"t-test on means: difference of [+-]\d+\.\d% ± \d+\.\d% at 98%", diff.stderr), diff.stderr
    assert re.search(r"rank-based, as chbench compare\): [+-]\d+\.\d% \[.*\]: (slower|faster)", diff.stderr)


def test_separate_load_files_compare_as_separate_runs(modern, tmp_path):
    """Two load files made apart get the between-run allowance, several a side are
    sessions (``--vs``), their shuffled latencies are read in no order, and what to do
    next is said in load's words."""
    files = []
    for i in range(3):
        out = tmp_path / f"l{i}.json"
        r = run_cli("load", "--target", modern.http_url, "-q", "SELECT sum(number) FROM numbers(300000)", "-q",
                    "SELECT count() FROM numbers(200000) WHERE number % 3 = 1", "-i", "200", "-d", "0", "--quiet",
                    "--out", str(out))
        assert r.code == 0, r.stderr
        files.append(str(out))
    for args in ([files[0], files[1]], [files[0], "--vs", files[1], files[2]]):
        r = run_cli("compare", *args, "--format", "json")
        assert r.code in (0, 1), r.stderr
        doc = json.loads(r.stdout)
        assert all(q["between_run_sd"] > 0 for q in doc["queries"])  # separate runs: the allowance applies
        assert not any(w in " ".join(q["reasons"]) for q in doc["queries"] for w in ("drifting", "bimodal"))
        said = " ".join(doc["findings"] + doc["notes"])
        assert "--iterations" not in said and "--sessions" not in said and "--setting-b" not in said
    assert any("1 session(s) of A and 2 of B" in n for n in doc["notes"])
    # two queries and no probes in a load file: a change cannot be told from the machine's level
    assert not any(q["verdict"] in ("slower", "faster") for q in doc["queries"])


def test_concurrency_sweep_reports_each_level_and_the_knee(modern, tmp_path):
    r = run_cli("load", "--port", str(modern.tcp_port), "-C", "3", "-i", "150", "-d", "0", "--out",
                str(tmp_path / "s.json"), "--json", str(tmp_path / "s-cb.json"),
                stdin="SELECT count() FROM numbers(3000000)\n")
    assert r.code == 0, r.stderr
    doc = load(tmp_path / "s.json")
    assert [lv["concurrency"] for lv in doc["levels"]] == [1, 2, 3]
    assert all(lv["total"]["queries"] == 150 for lv in doc["levels"])
    assert [row["concurrency"] for row in doc["sweep"]["levels"]] == [1, 2, 3]
    assert "Concurrency sweep:" in r.stderr
    assert ("Knee at concurrency" in r.stderr) == (doc["sweep"]["knee"] is not None)
    assert load(tmp_path / "s-cb.json")["statistics"]["num_queries"] == 150  # the last level


def test_open_loop_with_a_stalling_server_counts_late_and_dropped(modern, tmp_path):
    """20 requests/s offered to a query that takes 200 ms on one connection: the
    server can take 5/s, so requests fall behind plan and latency from the planned
    time grows — it is not hidden as a lower offered rate."""
    r = run_cli("load", "--target", modern.http_url, "-q", "SELECT sleep(0.2)", "--rate", "20", "-c", "1", "-t", "3",
                "-d", "0", "--latency-limit", "300", "--out", str(tmp_path / "o.json"))
    assert r.code == 0, r.stderr
    ol = load(tmp_path / "o.json")["levels"][0]["open_loop"]
    assert ol["offered_qps"] == 20 and ol["planned"] >= 55
    assert ol["achieved_qps"] < 7 and ol["late"] >= 5 and ol["dropped"] >= 30
    total = load(tmp_path / "o.json")["levels"][0]["total"]
    assert total["histogram"]["max_ms"] > 1000  # queued behind the stall
    assert total["service_histogram"]["max_ms"] < 1000  # each query alone stays ~200 ms
    assert total["over_latency_limit"] >= 5
    assert "offered 20.000 QPS, achieved" in r.stderr and "dropped" in r.stderr
    # the report says it too: without it the latencies (from each planned start) read as a closed loop's
    md = tmp_path / "o.md"
    assert run_cli("report", str(tmp_path / "o.json"), "--markdown", str(md)).code == 0
    text = md.read_text()
    assert f"offered 20.000 QPS, achieved {ol['achieved_qps']:.3f} QPS" in text and f"dropped {ol['dropped']}" in text
    assert "Over the latency limit of 300 ms" in text


def test_open_loop_poisson_keeps_the_offered_rate(modern, tmp_path):
    r = run_cli("load", "--target", modern.http_url, "-q", "SELECT 1", "--rate", "100", "--poisson", "-c", "2",
                "-t", "3", "-d", "0", "--out", str(tmp_path / "p.json"))
    assert r.code == 0, r.stderr
    ol = load(tmp_path / "p.json")["levels"][0]["open_loop"]
    assert ol["arrivals"] == "poisson" and 200 <= ol["planned"] <= 400 and ol["dropped"] <= 2
    assert ol["achieved_qps"] == pytest.approx(100, rel=0.3)


def test_workers_merge_histograms_exactly(modern, tmp_path):
    r = run_cli("load", "--port", str(modern.tcp_port), "-c", "4", "--workers", "2", "-i", "400", "-d", "0",
                "--out", str(tmp_path / "w.json"), stdin="SELECT 1\n")
    assert r.code == 0, r.stderr
    lvl = load(tmp_path / "w.json")["levels"][0]
    assert lvl["workers"] == 2 and lvl["total"]["queries"] == 400
    assert sum(n for _, n in lvl["total"]["histogram"]["buckets"]) == 400


def test_weighted_mix_keeps_its_proportions(modern, tmp_path):
    mix = tmp_path / "mix.sql"
    mix.write_text("-- name: light\n-- weight: 3\nSELECT 1;\n-- name: heavy\nSELECT count() FROM numbers(100000);\n")
    for extra in ([], ["-r"]):
        r = run_cli("load", "--target", modern.http_url, "--queries", str(mix), "-c", "2", "-i", "400", "-d", "0",
                    *extra, "--out", str(tmp_path / "m.json"))
        assert r.code == 0, r.stderr
        counts = {q["name"]: q["queries"] for q in load(tmp_path / "m.json")["levels"][0]["hosts"][0]["queries"]}
        # over HTTP the summary header leaves before the result: its result rows are not
        # known, and said so (they read 0 before)
        assert load(tmp_path / "m.json")["levels"][0]["total"]["result_rows_unknown"] == 400
        assert "result RPS: n/a" in r.stderr
        if extra:
            assert 240 <= counts["light"] <= 360 and counts["light"] + counts["heavy"] == 400
        else:
            assert counts == {"light": 300, "heavy": 100}


def test_errors_by_code_stop_or_continue(modern, tmp_path):
    stop = run_cli("load", "--port", str(modern.tcp_port), "-q", "SELECT throwIf(1)", "-i", "10", "-d", "0")
    assert stop.code == 1 and "Traceback" not in stop.stderr
    assert "Code: 395" in stop.stderr and "--continue_on_errors" in stop.stderr
    over_http = run_cli("load", "--target", modern.http_url, "-q", "SELECT throwIf(1)", "-i", "1", "-d", "0")
    for r in (stop, over_http):  # the last line says the code once, without a dangling "Stack trace:"
        last = r.stderr.strip().splitlines()[-1]
        assert last.count("Code: 395") == 1 and "Stack trace" not in last, last
    go_on = run_cli("load", "--port", str(modern.tcp_port), "-q", "SELECT throwIf(1)", "-i", "10", "-d", "0",
                    "--continue_on_errors", "--json", str(tmp_path / "e.json"))
    assert go_on.code == 0, go_on.stderr
    assert "errors: 10" in go_on.stderr and "code 395: 10" in go_on.stderr
    assert load(tmp_path / "e.json")["statistics"]["num_errors"] == 10
    capped = run_cli("load", "--port", str(modern.tcp_port), "-q", "SELECT throwIf(1)", "-d", "0",
                     "--continue_on_errors", "--max-consecutive-errors", "5")
    assert capped.code == 1 and "stopped after 5 consecutive errors" in capped.stderr


def test_legacy_server_native_and_http_with_password_stage_reconnect(legacy, tmp_path):
    env = {"CLICKHOUSE_PASSWORD": PASSWORD}
    r = run_cli("load", "--port", str(legacy.tcp_port), "--user", "bench", "-i", "50", "-d", "0", "--reconnect=5",
                "--out", str(tmp_path / "l.json"), "--max_threads=1",
                stdin="SELECT number FROM system.numbers LIMIT 3\n", env=env)
    assert r.code == 0, r.stderr
    doc = load(tmp_path / "l.json")
    assert doc["levels"][0]["total"]["queries"] == 50 and doc["targets"][0]["server_version"].startswith("18.16")
    assert doc["targets"][0]["settings_sent"]["max_threads"] == "1"
    assert PASSWORD not in (tmp_path / "l.json").read_text() and PASSWORD not in r.stderr
    h = run_cli("load", "--target", f"http://bench@127.0.0.1:{legacy.http_port}", "-i", "30", "-d", "0",
                stdin="SELECT 1\n", env=env)
    assert h.code == 0 and "queries: 30" in h.stderr, h.stderr
    s = run_cli("load", "--port", str(legacy.tcp_port), "--user", "bench", "--stage", "with_mergeable_state", "-i",
                "20", "-d", "0", stdin="SELECT number FROM system.numbers LIMIT 5\n", env=env)
    assert s.code == 0 and "queries: 20" in s.stderr, s.stderr


def test_query_id_prefix_reaches_the_server(modern, tmp_path):
    r = run_cli("load", "--target", modern.http_url, "--query_id_prefix", "chb-prefix-", "-i", "20", "-d", "0",
                "--allow-writes", stdin="SELECT 1\n")
    assert r.code == 0, r.stderr
    import urllib.request

    q = ("SYSTEM FLUSH LOGS", "SELECT count() FROM system.query_log WHERE query_id LIKE 'chb-prefix-%' AND type = 2")
    for sql in q:
        with urllib.request.urlopen(urllib.request.Request(modern.http_url, data=sql.encode())) as resp:
            body = resp.read().decode().strip()
    assert int(body) == 20


def test_embedded_engine_is_the_default_and_says_what_concurrency_means(tmp_path):
    r = run_cli("load", "-q", "SELECT sum(number) FROM numbers(10000)", "-c", "2", "-i", "40", "-d", "0")
    assert r.code == 0, r.stderr
    assert "embedded engine" in r.stderr and "one query at a time" in r.stderr and "queries: 40" in r.stderr


def test_a_timeout_stops_an_embedded_query_it_cannot_interrupt(tmp_path):
    """The embedded engine runs in the lane's thread: nothing stops it from outside. The
    server's own max_execution_time does (--timeout 0.2 counted sleep(0.5) a success)."""
    r = run_cli("load", "-q", "SELECT sleep(0.5)", "--timeout", "0.2", "-i", "2", "-d", "0", "--continue_on_errors",
                "--json", str(tmp_path / "t.json"))
    assert r.code == 0, r.stderr
    assert "code 159: 2" in r.stderr
    assert load(tmp_path / "t.json")["statistics"]["num_errors"] == 2


def _spawn(args: list[str]) -> subprocess.Popen[str]:
    return spawn_cli("load", *args)


def test_ctrl_c_prints_the_final_report_and_keeps_the_file(modern, tmp_path):
    out = tmp_path / "c.json"
    proc = _spawn(["--target", modern.http_url, "-q", "SELECT sleep(0.05)", "-c", "2", "-d", "0", "--out", str(out)])
    wait_for_results(out, proc, lambda doc: doc["levels"] and doc["levels"][0]["total"]["queries"] >= 10)
    err = interrupt(proc)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err and "Queries executed:" in err
    doc = assert_interrupted(out)
    assert doc["levels"][0]["total"]["queries"] >= 10


@pytest.mark.parametrize("kind", ["native", "http"])
def test_killed_server_ends_the_run_with_a_valid_report(tmp_path, kind):
    server = ModernServer()
    out = tmp_path / "k.json"
    try:
        target = ["--port", str(server.tcp_port)] if kind == "native" else ["--target", server.http_url]
        proc = _spawn([*target, "-q", "SELECT sleep(0.05)", "-c", "2", "-d", "0", "--out", str(out),
                       "--json", str(tmp_path / "k-cb.json")])
        time.sleep(3)
        server.kill()
        _, err = proc.communicate(timeout=60)
    finally:
        server.stop()
    assert proc.returncode == 3, err
    assert "Traceback" not in err and "stopped answering" in err and "Queries executed:" in err
    doc = load(out)
    assert doc["status"] == "server_lost" and doc["levels"][0]["total"]["queries"] >= 10
    assert load(tmp_path / "k-cb.json")["statistics"]["num_queries"] >= 10


def test_load_results_feed_compare(modern, tmp_path):
    for name in ("a", "b"):
        r = run_cli("load", "--target", modern.http_url, "-i", "300", "-d", "0",
                    "--out", str(tmp_path / f"{name}.json"), stdin="SELECT count() FROM numbers(200000)\n")
        assert r.code == 0, r.stderr
    c = run_cli("compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--format", "json")
    assert c.code in (0, 1), c.stderr
    doc = c.json()
    assert doc["queries"][0]["a"]["runs"] == 300 and doc["queries"][0]["verdict"]


@pytest.mark.parametrize(
    "args,stdin,needle",
    [
        (["-c", "0"], "SELECT 1\n", "must be a positive number"),
        (["--confidence", "7"], "SELECT 1\n", "must be 0..5"),
        (["--bogus-flag"], "SELECT 1\n", "unrecognized argument: --bogus-flag"),
        (["-x"], "SELECT 1\n", "unrecognized argument: -x"),
        (["--max_threads"], "SELECT 1\n", "needs a value"),
        (["--poisson"], "SELECT 1\n", "--poisson needs --rate"),
        (["--target", "http://127.0.0.1:1", "--stage", "fetch_columns"], "SELECT 1\n", "native protocol only"),
        (["--port", "1"], "SELECT 1\n", "cannot connect"),
        ([], "", "no queries"),
        (["--queries", "/nonexistent.sql"], "", "query file not found"),
        (["--workers", "2"], "SELECT 1\n", "needs a server target"),
        (["--master", "--precise", "--target", "http://127.0.0.1:1"], "SELECT 1\n", "not with --master"),
        (["-h", "a", "-h", "b", "-p", "1", "-p", "2", "-p", "3"], "SELECT 1\n", "give as many of each"),
    ],
)
def test_bad_flags_one_line_exit_2(args, stdin, needle):
    r = run_cli("load", *args, stdin=stdin)
    assert_one_line_error(r)
    assert needle in r.stderr, r.stderr


def test_unknown_setting_is_refused_before_any_load(modern):
    r = run_cli("load", "--port", str(modern.tcp_port), "--max_threadz=2", stdin="SELECT 1\n")
    assert_one_line_error(r)
    assert "unknown setting max_threadz" in r.stderr


def test_live_view_on_a_terminal():
    import io

    from rich.console import Console

    from chbench.load.config import LoadConfig
    from chbench.load.levels import Host
    from chbench.load.recorder import Stats
    from chbench.targets import Credentials
    from chbench.ui.load import LiveDisplay
    from chbench.workload import Query

    cfg = LoadConfig(targets=["embedded"], credentials=Credentials(), queries=[Query("q", "SELECT 1")])
    d = LiveDisplay(cfg, [Host("embedded", "embedded", "embedded", "embedded", "26.9", {})])
    buf = io.StringIO()
    d.console = Console(file=buf, force_terminal=True, width=120)
    d.live = type(d.live)(console=d.console, auto_refresh=False, transient=False)
    st = Stats()
    for ms in (1.0, 2.0, 3.0, 40.0):
        st.hist.record(ms)
        st.queries += 1
    st.errors = 2
    d.level_started(1)
    d.interval(1, {}, {0: st}, 2.0, {0: st}, 5.0)
    d.level_finished()
    text = buf.getvalue()
    assert "QPS (last)" in text and "p99 ms (last)" in text and "2.0" in text and "40" in text


def test_roundrobin_spreads_without_comparing_and_cumulative_reports(modern, tmp_path):
    r = run_cli("load", "--target", modern.http_url, "--port", str(modern.tcp_port), "--roundrobin", "-t", "2.2",
                "-d", "1", "--cumulative", "--json", str(tmp_path / "rr.json"), stdin="SELECT 1\n")
    assert r.code == 0, r.stderr
    assert "(round robin)" in r.stderr and "t-test" not in r.stderr
    doc = load(tmp_path / "rr.json")
    assert set(doc) == {"statistics", "query_time_percentiles"}  # one combined report
    executed = [int(n) for n in re.findall(r"Queries executed: (\d+)\.", r.stderr)]
    assert len(executed) >= 3 and executed == sorted(executed)
    # cumulative: every intermediate report counts the whole run so far
    counts = [int(n) for n in re.findall(r"\(round robin\), queries: (\d+), QPS", r.stderr)]
    assert counts == sorted(counts) and counts[-1] == doc["statistics"]["num_queries"]


def test_workload_setup_per_query_settings_and_teardown(modern, tmp_path):
    qf = tmp_path / "w.sql"
    qf.write_text("-- setup\nCREATE TABLE chbench_load_t ENGINE = Memory AS SELECT number FROM numbers(1000);\n"
                  "-- name: count\nSELECT count() FROM chbench_load_t;\n"
                  "-- name: one_thread\n-- settings: max_threads=1\nSELECT sum(number) FROM chbench_load_t;\n"
                  "-- teardown\nDROP TABLE chbench_load_t;\n")
    out = tmp_path / "l.json"
    r = run_cli("load", "--target", modern.http_url, "--queries", str(qf), "-i", "20", "-d", "0", "--out", str(out))
    assert r.code == 0, r.stderr
    doc = load(out)
    assert doc["levels"][0]["total"]["queries"] == 20 and doc["queries"][1]["settings"] == {"max_threads": "1"}
    from chbench.targets import Credentials, make_target

    admin = make_target(modern.http_url, Credentials())
    assert admin.query_rows("EXISTS TABLE chbench_load_t") == [["0"]]
    admin.close()
    qf.write_text("-- settings: max_threadz=1\nSELECT 1\n")
    r = run_cli("load", "--target", modern.http_url, "--queries", str(qf), "-i", "1")
    assert_one_line_error(r)
    assert "unknown setting max_threadz" in r.stderr


def test_cluster_target_spreads_queries_with_per_host_stats(modern, tmp_path):
    """clickhouse://h1,h2:PORT — two names of the one server here: each query goes to the
    next host (or a random one), the report and --json are the target's, per_host each's."""
    url = f"clickhouse://127.0.0.1,localhost:{modern.tcp_port}"
    out, bj = tmp_path / "load.json", tmp_path / "b.json"
    r = run_cli("load", "--target", url, "-q", "SELECT 1", "-c", "2", "-i", "100", "--out", str(out), "--json",
                str(bj))
    assert r.code == 0, r.stderr
    doc = load(out)
    lv = doc["levels"][-1]
    assert [h["label"] for h in lv["hosts"]] == [f"127.0.0.1:{modern.tcp_port}, localhost:{modern.tcp_port}"]
    assert [(h["label"], h["target"], h["queries"]) for h in lv["per_host"]] == [
        (f"127.0.0.1:{modern.tcp_port}", 0, 50), (f"localhost:{modern.tcp_port}", 0, 50)]
    assert [t["target"] for t in doc["targets"]] == [0, 0]
    assert load(bj)["statistics"]["num_queries"] == 100 and lv["comparison"] is None
    assert f"  localhost:{modern.tcp_port}: 50 queries, 0 errors" in r.stderr
    r = run_cli("load", "--target", url, "--pick", "random", "-q", "SELECT 1", "-i", "200", "--seed", "3", "--out",
                str(out))
    per_host = load(out)["levels"][-1]["per_host"]
    assert sum(h["queries"] for h in per_host) == 200 and all(40 < h["queries"] < 160 for h in per_host)
    # a cluster target beside a single host: comparison mode between the two targets
    r = run_cli("load", "--target", url, "--port", str(modern.tcp_port), "-q", "SELECT 1", "-i", "60", "--out",
                str(out))
    lv = load(out)["levels"][-1]
    assert r.code == 0 and len(lv["hosts"]) == 2 and len(lv["per_host"]) == 3 and lv["comparison"]
