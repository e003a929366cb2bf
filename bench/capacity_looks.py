"""How often a capacity step's looks decide wrongly (issue 28), by simulation: the real
``_Looks`` of ``chbench/load/capacity.py`` fed seeded synthetic steps tick by tick.

    python bench/capacity_looks.py                 # ~5 s
    python bench/capacity_looks.py --steps 2000
    python bench/capacity_looks.py --bursts 0.05   # errors only in 5% of the seconds

An ``errors<=0.1%`` step at 100 QPS (planned length 40.6 s: 3,688 requests × 1.1), errors
independent with a true rate of 0.05%, 0.07%, 0.1%, 0.13% and 0.2%; the looks as the
search makes them (early: 99.9% from 50 requests and 5 s, each time the requests grew by a
quarter; full: 95% at 1x, 2x, 3x the planned length, and on to 6x while every estimate
lies within 0.6 of its limit; an undecided step leaning beyond the limit ends at a full
look). Reported per true rate: the share of steps that hold, break, stay
undecided, and the median seconds to the decision. A false break is a break below the
limit; a false hold, a hold above it. With ``--bursts B`` the errors cluster as refusals
and slow answers do on a busy machine (``bench/capacity_dispersion.py``): each second is
a burst with probability B and only bursts fail, at the true rate / B (B 0.05: dispersion
~2.9 at 100 QPS and 0.1%); ``--no-dispersion`` judges those steps as if the requests were
independent (the looks before the dispersion was taken into account), for the
comparison. Writes bench/out/capacity_looks[_bursts_B][_independent].json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
OUT = REPO / "bench" / "out"

from chbench.load.capacity import LEANING_EXTENSIONS, Budget, CapacityStep, _Looks, parse_slo, samples_to_decide  # noqa: E402
from chbench.load.recorder import Stats  # noqa: E402

RATE = 100.0
TICK_S = 0.2


class _Search:
    def __init__(self, slos: list[Any]) -> None:
        self.slos: list[Any] = slos
        self.steps: list[Any] = []

    def on_progress(self, p: dict[str, Any]) -> None:
        pass


def one_step(p: float, rng: np.random.Generator, slos: list[Any], hold_s: float, bursts: float = 0.0,
             use_dispersion: bool = True) -> tuple[str, float]:
    looks = _Looks(_Search(slos), RATE, hold_s)  # type: ignore[arg-type]
    st = Stats()
    totals = {(0, 0): st}
    t = 0.0
    per_tick = int(RATE * TICK_S)
    ticks_per_s = round(1 / TICK_S)
    second = Stats()
    p_now = p
    tick = 0
    while t < hold_s * (1 + LEANING_EXTENSIONS):
        if bursts and tick % ticks_per_s == 0:  # a new second: a burst or not
            p_now = min(1.0, p / bursts) if rng.random() < bursts else 0.0
        tick += 1
        t += TICK_S
        errors = int(rng.binomial(per_tick, p_now))
        for s in (st, second):
            s.errors += errors
            s.queries += per_tick - errors
        n = st.queries + st.errors
        if looks.decided(totals, {"due": n, "started": n, "late": 0}, t):
            return looks.verdict, t
        if tick % ticks_per_s == 0:  # the level's interval, as run_level reports it every second
            if use_dispersion:
                looks.interval(0, {}, {0: second}, 1.0, {0: st}, t)
            second = Stats()
    final = looks.final(CapacityStep(RATE, st, t, n, n, 0, intervals=looks.intervals))
    return ("undecided" if any(j["verdict"] != "holds" for j in final) and
            not any(j["verdict"] == "breaks" for j in final) else
            "breaks" if any(j["verdict"] == "breaks" for j in final) else "holds"), t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--bursts", type=float, default=0.0, help="share of the seconds in which errors occur")
    ap.add_argument("--no-dispersion", action="store_true", help="judge as if the requests were independent")
    args = ap.parse_args()
    slos = [parse_slo("errors<=0.1%")]
    budget = Budget([(s, samples_to_decide(s)) for s in slos], 600.0, 12.0, 64)
    hold_s = budget.hold_seconds(RATE, 10.0)
    rng = np.random.default_rng(28)
    res: dict[str, Any] = {"rate_qps": RATE, "hold_s": round(hold_s, 1), "steps": args.steps, "bursts": args.bursts,
                           "dispersion_used": not args.no_dispersion, "cases": {}}
    for p in (0.0005, 0.0007, 0.001, 0.0013, 0.002):
        out = [one_step(p, rng, slos, hold_s, args.bursts, not args.no_dispersion) for _ in range(args.steps)]
        row = {v: round(sum(1 for x, _ in out if x == v) / len(out), 4) for v in ("holds", "breaks", "undecided")}
        row["median_s"] = round(statistics.median(t for _, t in out), 1)
        res["cases"][f"{p:.2%}"] = row
        print(f"true error rate {p:.2%}: {json.dumps(row)}", flush=True)
    OUT.mkdir(exist_ok=True)
    name = "capacity_looks" + (f"_bursts_{args.bursts:g}" if args.bursts else "") + (
        "_independent" if args.no_dispersion else "")
    (OUT / f"{name}.json").write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
