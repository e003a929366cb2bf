"""A seeded noise simulator for the comparison statistics (docs/statistics.md, "Measured
on simulated runs").

It makes the samples a run of the built-in suite would give on a noisy machine — each
query's own jitter, a slow drift of the machine that all queries share, an order effect
between the two runs of a side-by-side round, rare outliers, and a neighbour's bursts —
as the ``SideData`` the comparison reads, so thousands of A/A comparisons (false alarms)
and of known changes (power) take seconds instead of days. ``fit`` estimates the model's
numbers from real runs (a query × round table of one side's times), so the simulated
noise is the noise this machine showed; ``NoiseModel()``'s defaults were fitted that way
(bench/verdict_bars.py, files of 2026-12-01).

Pure numbers: no files, no engine. The time of a run is its position in the run
sequence (one unit per query execution); drift is an AR(1) process over it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from chbench.stats.compare import BETWEEN_RUN_FACTOR, Options, SideData, compare_queries
from chbench.stats.rounds import take_out
from chbench.stats.stopping import TimePool, look, should_stop

# medians of the built-in suite's queries (ms) on the 2-core machine of 2026-12-01
BUILTIN_MS = (472.0, 475.0, 617.0, 395.0, 330.0, 782.0, 392.0, 513.0, 439.0, 552.0)


@dataclass(frozen=True)
class NoiseModel:
    """How one run's samples scatter (log scale unless said otherwise). The defaults were
    fitted to the runs of 2026-12-01 (``bench/verdict_bars.py --only fit``): per-query
    jitter as in the noisier A/A side-by-side file (1–10%), round factors spreading ~4%
    with little persistence from round to round (separate A/A runs: correlation 0–0.84),
    outliers in ~5% of runs (3–13% seen), an order effect within ±0.5%, a run-level
    shift between separate runs of ~1%."""

    base_ms: tuple[float, ...] = BUILTIN_MS
    # each query's own sd per run (cycled over the queries)
    jitter: tuple[float, ...] = (0.038, 0.032, 0.096, 0.038, 0.054, 0.013, 0.023, 0.036, 0.027, 0.040)
    drift_sd: float = 0.04  # sd of the machine's drift within a run, shared by all queries
    drift_phi: float = 0.9  # its persistence from one execution to the next (~0.1–0.35 per round)
    order: float = 0.003  # the second run of a round, relative to the first (side by side)
    outlier_rate: float = 0.05  # share of runs hit by a stall
    outlier_size: float = 0.5  # up to this much slower (uniform 0.1 … size)
    run_offset: float = 0.005  # separate runs: the whole run's level, shared by its queries (sd)
    # separate runs: each query's own offset in a run (sd), as a multiple of its raw
    # run-to-run spread — a query's median moves between runs in proportion to it
    # (docs/statistics.md, "The between-run allowance")
    between_run: float = 0.5
    burst_rate: float = 0.0  # share of rounds during which a neighbour is busy (separate: B only)
    burst_effect: float = 0.09  # how much slower a burst makes a query, on average …
    burst_uneven: float = 0.06  # … and how unevenly across queries (sd)
    rounds: int = 15

    def jitter_of(self, q: int) -> float:
        return self.jitter[q % len(self.jitter)]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Machine:
    """The shared state as a run goes on: drift and whether a neighbour is busy."""

    model: NoiseModel
    rng: np.random.Generator
    level: float = 0.0
    burst_effects: np.ndarray = field(default_factory=lambda: np.zeros(0))
    seen: list[float] = field(default_factory=list)  # the level at each execution (what a reference sees)

    def __post_init__(self) -> None:
        m = self.model
        self.level = float(self.rng.normal(0, m.drift_sd))  # stationary from the start
        self.burst_effects = self.rng.normal(m.burst_effect, m.burst_uneven, len(m.base_ms))

    def step(self) -> float:
        m = self.model
        innov = m.drift_sd * math.sqrt(max(0.0, 1 - m.drift_phi ** 2))
        self.level = m.drift_phi * self.level + float(self.rng.normal(0, innov))
        self.seen.append(self.level)
        return self.level

    def sample(self, q: int, busy: bool, offset: float = 0.0) -> float:
        m = self.model
        x = self.step() + offset + float(self.rng.normal(0, m.jitter_of(q)))
        if busy:
            x += max(0.0, float(self.burst_effects[q]))
        t = m.base_ms[q] * math.exp(x)
        if self.rng.random() < m.outlier_rate:
            t *= 1 + float(self.rng.uniform(0.1, m.outlier_size))
        return t


def side_by_side(model: NoiseModel, seed: int, change: float = 1.0,
                 changed: tuple[int, ...] | None = None) -> tuple[dict[str, SideData], dict[str, SideData]]:
    """One side-by-side run: rounds of q1 … qn, A B in even rounds and B A in odd ones.
    ``change`` multiplies B's times of the ``changed`` queries (all when None)."""
    rng = np.random.default_rng(seed)
    mach = _Machine(model, rng)
    a, b, hit = _sides(model, changed)
    for r in range(model.rounds):
        busy = rng.random() < model.burst_rate
        for q in range(len(model.base_ms)):
            _pair_round(mach, q, r, busy, change if q in hit else 1.0, a, b)
    return a, b


def _sides(model: NoiseModel, changed: tuple[int, ...] | None) -> tuple[dict[str, SideData], dict[str, SideData],
                                                                        set[int]]:
    n = len(model.base_ms)
    return ({f"q{q}": SideData() for q in range(n)}, {f"q{q}": SideData() for q in range(n)},
            set(range(n) if changed is None else changed))


def _pair_round(mach: _Machine, q: int, r: int, busy: bool, change: float, a: dict[str, SideData],
                b: dict[str, SideData]) -> float:
    """Query q's two runs of round r (A first in even rounds), B's × ``change``; their time (s)."""
    took = 0.0
    for pos, side in enumerate(("A", "B") if r % 2 == 0 else ("B", "A")):
        t = mach.sample(q, busy, mach.model.order if pos == 1 else 0.0) * (change if side == "B" else 1.0)
        d = (a if side == "A" else b)[f"q{q}"]
        d.times.append(t)
        d.client_times.append(t)
        d.keys.append((0, r))
        took += t / 1000.0
    return took


def adaptive_side_by_side(model: NoiseModel, seed: int, change: float = 1.0, changed: tuple[int, ...] | None = None,
                          threshold: float | None = 0.05, precision: float = 0.02, budget_s: float = 20.0,
                          min_runs: int = 5, max_runs: int = 1000) -> tuple[dict[str, SideData], dict[str, SideData]]:
    """A side-by-side run as the adaptive runner makes it: rounds of every query not yet
    stopped, each query stopped by the runner's own rule (stats/stopping.py) after each
    round, its time the simulated times; ``threshold=None``: the rule before it (precise
    within ±``precision``, or the budget)."""
    rng = np.random.default_rng(seed)
    mach = _Machine(model, rng)
    a, b, hit = _sides(model, changed)
    pool = TimePool(budget_s)
    spent = [0.0] * len(model.base_ms)
    pending = list(range(len(model.base_ms)))
    r = 0
    while pending:
        busy = rng.random() < model.burst_rate
        for q in pending:
            spent[q] += _pair_round(mach, q, r, busy, change if q in hit else 1.0, a, b)
        still = []
        for q in pending:
            ta, tb = np.array(a[f"q{q}"].times), np.array(b[f"q{q}"].times)
            runs = len(ta)
            now = look(np.log(tb) - np.log(ta), precision, threshold, len(model.base_ms))
            if not should_stop(now, pool, f"q{q}", spent[q], runs, runs, runs, min_runs, max_runs):
                still.append(q)
        pending = still
        r += 1
    return a, b


def one_run(model: NoiseModel, rng: np.random.Generator, offsets: np.ndarray, burst_rate: float,
            factor: np.ndarray) -> tuple[dict[str, SideData], float]:
    """One run of its own (a side of a separate-runs comparison), and the machine's mean
    level during it (log: drift plus the run's own level, what a reference task sees)."""
    mach = _Machine(model, rng)
    n = len(model.base_ms)
    level = float(rng.normal(0, model.run_offset))
    out = {f"q{q}": SideData() for q in range(n)}
    for r in range(model.rounds):
        busy = rng.random() < burst_rate
        for q in range(n):
            t = mach.sample(q, busy, float(offsets[q]) + level) * float(factor[q])
            d = out[f"q{q}"]
            d.times.append(t)
            d.client_times.append(t)
            d.keys.append((0, r))
    return out, level + float(np.mean(mach.seen))


def _sessions(model: NoiseModel, rng: np.random.Generator, own: np.ndarray, burst_rate: float, factor: np.ndarray,
              sessions: int) -> tuple[dict[str, SideData], float]:
    """One side of separate runs: ``sessions`` runs of its own, kept apart as a results
    file of ``run --sessions N`` keeps them, and the machine's mean level over them."""
    runs = [one_run(model, rng, rng.normal(0, own), burst_rate, factor) for _ in range(sessions)]
    if sessions == 1:
        return runs[0]
    out: dict[str, SideData] = {}
    for name in runs[0][0]:
        d = out[name] = SideData()
        for k, (run, _) in enumerate(runs):
            d.times += run[name].times
            d.client_times += run[name].client_times
            d.keys += [(k, r) for _, r in run[name].keys]
            d.sessions.append(list(run[name].times))
    return out, float(np.mean([level for _, level in runs]))


def separate(model: NoiseModel, seed: int, change: float = 1.0, changed: tuple[int, ...] | None = None,
             sessions: int = 1) -> tuple[dict[str, SideData], dict[str, SideData], dict[str, Any]]:
    """Two runs minutes apart (``sessions`` per side): each with its own per-query offsets
    (``between_run``), its own level (``run_offset``) and its own drift; bursts, when the
    model has them, in B only. Returns both sides and what the machine probes would
    report: a neighbour during B shows as other processes' CPU; the machine's level as
    the reference task (timed in its own process: ±1% per run, material from 3%,
    stats/machine.py)."""
    rng = np.random.default_rng(seed)
    n = len(model.base_ms)
    factor = np.ones(n)
    for q in range(n) if changed is None else changed:
        factor[q] = change
    # measured (2026-12-01, two clean A/A pairs): a query's median moved between runs by
    # 0.6–1.2 × its raw run-to-run spread — its jitter and the machine's round-to-round
    # noise together, which is also what compare's allowance is computed on
    raw = np.array([math.hypot(model.jitter_of(q), model.drift_sd) for q in range(n)])
    own = model.between_run * raw
    a, level_a = _sessions(model, rng, own, 0.0, np.ones(n), sessions)
    b, level_b = _sessions(model, rng, own, model.burst_rate, factor, sessions)
    ref = math.exp(level_b - level_a + float(rng.normal(0, 0.01)))
    votes = ["B" if ref > 1 else "A"] if abs(ref - 1) >= 0.03 else []
    votes += ["B"] if model.burst_rate > 0.1 else []
    busier = votes[0] if votes and len(set(votes)) == 1 else None
    machine: dict[str, Any] = {"probes": {"a": {}, "b": {}}, "busier": busier, "material": bool(votes),
                               "differences": [f"reference task {ref - 1:+.1%} in B (simulated)"] if votes else []}
    return a, b, machine


def _options(mode: str) -> Options:
    if mode == "side-by-side":
        return Options(paired=True)
    return Options(between_run=BETWEEN_RUN_FACTOR, measure_between=True)  # compare's default for two separate files


def verdicts(model: NoiseModel, mode: str, seed: int, change: float = 1.0,
             changed: tuple[int, ...] | None = None, probes: bool = True, sessions: int = 1) -> list[str]:
    """One simulated comparison's verdicts, as ``chbench compare`` decides them;
    ``probes=False``: separate runs whose machine probes saw nothing; ``sessions``: per
    side of separate runs (``run --sessions N``)."""
    machine: dict[str, Any] | None = None
    if mode == "side-by-side":
        a, b = side_by_side(model, seed, change, changed)
    else:
        a, b, machine = separate(model, seed, change, changed, sessions)
        take_out(a)  # as compare treats a separate run (compare/sides.py)
        take_out(b)
        if not probes:
            machine = {"probes": {"a": {}, "b": {}}, "busier": None, "material": False, "differences": []}
    doc = compare_queries(list(a), a, b, _options(mode), machine)
    return [r.verdict for r in doc.queries]


def false_alarms(model: NoiseModel, mode: str, docs: int, seed: int = 1, probes: bool = True,
                 sessions: int = 1) -> dict[str, Any]:
    """``docs`` A/A comparisons: the share of queries flagged slower/faster (per query
    and per comparison) and of definite verdicts."""
    flagged = definite = total = docs_flagged = 0
    for i in range(docs):
        v = verdicts(model, mode, seed * 1_000_003 + i, probes=probes, sessions=sessions)
        f = sum(x in ("slower", "faster") for x in v)
        flagged += f
        docs_flagged += f > 0
        definite += sum(x == "no change" for x in v)
        total += len(v)
    return {"comparisons": total, "flagged": flagged, "rate": flagged / total, "docs": docs,
            "docs_with_a_false_alarm": docs_flagged, "no_change_share": definite / total}


def power(model: NoiseModel, mode: str, docs: int, change: float, seed: int = 2, sessions: int = 1,
          ) -> dict[str, Any]:
    """Share of queries called slower (beyond 1: faster) when B is ``change`` × A for
    three of the ten queries (the rest unchanged, as a real change usually is)."""
    hit = wrong = total = 0
    changed = (0, 3, 6)
    want = "slower" if change > 1 else "faster"
    for i in range(docs):
        v = verdicts(model, mode, seed * 1_000_003 + i, change, changed, sessions=sessions)
        hit += sum(v[q] == want for q in changed)
        wrong += sum(x in ("slower", "faster") for q, x in enumerate(v) if q not in changed)
        total += len(changed)
    return {"changed_queries": total, "detected": hit, "power": hit / total, "false_alarms_elsewhere": wrong}


def fit(table: np.ndarray, pairs: np.ndarray | None = None) -> NoiseModel:
    """The model's numbers from one side's times (queries × rounds, ms; NaN where a run
    is missing) and, optionally, a side-by-side run's per-round log ratios (queries ×
    rounds, with A first in even rounds) for the order effect.

    log t = query + round + residual: the round effects (medians over queries) give the
    shared drift (their sd and lag-1 autocorrelation, per execution), the residuals
    each query's jitter (1.4826 × MAD) and the outlier rate (beyond 4 robust sds,
    upwards)."""
    x = np.log(np.asarray(table, dtype=float))
    q_eff = np.nanmedian(x, axis=1, keepdims=True)
    dev = x - q_eff
    r_eff = np.nanmedian(dev, axis=0)
    resid = dev - r_eff[None, :]
    sd = 1.4826 * np.nanmedian(np.abs(resid), axis=1)
    jitter = tuple(float(max(v, 1e-4)) for v in sd)
    n_q, n_r = x.shape
    drift_sd = float(np.std(r_eff)) if n_r > 2 else 0.0
    phi_round = float(np.corrcoef(r_eff[:-1], r_eff[1:])[0, 1]) if n_r > 3 and drift_sd > 0 else 0.0
    # a round is n_q executions (2 n_q side by side): persistence per execution
    phi = min(0.9999, max(0.0, phi_round)) ** (1.0 / max(1, n_q)) if phi_round > 0 else 0.0
    big = resid > 4 * sd[:, None]
    outliers = float(np.nansum(big) / max(1, np.sum(~np.isnan(resid))))
    order = 0.0
    if pairs is not None:
        p = np.asarray(pairs, dtype=float)
        even, odd = p[:, 0::2], p[:, 1::2]
        # B second in even rounds: log(B/A) = change + order; in odd ones change - order
        order = float((np.nanmedian(even) - np.nanmedian(odd)) / 2)
    base = tuple(float(v) for v in np.exp(q_eff[:, 0]))
    return replace(NoiseModel(), base_ms=base, jitter=jitter, drift_sd=drift_sd, drift_phi=phi, order=order,
                   outlier_rate=outliers, rounds=n_r)
