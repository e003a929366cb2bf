"""``chbench ingest`` and ``chbench read`` against real engines: the 26.9 server (HTTP
and native), the embedded engine and the 18.16 server."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from chbench.transfer.dataset import COUNTRIES, Dataset, crc32_of
from chbench.transfer.endpoints import RawHttp, parse_endpoints
from chbench.transfer.ingest import run_ingest
from chbench.transfer.ingest_paths import PATHS, HttpBatches, _check, _http_errors, token, with_retries
from chbench.transfer.native_format import encode_block, read_native
from tests.conftest import (
    assert_interrupted,
    assert_one_line_error,
    interrupt,
    load,
    run_cli,
    spawn_cli,
    wait_for_results,
)
from tests.engines import free_port
from tests.faults import DropOneResponse

ROWS = 60_000


# -- no engine ---------------------------------------------------------------------------

def test_native_round_trip():
    body = encode_block([("n", "UInt64", np.arange(5, dtype=np.uint64)), ("s", "String", ["a", "", "ccc", "é", "x"])])
    body += encode_block([("n", "UInt64", np.arange(5, 8, dtype=np.uint64)), ("s", "String", ["1", "2", "3"])])
    for expected in (8, None):
        cols = read_native(io.BytesIO(body), expected)
        assert cols["n"].tolist() == list(range(8))
        assert cols["s"] == ["a", "", "ccc", "é", "x", "1", "2", "3"]


def test_a_clickhouse_connect_path_that_cannot_connect_is_one_line():
    """clickhouse-connect logs "Unexpected Http Driver Exception" on stderr before it
    raises; chbench says the path's failure itself, once. In a process of its own: under
    pytest, logging has handlers and the message would not reach stderr anyway."""
    import subprocess
    import sys

    code = ("from chbench.transfer.endpoints import Address, Skip, connect_client\n"
            "try:\n"
            f"    connect_client(Address('http', '127.0.0.1', {free_port()}, 'default', None), None, None, False)\n"
            "except Skip as e:\n"
            "    print(e)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.stdout.startswith("clickhouse-connect cannot connect") and p.stderr == "", (p.stdout, p.stderr)


def test_dataset_is_deterministic_and_its_checksum_is_its_own():
    a, b = Dataset(5000, 7), Dataset(5000, 7)
    assert a.csv_bytes() == b.csv_bytes() and Dataset(5000, 8).csv_bytes() != a.csv_bytes()
    cols = a.python_columns()
    groups: dict[str, list[int]] = {}
    for country, revenue in zip(cols[5], cols[6], strict=True):
        g = groups.setdefault(country, [0, 0])
        g[0] += 1
        g[1] += int(revenue.replace(".", ""))  # "123.45" -> 12345 cents, no floats
    rows = [(c, n, cents) for c, (n, cents) in groups.items()]
    assert a.expected()[1] == crc32_of(rows)
    assert {r[0] for r in rows} <= set(COUNTRIES)


# -- ingest -----------------------------------------------------------------------------

def test_ingest_every_server_path_lands_identical_data(modern, tmp_path):
    out = tmp_path / "ingest.json"
    r = run_cli("ingest", "--target", modern.http_url, "--target", modern.native_url, "--rows", str(ROWS),
                "--batch-size", "25000", "--out", str(out))
    assert r.code == 0, r.stderr
    doc = load(out)
    assert doc["kind"] == "ingest" and doc["status"] == "complete"
    res = doc["result"]
    paths = {p["name"]: p for p in res["paths"]}
    assert set(paths) == {n for n, c in PATHS.items() if c.protocol != "embedded"}
    for p in paths.values():
        assert p["status"] == "ok", p
        assert p["row_count"] == ROWS and p["checksum"] == res["expected"]["checksum"]
        assert {"name", "rows", "rows_per_s", "mb_per_s", "seconds", "cpu_seconds", "checksum", "row_count",
                "batch_latency_ms"} <= set(p)
    assert paths["http-batches"]["batches"] == 3 and paths["http-file"]["batches"] == 1
    assert res["ceiling"]["checksum"] == res["expected"]["checksum"] and res["fastest"]["of_ceiling"] > 0
    assert "ceiling" in r.stdout and "Fastest path" in r.stdout
    # three rounds by default: every path's time each round, the median shown, paths ranked
    # round by round, the leader's share of the ceiling with its interval
    assert res["rounds"] == 3 and len(res["ceiling"]["rounds_s"]) == 3
    for p in paths.values():
        assert len(p["tries_s"]) == 3 and min(p["tries_s"]) <= p["seconds"] <= max(p["tries_s"])
    ranking = res["ranking"]
    assert ranking["leader"] == res["fastest"]["name"] and len(ranking["others"]) == len(paths) - 1
    assert all(g["rounds"] == 3 and g["ci"][0] <= g["ratio"] <= g["ci"][1] for g in ranking["others"])
    lo, hi = res["fastest"]["of_ceiling_ci"]
    assert lo <= res["fastest"]["of_ceiling"] <= hi
    assert "median over 3 rounds" in r.stdout


def test_ingest_batch_size_sweep_and_async_insert(modern, tmp_path):
    out = tmp_path / "sweep.json"
    r = run_cli("ingest", "--target", modern.http_url, "--rows", "20000", "--paths", "http-native,connect-arrow",
                "--batch-size", "5000,20000", "--async-insert", "--compress", "--repeat", "1", "--out", str(out))
    assert r.code == 0, r.stderr
    names = [p["name"] for p in load(out)["result"]["paths"]]
    assert names == ["http-native@5000", "http-native@20000", "connect-arrow@5000", "connect-arrow@20000"]
    assert load(out)["result"]["settings"] == {"async_insert": "1", "wait_for_async_insert": "1"}


def test_ingest_embedded_paths(tmp_path):
    out = tmp_path / "e.json"
    r = run_cli("ingest", "--rows", "20000", "--out", str(out))
    assert r.code == 0, r.stderr
    paths = load(out)["result"]["paths"]
    assert [p["name"] for p in paths] == ["embedded-file", "embedded-arrow"]
    assert all(p["status"] == "ok" for p in paths)


def test_ingest_on_the_old_server(legacy, tmp_path):
    out = tmp_path / "old.json"
    r = run_cli("ingest", "--target", legacy.http_url, "--target", legacy.native_url, "--rows", "20000",
                "--repeat", "1", "--out", str(out))
    assert r.code == 0, r.stderr
    paths = {p["name"]: p for p in load(out)["result"]["paths"]}
    assert paths["connect-native"]["status"] == "skipped" and "20+" in paths["connect-native"]["reason"]
    for name in ("http-file", "http-batches", "http-native", "driver-rows", "driver-columns"):
        assert paths[name]["status"] == "ok", paths[name]


def test_a_retry_after_a_lost_response_adds_no_duplicates(modern):
    """The 2nd batch's response never arrives (the server did commit it): the batch is
    sent again with the same deduplication token and lands once."""
    proxy = DropOneResponse(modern.http_port, drop_nth=2)
    try:
        ep = parse_endpoints([f"http://127.0.0.1:{proxy.port}"], None, None, None, None)
        doc = run_ingest(ep, Dataset(30_000), ["http-batches"], [10_000], False, False, lambda s: None)
    finally:
        proxy.close()
    assert proxy.dropped == 1
    p = doc["paths"][0]
    assert p["retries"] == 1 and p["status"] == "ok", p
    assert p["row_count"] == 30_000 and p["checksum"] == doc["expected"]["checksum"]


class SendsOneBatchTwice(HttpBatches):
    """A test double of a buggy client: batch 0 goes out twice, under different tokens."""

    name = "buggy-resend"

    def send(self, ds, ctx):
        super().send(ds, ctx)
        raw = RawHttp(ctx.endpoints.http, None, None)
        params = {"query": f"INSERT INTO {ctx.table} FORMAT CSV", **token(ctx, "again")}
        with_retries(ctx, lambda: _check(raw.post(params, self.bodies[0])), _http_errors())


def test_a_path_that_lands_wrong_data_is_caught_and_named(modern):
    ep = parse_endpoints([modern.http_url], None, None, None, None)
    registry = {**PATHS, SendsOneBatchTwice.name: SendsOneBatchTwice}
    doc = run_ingest(ep, Dataset(20_000), ["http-batches", "buggy-resend"], [5_000], False, False, lambda s: None,
                     paths=registry, rounds=3)
    assert doc["mismatches"] == ["buggy-resend"]
    bad = doc["paths"][1]
    assert bad["status"] == "wrong data" and bad["row_count"] == 25_000 and "expected 20,000 rows" in bad["error"]
    assert doc["paths"][0]["status"] == "ok"
    # wrong once, not sent again; the ranking holds only what landed right every round
    assert len(bad["tries_s"]) == 1 and len(doc["paths"][0]["tries_s"]) == 3
    assert doc["ranking"] == {"leader": "http-batches", "others": [], "tied": []}


@pytest.mark.parametrize("args,needle", [
    (["ingest", "--paths", "carrier-pigeon"], "unknown ingest path"),
    (["ingest", "--batch-size", "0"], "positive row counts"),
    (["ingest", "--batch-size", "ten"], "--batch-size takes"),
    (["ingest", "--rows", "-5"], "positive"),
    (["read", "--rows", "0"], "positive"),
    (["read", "--query", "SELECT 1", "--rows", "5"], "{rows}"),
    (["read", "--paths", "telepathy"], "unknown read path"),
    (["ingest", "--target", "mysql://x"], "unknown target"),
    (["ingest", "--target", "embedded", "--target", "http://localhost:1"], "one at a time"),
])
def test_bad_options_one_line_exit_2(args, needle):
    r = run_cli(*args)
    assert_one_line_error(r)
    assert needle in r.stderr


@pytest.mark.parametrize("command", ["read", "ingest"])
def test_a_server_that_does_not_answer_is_bad_input_not_failed_paths(command, modern, tmp_path):
    """Each path opens its own client: a dead address read as every path failed (exit 1,
    a table of failures). Now every address given is tried first: one line, exit 2."""
    from tests.engines import free_port

    dead = f"clickhouse://127.0.0.1:{free_port()}"
    out = tmp_path / "x.json"
    r = run_cli(command, "--target", modern.http_url, "--target", dead, "--rows", "1000", "--out", str(out))
    assert_one_line_error(r)
    assert f"cannot connect to clickhouse://default@127.0.0.1:{dead.rsplit(':', 1)[1]}" in r.stderr
    assert not out.exists() and "failed" not in r.stdout
    r = run_cli(command, "--target", modern.http_url, "--user", "nobody", "--rows", "1000", "--out", str(out),
                env={"CLICKHOUSE_PASSWORD": "not-it"})
    assert_one_line_error(r)
    assert "not-it" not in r.stderr and not out.exists()


# -- read -------------------------------------------------------------------------------

def test_read_every_server_path_against_the_ceilings(modern, tmp_path):
    out = tmp_path / "read.json"
    r = run_cli("read", "--target", modern.http_url, "--target", modern.native_url, "--rows", "200000",
                "--max-block-size", "10000", "--buffer-bytes", "1000000", "--repeat", "2", "--out", str(out))
    assert r.code == 0, r.stderr
    res = load(out)["result"]
    assert res["rounds"] == 2 and all(len(c["tries_s"]) == 2 for c in res["ceilings"])
    assert all(len(p["tries_s"]) == 2 and p["of_transfer_ceiling_ci"] for p in res["paths"])
    assert res["ranking"]["leader"] in {p["name"] for p in res["paths"]} and "Fastest path" in r.stdout
    assert [c["name"] for c in res["ceilings"]] == ["ceiling: null", "ceiling: native"]
    assert res["native_bytes"] > 200_000 * 8
    for p in res["paths"]:
        assert p["status"] == "ok" and p["rows"] == 200_000 and p["rows_ok"], p
        assert p["peak_rss_mb"] > 0 and p["of_transfer_ceiling"] > 0
    assert len(res["paths"]) == 14


def test_read_embedded_and_a_uint64_column(tmp_path):
    out = tmp_path / "r.json"
    r = run_cli("read", "--rows", "100000", "--query", "SELECT number FROM numbers({rows})", "--out", str(out))
    assert r.code == 0, r.stderr
    paths = load(out)["result"]["paths"]
    assert [p["name"] for p in paths] == ["embedded-arrow", "embedded-df"]
    assert all(p["rows"] == 100_000 for p in paths)


def test_read_on_the_old_server_skips_what_it_cannot_do(legacy, tmp_path):
    out = tmp_path / "old.json"
    r = run_cli("read", "--target", legacy.http_url, "--target", legacy.native_url, "--rows", "50000",
                "--repeat", "1", "--out", str(out))
    # the default query reads numbers() there: 18.16 has no numbers_mt()
    assert load(out)["result"]["query"] == "SELECT number, toString(number) AS s FROM numbers(50000)"
    paths = {p["name"]: p for p in load(out)["result"]["paths"]}
    assert paths["http-arrowstream"]["status"] == "skipped" and "ArrowStream" in paths["http-arrowstream"]["reason"]
    assert paths["connect-numpy"]["status"] == "skipped"
    assert paths["http-rowbinary"]["status"] == "skipped"  # 18.16 has no RowBinaryWithNamesAndTypes
    for name in ("http-native", "http-tsv", "driver-execute", "driver-iter", "driver-columnar"):
        assert paths[name]["status"] == "ok" and paths[name]["rows"] == 50_000, paths[name]
    assert r.code == (1 if any(p["status"] == "failed" for p in paths.values()) else 0), r.stderr
    json.dumps(paths)


# -- Ctrl-C -----------------------------------------------------------------------------

def test_interrupted_ingest_keeps_the_paths_done(tmp_path):
    out = tmp_path / "i.json"
    # twelve paths: on a quiet machine four (~1.5 s) all finished before the Ctrl-C reached
    # the run, which then ended complete with exit 0 (2026-12-06)
    proc = spawn_cli("ingest", "--rows", "1000000", "--paths", ",".join(["embedded-file,embedded-arrow"] * 6),
                     "--out", str(out))
    wait_for_results(out, proc, lambda doc: any(p["status"] == "ok" for p in doc["result"]["paths"]), timeout=120)
    err = interrupt(proc)
    assert proc.returncode == 130 and "Traceback" not in err, err
    doc = assert_interrupted(out)
    paths = doc["result"]["paths"]
    assert paths[0]["status"] == "ok" and len(paths) == 12  # every path asked for, those not reached said so
    late = [p for p in paths if p["status"] == "not reached"]
    assert late and all(p["reason"] == "the run stopped before it" and p["path"] for p in late)


def test_interrupted_read_keeps_the_paths_done(tmp_path):
    out = tmp_path / "r.json"
    proc = spawn_cli("read", "--rows", "2000000", "--repeat", "3", "--paths", "embedded-arrow,embedded-df",
                     "--out", str(out))
    wait_for_results(out, proc, lambda doc: any(p["status"] == "ok" for p in doc["result"]["paths"]), timeout=180)
    err = interrupt(proc)
    assert proc.returncode == 130 and "Traceback" not in err, err
    doc = assert_interrupted(out)
    paths = doc["result"]["paths"]
    assert any(p["status"] == "ok" for p in paths) and doc["result"]["ceilings"]
    assert [p["name"] for p in paths] == ["embedded-arrow", "embedded-df"]  # every path asked for, in order
    assert {p["status"] for p in paths} <= {"ok", "skipped", "failed", "not reached"}


def test_read_with_its_server_killed_ends_as_a_lost_server_and_keeps_the_paths_done(tmp_path):
    """Each path reads in a process of its own: a dead server showed as every later path
    failing in turn, status 'complete', exit 1. Now the first failure asks the server, and
    the run ends as a lost server (exit 3) with what it read."""
    from tests.engines import ModernServer

    out = tmp_path / "r.json"
    with ModernServer() as server:
        proc = spawn_cli("read", "--target", server.http_url, "--rows", "2000000", "--out", str(out))
        wait_for_results(out, proc, lambda doc: len(doc["result"]["paths"]) >= 1, timeout=180)
        server.kill()
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 3 and "Traceback" not in err, err
    assert "server stopped answering" in err.splitlines()[-1]
    doc = load(out)
    assert doc["status"] == "server_lost" and doc["result"]["paths"][0]["status"] == "ok"
    assert len([p for p in doc["result"]["paths"] if p["status"] == "failed"]) <= 1


def test_a_ceiling_too_short_to_compare_with_is_said():
    """At 200,000 rows the ceilings took ~0.04 s and paths read 105-269% of them: the
    report says the sample is too small rather than let a path 'beat the wire'. Only the
    transfer ceiling counts: the engine's own (FORMAT Null) is short by nature."""
    from chbench.report.transfer import read_table

    def result(seconds: float) -> dict:
        return {"paths": [], "ceilings": [{"name": "ceiling: native", "rows_per_s": 1.0, "mb_per_s": 1.0,
                                           "seconds": seconds, "what": "transfer"}]}

    assert any(n.startswith("Too short to compare with the wire: the transfer ceiling took 0.041 s")
               for n in read_table(result(0.041))[1])
    assert not any("Too short" in n for n in read_table(result(1.5))[1])
    engine_only = {"paths": [], "ceilings": [{"name": "ceiling: null", "rows_per_s": 1.0, "mb_per_s": 1.0,
                                              "seconds": 0.03, "what": "engine"}]}
    assert not any("Too short" in n for n in read_table(engine_only)[1])
