"""``chbench compare`` through the real command line, on results from real engines."""

from __future__ import annotations

import csv
import io
import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import assert_one_line_error, run_cli

# `count` is the same on both sides; 20M rows (~18 ms here), not 2M (~3 ms): at 3 ms one
# side-by-side run's noise read -9% [-17%, -2%], p 0.02, "faster" (CI, 2026-12-02; 0 of 16
# runs by hand), at 18 ms the intervals are about half as wide (0 of 12)
Q_SMALL = "-- name: hash\nSELECT sum(cityHash64(number)) FROM numbers(8000000);\n" \
          "-- name: count\nSELECT count() FROM numbers(20000000) WHERE number % 7 = 1;\n"
# `hash` 15x the rows (~10x slower): far beyond what a busier machine can explain in
# separate runs (stats/machine.py). At 6x (~4x slower) a CI run called it `unstable`
# while the reference task's own two speeds were bounded by their 4th power (2026-12-08)
Q_BIG = "-- name: hash\nSELECT sum(cityHash64(number)) FROM numbers(120000000);\n" \
        "-- name: count\nSELECT count() FROM numbers(20000000) WHERE number % 7 = 1;\n" \
        "-- name: new_one\nSELECT 1;\n"


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("cmp")
    (d / "small.sql").write_text(Q_SMALL)
    (d / "big.sql").write_text(Q_BIG)
    out = {"sbs": d / "sbs.json", "a": d / "a.json", "b": d / "b.json"}
    common = ["--iterations", "10", "--warmup", "1", "--quiet"]
    # not interleaved: interleaved, `count` would follow B's 6× heavier `hash` in some rounds
    # and A's light one in others — an order effect of the test's own making (CI once saw
    # `count` "faster" on B)
    r = run_cli("run", "--queries", str(d / "small.sql"), "--queries-b", str(d / "big.sql"), "--out",
                str(out["sbs"]), "--no-interleave", *common)
    assert r.code == 0, r.stderr
    for key, q in (("a", "small.sql"), ("b", "big.sql")):
        r = run_cli("run", "--queries", str(d / q), "--out", str(out[key]), *common)
        assert r.code == 0, r.stderr
    return out


def test_side_by_side_known_shift_is_slower_exit_1(files):
    r = run_cli("compare", str(files["sbs"]), "--format", "json")
    assert r.code == 1, r.stderr
    doc = r.json()
    by = {q["name"]: q for q in doc["queries"]}
    assert by["hash"]["verdict"] == "slower" and 3 < by["hash"]["ratio"] < 30
    lo, hi = by["hash"]["ci"]
    assert lo < by["hash"]["ratio"] < hi and lo > 1.05
    assert by["count"]["verdict"] in ("no change", "unstable")
    assert by["new_one"]["verdict"] == "only in B"
    for key in ("name", "verdict", "ratio", "ci", "p_value", "a", "b", "flags"):
        assert key in by["hash"]
    s = doc["summary"]
    assert s["geomean"]["ratio"] > 1 and s["total_median_ms"]["b"] > s["total_median_ms"]["a"]


def test_separate_files_report_machine_drift_guard(files):
    r = run_cli("compare", str(files["a"]), str(files["b"]), "--format", "json")
    assert r.code == 1, r.stderr
    doc = r.json()
    m = doc["summary"]["machine"]
    assert m is not None and "calibration_ratio" in m
    assert m["busier"] in ("A", "B", None) and isinstance(m["differences"], list)
    for side in ("a", "b"):  # both runs' probe readings, summarized
        assert {"others_share", "busy", "steal", "iowait", "load1", "readings"} <= set(m["probes"][side]["client"])
    assert "shift" in doc["summary"]
    assert {q["name"]: q["verdict"] for q in doc["queries"]}["hash"] == "slower"


def _drifted_pair(template: Path, d: Path, shift: float, b_busier: bool) -> tuple[Path, Path]:
    """Two run files of six queries made from a real file's header: B's times are A's
    times ``shift``; B's machine probes busier or not (scripted readings)."""
    import numpy as np

    base = json.loads(template.read_text())
    rng = np.random.default_rng(5)
    out = []
    for side, factor in (("a", 1.0), ("b", shift)):
        doc = json.loads(json.dumps(base))
        doc["queries"] = []
        for i in range(6):
            times = 100 * (1 + i / 5) * factor * rng.lognormal(0, 0.01, 20)
            doc["queries"].append({"name": f"q{i}", "sql": f"SELECT {i}", "sql_sent": f"SELECT {i}", "target": "A",
                                   "sides": {}, "errors": 0,
                                   "samples": [{"query_id": f"q{i}-{r}", "client_ms": float(t), "target": "A",
                                                "round": r, "warmup": False} for r, t in enumerate(times)]})
        doc["calibration"] = []
        others = 0.4 if side == "b" and b_busier else 0.01
        doc["machine"] = {"client": [{"round": r, "others_cores": others, "cpus": 2, "busy": 0.5, "steal": 0.0,
                                      "iowait": 0.0, "load1": 1.0} for r in range(20)], "servers": {}, "notes": []}
        path = d / f"drift-{side}-{shift}-{b_busier}.json"
        path.write_text(json.dumps(doc))
        out.append(path)
    return out[0], out[1]


def test_a_busier_machine_that_left_every_verdict_definite_is_said_without_alarm(files, tmp_path):
    """B's machine was busier but nothing moved: the finding says so and asks for no rerun
    (it said "rerun B, or measure side by side" under ten `no change`)."""
    a, b = _drifted_pair(files["a"], tmp_path, 1.0, b_busier=True)
    r = run_cli("compare", str(a), str(b), "--format", "json")
    assert r.code == 0, r.stderr
    doc = r.json()
    assert doc["summary"]["machine"]["busier"] == "B"
    assert [q["verdict"] for q in doc["queries"]] == ["no change"] * 6
    said = [f for f in doc["findings"] if "busier machine" in f]
    assert said and all("every verdict is definite all the same" in f and "rerun" not in f for f in said)


def test_uniform_shift_explained_by_a_busier_machine_is_a_warning_exit_0(files, tmp_path):
    a, b = _drifted_pair(files["a"], tmp_path, 1.12, b_busier=True)
    r = run_cli("compare", str(a), str(b), "--format", "json")
    assert r.code == 0, r.stderr
    assert "warning:" in r.stderr and "machine, not engine" in r.stderr
    doc = r.json()
    s = doc["summary"]
    assert s["machine"]["busier"] == "B" and s["machine"]["probes"]["b"]["client"]["others_share"] == 0.2
    assert s["shift"]["explained_by_machine"] is True and s["shift"]["queries_sharing"] == 6
    lo, hi = s["shift"]["ci"]
    assert lo < s["shift"]["ratio"] < hi and 1.09 < s["shift"]["ratio"] < 1.15
    assert [q["verdict"] for q in doc["queries"]] == ["no change"] * 6
    md = run_cli("compare", str(a), str(b), "--format", "markdown").stdout
    # each row shows its change against 1 (about +12%): its note says the verdict is against the machine's shift
    assert md.count("vs the machine's +1") == 6, md
    assert "B ran on a busier machine (other processes' CPU 0% vs 20%" in md  # a finding under the table
    full = run_cli("compare", str(a), str(b), "--format", "markdown", "--verbose").stdout
    assert "machine busier during B: other processes' CPU 0% vs 20%" in full
    assert "Machine state during each run" in full and "Machine state during each run" not in md


def test_uniform_shift_the_probes_do_not_explain_is_slower_exit_1(files, tmp_path):
    a, b = _drifted_pair(files["a"], tmp_path, 1.12, b_busier=False)
    r = run_cli("compare", str(a), str(b), "--format", "json")
    assert r.code == 1, r.stderr
    s = r.json()["summary"]
    assert s["machine"]["busier"] is None and s["shift"]["finding"] == "slower"
    assert s["shift"]["explained_by_machine"] is False


def test_fail_on_and_formats(files):
    assert run_cli("compare", str(files["sbs"]), "--fail-on", "never").code == 0
    md = run_cli("compare", str(files["sbs"]), "--format", "markdown")
    assert "| query | verdict |" in md.stdout and "slower" in md.stdout and "Geometric mean" in md.stdout
    c = run_cli("compare", str(files["sbs"]), "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(c.stdout)))
    assert {r["name"] for r in rows} == {"hash", "count", "new_one"}
    con = run_cli("compare", str(files["sbs"]))
    assert "hash" in con.stdout and "slower" in con.stdout and "TOTAL" in con.stdout


def test_same_file_twice_is_no_change(files):
    r = run_cli("compare", str(files["a"]), str(files["a"]), "--format", "json")
    assert r.code == 0
    assert all(q["verdict"] in ("no change", "unstable") for q in r.json()["queries"])
    assert any("is given twice" in n for n in r.json()["notes"])  # said, not left to the reader
    other = run_cli("compare", str(files["a"]), str(files["b"]), "--format", "json")
    assert not any("given twice" in n for n in other.json()["notes"])


def test_matching_by_sql_when_names_differ(files, tmp_path):
    doc = json.loads(files["a"].read_text())
    for q in doc["queries"]:
        q["name"] = "renamed-" + q["name"]
    renamed = tmp_path / "renamed.json"
    renamed.write_text(json.dumps(doc))
    r = run_cli("compare", str(files["a"]), str(renamed), "--format", "json")
    assert [q["verdict"] for q in r.json()["queries"]].count("only in B") == 0

    assert not any("different SQL" in n for n in r.json()["notes"])
    # one name, edited SQL: compared, and said (in silence it read as a change of speed)
    doc = json.loads(files["a"].read_text())
    q = doc["queries"][0]
    for place in (q, *q["sides"].values()):
        for key in ("sql", "sql_sent"):
            place[key] = place[key].replace("SELECT", "SELECT 1 + ", 1)
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(doc))
    r = run_cli("compare", str(files["a"]), str(edited), "--format", "json")
    name = doc["queries"][0]["name"]
    assert f"1 query ran different SQL in A and B under one name ({name})" in " ".join(r.json()["notes"])


UPGRADE_A = {
    "meta": {"host": "db1", "port": 8123, "server_version": "23.8.1", "iterations": 20, "warmup": 1,
             "max_threads": 0, "timestamp_utc": "2026-11-01T10:00:00Z"},
    "results": [
        {"id": "q1", "query": "SELECT 1", "runs": 20, "errors": 0, "min_ms": 90, "p50_ms": 100, "p90_ms": 110,
         "p99_ms": 120, "max_ms": 125, "mean_ms": 101, "qps": 9.9, "error_sample": None},
        {"id": "q2", "query": "SELECT 2", "runs": 20, "errors": 0, "min_ms": 50, "p50_ms": 52, "p90_ms": 55,
         "p99_ms": 60, "max_ms": 61, "mean_ms": 53, "qps": 19, "error_sample": None},
    ],
}


def test_upgrade_script_json(tmp_path):
    b = json.loads(json.dumps(UPGRADE_A))
    b["meta"]["server_version"] = "24.3.1"
    b["results"][0].update(min_ms=150, p50_ms=160, p90_ms=170, p99_ms=180, max_ms=190)
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_text(json.dumps(UPGRADE_A))
    pb.write_text(json.dumps(b))
    r = run_cli("compare", str(pa), str(pb), "--format", "json")
    assert r.code == 1, r.stderr
    doc = r.json()
    by = {q["name"]: q for q in doc["queries"]}
    assert by["q1"]["verdict"] == "slower" and by["q2"]["verdict"] == "no change"
    assert "summary numbers only: weaker verdict" in by["q1"]["flags"]
    assert any("weaker" in n for n in doc["notes"])
    assert by["q1"]["a"]["runs"] == 20  # as the file says, not 0 (no raw samples)


def test_a_summary_only_change_that_overlaps_says_what_would_decide_it(tmp_path):
    """+11.5% in medians whose ranges overlap: no test is possible on summary numbers, and
    more rounds of the same file format would not help (the finding said "noise wider
    than the ±5% a verdict needs; … narrows it")."""
    b = json.loads(json.dumps(UPGRADE_A))
    b["results"][1].update(min_ms=50, p50_ms=58, p90_ms=62, p99_ms=66, max_ms=70)
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_text(json.dumps(UPGRADE_A))
    pb.write_text(json.dumps(b))
    r = run_cli("compare", str(pa), str(pb), "--format", "json")
    doc = r.json()
    assert r.code == 0 and {q["name"]: q["verdict"] for q in doc["queries"]} == {"q1": "no change", "q2": "unstable"}
    assert any("summary numbers only" in f and "allows no test" in f and "load --out" in f
               for f in doc["findings"]), doc["findings"]
    assert not any("noise wider" in f for f in doc["findings"])


def test_clickhouse_benchmark_json_real_files(legacy, tmp_path):
    paths = []
    for i, query in enumerate(["SELECT 1", "SELECT count() FROM numbers(50000000) WHERE number % 3 = 1"]):
        p = tmp_path / f"cb{i}.json"
        subprocess.run(["clickhouse-benchmark", "--port", str(legacy.tcp_port), "-i", "40", "-d", "0",
                        "--json", str(p)], input=(query + "\n").encode(), capture_output=True, check=True, timeout=120)
        paths.append(p)
    r = run_cli("compare", str(paths[0]), str(paths[1]), "--format", "json")
    assert r.code == 1, r.stderr
    q = r.json()["queries"][0]
    assert q["verdict"] == "slower" and q["ratio"] > 2
    assert q["a"]["runs"] == q["b"]["runs"] == 40  # num_queries, as the files say
    # keyed by host, as comparison mode writes it: one file, two sides
    keyed = {"localhost:9000": json.loads(paths[0].read_text()), "localhost:9001": json.loads(paths[1].read_text())}
    pk = tmp_path / "keyed.json"
    pk.write_text(json.dumps(keyed))
    r2 = run_cli("compare", str(pk), "--format", "json")
    assert r2.code == 1 and r2.json()["queries"][0]["verdict"] == "slower"


@pytest.mark.parametrize(
    "content,needle",
    [
        (b"\x00\x01\x02binary garbage\xff", "not a results file"),
        (b"[1, 2, 3]", "not a results file"),
        (b'{"hello": "world"}', "not a results file"),
        (b'{"schema": {"name": "chbench.results", "version": 99}, "queries": []}', "newer"),
        (b'{"schema": {"name": "chbench.results", "version": 1}}', "malformed"),
    ],
)
def test_not_a_results_file(tmp_path, content, needle, files):
    p = tmp_path / "bad.json"
    p.write_bytes(content)
    r = run_cli("compare", str(files["a"]), str(p))
    assert_one_line_error(r)
    assert needle in r.stderr


def test_compare_bad_inputs(files, tmp_path):
    assert_one_line_error(run_cli("compare", str(tmp_path / "missing.json"), str(files["a"])))
    r = run_cli("compare", str(files["a"]))
    assert_one_line_error(r)
    assert "one side only" in r.stderr
    other = json.loads(files["a"].read_text())
    for q in other["queries"]:
        q["name"], q["sql"] = "x-" + q["name"], "SELECT 42"
        for side in q["sides"].values():
            side["sql"] = side["sql_sent"] = "SELECT 42"
        q["sql_sent"] = "SELECT 42"
    po = tmp_path / "other.json"
    po.write_text(json.dumps(other))
    r = run_cli("compare", str(files["a"]), str(po))
    assert_one_line_error(r)
    assert "no query in common" in r.stderr
    assert_one_line_error(run_cli("compare", str(files["a"]), str(files["b"]), "--threshold", "abc"))
    # a report into a directory that is not there: one line (it was a FileNotFoundError traceback)
    r = run_cli("compare", str(files["a"]), str(files["b"]), "--output", str(tmp_path / "no" / "r.md"))
    assert_one_line_error(r)
    assert "directory" in r.stderr and "does not exist" in r.stderr


def test_server_metric_missing_is_a_clear_error(files, tmp_path):
    doc = json.loads(files["a"].read_text())
    for q in doc["queries"]:
        for s in q["samples"]:
            s["server_ms"] = None
    p = tmp_path / "no_server.json"
    p.write_text(json.dumps(doc))
    r = run_cli("compare", str(p), str(files["b"]), "--metric", "server_ms")
    assert_one_line_error(r)
    assert "no server_ms recorded" in r.stderr
    ok = run_cli("compare", str(files["a"]), str(files["b"]), "--metric", "server_ms", "--format", "json")
    assert ok.code == 1 and ok.json()["metric"] == "server_ms"


def test_a_run_stopped_before_a_query_leaves_it_skipped_not_failed(files, tmp_path):
    """Ctrl-C before the last query's timed runs: that query was never measured, which is
    neither a failure on B ("backward-incompatible?") nor part of B's total; a gate still
    does not pass on it (exit 1, said in one line)."""
    doc = json.loads(files["a"].read_text())
    doc["status"] = "interrupted"
    last = doc["queries"][-1]
    last["samples"] = [s for s in last["samples"] if s.get("warmup")]
    cut = tmp_path / "cut.json"
    cut.write_text(json.dumps(doc))
    r = run_cli("compare", str(files["a"]), str(cut), "--format", "json")
    assert r.code == 1 and f"1 query not measured: a run stopped before it ({last['name']}) — exit 1" in r.stderr
    out = json.loads(r.stdout)
    row = next(q for q in out["queries"] if q["name"] == last["name"])
    assert row["verdict"] == "skipped"
    assert row["reasons"] == ["B: not measured: the run stopped before it (interrupted)"]
    total = out["summary"]["total_median_ms"]
    assert total["queries"] == len(out["queries"]) - 1 and total["ratio"] == pytest.approx(1.0)
    r = run_cli("compare", str(files["a"]), str(cut))
    assert f"TOTAL of medians (the {total['queries']} measured on both sides)" in r.stdout
    # pooled with a file that measured it, the side has that file's runs: not skipped
    r = run_cli("compare", str(files["a"]), "--vs", str(cut), str(files["a"]), "--format", "json")
    row = next(q for q in json.loads(r.stdout)["queries"] if q["name"] == last["name"])
    assert row["verdict"] != "skipped" and row["b"]["runs"] == row["a"]["runs"], r.stderr
