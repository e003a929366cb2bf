"""Adaptive side-by-side stopping, before and after it knew the threshold
(stats/stopping.py; docs/statistics.md, "Adaptive stopping").

    python bench/adaptive_bars.py                  # simulator, ~3 min on 2 cores
    python bench/adaptive_bars.py --docs 500 --noise 1,2
    python bench/adaptive_bars.py --real 2         # also 2 real A/A runs per rule (~4 min each)

Simulator: the noise simulator's side-by-side runs (stats/simulate.py, its default
model fitted to this machine, and that model's noise × 2), each query stopped by the
runner's own rule after every round — ``before``: within ±2% (``--precision``) or at
the 20 s budget; ``after``: also decided at ±5% (the 90% interval within it, or the
estimate beyond it), an undecided query going on on time other queries left unused.
Each comparison judged as ``chbench compare`` judges it (paired). Counted: A/A
(``--docs`` comparisons of 10 queries) — flagged per query, ``no change`` share, the
simulated seconds a run takes; a change of 3 of the 10 queries by ×1.04, ×1.055 and
×1.10 — the changed queries' verdicts.

Real (``--real N``): N pairs of `chbench run --setting-b log_comment=b` (adaptive,
built-in suite, embedded), ``--threshold 5%`` and a rule without a threshold
(``--threshold`` set past any change: 900%) alternated, each compared; verdict counts
and wall time. Writes bench/out/adaptive_bars.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
OUT = REPO / "bench" / "out"


def simulate(docs: int, noise: float, change: float, rule: str, seed: int) -> dict[str, Any]:
    from bench.sim_verdicts import NoiseModel, adaptive_side_by_side
    from chbench.stats.compare import Options, compare_queries

    m = NoiseModel()
    m = replace(m, jitter=tuple(j * noise for j in m.jitter), drift_sd=m.drift_sd * noise)
    changed = None if change == 1.0 else (0, 3, 6)
    counts: Counter[str] = Counter()
    seconds = rounds = 0.0
    for i in range(docs):
        a, b = adaptive_side_by_side(m, seed * 1_000_003 + i, change, changed,
                                     threshold=0.05 if rule == "after" else None)
        seconds += sum(sum(a[k].times) + sum(b[k].times) for k in a) / 1000.0
        rounds += sum(len(a[k].times) for k in a) / len(a)
        doc = compare_queries(list(a), a, b, Options(paired=True), None)
        for k, r in enumerate(doc.queries):
            if changed is None or k in changed:
                counts[r.verdict] += 1
    total = sum(counts.values())
    return {"rule": rule, "noise": noise, "change": change, "comparisons": total,
            **{v: counts[v] for v in ("slower", "faster", "no change", "unstable")},
            "flagged_share": (counts["slower"] + counts["faster"]) / total,
            "no_change_share": counts["no change"] / total,
            "seconds_per_run": seconds / docs, "rounds_per_query": rounds / docs}


def real(pairs: int) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(pairs):
            for rule, thr in (("after", "5%") if i % 2 == 0 else ("before", "900%"),
                              ("before", "900%") if i % 2 == 0 else ("after", "5%")):
                out = f"{tmp}/{rule}{i}.json"
                t0 = time.monotonic()
                r = subprocess.run([sys.executable, "-m", "chbench", "run", "--setting-b", "log_comment=b", "--quiet",
                                    "--threshold", thr, "--out", out], capture_output=True, text=True, cwd=REPO)
                wall = time.monotonic() - t0
                assert r.returncode in (0, 1), r.stderr
                c = subprocess.run([sys.executable, "-m", "chbench", "compare", out, "--format", "json"],
                                   capture_output=True, text=True, cwd=REPO)
                doc = json.loads(c.stdout)
                verdicts = Counter(q["verdict"] for q in doc["queries"])
                spread = [q["paired"]["spread"] for q in doc["queries"] if q.get("paired")]
                pool = json.loads(Path(out).read_text())["meta"].get("time_pool")
                rows.append({"pair": i, "rule": rule, "wall_s": round(wall, 1), "verdicts": dict(verdicts),
                             "time_pool": pool,
                             "runs_per_query": [q["a"]["runs"] for q in doc["queries"]],
                             "per_round_spread_median": sorted(spread)[len(spread) // 2] if spread else None})
                print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=400)
    ap.add_argument("--noise", default="1,2", help="multiples of the fitted model's noise")
    ap.add_argument("--real", type=int, default=0, metavar="N")
    a = ap.parse_args()
    out: dict[str, Any] = {"simulated": [], "real": []}
    for noise in (float(x) for x in a.noise.split(",")):
        for change in (1.0, 1.04, 1.055, 1.10):
            for rule in ("before", "after"):
                row = simulate(a.docs if change == 1.0 else a.docs // 2, noise, change, rule, seed=7)
                out["simulated"].append(row)
                print(f"noise ×{noise:g} change ×{change:<5g} {rule:6}  slower {row['slower']:4}  faster "
                      f"{row['faster']:3}  no change {row['no change']:4}  unstable {row['unstable']:4}  "
                      f"(of {row['comparisons']})  {row['seconds_per_run']:.0f} s/run  "
                      f"{row['rounds_per_query']:.1f} rounds/query", flush=True)
    if a.real:
        out["real"] = real(a.real)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "adaptive_bars.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
