"""A process that adds seeded runs to a history store one at a time, printing each run's id
once it is stored — for the tests and bench/history_bars.py (writers at once, kill -9).

    python -m tests.history_writer STORE SEED N
"""

from __future__ import annotations

import sys

from bench.sim_history import SeriesModel, history
from chbench.history.store import open_store


def main(url: str, seed: int, n: int) -> None:
    runs, _ = history(SeriesModel(), seed, runs=n, steps=0, spikes=0, start=1.8e9 + seed * 1e6)
    store = open_store(url)
    for r in runs:
        store.add([r])
        print(r.run_id, flush=True)
    store.close()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
