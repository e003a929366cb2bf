"""Measure issue 26's bars (N-way runs, `chbench trend`, `chbench bisect`).

    python bench/bisect_bars.py                         # everything (installs engines: see below)
    python bench/bisect_bars.py --only sim              # the simulated chains (~2 min)
    python bench/bisect_bars.py --only answer,trend-aa

Parts:
  sim       64 versions behind the fake target (the real runner, pairing and decisions), each
            run's noise drawn from a real side-by-side A/A file of the built-in suite (made
            here on the embedded engine unless --noise FILE): per round, the two sides'
            residuals from their query's median, in the order they ran. One +5% step at a
            random place: found (the exact pair) in >= 19 of 20 seeds with <= 9 comparisons
            on average. Two +5% steps: the report names more than one change in >= 18 of
            20. Also shown, no bar: two steps of opposite sign.
  answer    `chbench bisect 23.10 26.9 --query 'SELECT toTypeName(if(1, 1, -1))' --answer`,
            then the query on every version of the range, to verify the version named.
  real      a query >= 10% slower on a newer catalog version (REAL_QUERY below), bisected
            over REAL_RANGE, then `chbench trend` over the whole range: the step bisect
            named (its largest, when it found several) must be the trend's largest, with
            non-overlapping intervals.
  trend-aa  `chbench trend --targets embedded@26.9 ×3 --suite builtin`, --runs runs: no step.
  nway      three sides (A, B = A's suite, C = 10% more rows), 4 runs: per run A → B flags
            <= 2 of 40 over the 4 runs (issue 2's A/A), A → C and B → C >= 8 of 10 slower
            (issue 2's sensitivity), never faster. After each, a two-sided control (A, and
            B with 10% more rows) on the same machine: what two sides give at that hour.

Installs (once, cached): every catalog version from 23.10 to 26.9 for `answer` (~5 GB),
those of REAL_RANGE for `real`. Timings are noisy and shared: every number comes with
the spread seen. Writes bench/out/bisect_bars.json and prints it.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
OUT = REPO / "bench" / "out"
ANSWER_QUERY = "SELECT toTypeName(if(1, 1, -1))"
REAL_RANGE = ("24.8", "26.9")
# the built-in suite's `hashing`: 1.6× slower from 25.8 to 26.1 in a trend of the whole suite
# over 24.8..26.9 (8 rounds per version, 2026-12-02)
REAL_QUERY = ("SELECT sum(cityHash64(number)) + sum(sipHash64(number)) + sum(xxHash64(toString(number))) "
              "FROM numbers_mt(8000000)")


def cli(*args: str, timeout: float = 3600) -> tuple[int, str, str]:
    r = subprocess.run([sys.executable, "-m", "chbench", *args], capture_output=True, text=True, timeout=timeout,
                       cwd=REPO)
    return r.returncode, r.stdout, r.stderr


# -- sim --------------------------------------------------------------------------------------
def noise_pairs(path: Path) -> np.ndarray:
    """Per round of every query of a two-sided run file: (first side's, second side's)
    log residual from that side's median, in the order they ran."""
    doc = json.loads(path.read_text())
    pairs = []
    for q in doc["queries"]:
        by: dict[str, dict[int, float]] = {"A": {}, "B": {}}
        for s in q["samples"]:
            if not s.get("warmup") and not s.get("error") and s.get("client_ms"):
                by[s["target"]][s["round"]] = math.log(s["client_ms"])
        if not by["A"] or not by["B"]:
            continue
        ma, mb = statistics.median(by["A"].values()), statistics.median(by["B"].values())
        for r in sorted(set(by["A"]) & set(by["B"])):
            ea, eb = by["A"][r] - ma, by["B"][r] - mb
            pairs.append((ea, eb) if r % 2 == 0 else (eb, ea))
    return np.array(pairs)


def make_noise(args: argparse.Namespace) -> Path:
    if args.noise:
        return Path(args.noise)
    path = OUT / "bisect-noise.json"
    if not path.exists():
        code, _, err = cli("run", "--setting-b", "log_comment=b", "--iterations", "30", "--out", str(path),
                           "--quiet")
        assert code in (0, 1), err
    return path


def simulate(levels: list[float], pairs: np.ndarray, seed: int) -> Any:
    from chbench.bisect.judge import SpeedJudge
    from chbench.bisect.measure import Measurer
    from chbench.bisect.search import bisect
    from chbench.targets.fake import FakeTarget
    from chbench.workload import Query, Workload

    rng = np.random.default_rng(seed)
    state: dict[str, Any] = {"pair": (0.0, 0.0), "calls": 0}

    def target(version: str) -> FakeTarget:
        level = levels[int(version)]

        def handler(call: Any) -> float:
            if state["calls"] % 2 == 0:
                state["pair"] = tuple(pairs[rng.integers(len(pairs))])
            e = state["pair"][state["calls"] % 2]
            state["calls"] += 1
            return 50.0 * level * math.exp(e)

        return FakeTarget(handler, version=f"{version}.0.0.0")

    wl = Workload(queries=[Query(name="q", sql="SELECT 1")])
    m = Measurer([str(i) for i in range(len(levels))], target, wl, warmup=0)
    return bisect(len(levels), SpeedJudge(m, threshold=0.05))


def part_sim(args: argparse.Namespace) -> dict[str, Any]:
    pairs = noise_pairs(make_noise(args))
    d = pairs[:, 1] - pairs[:, 0]
    out: dict[str, Any] = {"noise_rounds": len(pairs), "noise_ratio_spread": float(1.4826 * np.median(np.abs(
        d - np.median(d))))}
    rng = np.random.default_rng(2026)
    one: dict[str, Any] = {"found": 0, "comparisons": [], "seeds": 20}
    for seed in range(20):
        k = int(rng.integers(1, 64))
        levels = [1.0 if i < k else 1.05 for i in range(64)]
        s = simulate(levels, pairs, seed)
        one["found"] += int(bool(s.changes) and (s.changes[0].last_same, s.changes[0].first_changed) == (k - 1, k))
        one["comparisons"].append(len(s.steps))
    one["mean_comparisons"] = statistics.mean(one["comparisons"])
    out["one_step"] = one
    for name, signs in (("two_steps", (1.05, 1.05)), ("two_steps_opposite", (1.05, 1 / 1.05))):
        two: dict[str, Any] = {"said_several": 0, "both_exact": 0, "comparisons": [], "seeds": 20}
        for seed in range(20):
            k1, k2 = sorted(int(x) for x in rng.choice(np.arange(1, 64), 2, replace=False))
            levels = [(signs[0] if i >= k1 else 1.0) * (signs[1] if i >= k2 else 1.0) for i in range(64)]
            s = simulate(levels, pairs, 100 + seed)
            found = {(c.last_same, c.first_changed) for c in s.changes}
            two["said_several"] += int(len(s.changes) > 1)
            two["both_exact"] += int({(k1 - 1, k1), (k2 - 1, k2)} <= found)
            two["comparisons"].append(len(s.steps))
        two["mean_comparisons"] = statistics.mean(two["comparisons"])
        out[name] = two
    out["bars"] = {"one_step_found>=19": one["found"] >= 19, "mean_comparisons<=9": one["mean_comparisons"] <= 9,
                   "two_steps_said>=18": out["two_steps"]["said_several"] >= 18}
    return out


# -- answer -----------------------------------------------------------------------------------
def part_answer(args: argparse.Namespace) -> dict[str, Any]:
    path = OUT / "bisect-answer.json"
    t0 = time.time()
    code, stdout, err = cli("bisect", "23.10", "26.9", "--query", ANSWER_QUERY, "--answer", "--out", str(path))
    took = time.time() - t0
    b = json.loads(path.read_text())["bisect"]
    from chbench.targets import Credentials, make_target
    from chbench.versions import CatalogSource

    every = {}
    for v in CatalogSource().between("23.10", "26.9"):
        t = make_target(f"embedded@{v}", Credentials())
        t.connect()
        every[v] = t.query_rows(ANSWER_QUERY)[0][0]
        t.close()
    versions = list(every)
    first = next(v for v in versions if every[v] != every[versions[0]])
    return {"exit": code, "seconds": round(took), "first_changed": b["first_changed"], "last_same": b["last_same"],
            "comparisons": b["comparisons"], "every_version": every, "verified_first": first,
            "bar": b["first_changed"] == first, "stderr_tail": err.strip().splitlines()[-1:]}


# -- real -------------------------------------------------------------------------------------
def part_real(args: argparse.Namespace) -> dict[str, Any]:
    old, new = REAL_RANGE
    path, tpath = OUT / "bisect-real.json", OUT / "bisect-real-trend.json"
    code, _, err = cli("bisect", old, new, "--query", REAL_QUERY, "--speed", "--out", str(path))
    b = json.loads(path.read_text())["bisect"]
    qfile = OUT / "bisect-real.sql"
    qfile.write_text(f"-- name: q\n{REAL_QUERY};\n")
    tcode, _, terr = cli("trend", f"{old}..{new}", "--queries", str(qfile), "--iterations", "20", "--yes",
                         "--out", str(tpath), "--quiet")
    trend = json.loads(tpath.read_text())["trend"]
    from chbench.trend.series import largest_speed_step

    big = largest_speed_step(trend, "q")
    out: dict[str, Any] = {"bisect_exit": code, "first_changed": b["first_changed"], "last_same": b["last_same"],
                           "changes": b["changes"], "comparisons": b["comparisons"], "trend_exit": tcode,
                           "trend_steps": trend["steps"], "trend_series": trend["queries"][0]["series"],
                           "largest": big, "stderr_tail": (err.strip().splitlines() + terr.strip().splitlines())[-2:]}
    if big is not None:
        series = {p["version"]: p for p in trend["queries"][0]["series"]}
        a, c = series[big["from"]], series[big["to"]]
        apart = bool(a.get("ci") and c.get("ci") and (a["ci"][1] < c["ci"][0] or c["ci"][1] < a["ci"][0]))
        named = b.get("largest") or b["changes"][0]  # several changes: the bisect's largest
        out["bisect_named"] = (named["last_same"], named["first_changed"])
        out["bar"] = (big["from"], big["to"]) == out["bisect_named"] and apart
        out["intervals_apart"] = apart
    else:
        out["bar"] = False
    return out


# -- trend-aa ---------------------------------------------------------------------------------
def part_trend_aa(args: argparse.Namespace) -> dict[str, Any]:
    runs = []
    for i in range(args.runs):
        path = OUT / f"trend-aa-{i}.json"
        t0 = time.time()
        code, _, err = cli("trend", "--targets", "embedded@26.9", "embedded@26.9", "embedded@26.9", "--suite",
                           "builtin", "--yes", "--out", str(path), "--quiet")
        trend = json.loads(path.read_text())["trend"]
        runs.append({"exit": code, "seconds": round(time.time() - t0), "steps": trend["steps"],
                     "comparisons": trend["comparisons"]})
    return {"runs": runs, "bar": all(not r["steps"] for r in runs)}


# -- nway -------------------------------------------------------------------------------------
def part_nway(args: argparse.Namespace) -> dict[str, Any]:
    from chbench.compare.nway import build_nway
    from chbench.plan import Plan, SidePlan
    from chbench.runner import close_targets, run_plan
    from chbench.targets import Credentials, make_target
    from chbench.ui.progress import make_progress
    from chbench.workload import default_suite

    def measure(path: Path, scales: tuple[float, ...]) -> dict[str, Any]:
        targets = [make_target("embedded@26.9", Credentials()) for _ in scales]
        sides = [SidePlan(sid, t, default_suite(scale), {}, scale, label=f"{sid} scale {scale}")
                 for sid, t, scale in zip("ABC"[:len(scales)], targets, scales, strict=True)]
        try:
            run_plan(Plan(sides=sides, iterations=15), str(path), make_progress(True))
        finally:
            close_targets(targets)
        nway = build_nway(str(path))
        return {"ABC"[a] + "ABC"[b]: dict(c.doc.summary.verdicts)
                for (a, b), c in zip(nway.pairs, nway.comparisons, strict=True)}

    runs, control = [], []
    for i in range(4):  # each 3-sided run, then a 2-sided one (A, B at 1.1) on the same machine
        runs.append(measure(OUT / f"nway-{i}.json", (1.0, 1.0, 1.1)))
        control.append(measure(OUT / f"nway-control-{i}.json", (1.0, 1.1)))
    aa = sum(r["AB"].get("slower", 0) + r["AB"].get("faster", 0) for r in runs)
    out = {"runs": runs, "aa_flagged_of_40": aa, "two_sided_control": control,
           "control_slower": [c["AB"].get("slower", 0) for c in control]}
    out["bar"] = aa <= 2 and all(r[p].get("slower", 0) >= 8 and not r[p].get("faster") for r in runs
                                 for p in ("AC", "BC"))
    return out


PARTS = {"sim": part_sim, "answer": part_answer, "real": part_real, "trend-aa": part_trend_aa, "nway": part_nway}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default=",".join(PARTS), help="comma-separated parts")
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--noise", help="a two-sided A/A run file for the simulation's noise")
    args = p.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "bisect_bars.json"
    results = json.loads(path.read_text()) if path.exists() else {}
    for name in args.only.split(","):
        t0 = time.time()
        results[name] = PARTS[name](args)
        results[name]["took_s"] = round(time.time() - t0)
        results[name]["measured_at"] = time.strftime("%Y-%m-%d %H:%M")
        path.write_text(json.dumps(results, indent=1, default=str))
        print(name, json.dumps(results[name], indent=1, default=str)[:3000], flush=True)


if __name__ == "__main__":
    main()
