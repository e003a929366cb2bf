"""Before and after a change of the execution core (issue 28), side by side in one run:
the same commands from two checkouts — BEFORE (a git revision, checked out into a
temporary worktree) and this one — interleaved on the same 26.9 server, so the machine's
drift falls on both alike.

    python bench/core_bars.py --before ab40c9f                   # ~6 min
    python bench/core_bars.py --before ab40c9f --only stress --rounds 5

Cases (each round runs BEFORE and AFTER once, in alternating order):
  load     SELECT 1, closed loop, -c 4 -t SECONDS over the native protocol: QPS
  rate     SELECT 1, open loop --rate 500 -t SECONDS: achieved / offered
  fast     the same at --rate 1500 (one hand-off every 0.7 ms): achieved / offered
  p99      the open loop at --rate 500: latency p99 from the planned time (ms)
  poisson  --rate 500 --poisson -c 8: achieved / offered
  stress   chbench clickbench stress --concurrent 4 --duration SECONDS on a synthetic
           hits table of 200,000 rows: QPS of the queries-only phase

Reports, per case, each round's after/before ratio, their median and range. Writes
bench/out/core_bars.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
OUT = REPO / "bench" / "out"

from tests.engines import ModernServer  # noqa: E402


def chbench(tree: Path, args: list[str], out: Path) -> dict[str, Any]:
    p = subprocess.run([sys.executable, "-m", "chbench", *args, "--out", str(out)], cwd=tree, capture_output=True,
                       text=True, timeout=600)
    if p.returncode:
        raise SystemExit(f"{tree}: chbench {' '.join(args)}: exit {p.returncode}: {p.stderr[-2000:]}")
    return json.loads(out.read_text())


def measure(case: str, tree: Path, server: ModernServer, seconds: float, tmp: Path) -> float:
    if case == "load":
        d = chbench(tree, ["load", "--target", server.native_url, "-q", "SELECT 1", "-c", "4", "-t", str(seconds),
                           "-d", "0", "--quiet"], tmp / "load.json")
        lv = d["levels"][-1]
        return lv["total"]["queries"] / lv["seconds"]
    if case in ("rate", "fast", "p99", "poisson"):
        rate = 1500 if case == "fast" else 500
        d = chbench(tree, ["load", "--target", server.native_url, "-q", "SELECT 1", "--rate", str(rate), "-c", "8",
                           "-t", str(seconds), "-d", "0", "--quiet", *(["--poisson"] if case == "poisson" else [])],
                    tmp / "rate.json")
        lv = d["levels"][-1]
        if case == "p99":
            return float(lv["benchmark_json"]["query_time_percentiles"]["99"]) * 1000.0
        return lv["total"]["queries"] / lv["seconds"] / rate
    d = chbench(tree, ["clickbench", "stress", "--target", server.http_url, "--concurrent", "4", "--duration",
                       str(seconds)], tmp / "stress.json")
    return float(d["phases"][0]["qps"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True, metavar="REV")
    ap.add_argument("--only", default="load,rate,fast,p99,poisson,stress")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=10.0)
    args = ap.parse_args()
    OUT.mkdir(exist_ok=True, parents=True)
    res: dict[str, Any] = {"before": args.before, "seconds": args.seconds, "cases": {}}
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        before = tmp / "before"
        subprocess.run(["git", "worktree", "add", "--detach", str(before), args.before], cwd=REPO, check=True,
                       capture_output=True)
        try:
            with ModernServer() as server:
                subprocess.run([sys.executable, "-m", "chbench", "clickbench", "load", "--target", server.http_url,
                                "--synthetic", "200000"], cwd=REPO, check=True, capture_output=True)
                for case in args.only.split(","):
                    rows = []
                    for r in range(args.rounds):
                        order = [("before", before), ("after", REPO)]
                        if r % 2:
                            order.reverse()
                        got = {name: measure(case, tree, server, args.seconds, tmp) for name, tree in order}
                        rows.append({**{k: round(v, 4) for k, v in got.items()},
                                     "ratio": round(got["after"] / got["before"], 4)})
                        print(case, json.dumps(rows[-1]), flush=True)
                    ratios = [x["ratio"] for x in rows]
                    res["cases"][case] = {"rounds": rows, "median_ratio": round(statistics.median(ratios), 4),
                                          "range": [min(ratios), max(ratios)]}
                    print(case, "median after/before", res["cases"][case]["median_ratio"], "range",
                          res["cases"][case]["range"], flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(before)], cwd=REPO, capture_output=True)
    (OUT / "core_bars.json").write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
