"""Measure the bars of ``chbench ingest`` and ``chbench read`` (issue 5) on this machine.

    python bench/transfer_bars.py                  # everything (~5 min)
    python bench/transfer_bars.py --only ingest    # or: read

Parts:
  ingest  RUNS runs of 'chbench ingest --rows 1000000' on a 26.9 server (HTTP + native
          paths) and one on the embedded engine: every path's checksum must equal the
          generator's, every run (bar); the fastest path's rows/s over the server's own
          INSERT … SELECT (3 rounds: best of 3 tries at the end of each round, paired
          with the path's time that round) must be >= 70% (bar)
  read    'chbench read' of SELECT number FROM numbers_mt(50000000) (a UInt64 column,
          400 MB) through the numpy/Arrow paths, 3 rounds (median): the fastest path's
          rows/s over the transfer ceiling (Native bytes drained undecoded, paired by round)
          must be >= 40%, with its peak RSS below 2x the result (800 MB) (bars)

Writes bench/out/transfer_bars.json and prints the numbers.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
OUT = REPO / "bench" / "out"

from tests.engines import ModernServer  # noqa: E402

RUNS = 3
READ_ROWS = 50_000_000


def chbench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "chbench", *args], cwd=REPO, capture_output=True, text=True)


def part_ingest(res: dict, server: ModernServer, work: Path) -> None:
    runs = []
    for i in range(RUNS):
        out = work / f"ingest{i}.json"
        p = chbench("ingest", "--target", server.http_url, "--target", server.native_url, "--rows", "1000000",
                    "--quiet", "--out", str(out))
        r = json.loads(out.read_text())["result"]
        paths = r["paths"]
        identical = sum(pth.get("checksum") == r["expected"]["checksum"] and pth.get("row_count") == 1_000_000
                        for pth in paths)
        runs.append({"exit": p.returncode, "paths": len(paths), "identical": identical,
                     "fastest": r["fastest"], "ceiling_s": r["ceiling"]["seconds"],
                     "rows_per_s": {pth["name"]: pth.get("rows_per_s") for pth in paths}})
        lo, hi = r["fastest"]["of_ceiling_ci"] or (float("nan"), float("nan"))
        print(f"ingest run {i + 1}: {identical}/{len(paths)} paths landed the expected checksum; fastest "
              f"{r['fastest']['name']} {r['fastest']['rows_per_s']:,.0f} rows/s = {r['fastest']['of_ceiling']:.0%} "
              f"[{lo:.0%}, {hi:.0%}] of INSERT … SELECT ({1e6 / r['ceiling']['seconds']:,.0f} rows/s); "
              f"within noise of it: {', '.join(r['ranking']['tied']) or 'none'}", flush=True)
    out = work / "ingest-embedded.json"
    p = chbench("ingest", "--rows", "1000000", "--quiet", "--out", str(out))
    r = json.loads(out.read_text())["result"]
    emb = sum(pth.get("checksum") == r["expected"]["checksum"] for pth in r["paths"])
    speeds = ", ".join(f"{x['name']} {x['rows_per_s']:,.0f} rows/s" for x in r["paths"] if x.get("rows_per_s"))
    print(f"ingest embedded: {emb}/{len(r['paths'])} paths landed the expected checksum ({speeds})")
    res["ingest"] = {"runs": runs, "embedded": {"identical": emb, "paths": len(r["paths"]), "exit": p.returncode},
                     "ok_checksums": all(x["identical"] == x["paths"] for x in runs) and emb == len(r["paths"]),
                     "of_ceiling": [x["fastest"]["of_ceiling"] for x in runs],
                     "ok_ceiling": all(x["fastest"]["of_ceiling"] >= 0.7 for x in runs)}


def part_read(res: dict, server: ModernServer, work: Path) -> None:
    out = work / "read.json"
    p = chbench("read", "--target", server.http_url, "--target", server.native_url, "--rows", str(READ_ROWS),
                "--query", "SELECT number FROM numbers_mt({rows})", "--repeat", "3", "--quiet", "--out", str(out),
                "--paths", "http-native,http-arrowstream,connect-numpy,connect-arrow,connect-df,driver-numpy,"
                           "driver-columnar")
    r = json.loads(out.read_text())["result"]
    transfer = next(c for c in r["ceilings"] if c["name"] == "ceiling: native")
    rows = []
    for pth in r["paths"]:
        if pth.get("status") != "ok":
            print(f"read {pth['name']}: {pth.get('status')} {pth.get('error') or pth.get('reason')}")
            continue
        rows.append({"name": pth["name"], "rows_per_s": pth["rows_per_s"], "of_ceiling": pth["of_transfer_ceiling"],
                     "peak_rss_mb": pth["peak_rss_mb"]})
        print(f"read {pth['name']}: {pth['rows_per_s']:,.0f} rows/s = {pth['of_transfer_ceiling']:.0%} of the "
              f"transfer ceiling, peak RSS {pth['peak_rss_mb']:.0f} MB", flush=True)
    best = max(rows, key=lambda x: x["rows_per_s"])
    print(f"read: leader {r['ranking']['leader']}, within noise of it: {', '.join(r['ranking']['tied']) or 'none'}")
    result_mb = READ_ROWS * 8 / 2**20
    print(f"read: transfer ceiling {transfer['rows_per_s']:,.0f} rows/s; fastest {best['name']} "
          f"{best['of_ceiling']:.0%}, peak RSS {best['peak_rss_mb']:.0f} MB vs 2 x {result_mb:.0f} MB "
          f"(exit {p.returncode})")
    res["read"] = {"transfer_ceiling_rows_per_s": transfer["rows_per_s"], "paths": rows, "fastest": best,
                   "result_mb": result_mb, "ok_speed": best["of_ceiling"] >= 0.4,
                   "ok_rss": best["peak_rss_mb"] < 2 * result_mb}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="ingest,read")
    parts = ap.parse_args().only.split(",")
    OUT.mkdir(parents=True, exist_ok=True)
    res: dict = {"started": time.strftime("%Y-%m-%d %H:%M:%S")}
    server = ModernServer()
    try:
        with tempfile.TemporaryDirectory(prefix="chbench-transfer-bars-") as tmp:
            if "ingest" in parts:
                part_ingest(res, server, Path(tmp))
            if "read" in parts:
                part_read(res, server, Path(tmp))
    finally:
        server.stop()
    (OUT / "transfer_bars.json").write_text(json.dumps(res, indent=2))
    print(f"written {OUT / 'transfer_bars.json'}")


if __name__ == "__main__":
    main()
