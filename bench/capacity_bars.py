"""Measure the capacity bar of ``chbench load --slo`` and the metrics bar of
``--metrics-port`` (issue 16, parts 2 and 3) on the real 26.9 server.

    python bench/capacity_bars.py                     # both (~5 min)
    python bench/capacity_bars.py --only metrics      # ~70 s
    python bench/capacity_bars.py --reps 1
    python bench/capacity_bars.py --only capacity --master 2   # the searches through --master + 2 workers
    python bench/capacity_bars.py --only planned --reps 2      # issue 28: the issue's command (~10 min each)

Metrics: ``SELECT 1`` closed loop at full speed (-c 4 --workers 2, 3 rounds of 20 s) with
``--metrics-port``; the endpoint is scraped every 200 ms by this script, each scrape
timed. Bar: every scrape answered in under 50 ms.

Capacity:
The construction: every query is ``SELECT sleep(0.05)`` and the server runs at most
``SLOTS`` of them at once (``max_concurrent_queries_for_user``: the next one is refused
with code 202), while chbench has 16 connections. The server therefore serves at most
SLOTS / service-time queries a second; past that, queries are refused (the error SLO
breaks) or wait (p99 grows). The service time is measured first, by the script, with one
connection and no load (median of 40 runs). Bar: every repetition's capacity within 10%
of SLOTS / service time.

Planned search (issue 28, ``--only planned``): the issue's own command, over HTTP —
``-q 'SELECT sleep(0.05)' --max_concurrent_queries_for_user=4 --continue_on_errors
--slo 'p99<=200ms' --slo 'errors<=0.1%' --rate-min 10 --rate-max 200`` with the defaults
(--max-time 600). Bars: the whole command ends within 10 minutes, its plan is the first
thing it prints after "Loaded 1 queries.", and the capacity lies within 10% of 4 / the
service time (median of 40 runs over HTTP with one connection, measured just before).

Run it on an otherwise idle machine. Writes bench/out/capacity_bars.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
OUT = REPO / "bench" / "out"

from tests.engines import ModernServer  # noqa: E402

SLOTS = 4
QUERY = "SELECT sleep(0.05)"


def service_ms(server: ModernServer) -> float:
    from clickhouse_driver import Client

    c = Client("127.0.0.1", port=server.tcp_port)
    c.execute("SELECT 1")
    times = []
    for _ in range(40):
        t = time.perf_counter()
        c.execute(QUERY)
        times.append((time.perf_counter() - t) * 1000.0)
    c.disconnect()
    return statistics.median(times)


def search(server: ModernServer, out: Path, workers: int = 0) -> dict[str, Any]:
    """One capacity search; ``workers``: through ``--master`` and that many ``--worker``s."""
    from tests.engines import free_port

    port = free_port()
    master = ["--master", "--expect-workers", str(workers), "--master-bind", f"127.0.0.1:{port}"] if workers else []
    procs = [subprocess.Popen([sys.executable, "-m", "chbench", "load", "--worker", "--master-host",
                               f"127.0.0.1:{port}"], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for _ in range(workers)]
    p = subprocess.run([sys.executable, "-m", "chbench", "load", *master, "--target", server.native_url, "-q", QUERY,
                        "-c", "16", f"--max_concurrent_queries_for_user={SLOTS}", "--slo", "p99<=200ms",
                        "--slo", "errors<=1%", "--rate-min", "20", "--rate-max", "640", "--step-duration", "3",
                        "--out", str(out)], capture_output=True, text=True, cwd=REPO)
    for w in procs:
        w.wait(timeout=60)
    if p.returncode:
        raise SystemExit(p.stderr)
    return {"last_line": p.stdout.strip().splitlines()[-1], **json.loads(out.read_text())["capacity"]}


def service_http_ms(server: ModernServer) -> float:
    import clickhouse_connect

    c = clickhouse_connect.get_client(host="127.0.0.1", port=server.http_port)
    c.query("SELECT 1")
    times = []
    for _ in range(40):
        t = time.perf_counter()
        c.query(QUERY)
        times.append((time.perf_counter() - t) * 1000.0)
    c.close()
    return statistics.median(times)


def planned(server: ModernServer, out: Path) -> dict[str, Any]:
    """The issue's command, as a new user types it; timed from the outside."""
    ms = service_http_ms(server)
    known = SLOTS / (ms / 1000.0)
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "chbench", "load", "--target", server.http_url, "-q", QUERY,
                        f"--max_concurrent_queries_for_user={SLOTS}", "--continue_on_errors", "--slo", "p99<=200ms",
                        "--slo", "errors<=0.1%", "--rate-min", "10", "--rate-max", "200", "--out", str(out)],
                       capture_output=True, text=True, cwd=REPO)
    seconds = time.monotonic() - t0
    if p.returncode:
        raise SystemExit(p.stderr)
    lines = p.stderr.splitlines()
    after_loaded = lines[lines.index("Loaded 1 queries.") + 1] if "Loaded 1 queries." in lines else ""
    cap = json.loads(out.read_text())["capacity"]
    row = {"service_ms": round(ms, 3), "known_qps": round(known, 2), "capacity_qps": cap["rate"], "ci": cap["ci"],
           "ratio": round(cap["rate"] / known, 4) if cap["rate"] else 0.0, "seconds": round(seconds, 1),
           "ended_by": cap["ended_by"], "probe_qps": cap["probe"]["qps"], "plan_first": after_loaded.startswith(
               "Capacity search:"), "first_line": after_loaded,
           "steps": [(round(s["offered_qps"], 1), s["verdict"], s["queries"], s["errors"], s["seconds"])
                     for s in cap["steps"]]}
    row["bar_met"] = row["plan_first"] and seconds <= 600 and abs(row["ratio"] - 1) <= 0.10
    print(json.dumps(row), flush=True)
    return row


def metrics(server: ModernServer, tmp: Path, rounds: int = 3) -> dict[str, Any]:
    """``rounds`` runs of 20 s; every scrape of all of them counts."""
    rows = [metrics_round(server, tmp) for _ in range(rounds)]
    times = sorted(t for r in rows for t in r.pop("times"))
    out = {"rounds": rows, "scrapes": len(times), "p50_ms": round(times[len(times) // 2], 2),
           "p99_ms": round(times[int(len(times) * 0.99)], 2), "max_ms": round(times[-1], 2),
           "bar_met": times[-1] < 50.0}
    print("metrics, all rounds:", json.dumps(out), flush=True)
    return out


def metrics_round(server: ModernServer, tmp: Path) -> dict[str, Any]:
    import urllib.request

    from tests.engines import free_port

    port, out = free_port(), tmp / "metrics-load.json"
    proc = subprocess.Popen([sys.executable, "-m", "chbench", "load", "--target", server.native_url, "-q", "SELECT 1",
                             "-c", "4", "--workers", "2", "-t", "20", "-d", "0", "--quiet", "--metrics-port", str(port),
                             "--out", str(out)], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    times = []
    while proc.poll() is None:
        time.sleep(0.2)
        t = time.perf_counter()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                r.read()
        except OSError:
            continue
        times.append((time.perf_counter() - t) * 1000.0)
    times.sort()
    doc = json.loads(out.read_text())
    lv = doc["levels"][-1]
    row = {"scrapes": len(times), "p50_ms": round(times[len(times) // 2], 2),
           "p99_ms": round(times[int(len(times) * 0.99)], 2), "max_ms": round(times[-1], 2),
           "load_qps": round(lv["total"]["queries"] / lv["seconds"], 1)}
    print("metrics:", json.dumps(row), flush=True)
    return {**row, "times": times}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", default="metrics,capacity")
    ap.add_argument("--master", type=int, default=0, metavar="N",
                    help="capacity searches through --master with N local --workers (issue 16: 'with --master')")
    args = ap.parse_args()
    OUT.mkdir(exist_ok=True)
    res: dict[str, Any] = {"slots": SLOTS, "query": QUERY, "repetitions": []}
    with ModernServer() as server, tempfile.TemporaryDirectory() as tmp:
        if "metrics" in args.only:
            res["metrics"] = metrics(server, Path(tmp))
        if "planned" in args.only:
            res["planned"] = [planned(server, Path(tmp) / f"planned-{rep}.json") for rep in range(args.reps)]
        for rep in range(args.reps if "capacity" in args.only else 0):
            ms = service_ms(server)
            known = SLOTS / (ms / 1000.0)
            t0 = time.monotonic()
            cap = search(server, Path(tmp) / f"cap-{rep}.json", args.master)
            row = {"service_ms": round(ms, 3), "known_qps": round(known, 2), "capacity_qps": cap["rate"],
                   "ci": cap["ci"], "broken_at": cap["broken_at"], "ratio": cap["rate"] / known if cap["rate"] else 0,
                   "steps": len(cap["steps"]), "seconds": round(time.monotonic() - t0, 1),
                   "last_line": cap["last_line"],
                   "step_table": [(round(s["offered_qps"], 1), s["verdict"], s["errors"], s["p99_ms"])
                                  for s in cap["steps"]]}
            row["bar_met"] = abs(row["ratio"] - 1) <= 0.10
            res["repetitions"].append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "step_table"}), flush=True)
    res["bar_met"] = (all(r["bar_met"] for r in res["repetitions"] + res.get("planned", []))
                      and res.get("metrics", {}).get("bar_met", True))
    name = "capacity_bars.json" if set(args.only.split(",")) >= {"metrics", "capacity"} else \
        f"capacity_bars-{args.only.replace(',', '-')}.json"  # a part alone never overwrites the whole
    if args.master:
        name = name.replace(".json", f"-master{args.master}.json")
        res["master_workers"] = args.master
    (OUT / name).write_text(json.dumps(res, indent=1))
    print("bar met:", res["bar_met"])


if __name__ == "__main__":
    main()
