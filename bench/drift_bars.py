"""Measure issue 12's bars: separate runs on a drifting machine, with the real command line.

    python bench/drift_bars.py                     # everything (~20 min on 2 cores)
    python bench/drift_bars.py --only aa-drift --pairs 2
    python bench/drift_bars.py --reuse             # compare the files already there again

Parts:
  aa-drift   A/A pairs of separate runs of the built-in suite, half on the embedded engine
             and half on the 26.9 server over HTTP; during the second run of every other
             pair a neighbour process keeps one core busy 30% of the time (busy 30 ms of
             every 100 ms). Bar: at most 1 of 80 comparisons slower/faster; every disturbed
             pair reports the machine difference; in the disturbed pairs at least 6 of 10
             queries get a definite verdict rather than `unstable`.
  sens       --scale 1.0 then --scale 1.1, separate runs, compared: >= 8 of 10 slower, or a
             global +10% shift the probes do not explain (interval containing +10%), exit 1.
  sessions   A/A with --sessions 3 per side (--pairs pairs): unstable <= 2 of 10, 0 flagged; and
             +10% rows (--scale 1.1) against the first A of every second pair (power).

Run it on an otherwise idle machine. Writes bench/out/drift_bars.json and a Markdown
summary.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
OUT = REPO / "bench" / "out"
FLAG = ("slower", "faster")
DEFINITE = ("no change", "slower", "faster")

NEIGHBOUR = """
import time
while True:  # busy 30 ms of every 100 ms, on one core
    t = time.monotonic()
    while time.monotonic() - t < 0.030:
        pass
    time.sleep(0.070)
"""


def chbench(*args: str) -> subprocess.CompletedProcess[str]:
    p = subprocess.run([sys.executable, "-m", "chbench", *args], cwd=REPO, capture_output=True, text=True)
    if p.returncode not in (0, 1):
        raise SystemExit(f"chbench {' '.join(args)} failed ({p.returncode}): {p.stderr.strip()}")
    return p


def compare(*args: str) -> tuple[dict, int, str]:
    p = chbench("compare", *args, "--format", "json")
    return json.loads(p.stdout), p.returncode, p.stderr


REUSE = False  # --reuse: compare the files a previous run left, measure nothing again


def run(path: Path, *args: str, neighbour: bool = False) -> None:
    if REUSE and path.exists():
        return
    n = subprocess.Popen([sys.executable, "-c", NEIGHBOUR]) if neighbour else None
    try:
        chbench("run", "--quiet", "--out", str(path), *args)
    finally:
        if n is not None:
            n.kill()
            n.wait()


def _pair_result(doc: dict, code: int, disturbed: bool, target: str) -> dict:
    v = [q["verdict"] for q in doc["queries"]]
    m = doc["summary"]["machine"] or {}
    shift = doc["summary"].get("shift")
    return {"target": target, "disturbed": disturbed, "flagged": sum(x in FLAG for x in v),
            "definite": sum(x in DEFINITE for x in v), "unstable": v.count("unstable"), "exit": code,
            "busier": m.get("busier"), "machine": m.get("description"), "shift": shift and {
                k: shift[k] for k in ("ratio", "ci", "queries_sharing", "explained_by_machine", "finding")},
            "verdicts": v}


def aa_drift(res: dict, pairs: int) -> None:
    from tests.engines import ModernServer

    out = []
    with ModernServer() as server:
        for target in ("embedded", server.http_url):
            for i in range(pairs):
                disturbed = i % 2 == 1
                tag = "emb" if target == "embedded" else "http"
                a, b = OUT / f"drift-{tag}-{i}-a.json", OUT / f"drift-{tag}-{i}-b.json"
                run(a, "--target", target)
                run(b, "--target", target, neighbour=disturbed)
                doc, code, _ = compare(str(a), str(b))
                out.append(_pair_result(doc, code, disturbed, tag))
                print(f"  pair {tag} {i} disturbed={disturbed}: {out[-1]['flagged']} flagged, "
                      f"{out[-1]['definite']} definite, busier={out[-1]['busier']}", file=sys.stderr)
    dist = [p for p in out if p["disturbed"]]
    res["aa_drift"] = {
        "flagged": sum(p["flagged"] for p in out), "of": 10 * len(out),
        "disturbed_reported": sum(p["busier"] == "B" for p in dist), "disturbed": len(dist),
        "disturbed_min_definite": min((p["definite"] for p in dist), default=None),
        "unstable": sum(p["unstable"] for p in out), "pairs": out}


def sens(res: dict) -> None:
    a, b = OUT / "drift-sens-a.json", OUT / "drift-sens-b.json"
    run(a, "--scale", "1.0", "--iterations", "15")
    run(b, "--scale", "1.1", "--iterations", "15")
    doc, code, _ = compare(str(a), str(b))
    v = [q["verdict"] for q in doc["queries"]]
    res["sens"] = {"slower": v.count("slower"), "faster": v.count("faster"), "of": 10, "exit": code,
                   "shift": doc["summary"].get("shift"), "busier": (doc["summary"]["machine"] or {}).get("busier"),
                   "verdicts": v}


def sessions(res: dict, pairs: int = 1) -> None:
    """``pairs`` A/A pairs of --sessions 3 runs, and for every second pair (the first, the
    third, …) a --scale 1.1 run compared with its A (power)."""
    out: list[dict[str, Any]] = []
    up: list[dict[str, Any]] = []
    for i in range(pairs):
        a, b = OUT / f"drift-sessions-{i}-a.json", OUT / f"drift-sessions-{i}-b.json"
        run(a, "--sessions", "3")
        run(b, "--sessions", "3")
        doc, code, _ = compare(str(a), "--vs", str(b))
        v = [q["verdict"] for q in doc["queries"]]
        shift, levels = doc["summary"].get("shift") or {}, doc["summary"].get("session_levels") or {}
        out.append({"flagged": sum(x in FLAG for x in v), "unstable": v.count("unstable"), "exit": code,
                    "from": sorted({q.get("between_run_from") for q in doc["queries"]} - {None}),
                    "global_finding": shift.get("finding"), "session_levels": levels,
                    "notes": doc.get("notes"), "verdicts": v})
        print(f"  sessions pair {i}: {out[-1]['flagged']} flagged, {out[-1]['unstable']} unstable, global finding "
              f"{shift.get('finding')}, sessions' levels sd "
              f"{format(levels['sd'], '.1%') if 'sd' in levels else 'not taken out'}", file=sys.stderr)
        if i % 2 == 0:
            c = OUT / f"drift-sessions-{i}-up.json"
            run(c, "--sessions", "3", "--scale", "1.1")
            doc, code, _ = compare(str(a), "--vs", str(c))
            v = [q["verdict"] for q in doc["queries"]]
            up.append({"slower": v.count("slower"), "faster": v.count("faster"), "exit": code, "verdicts": v})
    res["sessions"] = {"flagged": sum(p["flagged"] for p in out) + sum(1 for p in out if p["global_finding"]),
                       "unstable": [p["unstable"] for p in out],
                       "of": 10 * len(out), "pairs": out, "scaled 1.1": up}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="aa-drift,sens,sessions", help="comma-separated parts")
    ap.add_argument("--pairs", type=int, default=4, help="A/A pairs per target (default 4: 80 comparisons)")
    ap.add_argument("--reuse", action="store_true",
                    help="keep results files already in bench/out (compare again with the current code)")
    args = ap.parse_args()
    global REUSE
    REUSE = args.reuse
    OUT.mkdir(parents=True, exist_ok=True)
    res: dict = {}
    for part in args.only.split(","):
        t = time.monotonic()
        {"aa-drift": lambda r: aa_drift(r, args.pairs), "sens": sens,
         "sessions": lambda r: sessions(r, args.pairs)}[part](res)
        print(f"{part}: done in {time.monotonic() - t:.0f} s", file=sys.stderr)
    (OUT / "drift_bars.json").write_text(json.dumps(res, indent=1) + "\n")
    print("| bar | measured | target |\n|---|---|---|")
    if "aa_drift" in res:
        r = res["aa_drift"]
        print(f"| A/A under drift, flagged | {r['flagged']} of {r['of']} ({r['unstable']} unstable) | ≤ 1 of 80 |")
        print(f"| disturbed pairs reporting B busier | {r['disturbed_reported']} of {r['disturbed']} | all |")
        print(f"| disturbed pairs: fewest definite verdicts | {r['disturbed_min_definite']} of 10 | ≥ 6 |")
    if "sens" in res:
        r = res["sens"]
        s = r["shift"]
        shift = f"; shift {s['ratio']:.3f} [{s['ci'][0]:.3f}, {s['ci'][1]:.3f}] finding {s['finding']}" if s else ""
        print(f"| +10% separate runs | {r['slower']} of 10 slower, exit {r['exit']}{shift} | ≥ 8, exit 1 |")
    if "sessions" in res:
        r = res["sessions"]
        print(f"| A/A --sessions 3 per side | {r['unstable']} unstable per pair, {r['flagged']} flagged (global "
              "findings count) | ≤ 2, 0 |")
        print(f"| +10% rows, --sessions 3 | {[u['slower'] for u in r['scaled 1.1']]} slower | (power) |")


if __name__ == "__main__":
    main()
