"""What fitting each query's sensitivity to the machine's factor costs on seeded histories
(docs/history.md, "The machine's factor"): the same 20 seeds, with and without it, at a
fixed noise model near the one fitted here on 2026-12-02 and at a quarter of it.
``--without harder``: the same for the rule that a query's step next to the machine's,
not shown beyond it, is a note (``check._harder_hit``).

    python bench/history_sensitivity.py            # ~8 min on 2 cores
    python bench/history_sensitivity.py --seeds 5
    python bench/history_sensitivity.py --without harder

Scored as bench/history_bars.py scores chbench (a check after every run from the 8th,
what it reported remembered). Prints one line per mode and noise level.
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench import history_bars as hb  # noqa: E402
from bench.sim_history import SeriesModel, history  # noqa: E402

# near the fit of 2026-12-02 (docs/measured.md): own noise 1.9–9% per query, factor sd 7.9%, lag-1 0.76
MODEL = SeriesModel(own_sd=(0.019, 0.03, 0.025, 0.05, 0.02, 0.09, 0.03, 0.04, 0.022, 0.06), jitter=(0.05,) * 10,
                    machine_sd=0.079, machine_phi=0.76)


def _one(args: tuple[str, float, int, str]) -> dict[str, Any]:
    mode, k, seed, what = args
    if mode == "without" and what == "sensitivities":
        from chbench.history.series import SeriesTable

        SeriesTable.fit_sensitivities = lambda self, z=0.0: None  # type: ignore[method-assign]
    elif mode == "without":
        from chbench.history import check

        check._harder_hit = lambda changes, machine, table, notes: changes
    m = replace(MODEL, own_sd=tuple(x * k for x in MODEL.own_sd), jitter=tuple(x * k for x in MODEL.jitter),
                machine_sd=MODEL.machine_sd * k)
    runs, truth = history(m, seed)
    return {"seed": seed, "chbench": hb._score(hb._ours(runs), truth)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--without", choices=("sensitivities", "harder"), default="sensitivities")
    args = ap.parse_args()
    for k in (1.0, 0.25):
        for mode in ("without", "with"):
            with ProcessPoolExecutor(max_workers=2) as pool:
                per_seed = list(pool.map(_one, [(mode, k, s, args.without) for s in range(1, args.seeds + 1)]))
            print(f"{mode} {args.without}, noise x{k:g}: {json.dumps(hb._table(per_seed)['chbench'])}", flush=True)


if __name__ == "__main__":
    main()
