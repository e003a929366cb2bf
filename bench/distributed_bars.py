"""Measure the bars of ``chbench load --master``/``--worker`` (issue 16, part 1) on the
real 26.9 server, every process on this machine (loopback).

    python bench/distributed_bars.py                 # both (~5 min)
    python bench/distributed_bars.py --only overhead

Exactness: master + 3 workers, open loop, ``SELECT 1`` at 600 QPS for 60 s, -c 12 (4
connections per worker), every query with a query id under a fresh prefix. Bar: the
master's ``--json`` ``statistics.num_queries`` equals the number of finished queries the
server logged under the prefix (difference 0), per worker and in total; achieved rate
within 1% of offered; late starts (> 5 ms) under 1%.

Overhead: ``SELECT 1`` closed loop at -c 4 for 15 s, master + 2 workers against
``chbench load --workers 2``, alternated A B A B … over ``--rounds`` rounds. Bar: the
median QPS of the master's runs is at least 0.9 of the other's.

Run it on an otherwise idle machine. Writes bench/out/distributed_bars.json."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
OUT = REPO / "bench" / "out"

from tests.engines import ModernServer, free_port, http_post  # noqa: E402

CHBENCH = [sys.executable, "-m", "chbench", "load"]


def distributed(server: ModernServer, workers: int, args: list[str], out: Path) -> dict[str, Any]:
    """A master with ``workers`` workers; the master's results file."""
    port = free_port()
    master = subprocess.Popen([*CHBENCH, "--master", "--expect-workers", str(workers), "--master-bind",
                               f"127.0.0.1:{port}", "--target", server.native_url, *args, "-d", "0", "--quiet",
                               "--out", str(out)], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
    procs = [subprocess.Popen([*CHBENCH, "--worker", "--master-host", f"127.0.0.1:{port}"], cwd=REPO,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(workers)]
    _, err = master.communicate(timeout=600)
    for p in procs:
        p.wait(timeout=60)
    if master.returncode:
        raise SystemExit(err)
    return json.loads(out.read_text())


def exactness(server: ModernServer, tmp: Path) -> dict[str, Any]:
    prefix = f"bar-{uuid.uuid4().hex[:8]}-"
    bjson = tmp / "exact-benchmark.json"
    doc = distributed(server, 3, ["-q", "SELECT 1", "--rate", "600", "-t", "60", "-c", "12", "--query_id_prefix",
                                  prefix, "--json", str(bjson)], tmp / "exact.json")
    http_post(server.http_port, "SYSTEM FLUSH LOGS")
    logged = int(http_post(server.http_port, "SELECT count() FROM system.query_log WHERE type != 'QueryStart' "
                                             f"AND startsWith(query_id, '{prefix}')"))
    per_worker_logged = [int(http_post(server.http_port, "SELECT count() FROM system.query_log WHERE type != "
                                                         f"'QueryStart' AND startsWith(query_id, '{prefix}{i}.')"))
                         for i in range(3)]
    lv = doc["levels"][-1]
    ol = lv["open_loop"]
    reported = json.loads(bjson.read_text())["statistics"]["num_queries"]
    row = {
        "num_queries": reported, "errors": lv["total"]["errors"], "server_logged": logged,
        "difference": reported + lv["total"]["errors"] - logged,
        "per_worker": [{"name": w["name"], "queries": w["queries"] + w["errors"], "server_logged": n}
                       for w, n in zip(lv["per_worker"], per_worker_logged, strict=True)],
        "histogram_counts_sum": sum(w["histogram"]["count"] for w in lv["per_worker"]),
        "histogram_count": lv["total"]["histogram"]["count"],
        "offered_qps": ol["offered_qps"], "achieved_qps": round(ol["achieved_qps"], 2),
        "achieved_ratio": round(ol["achieved_qps"] / ol["offered_qps"], 4),
        "planned": ol["planned"], "late": ol["late"], "late_share": round(ol["late"] / max(1, ol["planned"]), 5),
        "dropped": ol["dropped"], "p99_ms": lv["benchmark_json"]["query_time_percentiles"]["99"] * 1000.0,
    }
    row["bar_met"] = (row["difference"] == 0 and all(w["queries"] == w["server_logged"] for w in row["per_worker"])
                      and abs(row["achieved_ratio"] - 1) <= 0.01 and row["late_share"] < 0.01)
    print("exactness:", json.dumps(row), flush=True)
    return row


def overhead(server: ModernServer, tmp: Path, rounds: int) -> dict[str, Any]:
    args = ["-q", "SELECT 1", "-c", "4", "-t", "15"]
    local, dist = [], []
    for r in range(rounds):
        out = tmp / f"local-{r}.json"
        subprocess.run([*CHBENCH, "--target", server.native_url, *args, "--workers", "2", "-d", "0", "--quiet",
                        "--out", str(out)], cwd=REPO, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        lv = json.loads(out.read_text())["levels"][-1]
        local.append(lv["total"]["queries"] / lv["seconds"])
        lv = distributed(server, 2, args, tmp / f"dist-{r}.json")["levels"][-1]
        dist.append(lv["total"]["queries"] / lv["seconds"])
        print(f"round {r + 1}: --workers 2 {local[-1]:.0f} QPS, master + 2 workers {dist[-1]:.0f} QPS", flush=True)
    row = {"local_qps": [round(x, 1) for x in local], "master_qps": [round(x, 1) for x in dist],
           "ratio_of_medians": round(statistics.median(dist) / statistics.median(local), 4)}
    row["bar_met"] = row["ratio_of_medians"] >= 0.9
    print("overhead:", json.dumps(row), flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="exactness,overhead")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    OUT.mkdir(exist_ok=True)
    res: dict[str, Any] = {"when": time.strftime("%Y-%m-%d %H:%M:%S")}
    with ModernServer() as server, tempfile.TemporaryDirectory() as tmp:
        if "exactness" in args.only:
            res["exactness"] = exactness(server, Path(tmp))
        if "overhead" in args.only:
            res["overhead"] = overhead(server, Path(tmp), args.rounds)
    res["bar_met"] = all(v["bar_met"] for v in res.values() if isinstance(v, dict))
    name = "distributed_bars.json" if set(args.only.split(",")) >= {"exactness", "overhead"} else \
        f"distributed_bars-{args.only.replace(',', '-')}.json"
    (OUT / name).write_text(json.dumps(res, indent=1))
    print("bar met:", res["bar_met"])


if __name__ == "__main__":
    main()
