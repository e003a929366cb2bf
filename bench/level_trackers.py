"""Which measure of the machine follows the whole suite's level between separate runs?

    python bench/level_trackers.py                       # bench/out/reference_changes
    python bench/level_trackers.py DIR                   # runs named KIND-NNN.json (A, B, C)

For the runs bench/reference_pairs.py --changes leaves (A: the built-in suite at --scale
0.1; B: 10% more rows; C: max_threads=1), each pair A/A up to three runs apart and A/B, A/C
next to each other: the suite's level (median over the queries of log B/A, client_ms
medians) against each tracker's log change — the reference task's pooled warm timings (as
compare uses them), per-CPU statistics where the readings say which CPU each timing ran on
(``cpu``: a helper that pins its timings to the CPUs in turn; not the shipped one), and the
calibration query. Prints each tracker's spread, its correlation with the level, and the
level's spread left after a least-squares slope on it (in-sample: an optimistic bound).
Seen 2026-12-08, see docs/measured.md.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

OUT = Path(__file__).resolve().parent / "out"
KINDS = {"A/A": ("A", "A", 3, True), "A/B (+10% rows)": ("A", "B", 1, False),
         "A/C (max_threads=1)": ("A", "C", 1, False)}


def trackers(path: Path) -> tuple[dict[str, float], dict[str, float]]:
    """The run's query medians, and each tracker's level (ms)."""
    doc = json.loads(path.read_text())
    queries = {q["name"]: float(np.median([s["client_ms"] for s in q["samples"] if s.get("client_ms")]))
               for q in doc["queries"] if q.get("samples")}
    pooled: list[float] = []
    per_cpu: dict[str, list[float]] = {"cpu mean": [], "cpu max": []}
    for r in (doc.get("machine") or {}).get("reference") or []:
        ms, cpu = r["ms"][1:], (r.get("cpu") or [])[1:]
        pooled += ms
        by: dict[int, list[float]] = {}
        for m, c in zip(ms, cpu, strict=False):
            by.setdefault(c, []).append(m)
        if len(by) > 1:
            v = [float(np.median(x)) for x in by.values()]
            per_cpu["cpu mean"].append(float(np.mean(v)))
            per_cpu["cpu max"].append(max(v))
    cal = [s["client_ms"] for c in doc.get("calibration") or [] for s in c["samples"]
           if not s.get("warmup") and s.get("client_ms")]
    level = {"reference": float(np.median(pooled)) if pooled else np.nan,
             **{k: float(np.median(v)) if v else np.nan for k, v in per_cpu.items()},
             "calibration": float(np.median(cal)) if cal else np.nan}
    return queries, level


def pairs(a: list[Path], b: list[Path], apart: int, same: bool) -> list[tuple[Path, Path]]:
    return [(x, y) for i, x in enumerate(a) for j, y in enumerate(b)
            if abs(i - j) <= apart and not (same and j <= i)]


def main() -> None:
    work = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT / "reference_changes"
    runs: dict[str, list[Path]] = {}
    for f in sorted(work.glob("*.json")):
        runs.setdefault(f.name.split("-")[0], []).append(f)
    read = {f: trackers(f) for fs in runs.values() for f in fs}
    report: dict[str, Any] = {}
    for label, (ka, kb, apart, same) in KINDS.items():
        if ka not in runs or kb not in runs:
            continue
        level, moves = [], []
        for a, b in pairs(runs[ka], runs[kb], apart, same):
            (qa, ta), (qb, tb) = read[a], read[b]
            level.append(float(np.median([np.log(qb[n] / qa[n]) for n in qa if n in qb])))
            moves.append({k: float(np.log(tb[k] / ta[k])) for k in ta})
        lv = np.array(level)
        report[label] = {"pairs": len(lv), "level_sd": float(np.std(lv)), "level_mean": float(np.mean(lv))}
        print(f"{label}: {len(lv)} pairs, suite level sd {np.std(lv):.3f} (mean {np.mean(lv):+.3f})")
        for k in moves[0]:
            v = np.array([m[k] for m in moves])
            ok = np.isfinite(v)
            if ok.sum() < 3:
                continue
            slope = float(np.polyfit(v[ok], lv[ok], 1)[0])
            row = {"sd": float(np.std(v[ok])), "corr": float(np.corrcoef(v[ok], lv[ok])[0, 1]), "slope": slope,
                   "level_sd_after": float(np.std(lv[ok] - slope * v[ok]))}
            report[label][k] = row
            print(f"   {k:12s} sd {row['sd']:.3f}  corr {row['corr']:+.2f}  slope {slope:+.2f}  "
                  f"level sd left {row['level_sd_after']:.3f}")
    OUT.mkdir(exist_ok=True)
    (OUT / "level_trackers.json").write_text(json.dumps({"dir": str(work), "kinds": report}, indent=1))


if __name__ == "__main__":
    main()
