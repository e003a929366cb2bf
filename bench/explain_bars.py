"""Measure issue 25's bars (why a query changed), with the real command line on real servers.

    python bench/explain_bars.py                     # everything (~15 min on 2 cores)
    python bench/explain_bars.py --only cases        # the ten seeded regressions
    python bench/explain_bars.py --only aa --runs 3

Parts:
  cases     ten regressions with a known cause, each side by side on the 26.9 server (this
            script creates the tables): the cause (a counter or operator a ClickHouse engineer
            would name, listed per case below) must be among `chbench explain`'s top 3 (by
            `explain --query`, so a case whose verdict is not `slower` still counts). Bar:
            >= 9 of 10.
  aa        A/A side by side (`--setting-b log_comment=b`), --runs runs of the built-in suite and
            of the ten cases' queries: per query, the share of tested counters/operators
            flagged (bar <= 5%), and no "Why" line printed for a query whose verdict is
            `no change`.
  overhead  the built-in suite on the 26.9 server, runs with collection on and --no-explain
            alternated (--runs each): every query's median on against off (bar: the geometric
            mean within 2%, with the spread of the per-query ratios); `SELECT 1` over HTTP,
            300 runs, client_ms - server_ms on against off (bar: within 0.05 ms).
  overhead-embedded  the same on the embedded engine, which keeps its logs either way: on
            against off is the log_comment tag (one untimed SET before each timed run) and
            the reads after the rounds.
  targets   what explain gives on the 18.16 server (counters only, said), server@26.9 and the
            embedded engine (counters and operators since it keeps its logs).

Timings are noisy and shared: every number comes with the spread seen. Writes
bench/out/explain_bars.json and prints it.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from chbench.servers import LegacyServer, ModernServer  # noqa: E402 - the servers the tests use

OUT = REPO / "bench" / "out"
ROWS = 4_000_000
SETUP = [
    # t: ordered by k; u is clustered by granule (a minmax skip index prunes it), not by k
    "CREATE TABLE t (k UInt64, u UInt32, v UInt64, s String, INDEX iu u TYPE minmax GRANULARITY 1) "
    "ENGINE = MergeTree ORDER BY k",
    f"INSERT INTO t SELECT number, intDiv(number, 8192) * 37 % 1000, cityHash64(number) % 100000, toString(number) "
    f"FROM numbers({ROWS})",
    # the same rows ordered by u: a query on k cannot use its primary key
    "CREATE TABLE t_u (k UInt64, u UInt32, v UInt64, s String) ENGINE = MergeTree ORDER BY u",
    "INSERT INTO t_u SELECT * FROM t",
    "CREATE TABLE d (k UInt64, name String) ENGINE = MergeTree ORDER BY k",
    "INSERT INTO d SELECT number * 3, toString(number) FROM numbers(400000)",
]
EXPR = " + ".join(f"(number * {i} + intDiv(number, {i + 3}) - number % {i + 11})" for i in range(1, 9))
READ = ["SelectedMarks", "SelectedRows", "SelectedBytes", "SelectedRanges", "SelectedParts", "read_rows",
        "read_bytes"]
# name, A's SQL, B's SQL (None: the same), B's settings, extra run flags, what an engineer names
# (patterns: fnmatch on the name; "op:" only an operator's). The examples the servers
# here cannot show: the query cache (this build caches nothing: every run a miss) and the
# uncompressed cache (none configured) — replaced by an external sort and PREWHERE.
CASES: list[tuple[str, str, str | None, list[str], list[str], list[str]]] = [
    ("skip_index", "SELECT count() FROM t WHERE u = 17", None, ["use_skip_indexes=0"], [], READ),
    ("threads", "SELECT sum(cityHash64(number)) FROM numbers_mt(30000000)", None, ["max_threads=1"], [],
     ["threads"]),
    ("external_sort", "SELECT k, s FROM t ORDER BY s DESC LIMIT 1000000, 5", None,
     ["max_bytes_before_external_sort=4000000", "max_bytes_ratio_before_external_sort=0"], [],
     ["ExternalSort*", "ExternalProcessing*", "op:BufferingToFileSink", "op:BufferingFromFileSource"]),
    ("join_algorithm", "SELECT count(), sum(length(d.name)) FROM t JOIN d ON t.k = d.k", None,
     ["join_algorithm=full_sorting_merge"], [], ["op:*Join*"]),
    ("read_in_order", "SELECT k, s FROM t ORDER BY k LIMIT 10", None, ["optimize_read_in_order=0"], [],
     READ + ["op:*Sort*"]),
    ("compile_expressions", f"SELECT sum({EXPR}) FROM numbers_mt(20000000)", None, ["compile_expressions=0"], [],
     ["Compile*", "op:ExpressionTransform"]),
    ("primary_key", "SELECT sum(v) FROM t WHERE k BETWEEN 100000 AND 120000",
     "SELECT sum(v) FROM t_u WHERE k BETWEEN 100000 AND 120000", [], [], READ),
    ("result_size", "SELECT k, s FROM t WHERE k < 1000 FORMAT TSV", "SELECT k, s FROM t WHERE k < 300000 FORMAT TSV",
     [], ["--keep-format"], ["result_rows", "result_bytes", "NetworkSendBytes", "InterfaceHTTPSendBytes"]),
    ("spill", "SELECT v, count() FROM t GROUP BY v ORDER BY count() DESC LIMIT 5", None,
     ["max_bytes_before_external_group_by=2000000", "max_bytes_ratio_before_external_group_by=0"], [],
     ["External*"]),
    ("prewhere", "SELECT count(), max(s) FROM t WHERE v = 4242", None,
     ["optimize_move_to_prewhere=0", "optimize_move_to_prewhere_if_final=0"], [], READ + ["op:*Filter*"]),
]


def chbench(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    p = subprocess.run([sys.executable, "-m", "chbench", *args], cwd=REPO, capture_output=True, text=True)
    if check and p.returncode not in (0, 1):
        raise SystemExit(f"chbench {' '.join(args)} failed ({p.returncode}): {p.stderr.strip()}")
    return p


def http(url: str, sql: str) -> str:
    req = urllib.request.Request(url + "/", data=sql.encode(), method="POST")
    with urllib.request.urlopen(req, timeout=300) as r:
        return str(r.read().decode())


def matches(name: str, kind: str, expected: list[str]) -> bool:
    for w in expected:
        if w.startswith("op:"):
            if kind == "operator" and fnmatch.fnmatchcase(name, w[3:]):
                return True
        elif fnmatch.fnmatchcase(name, w):
            return True
    return False


def cases(res: dict, url: str, runs: int) -> None:
    out = []
    for name, sql_a, sql_b, settings_b, extra, expected in CASES:
        fa, fb = OUT / f"v25-{name}-a.sql", OUT / f"v25-{name}-b.sql"
        fa.write_text(f"-- name: {name}\n{sql_a};\n")
        args = ["run", "--target", url, "--queries", str(fa), "--iterations", str(runs), "--quiet", *extra]
        if sql_b is not None:
            fb.write_text(f"-- name: {name}\n{sql_b};\n")
            args += ["--queries-b", str(fb)]
        for s in settings_b:
            args += ["--setting-b", s]
        if sql_b is None and not settings_b:
            raise SystemExit(f"case {name}: nothing differs")
        f = OUT / f"v25-{name}.json"
        t = time.monotonic()
        chbench(*args, "--out", str(f))
        doc = json.loads(chbench("explain", str(f), "--query", name, "--format", "json").stdout)
        q = doc["queries"][0]
        why = q.get("why") or {}
        ranked = [(m["name"], "counter") for m in why.get("counters", [])] + \
                 [(m["name"], "operator") for m in why.get("operators", [])]
        kinds = dict(ranked)
        top = why.get("top", [])[:3]
        hit = any(matches(n, kinds.get(n, "counter"), expected) for n in top)
        out.append({"case": name, "verdict": q["verdict"], "ratio": q["ratio"], "top3": top, "hit": hit,
                    "expected": expected,
                    "summary": why.get("summary"), "tested": why.get("tested"), "changed": why.get("changed"),
                    "seconds": round(time.monotonic() - t, 1)})
        print(f"  {name}: {q['verdict']} {q['ratio']:.3f} top3={top} hit={hit}", file=sys.stderr)
    res["cases"] = {"cases": out, "bar": {"hits": sum(c["hit"] for c in out), "of": len(out)}}


def aa(res: dict, url: str, runs: int) -> None:
    suite = OUT / "v25-aa-cases.sql"
    suite.write_text("".join(f"-- name: {n}\n{a.replace(' FORMAT TSV', '')};\n" for n, a, *_ in CASES))
    out = []
    for i in range(runs):
        for kind, extra in (("builtin", ["--scale", "0.3"]), ("cases", ["--queries", str(suite)])):
            f = OUT / f"v25-aa-{kind}-{i}.json"
            chbench("run", "--target", url, *extra, "--setting-b", "log_comment=b", "--iterations", "15", "--quiet",
                    "--out", str(f))
            cmp = json.loads(chbench("compare", str(f), "--format", "json").stdout)
            names = [q["name"] for q in cmp["queries"]]
            doc = json.loads(chbench("explain", str(f), *sum((["--query", n] for n in names), []),
                                     "--format", "json").stdout)
            console = chbench("compare", str(f)).stdout
            shares = []
            for q in doc["queries"]:
                w = q.get("why") or {}
                if w.get("tested"):
                    shares.append(w["changed"] / w["tested"])
            no_change = [q["name"] for q in cmp["queries"] if q["verdict"] == "no change"]
            why_on_no_change = [n for n in no_change if f"Why {n} " in console]
            out.append({"kind": kind, "run": i, "verdicts": {v: sum(q["verdict"] == v for q in cmp["queries"])
                                                              for v in {q["verdict"] for q in cmp["queries"]}},
                        "flagged_share_max": round(max(shares), 4) if shares else None,
                        "flagged_share_median": round(statistics.median(shares), 4) if shares else None,
                        "queries_over_5pct": sum(s > 0.05 for s in shares), "queries": len(shares),
                        "why_lines_on_no_change": why_on_no_change})
            print(f"  aa {kind} {i}: max share {out[-1]['flagged_share_max']} over5% "
                  f"{out[-1]['queries_over_5pct']}/{len(shares)}", file=sys.stderr)
    res["aa"] = {"runs": out, "bar": {
        "queries_over_5pct": sum(r["queries_over_5pct"] for r in out), "queries": sum(r["queries"] for r in out),
        "why_lines_on_no_change": sum(len(r["why_lines_on_no_change"]) for r in out)}}


def _medians(path: Path) -> dict[str, float]:
    doc = json.loads(path.read_text())
    return {q["name"]: statistics.median(s["client_ms"] for s in q["samples"] if not s["warmup"] and s["client_ms"])
            for q in doc["queries"]}


def _overheads(path: Path) -> list[float]:
    doc = json.loads(path.read_text())
    return [s["client_ms"] - s["server_ms"] for q in doc["queries"] for s in q["samples"]
            if not s["warmup"] and s.get("server_ms") is not None]


def overhead(res: dict, url: str, runs: int, key: str = "overhead") -> None:
    ratios: list[list[float]] = []
    one = {"on": [], "off": []}  # type: dict[str, list[float]]
    for i in range(runs):
        meds = {}
        for mode in ("on", "off") if i % 2 == 0 else ("off", "on"):
            f = OUT / f"v25-{key}-{mode}-{i}.json"
            flag = [] if mode == "on" else ["--no-explain"]
            chbench("run", "--target", url, "--scale", "0.3", "--iterations", "10", "--quiet", *flag, "--out", str(f))
            meds[mode] = _medians(f)
            g = OUT / f"v25-{key}-select1-{mode}-{i}.json"
            chbench("run", "--target", url, "--query", "SELECT 1", "--iterations", "300", "--warmup", "5", "--quiet",
                    *flag, "--out", str(g))
            one[mode] += _overheads(g)
        ratios.append([meds["on"][n] / meds["off"][n] for n in meds["on"] if n in meds["off"]])
    every = [r for rs in ratios for r in rs]
    geo = math.exp(statistics.mean(math.log(r) for r in every))
    on, off = statistics.median(one["on"]), statistics.median(one["off"])
    res[key] = {"per_run_geomean": [round(math.exp(statistics.mean(math.log(r) for r in rs)), 4)
                                           for rs in ratios],
                       "ratio_range": [round(min(every), 3), round(max(every), 3)],
                       "select1_on_ms": round(on, 4), "select1_off_ms": round(off, 4),
                       "bar": {"geomean_on_vs_off": round(geo, 4), "within_2pct": abs(geo - 1) <= 0.02,
                               "select1_diff_ms": round(on - off, 4), "select1_within": abs(on - off) <= 0.05}}


def targets(res: dict, modern_url: str) -> None:
    out: dict = {}
    with LegacyServer() as legacy:
        f = OUT / "v25-legacy.json"
        chbench("run", "--target", legacy.http_url, "--query",
                "SELECT count() FROM (SELECT number FROM system.numbers LIMIT 10000000)",
                "--setting-b", "max_threads=1", "--iterations", "8", "--quiet", "--out", str(f))
        doc = json.loads(f.read_text())
        out["18.16"] = doc["meta"].get("explain")
        e = json.loads(chbench("explain", str(f), "--query", doc["queries"][0]["name"], "--format", "json").stdout)
        out["18.16_top"] = ((e["queries"][0].get("why") or {}).get("top"))
    f = OUT / "v25-embedded.json"
    chbench("run", "--scale", "0.02", "--iterations", "3", "--quiet", "--out", str(f))
    out["embedded"] = json.loads(f.read_text())["meta"].get("explain")
    f = OUT / "v25-engine.json"
    p = chbench("run", "--target", "server@26.9", "--scale", "0.02", "--iterations", "3", "--quiet", "--out", str(f),
                check=False)
    out["server@26.9"] = json.loads(f.read_text())["meta"].get("explain") if f.exists() else p.stderr.strip()
    res["targets"] = out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="cases,aa,overhead,targets", help="comma-separated parts")
    ap.add_argument("--runs", type=int, default=3, help="aa and overhead: runs (default 3)")
    ap.add_argument("--iterations", type=int, default=15, help="cases: rounds per case (default 15)")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "explain_bars.json"
    res: dict = json.loads(path.read_text()) if path.exists() else {}
    with ModernServer() as server:
        url = server.http_url
        for sql in SETUP:
            http(url, sql)
        parts = {"cases": lambda: cases(res, url, args.iterations), "aa": lambda: aa(res, url, args.runs),
                 "overhead": lambda: overhead(res, url, args.runs),
                 "overhead-embedded": lambda: overhead(res, "embedded", args.runs, "overhead_embedded"),
                 "targets": lambda: targets(res, url)}
        for part in args.only.split(","):
            t = time.monotonic()
            parts[part]()
            res.setdefault("part_seconds", {})[part] = round(time.monotonic() - t, 1)
            path.write_text(json.dumps(res, indent=2))
    print(json.dumps({k: v.get("bar", v) if isinstance(v, dict) else v for k, v in res.items()}, indent=2))


if __name__ == "__main__":
    main()
