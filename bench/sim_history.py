"""Seeded histories for the change-point bars and tests (bench/history_bars.py): runs of a
suite whose noise was fitted to real runs of this machine, with known steps and spikes.

A run's log sample of query q: its level, plus the run's machine factor (shared by every
query: an AR(1) process over runs), plus the query's own offset in that run, plus each
sample's jitter. ``fit`` estimates the four from a list of real runs (``HistoryRun``s of
one suite on one machine, no change among them); ``SeriesModel()``'s defaults were fitted
to 16 runs of the built-in suite on the embedded engine (2026-12-02, 10 iterations each).

Pure numbers: no store, no engine.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from chbench.history.record import HistoryRun, QueryRecord, query_key


@dataclass(frozen=True)
class SeriesModel:
    base_ms: tuple[float, ...] = (127.0, 124.0, 196.0, 95.0, 170.0, 209.0, 97.0, 140.0, 150.0, 110.0)
    own_sd: tuple[float, ...] = (0.02,) * 10  # a query's own offset from run to run (log sd)
    jitter: tuple[float, ...] = (0.05,) * 10  # a sample's sd within a run (log)
    machine_sd: float = 0.08  # the run's factor (log sd), shared by every query
    machine_phi: float = 0.5  # its persistence from one run to the next
    samples: int = 10
    hours_between: float = 24.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Truth:
    steps: list[tuple[int, int, float]] = field(default_factory=list)  # (query, first run, ratio)
    spikes: list[tuple[int, int, float]] = field(default_factory=list)  # (query, run, ratio)


def fit(runs: list[HistoryRun]) -> SeriesModel:
    """The model's numbers from real runs of one suite (no change among them)."""
    names = [q.name for q in runs[0].queries]
    med = np.array([[math.log(q.median_ms or 1.0) for q in r.queries] for r in runs]).T  # queries × runs
    level = np.median(med, axis=1, keepdims=True)
    factor = np.median(med - level, axis=0)
    resid = med - level - factor[None, :]
    jit = []
    for i in range(len(names)):
        per = [np.log(r.queries[i].client_ms) - math.log(r.queries[i].median_ms or 1.0) for r in runs]
        jit.append(1.4826 * float(np.median(np.abs(np.concatenate(per)))))
    n = int(np.median([len(r.queries[0].client_ms) for r in runs]))
    med_se = [1.2533 * j / math.sqrt(n) for j in jit]
    own = [math.sqrt(max(0.0, float(np.var(resid[i], ddof=1)) - med_se[i] ** 2)) for i in range(len(names))]
    phi = float(np.corrcoef(factor[:-1], factor[1:])[0, 1]) if len(runs) > 3 else 0.0
    return SeriesModel(base_ms=tuple(float(math.exp(v)) for v in level[:, 0]), own_sd=tuple(own), jitter=tuple(jit),
                       machine_sd=float(np.std(factor, ddof=1)), machine_phi=max(0.0, min(0.95, phi)), samples=n)


def history(model: SeriesModel, seed: int, runs: int = 200, steps: int = 5, spikes: int = 2,
            step_range: tuple[float, float] = (0.03, 0.10), spike_range: tuple[float, float] = (0.2, 0.5),
            start: float = 1.8e9) -> tuple[list[HistoryRun], Truth]:
    """``runs`` runs of the model's suite with ``steps`` lasting steps (each on one query, a
    random size in ``step_range``, either direction, at least 10 runs from the ends and
    from another step of its query) and ``spikes`` one-run spikes (slower by ``spike_range``,
    away from every step)."""
    rng = np.random.default_rng(seed)
    nq = len(model.base_ms)
    truth = Truth()
    level = np.log(np.array(model.base_ms))
    shift = np.zeros((nq, runs))
    taken: dict[int, list[int]] = {}
    while len(truth.steps) < steps:
        q, r = int(rng.integers(nq)), int(rng.integers(20, runs - 10))
        if any(abs(r - o) < 10 for o in taken.get(q, [])):
            continue
        size = float(rng.uniform(*step_range)) * (1 if rng.random() < 0.5 else -1)
        taken.setdefault(q, []).append(r)
        shift[q, r:] += math.log1p(size)
        truth.steps.append((q, r, math.exp(math.log1p(size))))
    while len(truth.spikes) < spikes:
        q, r = int(rng.integers(nq)), int(rng.integers(10, runs - 5))
        if any(abs(r - o) < 4 for o in taken.get(q, [])):
            continue
        size = float(rng.uniform(*spike_range))
        taken.setdefault(q, []).append(r)
        shift[q, r] += math.log1p(size)
        truth.spikes.append((q, r, 1 + size))
    innov = model.machine_sd * math.sqrt(1 - model.machine_phi ** 2)
    m = float(rng.normal(0, model.machine_sd))
    out = []
    keys = [query_key(f"SELECT {i}", None) for i in range(nq)]
    for r in range(runs):
        m = model.machine_phi * m + float(rng.normal(0, innov))
        queries = []
        for q in range(nq):
            centre = level[q] + m + shift[q, r] + float(rng.normal(0, model.own_sd[q % len(model.own_sd)]))
            x = centre + rng.normal(0, model.jitter[q % len(model.jitter)], model.samples)
            queries.append(QueryRecord(name=f"q{q}", key=keys[q], client_ms=[float(v) for v in np.exp(x)],
                                       sql=f"SELECT {q}"))
        out.append(HistoryRun(run_id=f"s{seed}-r{r:04d}", started_at=start + r * model.hours_between * 3600,
                              labels={"seed": str(seed)}, host={"hostname": "sim", "cpu_model": "sim", "cpu_count": 2},
                              queries=queries))
    return out, truth
