"""clickhouse-benchmark's comparison: an independent two-sample Student's t-test on
mean latency, at one of six confidence levels, said in plain words.

Latencies are skewed, so a difference of means can come from a few outliers; the load
report therefore also gives the rank-based verdict of ``chbench compare`` next to it."""

from __future__ import annotations

import math
from dataclasses import dataclass

from chbench.stats.histogram import Histogram

# --confidence 0..5, as clickhouse-benchmark
CONFIDENCE_LEVELS = (80.0, 90.0, 95.0, 98.0, 99.0, 99.5)


@dataclass
class TTest:
    confidence: float  # percent
    mean_a: float
    mean_b: float
    difference: float  # mean_b - mean_a, ms
    halfwidth: float  # of the confidence interval of the difference, ms
    proven: bool

    @property
    def relative(self) -> float:
        return self.difference / self.mean_a * 100.0 if self.mean_a else math.nan

    @property
    def relative_halfwidth(self) -> float:
        return self.halfwidth / self.mean_a * 100.0 if self.mean_a else math.nan

    def words(self) -> str:
        level = f"{self.confidence:g}%"
        if not self.proven:
            return f"no difference proven at {level}"
        return f"difference of {self.relative:+.1f}% ± {self.relative_halfwidth:.1f}% at {level}"

    def to_json(self) -> dict[str, float | bool | str]:
        return {
            "confidence": self.confidence,
            "mean_a_ms": self.mean_a,
            "mean_b_ms": self.mean_b,
            "difference_ms": self.difference,
            "halfwidth_ms": self.halfwidth,
            "relative_percent": self.relative,
            "relative_halfwidth_percent": self.relative_halfwidth,
            "proven": self.proven,
            "verdict": self.words(),
        }


def student_t(a: Histogram, b: Histogram, confidence_index: int = 5) -> TTest | None:
    """Pooled-variance t-test of mean(b) - mean(a); None with fewer than 2 values a side."""
    conf = CONFIDENCE_LEVELS[confidence_index]
    if a.count < 2 or b.count < 2 or a.mean is None or b.mean is None:
        return None
    va, vb = a.variance or 0.0, b.variance or 0.0
    df = a.count + b.count - 2
    pooled = ((a.count - 1) * va + (b.count - 1) * vb) / df
    se = math.sqrt(pooled * (1.0 / a.count + 1.0 / b.count))
    from scipy import stats as sps

    t_crit = float(sps.t.ppf(1.0 - (1.0 - conf / 100.0) / 2.0, df))
    diff = b.mean - a.mean
    half = t_crit * se
    return TTest(conf, a.mean, b.mean, diff, half, abs(diff) > half)
