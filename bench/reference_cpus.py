"""Why the reference task reads two levels on an idle VM: each CPU's speed, apart.

    python bench/reference_cpus.py              # 40 s
    python bench/reference_cpus.py --seconds 120

The reference task (chbench/machine/reference.py) runs in a helper process the scheduler
places on any CPU. This times its interpreter loop pinned to each CPU in turn, every
0.1 s, and prints each CPU's median per window and how the CPUs' timings correlate.

Seen (2026-12-08, 00:27–00:29 UTC, this 2-vCPU KVM guest, load 0.2): each CPU switched between
~4.6 ms and ~7–8 ms (1.6×) every few seconds, mostly on its own (correlation between the
two CPUs' timings 0.10 over 40 s; −0.14 over the next 30 s, of which the first 25 s both
were slow); unpinned, the reference's medians read 8–15 ms from run to run. A query on
both CPUs feels both; one reading on one CPU sees one.
Writes bench/out/reference_cpus.json.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "out"


def task() -> int:
    x = 1
    for _ in range(60000):
        x = (x * 1103515245 + 12345) & 0xFFFFFFFF
    return x


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=40.0)
    ap.add_argument("--windows", type=int, default=8)
    args = ap.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    ms: dict[int, list[float]] = {c: [] for c in cpus}
    end = time.time() + args.seconds
    while time.time() < end:
        for c in cpus:
            os.sched_setaffinity(0, {c})
            task()  # the first on a CPU after a move runs cold
            t = time.perf_counter()
            task()
            ms[c].append((time.perf_counter() - t) * 1000.0)
        time.sleep(0.1)
    os.sched_setaffinity(0, set(cpus))
    n = min(len(v) for v in ms.values()) // args.windows
    windows = [{c: float(np.median(ms[c][i * n:(i + 1) * n])) for c in cpus} for i in range(args.windows)]
    for i, w in enumerate(windows):
        print(f"window {i}: " + "  ".join(f"cpu{c} {v:.2f} ms" for c, v in w.items()))
    corr = float(np.corrcoef(ms[cpus[0]][:n * args.windows], ms[cpus[1]][:n * args.windows])[0, 1]) \
        if len(cpus) > 1 else None
    print(f"correlation between cpu{cpus[0]} and cpu{cpus[-1]}: {corr:.2f}" if corr is not None else "one CPU")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "reference_cpus.json").write_text(json.dumps(
        {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "windows": windows, "correlation": corr,
         "ms": {str(c): v for c, v in ms.items()}}, indent=1))


if __name__ == "__main__":
    main()
