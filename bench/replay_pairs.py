"""A replay of two targets at once, judged paired (each statement's two sends) and pooled
(each side's times as one sample: what ``chbench replay`` and ``compare`` use), on the
same files: how wide the intervals are, and what the verdicts say, in an A/A (one 26.9
server named twice) and with a known change (B: a second 26.9 server whose table holds
20% more rows: the full scans read 20% more, the query whose range the primary key
prunes reads the same).

    python bench/replay_pairs.py                 # 3 replays of each, ~1 min
    python bench/replay_pairs.py --only aa --replays 40   # ~3 min
    python bench/replay_pairs.py --only separate --replays 24 [--speed 1]   # ~3 min (~4 at 1)

``separate``: replays of one target made one after another, judged as ``compare``
judges separate files: one replay against the next, and three against the next three
(``compare R1 R2 R3 --vs R4 R5 R6``: each replay a session, the between-replay spread
measured) — A/A on one server, and the known change (the next three on B).

The workload: a few normalized queries whose literals change over the capture (so a
hash's queries differ in size, as a real workload's do), sent by this script at known
times and captured from the server's query_log. Writes bench/out/replay_pairs.json and
prints per case: verdicts paired / pooled, and the median half-width of the 95%
intervals.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
OUT = REPO / "bench" / "out"

from tests.engines import ModernServer, http_post  # noqa: E402

TEMPLATES = [
    "SELECT count() FROM bench.t WHERE x % 7 = {k} AND x < {n}",
    "SELECT sum(y) FROM bench.t WHERE x > {n}",
    "SELECT uniq(y % {m}) FROM bench.t",
    "SELECT x FROM bench.t WHERE y = {k} ORDER BY x LIMIT 10",
]
ROWS = 2_000_000


def make_table(port: int, rows: int) -> None:
    http_post(port, "CREATE DATABASE IF NOT EXISTS bench")
    http_post(port, "DROP TABLE IF EXISTS bench.t")
    http_post(port, "CREATE TABLE bench.t (x UInt64, y UInt64) ENGINE = MergeTree ORDER BY x")
    http_post(port, f"INSERT INTO bench.t SELECT number, cityHash64(number) % 1000 FROM numbers({rows})")
    http_post(port, "OPTIMIZE TABLE bench.t FINAL")


def send_workload(port: int, per_hash: int) -> float:
    """Each template ``per_hash`` times with literals that grow over the workload."""
    since = time.time() - 1
    for i in range(per_hash):
        for sql in TEMPLATES:
            http_post(port, sql.format(k=i % 7, n=(i + 1) * ROWS // per_hash, m=10 + i))
        time.sleep(0.05)
    return since


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "chbench", *args], cwd=REPO, capture_output=True, text=True)


def judge(path: Path) -> list[dict[str, Any]]:
    """Each normalized query of a two-target replay file judged both ways."""
    from chbench.replay.analysis import compare
    from chbench.stats.compare import Options

    doc = json.loads(path.read_text())
    ways = {paired: {q["name"]: q for q in compare(doc["hashes"], doc["samples"], Options(), paired=paired)["queries"]}
            for paired in (True, False)}

    def half(ci: list[float | None] | None) -> float:
        if not ci or ci[0] is None or ci[1] is None or ci[0] <= 0:
            return math.inf
        return math.expm1((math.log(ci[1]) - math.log(ci[0])) / 2)

    return [{"query": q.get("label") or name, "paired": q["verdict"], "pooled": ways[False][name]["verdict"],
             "paired_half": half(q["ci"]), "pooled_half": half(ways[False][name]["ci"]),
             "ratio": q["ratio"], "pooled_ratio": ways[False][name]["ratio"]}
            for name, q in ways[True].items()]


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def count(key: str) -> dict[str, int]:
        return dict(Counter(str(r[key]) for r in rows))

    return {"paired": count("paired"), "pooled": count("pooled"),
            "paired_half_median": statistics.median(r["paired_half"] for r in rows),
            "pooled_half_median": statistics.median(r["pooled_half"] for r in rows)}


def separate(wl: Path, work: Path, url_a: str, url_b: str, replays: int, speed: str) -> dict[str, Any]:
    """Replays of one target one after another, judged 1 against the next 1 and 3 against
    the next 3 (each replay a session); and 3 of A against 3 of B (the known change)."""
    from chbench.compare import CompareOptions, build_comparison
    from chbench.replay.analysis import backlog_of

    def replay(url: str, name: str) -> str:
        out = work / f"{name}.json"
        r = cli("replay", str(wl), "--target", url, "--speed", speed, "--out", str(out), "--quiet")
        assert r.returncode in (0, 1), r.stderr
        return str(out)

    def verdicts(a: list[str], b: list[str]) -> list[str]:
        cmp = build_comparison(a, CompareOptions(), vs=b) if len(a) > 1 else build_comparison(a + b, CompareOptions())
        return [q.verdict for q in cmp.doc.queries]

    files = [replay(url_a, f"sep-a{k}") for k in range(replays)]
    out: dict[str, Any] = {}
    backlogs = [b for f in files if (b := backlog_of(json.loads(Path(f).read_text())["samples"]["A"]))]
    out["A's replays"] = {"in_flight": [min(b.in_flight for b in backlogs), max(b.in_flight for b in backlogs)],
                          "alone": [min(b.alone for b in backlogs), max(b.alone for b in backlogs)],
                          "overloaded": sum(b.overloaded for b in backlogs), "replays": len(backlogs)}
    print("A's replays:", out["A's replays"], flush=True)
    for g in (1, 3):
        got: list[str] = []
        for i in range(0, len(files) - 2 * g + 1, 2 * g):
            got += verdicts(files[i:i + g], files[i + g:i + 2 * g])
        out[f"separate A/A, {g} replay(s) a side"] = {"verdicts": dict(Counter(got))}
    changed: list[str] = []
    for k in range(max(1, replays // 6)):
        b_files = [replay(url_b, f"sep-b{k}-{j}") for j in range(3)]
        changed += verdicts(files[6 * k:6 * k + 3] or files[:3], b_files)
    out["separate, B: 20% more rows, 3 replays a side"] = {"verdicts": dict(Counter(changed))}
    for name, case in out.items():
        if "verdicts" in case:
            print(f"{name}: {case['verdicts']}", flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--replays", type=int, default=3)
    ap.add_argument("--per-hash", type=int, default=40)
    ap.add_argument("--speed", default="2")
    ap.add_argument("--only", choices=["aa", "change", "separate"], help="one case only")
    args = ap.parse_args()
    a, b = ModernServer(), ModernServer()
    result: dict[str, Any] = {"cases": {}}
    try:
        make_table(a.http_port, ROWS)
        make_table(b.http_port, ROWS * 6 // 5)
        since = send_workload(a.http_port, args.per_hash)
        work = Path(tempfile.mkdtemp())
        wl = work / "w.jsonl"
        r = cli("capture", "--target", a.http_url, "--since", f"{since:.6f}", "--out", str(wl))
        assert r.returncode == 0, r.stderr
        cases = {"aa": ("A/A (one server named twice)", a.http_url, a.http_url),
                 "change": ("B: 20% more rows", a.http_url, b.http_url)}
        if args.only in (None, "separate"):
            result["cases"].update(separate(wl, work, a.http_url, b.http_url, args.replays, args.speed))
        for key, (name, ta, tb) in cases.items():
            if args.only not in (None, key):
                continue
            rows: list[dict[str, Any]] = []
            for k in range(args.replays):
                out = work / f"{len(result['cases'])}-{k}.json"
                r = cli("replay", str(wl), "--target", ta, "--target", tb, "--speed", args.speed, "--out", str(out))
                assert r.returncode in (0, 1), r.stderr
                rows += judge(out)
            result["cases"][name] = {"rows": rows, **summarize(rows)}
            s = result["cases"][name]
            print(f"{name}: paired {s['paired']} (median ±{s['paired_half_median']:.1%}); "
                  f"pooled {s['pooled']} (median ±{s['pooled_half_median']:.1%})", flush=True)
    finally:
        a.stop()
        b.stop()
    OUT.mkdir(exist_ok=True)
    (OUT / "replay_pairs.json").write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
