"""Measure the bars of ``chbench clickbench`` (issue 4) on this machine.

    python bench/clickbench_bars.py                         # everything (~8 min)
    python bench/clickbench_bars.py --only load,checksums   # ~2 min

Parts:
  load       1M synthetic rows generated and loaded into the embedded engine (a fresh
             directory), through the real CLI: wall time of the command and the load
             time it reports (bar: <= 60 s)
  checksums  the same 1M rows loaded into the 26.9 server; 'clickbench run' on the
             embedded engine, then over HTTP and native against it with --reference:
             all 43 queries succeed and the checksums are identical (bar: 43 of 43)
  parquet    a 1M-row Parquet file written from the synthetic table, loaded with
             'clickbench load --from' into the server over HTTP, and into the embedded
             engine: peak RSS of the chbench process (bar: < 300 MB)
  crash      'clickbench crash-test --rows 1000000 --cycles 5' (bar: 5 of 5 cycles end
             with the count and checksum of the uninterrupted load)

Writes bench/out/clickbench_bars.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
OUT = REPO / "bench" / "out"

from tests.engines import ModernServer  # noqa: E402

ROWS = 1_000_000


def chbench(*args: str, check: bool = True) -> tuple[subprocess.CompletedProcess[str], float, int]:
    """Run the CLI; (process, wall seconds, 0)."""
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "chbench", *args], cwd=REPO, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if check and p.returncode != 0:
        raise SystemExit(f"chbench {' '.join(args)} failed ({p.returncode}): {p.stderr.strip()}")
    return p, wall, 0


def chbench_rss(*args: str) -> tuple[subprocess.CompletedProcess[str], float, int]:
    """Like chbench(), measuring the peak RSS of exactly that process with wait4."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen([sys.executable, "-m", "chbench", *args], cwd=REPO, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        done = subprocess.CompletedProcess(p.args, p.returncode, out.read(), err.read())
    if p.returncode != 0:
        raise SystemExit(f"chbench {' '.join(args)} failed ({p.returncode}): {done.stderr.strip()}")
    return done, wall, int(usage.ru_maxrss)


def part_load(res: dict, work: Path) -> None:
    db = work / "emb"
    done, wall, _ = chbench("clickbench", "load", "--target", f"embedded:{db}", "--synthetic", str(ROWS),
                            "--out", str(work / "load.json"), "--quiet")
    load = json.loads((work / "load.json").read_text())["load"]
    res["load"] = {"rows": load["rows"], "command_wall_s": round(wall, 2), "load_time_s": round(load["seconds"], 2),
                   "data_size": load["data_size"], "bar_s": 60, "ok": wall <= 60}
    print(f"load: {load['rows']:,} rows, command {wall:.1f} s, reported load time {load['seconds']:.1f} s "
          f"(bar <= 60 s)", flush=True)


def part_checksums(res: dict, work: Path, server: ModernServer) -> None:
    db = work / "emb"
    if not db.exists():
        part_load({}, work)
    chbench("clickbench", "run", "--target", f"embedded:{db}", "--out", str(work / "emb.json"), "--quiet")
    chbench("clickbench", "load", "--target", server.http_url, "--synthetic", str(ROWS), "--replace", "--quiet")
    emb = json.loads((work / "emb.json").read_text())
    out: dict = {"embedded_succeeded": sum(all(t["seconds"] is not None for t in q["tries"]) for q in emb["queries"])}
    for name, url in (("http", server.http_url), ("native", server.native_url)):
        path = work / f"{name}.json"
        p, _, _ = chbench("clickbench", "run", "--target", url, "--out", str(path), "--reference",
                          str(work / "emb.json"), "--quiet", check=False)
        doc = json.loads(path.read_text())
        same = sum((a["rows"], a["checksum"]) == (b["rows"], b["checksum"]) and a["checksum"] is not None
                   for a, b in zip(emb["queries"], doc["queries"], strict=True))
        ok_q = sum(all(t["seconds"] is not None for t in q["tries"]) for q in doc["queries"])
        out[name] = {"succeeded": ok_q, "identical_checksums": same, "exit_code": p.returncode,
                     "differences": doc["reference"]["differences"]}
        print(f"checksums: {name}: {ok_q}/43 succeeded, {same}/43 checksums identical to the embedded engine "
              f"(exit {p.returncode})", flush=True)
    out["rows_per_query_at_1M"] = {f"Q{q['index'] - 1}": q["rows"] for q in emb["queries"]}
    out["modes"] = {f"Q{q['index'] - 1}": q["mode"] for q in emb["queries"]}
    out["ok"] = out["embedded_succeeded"] == 43 and all(
        out[k]["succeeded"] == 43 and out[k]["identical_checksums"] == 43 for k in ("http", "native"))
    res["checksums"] = out


def part_parquet(res: dict, work: Path, server: ModernServer) -> None:
    db = work / "emb"
    if not db.exists():
        part_load({}, work)
    parquet = work / "hits.parquet"
    code = (f"import chdb; c = chdb.connect({str(db)!r}); "
            f"c.query(\"SELECT * FROM hits INTO OUTFILE {str(parquet)!r} TRUNCATE FORMAT Parquet\")")
    subprocess.run([sys.executable, "-c", code], check=True)
    out: dict = {"file_bytes": parquet.stat().st_size}
    done, wall, rss = chbench_rss("clickbench", "load", "--target", server.http_url, "--from", str(parquet),
                                  "--replace", "--quiet")
    out["http"] = {"peak_rss_mb": round(rss / 1024, 1), "seconds": round(wall, 2), "stdout": done.stdout.strip()}
    print(f"parquet: HTTP load peak RSS {rss / 1024:.0f} MB ({wall:.1f} s) (bar < 300 MB)", flush=True)
    done, wall, rss = chbench_rss("clickbench", "load", "--target", f"embedded:{work / 'emb_parquet'}", "--from",
                                  str(parquet), "--quiet")
    out["embedded"] = {"peak_rss_mb": round(rss / 1024, 1), "seconds": round(wall, 2), "stdout": done.stdout.strip()}
    print(f"parquet: embedded load peak RSS {rss / 1024:.0f} MB ({wall:.1f} s) — the engine runs in this process",
          flush=True)
    code = "import chdb, resource; c = chdb.connect(':memory:'); c.query('SELECT 1'); " \
           "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    idle = int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    out["embedded_engine_idle_rss_mb"] = round(idle / 1024, 1)
    out["ok_http"] = out["http"]["peak_rss_mb"] < 300
    out["ok_embedded"] = out["embedded"]["peak_rss_mb"] < 300
    res["parquet"] = out


def part_crash(res: dict, work: Path) -> None:
    path = work / "crash.json"
    p, wall, _ = chbench("clickbench", "crash-test", "--rows", str(ROWS), "--cycles", "5", "--out", str(path),
                         check=False)
    doc = json.loads(path.read_text())
    ok = sum(c["ok"] for c in doc.get("cycles", []))
    res["crash"] = {"cycles_ok": ok, "cycles": doc.get("cycles"), "reference": doc.get("reference"),
                    "seconds": round(wall, 1), "ok": ok == 5 and p.returncode == 0}
    print(f"crash: {ok}/5 cycles recovered to the uninterrupted count and checksum ({wall:.0f} s)", flush=True)
    for c in doc.get("cycles", []):
        print(f"  cycle {c['cycle']}: killed after {c['killed_after_s']} s, {c['acked_batches']} batches acked, "
              f"in flight {c['inflight_batch']} (committed: {c['inflight_committed']}), "
              f"{c['rows_after_restart']:,} rows after restart -> {c['final_rows']:,}: {'OK' if c['ok'] else c}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="load,checksums,parquet,crash")
    a = ap.parse_args()
    parts = a.only.split(",")
    OUT.mkdir(parents=True, exist_ok=True)
    res: dict = {"started": time.strftime("%Y-%m-%d %H:%M:%S")}
    with tempfile.TemporaryDirectory(prefix="chbench-cb-bars-") as tmp:
        work = Path(tmp)
        server = ModernServer() if {"checksums", "parquet"} & set(parts) else None
        try:
            if "load" in parts:
                part_load(res, work)
            if "checksums" in parts:
                assert server is not None
                part_checksums(res, work, server)
            if "parquet" in parts:
                assert server is not None
                part_parquet(res, work, server)
        finally:
            if server is not None:
                server.stop()
        if "crash" in parts:
            part_crash(res, work)
    (OUT / "clickbench_bars.json").write_text(json.dumps(res, indent=2))
    print(f"written {OUT / 'clickbench_bars.json'}")


if __name__ == "__main__":
    main()
