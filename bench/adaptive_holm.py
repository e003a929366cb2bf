"""Adaptive side-by-side stopping on a quiet machine, where every query changes: does the
rule stop before Holm's correction can pass? (docs/statistics.md, "Adaptive stopping").

    python bench/adaptive_holm.py              # ~10 s
    python bench/adaptive_holm.py --seeds 100 --change 1.1

The noise simulator's side-by-side runs (bench/sim_verdicts.py) with every noise term small
(per-query jitter 0.4%, drift 0.5%, no outliers) and all 10 queries × ``--change``, each
stopped by the runner's own rule, then judged as ``chbench compare`` judges them. Two
rules: ``6 rounds`` (the rule before 2026-12-06: a change was decided at the first
precise interval, 6 rounds at the least) and ``Holm`` (a change is decided only after
enough rounds for the signed-rank test to pass Holm's first step over the run's tests:
9 for ten queries)."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import chbench.stats.stopping as stopping  # noqa: E402
from bench.sim_verdicts import NoiseModel, adaptive_side_by_side  # noqa: E402
from chbench.stats.compare import Options, compare_queries  # noqa: E402
from chbench.stats.paired import rounds_to_show_a_change as holm  # noqa: E402

RULE = "rounds_to_show_a_change"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--change", type=float, default=1.3)
    args = ap.parse_args()
    model = replace(NoiseModel(), jitter=(0.004,), drift_sd=0.005, outlier_rate=0.0)
    for label, rule in (("6 rounds", lambda tests, alpha=0.05: 6), ("Holm", holm)):
        setattr(stopping, RULE, rule)  # the name the runner's rule calls
        verdicts: Counter[str] = Counter()
        rounds: list[int] = []
        for seed in range(args.seeds):
            a, b = adaptive_side_by_side(model, seed, change=args.change, changed=tuple(range(10)))
            verdicts.update(q.verdict for q in compare_queries(list(a), a, b, Options(paired=True)).queries)
            rounds += [len(d.times) for d in a.values()]
        print(f"{label:9} {dict(verdicts)}  rounds per query {sum(rounds) / len(rounds):.1f}")
    setattr(stopping, RULE, holm)


if __name__ == "__main__":
    main()
