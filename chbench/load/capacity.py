"""``chbench load --slo``: the highest open-loop rate whose SLO holds, found within a
time budget stated before it starts.

The budget (``Budget``): each SLO needs a number of requests per step before its 95%
interval can lie within its limit (a p99: 368; an error rate of 0.1%: 3,688 without an
error), so a step that holds at rate R lasts at least that many requests / R; the whole
search, its probe included, stops within ``--max-time`` (default 10 min). A short
closed-loop probe (1, 2, 4 … connections) measures what the server answers, and the
steps start just below it (``CapacitySearch``), so the requests are spent near the answer, not
at ``--rate-min``. Each step is an open-loop level at one offered rate (``run_level``,
so it works in one process, with ``--workers`` and through ``--master`` alike) that is
judged while it runs (``_Looks``): it stops as soon as it breaks for certain, or holds.
Requests that were due but never sent count as infinitely slow, so a client that cannot
keep up never makes a rate look good. Errors, or answers beyond a percentile, that come
in bursts make a step's requests worth fewer independent ones: the upper bound of each
SLO's interval (what a hold rests on) is widened by their dispersion second by second
(``CapacityStep.dispersion``, ``stats.quantile.dispersion``, ``_percentile``).

The answer: ``capacity = {"rate", "ci": [rate, first rate not shown to hold], "broken_at",
"slo", "steps", "budget", "probe", "ended_by"}`` — the true capacity lies in ``ci``."""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, replace
from typing import Any

from chbench.errors import UsageError
from chbench.load.config import LoadConfig
from chbench.load.levels import Host, LevelResult, SourceFactory, local_source, run_level
from chbench.load.recorder import Key, Stats, merged
from chbench.observer import Observer
from chbench.stats.histogram import Histogram
from chbench.stats.quantile import CONFIDENCE, dispersion, percentile_interval, rate_interval

MAX_EXTENSIONS = 2  # an undecided step goes on at most this many times its planned length,
LEANING_EXTENSIONS = 5  # or this many while it leans to hold (seen: 69 QPS, 6 of 12,165 refused,
LEAN = 0.6  # errors<=0.1%: undecided at 3x, so 67 QPS was the answer): each estimate within LEAN of its limit
LEANING_CONFIDENCE = 0.98  # those later looks' interval (simulated: holds at the limit 3.9% as before)
PRECISION = 0.05  # bisection stops when the bracket is this narrow (relative)
MAX_STEPS = 24
MAX_TIME_S = 600.0  # --max-time's default: the whole search, its probe included
PROBE_S = 12.0  # the closed-loop probe, at most
PROBE_LEVEL_S = 1.5  # each of its levels
START = 0.9  # the first step: this fraction of what the probe sustained
GROW = 1.25  # while steps hold, the next is this much faster (while they break near the probe's rate, slower)
NEAR = 0.6  # below this fraction of the probe's rate, a breaking step halves the rate
LOOK_FIRST = 50  # the first early look, in requests
EARLY_MIN_S = 5.0  # no early look before: errors come in bursts (a busy second broke a step at 0.55x capacity)
LOOK_GROWTH = 1.25  # the next early look when the step's requests grew by this factor
INTERIM = 0.999  # an early look's confidence: a handful of looks cost < 1% of false breaks
SETTLE_S = 1.0  # a pause before each step
PROGRESS_S = 5.0  # a progress line (and checkpoint) at least this often
STEP_OVERHEAD_S = 2.0  # connecting and stopping a step's lanes
END_MARGIN_S = 6.0  # the budget keeps this for the last step's stop, the tear-down and the last write
_SLO = re.compile(r"^\s*(?:p(\d+(?:\.\d+)?)\s*<=\s*(\d+(?:\.\d+)?)\s*(us|ms|s)"
                  r"|errors\s*<=\s*(\d+(?:\.\d+)?)\s*(%)?)\s*$", re.I)


@dataclass(frozen=True)
class SLO:
    text: str
    percentile: float | None  # p99 -> 99; None: the error rate
    limit: float  # ms, or a fraction of requests

    def to_json(self) -> dict[str, Any]:
        return {"slo": self.text, "percentile": self.percentile,
                "limit_ms" if self.percentile is not None else "limit_fraction": self.limit}


def parse_slo(text: str) -> SLO:
    """``p99<=200ms``, ``p50<=20ms``, ``p99.9<=1s``, ``errors<=0.1%``."""
    m = _SLO.match(text)
    if not m:
        raise UsageError(f"--slo '{text}': not an SLO (give e.g. 'p99<=200ms' or 'errors<=0.1%')")
    if m.group(1):
        p = float(m.group(1))
        if not 0 < p < 100:
            raise UsageError(f"--slo '{text}': the percentile must be between 0 and 100")
        scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[m.group(3).lower()]
        return SLO(text.strip(), p, float(m.group(2)) * scale)
    value = float(m.group(4))
    fraction = value / 100.0 if m.group(5) else value
    if not fraction < 1:  # at 100% every request may fail: no load is too much
        raise UsageError(f"--slo '{text}': an error rate must be below 100% (give e.g. 'errors<=0.1%')")
    return SLO(text.strip(), None, fraction)


def samples_to_decide(slo: SLO, confidence: float = 0.95) -> int:
    """The fewest requests whose interval can lie within the limit at all: a p99's upper
    bound is finite from 368 values on (p99.9: 3,688); an error rate of 0.1% can be shown
    only after 3,688 requests without an error."""
    tail = (1.0 - confidence) / 2
    if slo.percentile is not None:
        return math.ceil(math.log(tail) / math.log(slo.percentile / 100.0))
    if slo.limit <= 0:
        return 1
    return math.ceil(math.log(tail) / math.log1p(-min(slo.limit, 0.999999)))


def judge(slo: SLO, total: Stats, never_sent: int, confidence: float = CONFIDENCE,
          phi: float = 1.0) -> dict[str, Any]:
    """One SLO on one step: its estimate, interval and verdict; ``phi``: the dispersion
    of the requests its interval counts (``CapacityStep.dispersion``; 1: independent)."""
    if slo.percentile is not None:
        est, low, high = _percentile(total.hist, slo.percentile, never_sent, confidence, phi)
    else:
        n = total.queries + total.errors
        est, low, _ = rate_interval(total.errors, n, confidence)
        high = rate_interval(total.errors, n, confidence, phi)[2]  # see _percentile
        if slo.limit <= 0:  # errors<=0: no interval can show a rate of exactly 0; none may occur
            return {"slo": slo.text, "value": est, "ci": [low, high], "verdict": "breaks" if total.errors else "holds",
                    "dispersion": round(phi, 2)}
    verdict = "holds" if high <= slo.limit else "breaks" if low > slo.limit else "undecided"
    return {"slo": slo.text, "value": _finite(est), "ci": [_finite(low), _finite(high)], "verdict": verdict,
            "dispersion": round(phi, 2)}


def _percentile(hist: Histogram, p: float, never_sent: int, confidence: float,
                phi: float) -> tuple[float | None, float, float]:
    """A percentile's interval whose upper bound (what a hold rests on) is widened for
    bursts and whose lower bound (what a break rests on) is not: past its capacity a
    step's backlog grows, its slow answers all come at its end and read as a burst, and
    with both bounds widened a step past it was not called broken (seen in CI: the step
    just above the capacity of a 2-lane server ended undecided). A break is judged at
    99.9% early on and only makes the answer lower."""
    est, low, _ = percentile_interval(hist, p, never_sent, confidence)
    return est, low, percentile_interval(hist, p, never_sent, confidence, phi)[2]


def _finite(v: float | None) -> float | None:
    return None if v is None or math.isinf(v) else round(v, 6)


@dataclass
class CapacityStep:
    rate: float
    total: Stats
    seconds: float
    due: int
    started: int
    late: int
    runs: int = 1
    intervals: list[Stats] | None = None  # each -d interval's (1 s); None: taken as independent requests

    @property
    def never_sent(self) -> int:
        return max(0, self.due - self.started)

    def dispersion(self, percentile: float | None) -> float:
        """How much the requests an interval counts clustered interval by interval: the
        errors (``percentile`` None); for a percentile, the answers beyond the step's own
        estimate of it, whose count the order statistics take as binomial (about (1 − p) n
        of them, so known even when no answer came near a limit). (Measured 2026-12-03,
        ``bench/capacity_dispersion.py``: answers beyond 30 ms of a CPU-bound query near
        its capacity came in bursts, 38 of 8,740 in 10 of 58 seconds, dispersion 5.5, and
        55 of 10,468 in 3 seconds, 44: a binomial interval 2.3 and 6.6 times too narrow.
        Refusals of a fifth concurrent query: 0.7–2.0.)"""
        if not self.intervals:
            return 1.0
        if percentile is None:
            return dispersion([(st.queries + st.errors, st.errors) for st in self.intervals])
        at = self.total.hist.percentile(percentile)
        return dispersion([(st.hist.count, 0 if at is None else sum(n for v, n in st.hist.values() if v > at))
                           for st in self.intervals])

    def judged(self, slos: list[SLO], confidence: float = CONFIDENCE) -> list[dict[str, Any]]:
        return [judge(s, self.total, self.never_sent, confidence, self.dispersion(s.percentile)) for s in slos]

    def entry(self, slos: list[SLO], judged: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        judged = judged if judged is not None else self.judged(slos)
        verdict = _verdict(judged)
        p50 = _percentile(self.total.hist, 50, self.never_sent, CONFIDENCE, self.dispersion(50))
        p99 = _percentile(self.total.hist, 99, self.never_sent, CONFIDENCE, self.dispersion(99))
        return {"offered_qps": self.rate, "achieved_qps": self.total.queries / self.seconds if self.seconds else 0.0,
                "seconds": round(self.seconds, 3), "runs": self.runs, "queries": self.total.queries,
                "errors": self.total.errors, "late": self.late, "dropped": self.never_sent,
                "p50_ms": _finite(p50[0]), "p50_ci": [_finite(p50[1]), _finite(p50[2])],
                "p99_ms": _finite(p99[0]), "p99_ci": [_finite(p99[1]), _finite(p99[2])],
                "slos": judged, "verdict": verdict}


def _leaning_to_break(slos: list[SLO], judged: list[dict[str, Any]]) -> bool:
    """An undecided SLO whose estimate already lies beyond its limit."""
    return any(j["verdict"] == "undecided" and (j["value"] is None or j["value"] > s.limit)
               for s, j in zip(slos, judged, strict=True))


def _leaning_to_hold(slos: list[SLO], judged: list[dict[str, Any]]) -> bool:
    """Every undecided SLO's estimate lies well within its limit: more requests would
    most likely show it holds."""
    return all(j["verdict"] != "undecided" or (j["value"] is not None and j["value"] <= LEAN * s.limit)
               for s, j in zip(slos, judged, strict=True))


def _verdict(judged: list[dict[str, Any]]) -> str:
    verdicts = {j["verdict"] for j in judged}
    return "breaks" if "breaks" in verdicts else "undecided" if "undecided" in verdicts else "holds"


@dataclass(frozen=True)
class Budget:
    """What the search will cost, said before it starts."""
    needs: list[tuple[SLO, int]]  # the requests a step needs before each SLO can hold
    max_time: float  # seconds, the whole search with its probe
    probe_s: float
    lanes: int

    @property
    def need(self) -> int:
        return max(n for _, n in self.needs)

    def hold_seconds(self, rate: float, step_s: float) -> float:
        """How long a step at ``rate`` runs before it can hold."""
        return hold_seconds(self.need, rate, step_s)

    def lines(self) -> list[str]:
        needs = ", ".join(f"{s.text} needs {n:,} requests" + (" without an error" if s.percentile is None else "")
                          for s, n in self.needs)
        return [f"Capacity search: {needs} per step before it can hold (95% intervals); a step that breaks is "
                f"stopped as soon as it is certain (99.9%).",
                f"A closed-loop probe first (1, 2, 4 … {self.lanes} connections, {self.probe_s:.3g} s at most), then "
                f"steps from {START:g}x the most it answered; at most {_duration(self.max_time)} in all (--max-time), "
                "after which the bracket found so far is the answer."]

    def to_json(self) -> dict[str, Any]:
        return {"requests_per_step": {s.text: n for s, n in self.needs}, "max_time_s": self.max_time,
                "probe_s": self.probe_s, "lanes": self.lanes}


def hold_seconds(need: int, rate: float, step_s: float) -> float:
    """How long a step at ``rate`` runs before its ``need`` requests let it hold."""
    return max(step_s, 1.1 * need / rate)


def first_rate(probe: float | None, rate_min: float, rate_max: float) -> float:
    """The first step's rate: ``START`` of what the probe answered, within the range given."""
    return min(max(START * probe, rate_min), rate_max) if probe else rate_min


def probe_time(max_time: float, probe_s: float = PROBE_S) -> float:
    """The probe's share of the budget: a twentieth, at most ``probe_s``, and never less
    than its first level (which runs whole: a budget of 15 s promised "0.725 s at most" of
    a probe that took 1.5)."""
    return max(PROBE_LEVEL_S, min(probe_s, max_time / 20))


def least_time(step_s: float) -> float:
    """The shortest --max-time in which one step can still hold: the probe, the pause
    before the step, the step, its start and stop, and the margin kept for the end."""
    return PROBE_LEVEL_S + SETTLE_S + step_s + STEP_OVERHEAD_S + END_MARGIN_S


def _duration(s: float) -> str:
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.3g} min"


class CapacitySearch:
    """The steps of one capacity search, and where it stands.

    It starts near the capacity a short closed-loop probe answered (``START`` of it),
    moves up by ``GROW`` and down by ``GROW`` (by half below ``NEAR`` of the probe's rate)
    until one step holds and one does not, then bisects. A step runs until it is
    decided: *breaks* as soon as an SLO's 99.9% interval lies beyond its limit (looked at
    each time the step's requests grew by a quarter, after its first ``EARLY_MIN_S``),
    *holds* once every SLO's 95% interval lies within (looked at after the step's planned
    length and after each of ``MAX_EXTENSIONS`` more, ``LEANING_EXTENSIONS`` while every
    undecided estimate lies well within its limit), else it counts as not holding
    (at once when an undecided SLO's estimate already lies beyond its limit).
    Nothing starts that could not hold before ``--max-time``."""

    def __init__(self, cfg: LoadConfig, hosts: list[Host], slos: list[SLO], rate_min: float, rate_max: float,
                 step_s: float, observers: list[Observer], on_step: Any,
                 sources: SourceFactory = local_source, max_time: float = MAX_TIME_S,
                 on_progress: Any = None, probe_s: float = PROBE_S, say: Any = None) -> None:
        self.cfg, self.hosts, self.slos = cfg, hosts, slos
        self.rate_min, self.rate_max, self.step_s = rate_min, rate_max, step_s
        # who watches every level of the search (with --metrics-port, Prometheus); the steps
        # and the progress lines say the rest
        self.observers, self.on_step, self.sources = observers, on_step, sources
        self.on_progress = on_progress or (lambda p: None)
        self.say = say or (lambda line: None)
        self.budget = Budget([(s, samples_to_decide(s)) for s in slos], max_time, probe_time(max_time, probe_s),
                             cfg.concurrency)
        self.steps: list[dict[str, Any]] = []
        self.results: list[LevelResult] = []  # every step's run, in order
        self.rates: list[float] = []  # the offered rate of each of them
        self.stopped: LevelResult | None = None  # a step that ended the search (Ctrl-C, lost server)
        self.probe: dict[str, Any] | None = None
        self.probe_qps = 0.0
        self.probe_results: list[LevelResult] = []  # the probe's levels (closed loop), kept in the file too
        self.ended_by = "bracket"  # or "budget", "rate-min", "rate-max", "steps", "stopped"
        self.deadline = math.inf

    # -- the probe ---------------------------------------------------------------------------
    def run_probe(self) -> float | None:
        """Closed loop at 1, 2, 4, … connections (up to ``-c``), ``PROBE_LEVEL_S`` each,
        while the answered queries a second still grow by a tenth and errors stay under
        1%: the most it answered, where the open-loop steps begin. (One closed-loop level
        at ``-c 64`` was tried first: against a server refusing a fifth concurrent query,
        64 connections spinning on refusals answered 36 QPS of a known 77 and the search
        spent 6 of its 10 minutes below the capacity.)"""
        best: float | None = None
        rows = []
        lanes = 1
        deadline = time.monotonic() + self.budget.probe_s
        while lanes <= self.cfg.concurrency and time.monotonic() < deadline and not self.stopped:
            cfg = replace(self.cfg, rate=0.0, poisson=False, timelimit=PROBE_LEVEL_S, iterations=0, concurrency=lanes)
            res = run_level(cfg, self.hosts, lanes, self.observers, sources=self.sources)
            self.probe_results.append(res)
            total = res.total()
            qps = total.queries / res.seconds if res.seconds > 0 else 0.0
            rows.append({"lanes": lanes, "seconds": round(res.seconds, 3), "queries": total.queries,
                         "errors": total.errors, "qps": round(qps, 3)})
            if res.fatal or res.interrupted:
                self.stopped = res
            erring = total.errors > 0.01 * (total.queries + total.errors)
            if total.queries and (best is None or qps > best):
                grew = best is None or qps >= best * 1.1
                best = qps
                if not grew:
                    break
            else:
                break
            if erring:
                break
            lanes *= 2
        self.probe = {"levels": rows, "qps": round(best, 3) if best else None}
        return best

    # -- one step ----------------------------------------------------------------------------
    def measure(self, rate: float) -> str:
        """Run one step until it is decided (or its longest length, or the budget); its verdict."""
        time.sleep(SETTLE_S)  # the last level's abandoned queries end first: they would take this step's slots
        hold_s = self.budget.hold_seconds(rate, self.step_s)
        longest = min(hold_s * (1 + LEANING_EXTENSIONS), self.deadline - time.monotonic())
        cfg = replace(self.cfg, rate=rate, timelimit=longest, iterations=0)
        looks = _Looks(self, rate, hold_s)
        res = run_level(cfg, self.hosts, cfg.concurrency, [*self.observers, looks], sources=self.sources)
        self.results.append(res)
        self.rates.append(rate)
        # a decided step's numbers are those it was decided on (its interval then, not one
        # widened or narrowed by the answers that came in while its lanes stopped); its
        # level keeps every request
        step = replace(looks.decided_step, runs=max(1, looks.looks)) if looks.decided_step else CapacityStep(
            rate, res.total(), res.seconds, res.due or 0, res.started, res.late, runs=max(1, looks.looks),
            intervals=looks.intervals)
        if res.fatal or res.interrupted:
            self.stopped = res
        judged = looks.final(step)
        entry = step.entry(self.slos, judged)
        entry["decided_at_s"] = round(looks.decided_at, 3) if looks.decided_at is not None else None
        self.steps.append(entry)
        self.on_step(entry)
        return str(entry["verdict"])

    def fits(self, rate: float) -> bool:
        """Whether a step at ``rate`` could still hold before the budget ends."""
        return (time.monotonic() + SETTLE_S + self.budget.hold_seconds(rate, self.step_s) + STEP_OVERHEAD_S
                <= self.deadline)

    def run(self) -> dict[str, Any]:
        self.deadline = time.monotonic() + self.budget.max_time - END_MARGIN_S
        for line in self.budget.lines():
            self.say(line)
        probe = self.run_probe()
        self.probe_qps = probe or 0.0
        rate = first_rate(probe, self.rate_min, self.rate_max)
        self.say((f"The probe answered {probe:.1f} QPS at most" if probe else "The probe answered no query")
                 + f": the first step offers {rate:.1f} QPS and can hold after "
                 f"{self.budget.hold_seconds(rate, self.step_s):.0f} s.")
        held, failed = self._bracket(rate)
        while (held is not None and failed is not None and failed / held - 1 > PRECISION
               and self._may_go_on(math.sqrt(held * failed))):  # bisect
            mid = math.sqrt(held * failed)
            if self.measure(mid) == "holds":
                held = mid
            else:
                failed = mid
        if held is not None and failed is not None and failed / held - 1 <= PRECISION:
            self.ended_by = "bracket"
        broken = [s["offered_qps"] for s in self.steps if s["verdict"] == "breaks"]
        return {"rate": held, "ci": [held, failed], "broken_at": min(broken) if broken else None,
                "rate_min": self.rate_min, "rate_max": self.rate_max,
                "slo": [s.to_json() for s in self.slos], "steps": self.steps,
                "complete": self.stopped is None, "ended_by": self.ended_by, "precision": PRECISION,
                "step_seconds": self.step_s, "samples_to_decide": self.budget.need, "budget": self.budget.to_json(),
                "probe": self.probe}

    def _may_go_on(self, rate: float) -> bool:
        if self.stopped:
            self.ended_by = "stopped"
            return False
        if len(self.steps) >= MAX_STEPS:
            self.ended_by = "steps"
            return False
        if not self.fits(rate):
            self.ended_by = "budget"
            return False
        return True

    def _bracket(self, rate: float) -> tuple[float | None, float | None]:
        """Up by ``GROW`` while steps hold, down while they do not (by ``GROW`` near the
        probe's rate, by half below it), until a rate
        that held lies below one that did not (or a bound of the range is reached)."""
        held: float | None = None
        failed: float | None = None
        while self._may_go_on(rate):
            if self.measure(rate) == "holds":
                held = rate
                if failed is not None:
                    break
                if rate >= self.rate_max:
                    self.ended_by = "rate-max"
                    break
                rate = min(rate * GROW, self.rate_max)  # nothing has failed yet
            else:
                failed = rate
                if held is not None:
                    break
                if rate <= self.rate_min:
                    self.ended_by = "rate-min"
                    break
                rate = max(rate / GROW if rate >= NEAR * self.probe_qps else rate / 2, self.rate_min)
        return held, failed


class _Looks(Observer):
    """When and how a running step is judged: an observer of its level that finds it decided."""

    def __init__(self, search: CapacitySearch, rate: float, hold_s: float) -> None:
        self.search, self.rate, self.hold_s = search, rate, hold_s
        self.next_n = LOOK_FIRST
        self.next_hold = hold_s  # the next look that may say "holds": at hold_s, 2x, 3x …
        self.looks = 0  # looks that could say "holds" (the file's "runs")
        self.last_progress = -math.inf
        self.verdict = "undecided"
        self.decided_at: float | None = None
        self.decided_step: CapacityStep | None = None
        self.judged: list[dict[str, Any]] | None = None
        self.intervals: list[Stats] = []  # each -d interval's (1 s): how the bad requests spread over the step

    def interval(self, level: int, row: dict[str, Any], hosts_stats: dict[int, Stats], seconds: float,
                 cumulative: dict[int, Stats], elapsed: float) -> None:
        self.intervals.append(merged(hosts_stats.values()))

    def decided(self, totals: dict[Key, Stats], live: dict[str, Any], elapsed: float) -> bool:
        n = sum(st.queries + st.errors for st in totals.values())
        full = elapsed >= self.next_hold
        early = n >= self.next_n and elapsed >= EARLY_MIN_S
        if not (full or early or elapsed - self.last_progress >= PROGRESS_S):
            return False  # nothing to judge or say this tick: the histograms are not merged
        total = merged(totals.values())
        step = CapacityStep(self.rate, total, elapsed, live.get("due") or 0, live.get("started", 0),
                            live.get("late", 0), intervals=self.intervals)
        decided = False
        if full:  # a full look: 95% both ways
            self.looks += 1
            self.next_hold += self.hold_s
            # a look past MAX_EXTENSIONS is one of many: it holds only at LEANING_CONFIDENCE
            self.judged = step.judged(self.search.slos, CONFIDENCE if self.looks <= 1 + MAX_EXTENSIONS
                                      else LEANING_CONFIDENCE)
            # undecided with an estimate beyond a limit: more requests would most likely
            # show it breaks, and not holding is what an undecided step counts as anyway;
            # past MAX_EXTENSIONS only a step leaning to hold goes on
            slos = self.search.slos
            decided = (_verdict(self.judged) != "undecided" or _leaning_to_break(slos, self.judged)
                       or (self.looks > MAX_EXTENSIONS and not _leaning_to_hold(slos, self.judged)))
        elif early:  # an early look: only a certain break ends the step
            self.next_n = max(n + 1, math.ceil(n * LOOK_GROWTH))
            interim = step.judged(self.search.slos, INTERIM)
            decided = _verdict(interim) == "breaks"
            if decided:
                self.judged = interim
        if decided:
            self.verdict, self.decided_at = _verdict(self.judged or []), elapsed
            self.decided_step = replace(step, intervals=list(self.intervals))
        if decided or elapsed - self.last_progress >= PROGRESS_S:
            self.last_progress = elapsed
            self.search.on_progress({"step": len(self.search.steps) + 1, "rate": self.rate,
                                     "seconds": round(elapsed, 1), "requests": n, "errors": total.errors,
                                     # this tick's look, else the step as it stands (not the last look's)
                                     "slos": self.judged if decided or full else step.judged(self.search.slos),
                                     "verdict": self.verdict if decided else "running"})
        return decided

    def final(self, step: CapacityStep) -> list[dict[str, Any]]:
        """The step's verdict once its level is over: the one it was decided with, else
        a last look (an undecided step counts as not holding)."""
        if self.decided_at is not None and self.judged is not None:
            return self.judged
        judged = step.judged(self.search.slos)
        if _verdict(judged) == "holds" and step.seconds < self.hold_s * 0.999:  # cut short: not a full step
            judged = [{**j, "verdict": "undecided"} for j in judged]
        return judged


def capacity_line(cap: dict[str, Any]) -> str:
    """The answer as the last line says it: ``capacity: R QPS`` (0 below --rate-min)."""
    return f"capacity: {cap['rate'] or 0:.1f} QPS"


def bracket_line(cap: dict[str, Any]) -> str:
    """Where the true capacity lies, said before the answer (a file from before
    ``rate_min`` was kept: its lowest step stands for it)."""
    rate_min = cap["rate_min"] if "rate_min" in cap else min((s["offered_qps"] for s in cap["steps"]), default=0.0)
    if cap.get("ended_by") == "budget":
        low, high = cap["ci"]
        if not cap["steps"] and (first := _first_step_time(cap)) is not None:
            return (f"--max-time ended the search before its first step: a step at {first[0]:.1f} QPS needs "
                    f"{first[1]:.0f} s to hold (give --max-time {5 * math.ceil(1.2 * first[2] / 5)} or more).")
        if low is None:
            return ("--max-time ended the search before any step held"
                    + (f"; the SLO does not hold at {high:.1f} QPS." if high is not None else "."))
        return (f"--max-time ended the search: the SLO holds at {low:.1f} QPS"
                + (f" and not at {high:.1f} QPS (the capacity lies between them)." if high is not None
                   else "; the capacity may be higher."))
    if cap["rate"] is None:
        return f"The SLO does not hold at --rate-min {rate_min:g} QPS: the capacity is below it."
    if cap["ci"][1] is None:
        return f"The SLO holds at --rate-max {cap['rate']:.1f} QPS: the capacity may be higher."
    return (f"The SLO holds at {cap['ci'][0]:.1f} QPS and not at {cap['ci'][1]:.1f} QPS: the capacity lies "
            "between them.")


def _first_step_time(cap: dict[str, Any]) -> tuple[float, float, float] | None:
    """The first step's rate, how long it runs before it can hold, and the --max-time that
    leaves room for it after its probe (the advice adds a fifth: the probe's rate, and so
    the step's length, varies, and connecting came out of --max-time before); None for a
    file without its budget."""
    budget, probe = cap.get("budget") or {}, (cap.get("probe") or {}).get("qps")
    if "probe_s" not in budget or "step_seconds" not in cap or "samples_to_decide" not in cap:
        return None
    rate = first_rate(probe, cap["rate_min"], cap["rate_max"])
    hold = hold_seconds(cap["samples_to_decide"], rate, cap["step_seconds"])
    return rate, hold, least_time(hold) - PROBE_LEVEL_S + budget["probe_s"]


def step_line(e: dict[str, Any]) -> str:
    slos = "; ".join(f"{j['slo']}: {_num(j['value'])} [{_num(j['ci'][0])}, {_num(j['ci'][1])}]{_bursts(j)} "
                     f"{j['verdict']}" for j in e["slos"])
    return (f"offered {e['offered_qps']:.1f} QPS, achieved {e['achieved_qps']:.1f}, p50 {_num(e['p50_ms'])} ms, "
            f"p99 {_num(e['p99_ms'])} ms, errors {e['errors']}, late {e['late']}, dropped {e['dropped']} — {slos} "
            f"=> {e['verdict']}")


def progress_line(p: dict[str, Any]) -> str:
    """The running step, as the terminal shows it every few seconds."""
    slos = "; ".join(f"{j['slo']} {_num(j['value'])} [{_num(j['ci'][0])}, {_num(j['ci'][1])}]{_bursts(j)}"
                     for j in p["slos"])
    return (f"  step {p['step']} at {p['rate']:.1f} QPS, {p['seconds']:.0f} s: {p['requests']:,} requests, "
            f"{p['errors']:,} error{'' if p['errors'] == 1 else 's'} — {slos} ({p['verdict']})")


def _bursts(j: dict[str, Any]) -> str:
    """How much wider the interval is for requests that came in bursts (said from 1.1x)."""
    widened = math.sqrt(j.get("dispersion") or 1.0)
    return f" (in bursts: {widened:.1f}x wider)" if widened >= 1.1 else ""


def _num(v: float | None) -> str:
    return "inf" if v is None else f"{v:.3g}"
