"""Measure the bars of ``chbench load`` next to the real clickhouse-benchmark 18.16, on
the same 26.9 server, in the same run.

    python bench/load_bars.py                       # everything (~17 min)
    python bench/load_bars.py --only qps,latency    # ~3 min
    python bench/load_bars.py --only rss --rss-seconds 600

Parts:
  qps      SELECT 1 at -c 1 and -c 4: clickhouse-benchmark, chbench native, chbench HTTP,
           each -t SECONDS, in rotating order over ROUNDS rounds; ratio to
           clickhouse-benchmark's QPS in the same round (bars: native >= 0.85, HTTP >= 1.0)
  latency  ~50 ms queries at -c 1 — SELECT sleep(0.05), and a calibrated computation —
           p50 and p90 of both tools over the native protocol, alternating, with each
           tool's server-side durations from query_log beside them (bar: within 5%)
  aa       comparison mode A/A: the same server twice (SELECT 1, -i 1500), AA_RUNS times;
           how often the t-test proves a difference and the rank verdict says slower/faster
  rss      chbench load -c 8 for RSS_SECONDS: resident memory sampled every 5 s; growth
           after the first minute (bar: < 20 MB)

Run it on an otherwise idle machine. Writes bench/out/load_bars.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
OUT = REPO / "bench" / "out"

from tests.engines import ModernServer  # noqa: E402


def clickhouse_benchmark(port: int, args: list[str], query: str) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = subprocess.run([shutil.which("clickhouse-benchmark") or "clickhouse-benchmark", "--port", str(port),
                            "-d", "0", *args, "--json", f.name], input=query + "\n", capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(f"clickhouse-benchmark failed: {p.stderr.strip()}")
        return json.loads(Path(f.name).read_text())


def chbench_load(target: list[str], args: list[str], query: str) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = subprocess.run([sys.executable, "-m", "chbench", "load", *target, "-d", "0", "--quiet", *args,
                            "--json", f.name], input=query + "\n", capture_output=True, text=True, cwd=REPO)
        if p.returncode != 0:
            raise SystemExit(f"chbench load failed: {p.stderr.strip()}")
        return json.loads(Path(f.name).read_text())


def qps(server: ModernServer, res: dict, seconds: float, rounds: int) -> None:
    tools = {
        "clickhouse-benchmark": lambda c: clickhouse_benchmark(server.tcp_port, ["-c", str(c), "-t", str(seconds)],
                                                               "SELECT 1"),
        "chbench native": lambda c: chbench_load(["--port", str(server.tcp_port)], ["-c", str(c), "-t", str(seconds)],
                                                 "SELECT 1"),
        "chbench http": lambda c: chbench_load(["--target", server.http_url], ["-c", str(c), "-t", str(seconds)],
                                               "SELECT 1"),
    }
    names = list(tools)
    out: dict[str, dict] = {}
    for c in (1, 4):
        per: dict[str, list[float]] = {n: [] for n in names}
        for r in range(rounds):
            order = names[r % 3:] + names[:r % 3]
            for n in order:
                per[n].append(tools[n](c)["statistics"]["QPS"])
        ratios = {n: [per[n][i] / per["clickhouse-benchmark"][i] for i in range(rounds)] for n in names[1:]}
        out[f"c{c}"] = {
            "qps": {n: [round(v) for v in per[n]] for n in names},
            "ratio_median": {n: round(statistics.median(v), 3) for n, v in ratios.items()},
            "ratio_all": {n: [round(x, 3) for x in v] for n, v in ratios.items()},
        }
        print(f"-c {c}: {json.dumps(out[f'c{c}'])}", flush=True)
    res["qps"] = out


def _server_quantiles(server: ModernServer, marker: str) -> list[float]:
    import urllib.request

    def sql(text: str) -> str:
        with urllib.request.urlopen(urllib.request.Request(server.http_url, data=text.encode())) as r:
            return r.read().decode()

    sql("SYSTEM FLUSH LOGS")
    out = sql(f"SELECT quantiles(0.5, 0.9)(query_duration_ms) FROM system.query_log WHERE type = 2 "
              f"AND query LIKE '%/* {marker} */%' AND query NOT LIKE '%query_log%'")
    return [float(x) for x in out.strip().strip("[]").split(",")]


def _latency_one(server: ModernServer, query: str, iterations: int, rounds: int, tag: str) -> dict:
    """Both tools, alternating, over ROUNDS rounds; the median over rounds per percentile.
    Each tool's queries carry a comment marker, so the server's own durations per tool
    (query_log) show whether a difference is in the measuring or in the server."""
    def run_cb() -> dict:
        return clickhouse_benchmark(server.tcp_port, ["-i", str(iterations), "--max_threads", "1"],
                                    query.replace("SELECT", f"SELECT /* cb-{tag} */", 1))

    def run_ours() -> dict:
        return chbench_load(["--port", str(server.tcp_port)], ["-i", str(iterations), "--max_threads=1"],
                            query.replace("SELECT", f"SELECT /* ch-{tag} */", 1))

    per: dict[str, dict[str, list[float]]] = {"cb": {"50": [], "90": []}, "ours": {"50": [], "90": []}}
    for r in range(rounds):
        pair = (("cb", run_cb), ("ours", run_ours)) if r % 2 == 0 else (("ours", run_ours), ("cb", run_cb))
        for name, fn in pair:
            j = fn()
            for p in ("50", "90"):
                per[name][p].append(j["query_time_percentiles"][p] * 1000)
    server_cb, server_ours = _server_quantiles(server, f"cb-{tag}"), _server_quantiles(server, f"ch-{tag}")
    out: dict = {"query": query, "rounds": rounds, "iterations_per_round": iterations, "percentiles": {}}
    for i, p in enumerate(("50", "90")):
        a, b = statistics.median(per["cb"][p]), statistics.median(per["ours"][p])
        out["percentiles"][p] = {"clickhouse_benchmark_ms": round(a, 2), "chbench_ms": round(b, 2),
                                 "diff": round(b / a - 1, 4),
                                 "server_side_ms": {"clickhouse_benchmark": server_cb[i], "chbench": server_ours[i]},
                                 "rounds_cb_ms": [round(x, 2) for x in per["cb"][p]],
                                 "rounds_chbench_ms": [round(x, 2) for x in per["ours"][p]]}
    out["max_abs_diff"] = max(abs(v["diff"]) for v in out["percentiles"].values())
    return out


def latency(server: ModernServer, res: dict, iterations: int, rounds: int) -> None:
    # sleep(0.05): the server side is nearly constant, so any difference is the tools' own
    res["latency_sleep"] = _latency_one(server, "SELECT sleep(0.05)", iterations, rounds, "sleep")
    print(json.dumps(res["latency_sleep"]), flush=True)
    # a ~50 ms single-threaded computation (calibrated here): also subject to machine noise
    n = 10_000_000
    for _ in range(4):
        j = chbench_load(["--port", str(server.tcp_port)], ["-i", "5", "--max_threads=1"],
                         f"SELECT count() FROM numbers({n}) WHERE NOT ignore(sipHash64(number))")
        n = int(n * 50 / (j["query_time_percentiles"]["50"] * 1000))
    query = f"SELECT count() FROM numbers({n}) WHERE NOT ignore(sipHash64(number))"
    res["latency_compute"] = _latency_one(server, query, iterations, rounds, "compute")
    print(json.dumps(res["latency_compute"]), flush=True)


def aa(server: ModernServer, res: dict, runs: int) -> None:
    proven, flagged, ratios = 0, 0, []
    with tempfile.TemporaryDirectory() as d:
        for i in range(runs):
            out = Path(d) / f"aa-{i}.json"
            p = subprocess.run([sys.executable, "-m", "chbench", "load", "--port", str(server.tcp_port), "--port",
                                str(server.tcp_port), "-i", "1500", "-d", "0", "--quiet", "--out", str(out)],
                               input="SELECT 1\n", capture_output=True, text=True, cwd=REPO)
            if p.returncode != 0:
                raise SystemExit(f"chbench load failed: {p.stderr.strip()}")
            row = json.loads(out.read_text())["levels"][0]["comparison"][0]
            proven += bool(row["t_test"]["proven"])
            flagged += row["rank"]["verdict"] in ("slower", "faster")
            ratios.append(round(row["rank"]["ratio"], 3))
    res["aa"] = {"runs": runs, "t_test_proven": proven, "rank_flagged": flagged, "ratios": ratios}
    print(json.dumps(res["aa"]), flush=True)


def _rss_kb(pid: int) -> int:
    total = 0
    pids = [pid]
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        pids += [int(c) for c in children]
    except OSError:
        pass
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def rss(server: ModernServer, res: dict, seconds: int) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "chbench", "load", "--port", str(server.tcp_port), "-c", "8",
                             "-t", str(seconds), "-d", "1", "--out", str(OUT / "rss-load.json")],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True,
                            cwd=REPO)
    assert proc.stdin is not None
    proc.stdin.write("SELECT 1\n")
    proc.stdin.close()
    samples = []
    t0 = time.monotonic()
    while proc.poll() is None:
        samples.append((round(time.monotonic() - t0, 1), _rss_kb(proc.pid)))
        time.sleep(5)
    after = [kb for t, kb in samples if t >= 60 and kb]
    at_60 = after[0] if after else None
    growth = (max(after) - at_60) / 1024 if after and at_60 is not None else None
    queries = json.loads((OUT / "rss-load.json").read_text())["levels"][0]["total"]["queries"]
    res["rss"] = {"seconds": seconds, "queries": queries, "rss_mb_at_60s": at_60 and round(at_60 / 1024, 1),
                  "rss_mb_max_after_60s": after and round(max(after) / 1024, 1),
                  "growth_mb_after_60s": growth and round(growth, 2),
                  "samples_mb": [(t, round(kb / 1024, 1)) for t, kb in samples]}
    print(json.dumps({k: v for k, v in res["rss"].items() if k != "samples_mb"}), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="qps,latency,aa,rss")
    ap.add_argument("--aa-runs", type=int, default=25)
    ap.add_argument("--seconds", type=float, default=5.0, help="qps: -t per measurement")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=100, help="latency: queries per tool and round")
    ap.add_argument("--latency-rounds", type=int, default=6)
    ap.add_argument("--rss-seconds", type=int, default=600)
    a = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    parts = a.only.split(",")
    res: dict = {"date": time.strftime("%Y-%m-%d %H:%M:%S")}
    with ModernServer() as server:
        if "qps" in parts:
            qps(server, res, a.seconds, a.rounds)
        if "latency" in parts:
            latency(server, res, a.iterations, a.latency_rounds)
        if "aa" in parts:
            aa(server, res, a.aa_runs)
        if "rss" in parts:
            rss(server, res, a.rss_seconds)
    (OUT / "load_bars.json").write_text(json.dumps(res, indent=1))
    print("\n| bar | measured | target |\n|---|---|---|")
    if "qps" in res:
        for c in ("c1", "c4"):
            r = res["qps"][c]["ratio_median"]
            print(f"| SELECT 1 -{c}, native / clickhouse-benchmark | {r['chbench native']:.2f}x | >= 0.85x |")
            print(f"| SELECT 1 -{c}, HTTP / clickhouse-benchmark | {r['chbench http']:.2f}x | >= 1.0x |")
    for key, what in (("latency_sleep", "sleep(0.05)"), ("latency_compute", "~50 ms computation")):
        if key in res:
            for p, v in res[key]["percentiles"].items():
                srv = v["server_side_ms"]
                print(f"| {what}, p{p}: chbench {v['chbench_ms']} ms vs clickhouse-benchmark "
                      f"{v['clickhouse_benchmark_ms']} ms (server side {srv['chbench']} vs "
                      f"{srv['clickhouse_benchmark']}) | {v['diff']:+.1%} | within 5% |")
    if "aa" in res:
        print(f"| A/A comparison mode (same server twice), {res['aa']['runs']} runs | t-test proven "
              f"{res['aa']['t_test_proven']}, rank slower/faster {res['aa']['rank_flagged']} | (no bar; ideally ~0) |")
    if "rss" in res:
        print(f"| RSS growth after the first minute, -c 8 for {res['rss']['seconds']} s | "
              f"{res['rss']['growth_mb_after_60s']} MB | < 20 MB |")


if __name__ == "__main__":
    main()
