"""Measure issue 13's bars: real ClickHouse versions through chbench's engine workers.

    python bench/engine_bars.py                       # everything (~15 min on 2 cores)
    python bench/engine_bars.py --only overhead,sens

Parts:
  upgrade    `chbench upgrade 24.8 26.9 --suite builtin` from an empty engine directory
             (installs included; pip's download cache as it is on this machine), then again
             with the engines installed. Bars: <= 10 min and <= 3 min.
  aa         `chbench upgrade 26.9 26.9` three times: two worker processes of the same
             version side by side on the built-in suite. Bar: <= 1 of 30 comparisons
             slower/faster, and every answer equal.
  overhead   `SELECT 1` through embedded@26.9 (median client_ms - server_ms; bar <= 0.3 ms),
             beside the in-process engine; and the built-in suite through embedded@26.9
             beside the in-process `embedded` (same version): medians within 3%.
  sens       `--target embedded@26.9 --scale-b 1.1 --iterations 15`: >= 8 of 10 slower,
             none faster.

Run it on an otherwise idle machine. Writes bench/out/engine_bars.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "bench" / "out"
FLAG = ("slower", "faster")


def chbench(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    p = subprocess.run([sys.executable, "-m", "chbench", *args], cwd=REPO, capture_output=True, text=True,
                       env={**os.environ, **(env or {})})
    if p.returncode not in (0, 1):
        raise SystemExit(f"chbench {' '.join(args)} failed ({p.returncode}): {p.stderr.strip()}")
    return p


def verdicts(path: Path) -> list[str]:
    doc = json.loads(chbench("compare", str(path), "--format", "json").stdout)
    return [q["verdict"] for q in doc["queries"]]


def part_upgrade() -> dict:
    empty = Path(tempfile.mkdtemp(prefix="chbench-engines-bar-"))
    env = {"CHBENCH_ENGINES_DIR": str(empty)}
    try:
        out: dict[str, Any] = {}
        for label in ("empty cache", "installed"):
            t0 = time.monotonic()
            path = OUT / f"eng-upgrade-{label[0]}.json"
            p = chbench("upgrade", "24.8", "26.9", "--suite", "builtin", "--out", str(path), "--quiet", env=env)
            out[label] = {"seconds": round(time.monotonic() - t0, 1), "exit": p.returncode,
                          "summary": p.stderr.strip().splitlines()[-1]}
            print(label, out[label], flush=True)
        out["bars"] = {"empty cache <= 600 s": out["empty cache"]["seconds"] <= 600,
                       "installed <= 180 s": out["installed"]["seconds"] <= 180}
        return out
    finally:
        shutil.rmtree(empty, ignore_errors=True)


def part_aa() -> dict:
    runs: list[dict[str, Any]] = []
    for i in range(3):
        path = OUT / f"eng-aa-{i}.json"
        chbench("upgrade", "26.9", "26.9", "--out", str(path), "--quiet")
        doc = json.loads(path.read_text())
        v = verdicts(path)
        runs.append({"verdicts": v, "flagged": sum(x in FLAG for x in v),
                     "answers_equal": sum(a["equal"] is True for a in doc["checks"]["answers"].values()),
                     "answers": len(doc["checks"]["answers"])})
        print(runs[-1], flush=True)
    flagged = sum(r["flagged"] for r in runs)
    equal = all(r["answers_equal"] == r["answers"] for r in runs)
    return {"runs": runs, "flagged": flagged, "of": sum(len(r["verdicts"]) for r in runs),
            "bars": {"flagged <= 1 of 30": flagged <= 1, "answers all equal": equal}}


def _samples(doc: dict, side: str, query: str | None = None) -> list[dict]:
    return [s for q in doc["queries"] if query is None or q["name"] == query for s in q["samples"]
            if s["target"] == side and not s["warmup"] and not s.get("error")]


def part_overhead() -> dict:
    p1 = OUT / "eng-select1.json"
    chbench("run", "--target", "embedded@26.9", "--target", "embedded", "--query", "SELECT 1", "--iterations", "500",
            "--no-calibration", "--out", str(p1), "--quiet")
    doc = json.loads(p1.read_text())
    over = {side: statistics.median(s["client_ms"] - s["server_ms"] for s in _samples(doc, side))
            for side in ("A", "B")}
    p2 = OUT / "eng-suite.json"
    chbench("run", "--target", "embedded@26.9", "--target", "embedded", "--iterations", "15", "--out", str(p2),
            "--quiet")
    doc = json.loads(p2.read_text())
    ratios = {}
    for q in doc["queries"]:
        a = statistics.median(s["client_ms"] for s in _samples(doc, "A", q["name"]))
        b = statistics.median(s["client_ms"] for s in _samples(doc, "B", q["name"]))
        ratios[q["name"]] = round(a / b, 4)
    worst = max(abs(r - 1) for r in ratios.values())
    out = {"select1_client_minus_server_ms": {"worker": round(over["A"], 4), "in_process": round(over["B"], 4)},
           "suite_worker_over_in_process": ratios, "worst": round(worst, 4),
           "bars": {"SELECT 1 overhead <= 0.3 ms": over["A"] <= 0.3, "suite within 3%": worst <= 0.03}}
    print(out, flush=True)
    return out


def part_sens() -> dict:
    path = OUT / "eng-sens.json"
    chbench("run", "--target", "embedded@26.9", "--scale-b", "1.1", "--iterations", "15", "--out", str(path),
            "--quiet")
    v = verdicts(path)
    out = {"verdicts": v, "slower": v.count("slower"), "faster": v.count("faster"),
           "bars": {">= 8 slower, none faster": v.count("slower") >= 8 and v.count("faster") == 0}}
    print(out, flush=True)
    return out


PARTS = {"upgrade": part_upgrade, "aa": part_aa, "overhead": part_overhead, "sens": part_sens}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=",".join(PARTS), help=f"comma-separated parts: {', '.join(PARTS)}")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "engine_bars.json"
    results = json.loads(path.read_text()) if path.exists() else {}
    for name in args.only.split(","):
        print(f"== {name}", flush=True)
        results[name] = PARTS[name]()
        path.write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps({k: v.get("bars") for k, v in results.items()}, indent=1))


if __name__ == "__main__":
    main()
