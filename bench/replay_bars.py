"""Measure the bars of ``chbench capture`` and ``chbench replay`` (issue 15) on the real
26.9 server, with a workload this script sends and records itself.

    python bench/replay_bars.py                      # everything (~6 min)
    python bench/replay_bars.py --only memory        # ~1 min

Parts:
  fidelity  CLIENTS client processes (each its own connection and think times, HTTP with
            keep-alive) send QUERIES SELECTs over two databases — some failing — plus
            writes (INSERT, ALTER, DROP, SYSTEM), each with a query id and its send time
            recorded just before the request. ``chbench capture --include-failed``;
            bars: every SELECT captured (count and SQL text equal, by query id), no
            write captured, |captured start − recorded send| <= 1 ms for every query.
  timing    the captured workload replayed at 1x and at 4x onto the same server (which
            runs the replayed queries itself); bars: p99 of actual − planned start
            <= 5 ms, nothing dropped. Also, for the record: 10x (the server then needs
            most of the 2 cores), and the same timing with trivial queries at 10x and
            20x (where the server is not what limits).
  safety    the workload captured with --query-kind all (its INSERT, ALTER, DROP and
            SYSTEM statements in it), replayed read-only; bars: the tables' checksums
            unchanged, and no replayed statement in the server's query_log but SELECTs.
  memory    a 1,000,000-row query_log exported to Parquet with the real column names
            and types (taken from the server's system.query_log), captured with
            ``--from``; bars: peak RSS of the chbench process (and any child) < 300 MB,
            time < 60 s.

Run it on an otherwise idle machine. Writes bench/out/replay_bars.json and prints a
summary.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import multiprocessing as mp
import random
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
OUT = REPO / "bench" / "out"

from tests.engines import ModernServer  # noqa: E402

CLIENTS = 4
QUERIES = 2400  # SELECTs in all (the bar asks for >= 2,000)
THINK_MS = 90.0  # mean pause between one client's queries (exponential)
WRITES = ["INSERT INTO shop.events SELECT number, number % 7, 'w' FROM numbers(10)",
          "ALTER TABLE shop.events UPDATE kind = 1 WHERE id = 3",
          "ALTER TABLE logs.hits DELETE WHERE id = 5",
          "DROP TABLE IF EXISTS shop.scratch",
          "SYSTEM DROP MARK CACHE",
          "CREATE TABLE IF NOT EXISTS shop.scratch (x UInt8) ENGINE = Memory",
          "TRUNCATE TABLE IF EXISTS shop.scratch"]
SELECTS = ["SELECT count() FROM events WHERE kind = {k}",
           "SELECT kind, count(), avg(id) FROM events WHERE id > {n} GROUP BY kind ORDER BY kind",
           "SELECT sum(id) FROM events WHERE tag = 'v{k}'",
           "SELECT id FROM events WHERE id % 1000 = {k} ORDER BY id LIMIT 5",
           "SELECT uniqExact(kind) FROM events WHERE id BETWEEN {n} AND {n} + 50000",
           "SELECT count() FROM nope_{k}"]  # fails: UNKNOWN_TABLE
LOG_SELECTS = ["SELECT count() FROM hits WHERE id > {n}",
               "SELECT max(id), min(id) FROM hits WHERE id % {m} = 0"]


def http_query(conn: http.client.HTTPConnection, sql: str, params: dict[str, str]) -> float:
    """Send; returns when the request was handed to the kernel (time.time())."""
    conn.request("POST", "/?" + urllib.parse.urlencode(params), body=sql.encode())
    written = time.time()
    r = conn.getresponse()
    r.read()
    return written


class NativeClient:
    """The same user over the native protocol (clickhouse-driver): a connection per
    database, opened with a recorded SELECT 1 before the first timed query."""

    def __init__(self, port: int, number: int, sent: list[dict[str, Any]]) -> None:
        from clickhouse_driver import Client

        self.clients = {}
        for db in ("shop", "logs", None):
            c = self.clients[db] = Client("127.0.0.1", port=port, **({"database": db} if db else {}))
            qid = f"bench-connect-{number}-{db}"
            before = time.time()
            c.execute("SELECT 1", query_id=qid)
            sent.append({"query_id": qid, "sql": "SELECT 1", "before_us": int(before * 1e6),
                         "sent_us": int(before * 1e6)})

    def send(self, sql: str, params: dict[str, str]) -> float:
        from clickhouse_driver.errors import Error

        params = dict(params)
        qid = params.pop("query_id")
        client = self.clients[params.pop("database", None)]
        with contextlib.suppress(Error):  # a failing query was sent all the same
            client.execute(sql, settings=params, query_id=qid)
        return time.time()


class HTTPClient:
    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.conn.connect()  # the TCP handshake is not part of the first query's send

    def send(self, sql: str, params: dict[str, str]) -> float:
        return http_query(self.conn, sql, params)


def client(port: int, number: int, n: int, start_at: float, out: Any, protocol: str = "http") -> None:
    """One user: its own connection, SELECTs with think times, now and then a write."""
    import os

    os.nice(-10)  # a user's client is not preempted by the server thread its request wakes
    rng = random.Random(number)
    sent: list[dict[str, Any]] = []
    conn: Any = HTTPClient(port) if protocol == "http" else NativeClient(port, number, sent)
    time.sleep(max(0.0, start_at - time.time()))
    for i in range(n):
        time.sleep(rng.expovariate(1000.0 / THINK_MS))
        if i % 60 == 30:  # a write now and then (every client sends a few)
            sql = WRITES[(i // 60 + number) % len(WRITES)]
            conn.send(sql, {"query_id": f"bench-w-{number}-{i}"})
        db, templates = ("shop", SELECTS) if rng.random() < 0.75 else ("logs", LOG_SELECTS)
        sql = rng.choice(templates).format(k=rng.randrange(7), n=rng.randrange(200_000), m=rng.randrange(2, 9))
        qid = f"bench-{number}-{i}"
        before = time.time()
        written = conn.send(sql, {"query_id": qid, "database": db, "max_threads": "1"})
        sent.append({"query_id": qid, "sql": sql, "before_us": int(before * 1e6), "sent_us": int(written * 1e6)})
    out.put(sent)


def setup(server: ModernServer) -> None:
    from tests.engines import http_post

    for sql in ["CREATE DATABASE shop", "CREATE DATABASE logs",
                "CREATE TABLE shop.events (id UInt64, kind UInt8, tag String) ENGINE = MergeTree ORDER BY id",
                "INSERT INTO shop.events SELECT number, number % 7, concat('v', toString(number % 7)) "
                "FROM numbers(300000)",
                "CREATE TABLE logs.hits (id UInt64) ENGINE = MergeTree ORDER BY id",
                "INSERT INTO logs.hits SELECT number FROM numbers(200000)"]:
        http_post(server.http_port, sql)


def chbench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "chbench", *args], capture_output=True, text=True, cwd=REPO)


def send_workload(server: ModernServer, protocol: str) -> list[dict[str, Any]]:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    start_at = time.time() + 2.0
    port = server.http_port if protocol == "http" else server.tcp_port
    procs = [ctx.Process(target=client, args=(port, c, QUERIES // CLIENTS, start_at, q, protocol))
             for c in range(CLIENTS)]
    for p in procs:
        p.start()
    sent = [r for _ in procs for r in q.get()]
    for p in procs:
        p.join()
    return sent


def fidelity(server: ModernServer, work: Path, res: dict[str, Any], protocol: str) -> Path:
    sent = send_workload(server, protocol)
    time.sleep(1.5)
    path = work / "workload.jsonl"
    p = chbench("capture", "--target", server.http_url, "--include-failed", "--out", str(path), "--quiet")
    if p.returncode:
        raise SystemExit(p.stderr)
    lines = [json.loads(x) for x in path.read_text().splitlines()[1:]]
    got = {r["query_id"]: r for r in lines}
    by_id = {s["query_id"]: s for s in sent}
    missing = [q for q in by_id if q not in got]
    text_differs = [q for q, s in by_id.items() if q in got and got[q]["query"] != s["sql"]]
    extra = [r["query_id"] for r in lines if r["query_id"] not in by_id]
    writes = [r for r in lines if r["query_id"].startswith("bench-w-")]
    from datetime import datetime

    def start_us(q: str) -> float:
        return datetime.fromisoformat(got[q]["start_time"].replace("Z", "+00:00")).timestamp() * 1e6

    # against the script's clock: its timestamp taken just before each request
    diffs = sorted(abs(start_us(q) - s["before_us"]) / 1000.0 for q, s in by_id.items() if q in got)
    after = sorted(abs(start_us(q) - s["sent_us"]) / 1000.0 for q, s in by_id.items() if q in got)
    # against the server's own record: what capture copied (must be exact)
    from tests.engines import http_post

    rows = http_post(server.http_port, "SELECT query_id, toUnixTimestamp64Micro(query_start_time_microseconds) "
                                       "FROM system.query_log WHERE query_id LIKE 'bench-%' AND type != 'QueryStart' "
                                       "FORMAT TSV")
    logged = {r.split("\t")[0]: int(r.split("\t")[1]) for r in rows.splitlines()}
    exact = sum(1 for q in by_id if q in got and q in logged and int(start_us(q)) == logged[q])
    res["fidelity"] = {
        "clients": CLIENTS, "protocol": protocol, "selects_sent": len(sent), "captured": len(lines),
        "missing": len(missing),
        "text_differs": len(text_differs), "not_sent_by_script": len(extra), "writes_captured": len(writes),
        "start_diff_ms": {"p50": diffs[len(diffs) // 2], "p99": diffs[int(len(diffs) * 0.99)], "max": diffs[-1],
                          "within_1ms": sum(1 for d in diffs if d <= 1.0)},
        "start_diff_from_after_write_ms": {"p50": after[len(after) // 2], "p99": after[int(len(after) * 0.99)],
                                           "max": after[-1]},
        "start_equal_to_server_record": exact,
        "bar_met": not missing and not text_differs and not writes and not extra and len(lines) == len(sent)
        and diffs[-1] <= 1.0,
    }
    print("fidelity:", json.dumps(res["fidelity"]))
    return path


def timing(server: ModernServer, workload: Path, work: Path, res: dict[str, Any]) -> None:
    res["timing"] = {}
    for speed in ("1", "4", "10"):  # the bar is on 1x and 4x; 10x for the record
        out = work / f"replay-{speed}x.json"
        p = chbench("replay", str(workload), "--target", server.native_url, "--speed", speed, "--quiet",
                    "--out", str(out))
        doc = json.loads(out.read_text())
        s = doc["schedule"]
        res["timing"][f"{speed}x"] = {**s, "exit": p.returncode,
                                      "connections": doc["targets"][0]["schedule"]["connections"],
                                      "bar_met": s["lateness_ms"]["p99"] <= 5.0 and s["dropped"] == 0
                                      if speed != "10" else None}
        print(f"timing {speed}x:", json.dumps(res["timing"][f"{speed}x"]))
    # the same timing with queries the server answers at once: how far the speed factor
    # holds when the server is not what limits (at 10x the workload above needs ~1.6 of
    # the 2 cores in the server alone)
    lines = workload.read_text().splitlines()
    light = work / "light.jsonl"
    with light.open("w") as f:
        f.write(lines[0] + "\n")
        for i, line in enumerate(lines[1:]):
            f.write(json.dumps({**json.loads(line), "query": f"SELECT {i % 97}", "database": None}) + "\n")
    for speed in ("10", "20"):
        out = work / f"light-{speed}x.json"
        chbench("replay", str(light), "--target", server.native_url, "--speed", speed, "--quiet", "--out", str(out))
        doc = json.loads(out.read_text())
        res["timing"][f"light {speed}x"] = {**doc["schedule"],
                                            "connections": doc["targets"][0]["schedule"]["connections"],
                                            "bar_met": None}
        print(f"timing light {speed}x:", json.dumps(res["timing"][f"light {speed}x"]))


def table_checksums(server: ModernServer) -> dict[str, str]:
    from tests.engines import http_post

    out = {}
    for t in ("shop.events", "logs.hits"):
        out[t] = http_post(server.http_port, f"SELECT count(), sum(cityHash64(*)) FROM {t}").strip()
    out["tables"] = http_post(server.http_port, "SELECT groupArray(name) FROM (SELECT name FROM system.tables "
                                                "WHERE database IN ('shop', 'logs') ORDER BY name)").strip()
    return out


def safety(server: ModernServer, work: Path, res: dict[str, Any]) -> None:
    from tests.engines import http_post

    path = work / "all.jsonl"
    p = chbench("capture", "--target", server.http_url, "--query-kind", "all", "--include-failed", "--out", str(path),
                "--quiet")
    if p.returncode:
        raise SystemExit(p.stderr)
    kinds: dict[str, int] = {}
    for line in path.read_text().splitlines()[1:]:
        r = json.loads(line)
        kinds[r["query_kind"]] = kinds.get(r["query_kind"], 0) + 1
    before = table_checksums(server)
    out = work / "replay-all.json"
    chbench("replay", str(path), "--target", server.http_url, "--speed", "4", "--quiet", "--out", str(out))
    doc = json.loads(out.read_text())
    time.sleep(1.5)
    http_post(server.http_port, "SYSTEM FLUSH LOGS")
    prefix = doc["options"]["query_id_prefix"]
    ran = http_post(server.http_port, f"SELECT query_kind, count() FROM system.query_log WHERE type != 'QueryStart' "
                                      f"AND query_id LIKE '{prefix}%' GROUP BY query_kind FORMAT JSONEachRow")
    after = table_checksums(server)
    ran_kinds = {json.loads(x)["query_kind"]: int(json.loads(x)["count()"]) for x in ran.splitlines()}
    res["safety"] = {"captured_kinds": kinds, "skipped": doc["skipped"], "replayed_kinds": ran_kinds,
                     "checksums_before": before, "checksums_after": after,
                     "bar_met": before == after and set(ran_kinds) <= {"Select"}
                     and all(k in kinds for k in ("Insert", "Alter", "Drop", "System"))}
    print("safety:", json.dumps(res["safety"]))


def make_parquet(server: ModernServer, path: Path, rows: int) -> None:
    """A query_log export of ``rows`` rows with the server's real columns and types."""
    import chdb

    from tests.engines import http_post

    http_post(server.http_port, "SYSTEM FLUSH LOGS")  # query_log exists from the first flush on
    cols = http_post(server.http_port, "SELECT name, type FROM system.columns WHERE database = 'system' AND "
                                       "table = 'query_log' AND default_kind != 'ALIAS' ORDER BY position FORMAT TSV")
    structure = ", ".join(f"`{n}` {t.replace(chr(92) + chr(39), chr(39))}"
                          for n, t in (line.split("\t") for line in cols.strip().splitlines()))
    c = chdb.connect(":memory:")
    c.query(f"CREATE TABLE ql ({structure}) ENGINE = Memory")
    c.query(f"""INSERT INTO ql (type, event_date, event_time, query_start_time, query_start_time_microseconds,
        query_duration_ms, query, current_database, normalized_query_hash, query_kind, is_initial_query, user,
        query_id, address, port, interface, Settings, exception_code, read_rows, read_bytes, result_rows,
        memory_usage)
        SELECT if(number % 50 = 0, 'QueryStart', 'QueryFinish'),
               toDate(ts), toDateTime(ts), toDateTime(ts), ts, number % 37, q, 'shop', cityHash64(number % 300),
               if(number % 20 = 0, 'Insert', 'Select'), if(number % 40 = 1, 0, 1), 'app', toString(generateUUIDv4()),
               toIPv6('::ffff:10.0.0.7'), 40000 + number % 1000, 'HTTP',
               map('max_threads', '4', 'use_query_cache', '0', 'log_comment', concat('job ', toString(number % 9))),
               0, number, number * 8, 1, 1000000
        FROM (SELECT number, toDateTime64('2026-11-30 00:00:00', 6) + toIntervalMicrosecond(number * 86400 +
                     (number * 7919) % 5000000) AS ts,
                     concat('SELECT count(), sum(x) FROM shop.t', toString(number % 300), ' WHERE y = ',
                            toString(number), ' AND s = \\'', toString(number % 1000), '\\'') AS q
              FROM numbers({rows}))""")
    c.query(f"INSERT INTO FUNCTION file('{path}', Parquet) SELECT * FROM ql")
    c.close()


def memory(server: ModernServer, work: Path, res: dict[str, Any], rows: int) -> None:
    import psutil

    path = work / "query_log.parquet"
    make_parquet(server, path, rows)
    out = work / "from-parquet.jsonl"
    t0 = time.monotonic()
    proc = psutil.Popen([sys.executable, "-m", "chbench", "capture", "--from", str(path), "--out", str(out),
                         "--quiet"], cwd=REPO, stderr=subprocess.PIPE, text=True)
    peak = 0
    while proc.poll() is None:
        try:
            rss = proc.memory_info().rss + sum(ch.memory_info().rss for ch in proc.children(recursive=True))
        except psutil.NoSuchProcess:
            break
        peak = max(peak, rss)
        time.sleep(0.05)
    seconds = time.monotonic() - t0
    err = proc.stderr.read() if proc.stderr else ""
    header = json.loads(out.open().readline()) if out.exists() else {}
    res["memory"] = {"rows": rows, "file_mb": round(path.stat().st_size / 1e6, 1), "exit": proc.returncode,
                     "written": header.get("count"), "peak_rss_mb": round(peak / 1e6, 1),
                     "seconds": round(seconds, 1), "stderr": err.strip()[-300:],
                     "bar_met": proc.returncode == 0 and peak < 300e6 and seconds < 60}
    print("memory:", json.dumps(res["memory"]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="fidelity,timing,safety,memory")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--protocol", choices=["http", "native"], default="http",
                    help="how the script's clients send the workload (default http: measured closer to the server's "
                         "start, p50 0.6 ms vs 0.7 ms and max 3.8 ms vs 9.2 ms with clickhouse-driver)")
    args = ap.parse_args()
    parts = args.only.split(",")
    res: dict[str, Any] = {}
    OUT.mkdir(exist_ok=True)
    with ModernServer() as server, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        setup(server)
        if {"fidelity", "timing", "safety"} & set(parts):
            workload = fidelity(server, work, res, args.protocol)
            if "timing" in parts:
                timing(server, workload, work, res)
            if "safety" in parts:
                safety(server, work, res)
        if "memory" in parts:
            memory(server, work, res, args.rows)
    (OUT / "replay_bars.json").write_text(json.dumps(res, indent=1))
    print(json.dumps({k: v.get("bar_met") if isinstance(v, dict) and "bar_met" in v else
                      {kk: vv.get("bar_met") for kk, vv in v.items()} for k, v in res.items()}, indent=1))


if __name__ == "__main__":
    main()
