"""How much slower does a neighbour make a query, by the share of the CPUs it takes?

    python bench/neighbour_bound.py                 # ~4 min
    python bench/neighbour_bound.py --reuse         # the runs already in bench/out/neighbour

stats/machine.py lets other processes taking a share s of the CPUs explain a slowdown up
to 1 / (1 - 3s) (never less than +50%), measured at one share only (0.20, 2026-12-01). This
measures more: quiet runs of the built-in suite (A), then runs with a neighbour of
``procs`` processes each busy ``duty`` of every 750 ms (B), two per level, with
``--quiet-threshold 100`` so that no round is set aside (the raw effect). Each B query's
median against the median of the A runs' medians; the share is what the probes read
(others_cores / cpus, B's median reading minus A's). Prints per level the share, the
median and largest query ratio, and both bounds. Writes bench/out/neighbour_bound.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "bench" / "out"
WORK = OUT / "neighbour"
RUN = ["--iterations", "8", "--scale", "0.3", "--quiet-threshold", "100", "--quiet"]
LEVELS = [(1, 0.4), (1, 0.6), (1, 0.8), (1, 1.0), (2, 0.6)]  # (processes, duty): share ~ procs * duty / 2
NEIGHBOUR = """
import sys, time
duty = float(sys.argv[1])
while True:
    t = time.monotonic()
    while time.monotonic() - t < 0.750 * duty:
        pass
    if duty < 1:
        time.sleep(0.750 * (1 - duty))
"""


def run(path: Path, procs: int = 0, duty: float = 0.0) -> None:
    ns = [subprocess.Popen([sys.executable, "-c", NEIGHBOUR, str(duty)]) for _ in range(procs)]
    try:
        subprocess.run([sys.executable, "-m", "chbench", "run", *RUN, "--out", str(path)], cwd=REPO, check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    finally:
        for n in ns:
            n.kill()
            n.wait()


def medians(path: Path) -> tuple[dict[str, float], float]:
    doc = json.loads(path.read_text())
    q = {x["name"]: statistics.median(s["client_ms"] for s in x["samples"] if not s.get("warmup")
                                      and s.get("client_ms"))
         for x in doc["queries"] if x.get("samples")}
    client = doc["machine"].get("client") or []
    share = statistics.median(r["others_cores"] / r["cpus"] for r in client if r.get("cpus") and
                              r.get("others_cores") is not None) if client else float("nan")
    return q, share


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reuse", action="store_true")
    args = ap.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    quiet = [WORK / f"A-{i}.json" for i in range(3)]
    disturbed = {(p, d): [WORK / f"B-{p}x{d}-{i}.json" for i in range(2)] for p, d in LEVELS}
    if not args.reuse:
        for i, f in enumerate(quiet):
            run(f)
            for (p, d), fs in disturbed.items():
                if i < len(fs):
                    run(fs[i], p, d)
    base = [medians(f) for f in quiet]
    a = {n: statistics.median(m[0][n] for m in base) for n in base[0][0]}
    a_share = statistics.median(m[1] for m in base)
    rows = []
    print("| neighbour | share (B − A) | median query ratio | largest | 1/(1 − 3s) | 1/(1 − min(2s, 0.5)) |")
    print("|---|---|---|---|---|---|")
    for (p, d), fs in disturbed.items():
        for f in fs:
            b, share = medians(f)
            ratios = sorted(b[n] / a[n] for n in a if n in b)
            s = share - a_share
            bound = 1 / (1 - min(0.9, 3 * s)) if s > 0 else 1.0
            alt = 1 / (1 - min(2 * s, 0.5)) if s > 0 else 1.0
            rows.append({"procs": p, "duty": d, "share": s, "ratios": ratios, "bound": bound, "alt": alt})
            print(f"| {p} × {d:.0%} | {s:.2f} | {statistics.median(ratios) - 1:+.1%} | {ratios[-1] - 1:+.1%} | "
                  f"{bound - 1:+.0%} | {alt - 1:+.0%} |")
    (OUT / "neighbour_bound.json").write_text(json.dumps({"a_share": a_share, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
