"""What the scatter limit (stats/compare.py ``SCATTER_LIMIT``) does to separate A/A runs on
the noise simulator: false alarms per query and definite verdicts, with the limit and
without it (the queries' scatter always used), on the same seeds; and how often the
simulated A/A runs scatter beyond it (then each query's spread is guessed).

    python bench/scatter_limit.py --docs 1000        # ~2 min on 2 cores

Every simulated pair is taken as two configurations (the limit applies only then): an A/A
pair whose setting changed nothing. A limit such runs never reach changes nothing there;
what it is for is files whose queries changed by different amounts (docs/statistics.md,
"The between-run allowance").
"""

from __future__ import annotations

import argparse
import math
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _one(args: tuple[str, float, int]) -> dict[str, Any]:
    case, limit, docs = args
    import chbench.stats.compare as cmp
    from bench.sim_verdicts import NoiseModel, false_alarms

    cmp.SCATTER_LIMIT = limit
    used: list[str] = []
    check = cmp._scatter_check

    def counted(*a: Any, **k: Any) -> dict[str, Any]:
        out = check(*a, **k)
        used.append(out["used"])
        return out

    cmp._scatter_check = counted
    # as if the files' configurations differed (a setting that changes nothing): the
    # limit can only apply then
    import bench.sim_verdicts as sim

    plain = sim._options
    sim._options = lambda mode: replace(plain(mode), configuration_changed="simulated")
    model = NoiseModel()
    kw: dict[str, Any] = {"probes": case != "no probes"}
    if case == "bursts in B":
        model = replace(model, burst_rate=0.4)
    res = false_alarms(model, "separate", docs, **kw)
    return {"case": case, "limit": limit, "rate": res["rate"], "flagged": res["flagged"],
            "no_change_share": round(res["no_change_share"], 3), "guessed": used.count("guess"), "of": len(used)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=1000)
    args = ap.parse_args()
    jobs = [(case, limit, args.docs) for case in ("default", "bursts in B", "no probes")
            for limit in (3.0, math.inf)]
    with ProcessPoolExecutor(max_workers=2) as pool:
        for r in pool.map(_one, jobs):
            print(r, flush=True)


if __name__ == "__main__":
    main()
