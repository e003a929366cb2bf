"""``chbench load --slo``: the highest open-loop rate whose SLO holds.

Each step is an open-loop level at one offered rate (``run_level``, so it works on one
process and with ``--workers`` alike), judged against every SLO with a 95% interval
(``stats/quantile.py``): it *holds* when every interval lies within its limit, *breaks*
when one lies beyond, and is run again at the same rate (its samples merged) while
undecided, up to ``MAX_EXTENSIONS`` times — then it counts as not holding. The rate
doubles from ``--rate-min`` until a step does not hold (or ``--rate-max`` holds), then
bisects (geometric midpoints) between the last rate that held and the first that did not
until they are within ``PRECISION`` of each other. Requests that were due but never sent
count as infinitely slow, so a client that cannot keep up never makes a rate look good.

The answer: ``capacity = {"rate", "ci": [rate, first rate not shown to hold], "broken_at",
"slo", "steps"}`` — the true capacity lies in ``ci``."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Any

from chbench.errors import UsageError
from chbench.load.config import LoadConfig
from chbench.load.engine import Display, Host, LevelResult, Observer, SourceFactory, local_source, run_level
from chbench.load.recorder import Stats
from chbench.stats.quantile import percentile_interval, rate_interval

MAX_EXTENSIONS = 2  # an undecided step is run again at most this many times
PRECISION = 0.05  # bisection stops when the bracket is this narrow (relative)
MAX_STEPS = 24
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
    return SLO(text.strip(), None, value / 100.0 if m.group(5) else value)


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


def judge(slo: SLO, total: Stats, never_sent: int) -> dict[str, Any]:
    """One SLO on one step: its estimate, interval and verdict."""
    if slo.percentile is not None:
        est, low, high = percentile_interval(total.hist, slo.percentile, never_sent)
    else:
        n = total.queries + total.errors
        est, low, high = rate_interval(total.errors, n)
        if slo.limit <= 0:  # errors<=0: no interval can show a rate of exactly 0; none may occur
            return {"slo": slo.text, "value": est, "ci": [low, high], "verdict": "breaks" if total.errors else "holds"}
    verdict = "holds" if high <= slo.limit else "breaks" if low > slo.limit else "undecided"
    return {"slo": slo.text, "value": _finite(est), "ci": [_finite(low), _finite(high)], "verdict": verdict}


def _finite(v: float | None) -> float | None:
    return None if v is None or math.isinf(v) else round(v, 6)


@dataclass
class Step:
    rate: float
    total: Stats
    seconds: float
    due: int
    started: int
    late: int
    runs: int = 1

    @property
    def never_sent(self) -> int:
        return max(0, self.due - self.started)

    def entry(self, slos: list[SLO]) -> dict[str, Any]:
        judged = [judge(s, self.total, self.never_sent) for s in slos]
        verdicts = {j["verdict"] for j in judged}
        verdict = "breaks" if "breaks" in verdicts else "undecided" if "undecided" in verdicts else "holds"
        p50 = percentile_interval(self.total.hist, 50, self.never_sent)
        p99 = percentile_interval(self.total.hist, 99, self.never_sent)
        return {"offered_qps": self.rate, "achieved_qps": self.total.queries / self.seconds if self.seconds else 0.0,
                "seconds": round(self.seconds, 3), "runs": self.runs, "queries": self.total.queries,
                "errors": self.total.errors, "late": self.late, "dropped": self.never_sent,
                "p50_ms": _finite(p50[0]), "p50_ci": [_finite(p50[1]), _finite(p50[2])],
                "p99_ms": _finite(p99[0]), "p99_ci": [_finite(p99[1]), _finite(p99[2])],
                "slos": judged, "verdict": verdict}


class Search:
    """The steps of one capacity search, and where it stands."""

    def __init__(self, cfg: LoadConfig, hosts: list[Host], slos: list[SLO], rate_min: float, rate_max: float,
                 step_s: float, display: Display, on_step: Any, metrics: Observer | None = None,
                 sources: SourceFactory = local_source) -> None:
        self.cfg, self.hosts, self.slos = cfg, hosts, slos
        self.rate_min, self.rate_max, self.step_s = rate_min, rate_max, step_s
        self.display, self.on_step, self.metrics, self.sources = display, on_step, metrics, sources
        self.steps: list[dict[str, Any]] = []
        self.results: list[LevelResult] = []  # every run of every step, in order
        self.rates: list[float] = []  # the offered rate of each of them
        self.stopped: LevelResult | None = None  # a step that ended the search (Ctrl-C, lost server)

    def measure(self, rate: float) -> str:
        """Run (and, while undecided, extend) one step; its verdict. A step lasts at least
        ``--step-duration`` and long enough at this rate for every SLO to be decidable."""
        need = max(samples_to_decide(s) for s in self.slos)
        cfg = replace(self.cfg, rate=rate, timelimit=max(self.step_s, 1.1 * need / rate), iterations=0)
        step: Step | None = None
        while True:
            res = run_level(cfg, self.hosts, cfg.concurrency, self.display, metrics=self.metrics, sources=self.sources)
            self.results.append(res)
            self.rates.append(rate)
            total = res.total()
            if step is None:
                step = Step(rate, total, res.seconds, res.due or 0, res.started, res.late)
            else:
                step.total.merge(total)
                step.seconds += res.seconds
                step.due += res.due or 0
                step.started += res.started
                step.late += res.late
                step.runs += 1
            if res.fatal or res.interrupted:
                self.stopped = res
            entry = step.entry(self.slos)
            if entry["verdict"] != "undecided" or step.runs > MAX_EXTENSIONS or self.stopped:
                break
        self.steps.append(entry)
        self.on_step(entry)
        return str(entry["verdict"])

    def run(self) -> dict[str, Any]:
        held: float | None = None
        failed: float | None = None
        rate = self.rate_min
        while len(self.steps) < MAX_STEPS and not self.stopped:  # grow
            if self.measure(rate) == "holds":
                held = rate
                if rate >= self.rate_max:
                    break
                rate = min(rate * 2, self.rate_max)
            else:
                failed = rate
                break
        while (held is not None and failed is not None and failed / held - 1 > PRECISION
               and len(self.steps) < MAX_STEPS and not self.stopped):  # bisect
            mid = math.sqrt(held * failed)
            if self.measure(mid) == "holds":
                held = mid
            else:
                failed = mid
        broken = [s["offered_qps"] for s in self.steps if s["verdict"] == "breaks"]
        return {"rate": held, "ci": [held, failed], "broken_at": min(broken) if broken else None,
                "slo": [s.to_json() for s in self.slos], "steps": self.steps,
                "complete": self.stopped is None, "precision": PRECISION, "step_seconds": self.step_s,
                "samples_to_decide": max(samples_to_decide(s) for s in self.slos)}


def capacity_line(cap: dict[str, Any]) -> str:
    """The answer as the last line says it: ``capacity: R QPS`` (0 below --rate-min)."""
    return f"capacity: {cap['rate'] or 0:.1f} QPS"


def bracket_line(cap: dict[str, Any], rate_min: float) -> str:
    """Where the true capacity lies, said before the answer."""
    if cap["rate"] is None:
        return f"The SLO does not hold at --rate-min {rate_min:g} QPS: the capacity is below it."
    if cap["ci"][1] is None:
        return f"The SLO holds at --rate-max {cap['rate']:.1f} QPS: the capacity may be higher."
    return (f"The SLO holds at {cap['ci'][0]:.1f} QPS and not at {cap['ci'][1]:.1f} QPS: the capacity lies "
            "between them.")


def step_line(e: dict[str, Any]) -> str:
    slos = "; ".join(f"{j['slo']}: {_num(j['value'])} [{_num(j['ci'][0])}, {_num(j['ci'][1])}] {j['verdict']}"
                     for j in e["slos"])
    return (f"offered {e['offered_qps']:.1f} QPS, achieved {e['achieved_qps']:.1f}, p50 {_num(e['p50_ms'])} ms, "
            f"p99 {_num(e['p99_ms'])} ms, errors {e['errors']}, late {e['late']}, dropped {e['dropped']} — {slos} "
            f"=> {e['verdict']}")


def _num(v: float | None) -> str:
    return "inf" if v is None else f"{v:.3g}"
