"""How long ``chbench report --html`` takes to draw its charts, on every core against one
(``export/html.py``'s ``draw_all``), side by side: each round renders the same report
once each way, in a fresh process, in alternating order.

    python bench/report_time.py A.json B.json [--rounds 5]     # ~2 min for two 10-query runs

Without files it makes two runs of the built-in suite first (embedded engine, scale 0.1,
10 iterations: 61 charts). Prints each way's median render time, the per-round ratio
(parallel / serial) with its range, and writes bench/out/report_time.json.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "bench" / "out"

# one render in a fresh process: the report built (untimed), then the HTML rendered (timed)
SNIPPET = """
import sys, time
from chbench.export import get_exporter, html
from chbench.report.build import build_report
report = build_report(sys.argv[2:])
if sys.argv[1] == "serial":
    html.PARALLEL_FROM = 10 ** 9
charts = sum(1 for s in report.sections for _ in html._charts(s.blocks))
t = time.perf_counter()
get_exporter("html").render(report)
print(time.perf_counter() - t, charts)
"""


def render(way: str, files: list[str]) -> tuple[float, int]:
    p = subprocess.run([sys.executable, "-c", SNIPPET, way, *files], cwd=REPO, capture_output=True, text=True,
                       check=True)
    seconds, charts = p.stdout.split()
    return float(seconds), int(charts)


def main() -> None:
    args = sys.argv[1:]
    rounds = 5
    if "--rounds" in args:
        i = args.index("--rounds")
        rounds = int(args[i + 1])
        del args[i:i + 2]
    files = args
    if not files:
        tmp = Path(tempfile.mkdtemp(prefix="chbench-report-time-"))
        files = [str(tmp / "a.json"), str(tmp / "b.json")]
        for f in files:
            subprocess.run([sys.executable, "-m", "chbench", "run", "--iterations", "10", "--scale", "0.1", "--quiet",
                            "--out", f], cwd=REPO, check=True, capture_output=True)
    times: dict[str, list[float]] = {"serial": [], "parallel": []}
    charts = 0
    for r in range(rounds):
        for way in (("serial", "parallel") if r % 2 == 0 else ("parallel", "serial")):
            seconds, charts = render(way, files)
            times[way].append(seconds)
    ratios = [p / s for p, s in zip(times["parallel"], times["serial"], strict=True)]
    medians = {k: statistics.median(v) for k, v in times.items()}
    out = {"files": files, "charts": charts, "rounds": rounds, "seconds": times, "median_s": medians,
           "ratio_median": statistics.median(ratios), "ratio_range": [min(ratios), max(ratios)]}
    print(f"{charts} charts: serial {medians['serial']:.2f} s, parallel {medians['parallel']:.2f} s "
          f"(medians of {rounds}); parallel/serial {statistics.median(ratios):.2f} per round "
          f"({min(ratios):.2f}-{max(ratios):.2f})")
    OUT.mkdir(exist_ok=True)
    (OUT / "report_time.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
