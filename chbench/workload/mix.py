"""A weighted query mix for load runs: which query goes next.

In order (clickhouse-benchmark's default) the mix cycles through a smooth weighted
round-robin sequence, so a query of weight 3 comes three times per cycle, spread out
rather than in a burst; with ``-r`` every pick is random with the weights as
probabilities. Either way the proportions hold."""

from __future__ import annotations

import random
from collections.abc import Sequence


def smooth_cycle(weights: Sequence[int]) -> list[int]:
    """nginx's smooth weighted round-robin: one full cycle of query indexes."""
    total = sum(weights)
    current = [0] * len(weights)
    out: list[int] = []
    for _ in range(total):
        for i, w in enumerate(weights):
            current[i] += w
        best = max(range(len(weights)), key=lambda i: current[i])
        current[best] -= total
        out.append(best)
    return out


class Mix:
    """Picks query indexes; ``pick(k)`` is the k-th pick of this stream."""

    def __init__(self, weights: Sequence[int], randomize: bool, seed: int, offset: int = 0) -> None:
        if not weights or min(weights) < 1:
            raise ValueError("weights must be positive")
        self.weights = list(weights)
        self.randomize = randomize
        self._cycle = smooth_cycle(self.weights)
        self._offset = offset
        self._rng = random.Random(seed)
        self._cum: list[int] = []
        acc = 0
        for w in self.weights:
            acc += w
            self._cum.append(acc)

    def pick(self, k: int) -> int:
        if len(self.weights) == 1:
            return 0
        if self.randomize:
            return self._rng.choices(range(len(self.weights)), cum_weights=self._cum)[0]
        return self._cycle[(k + self._offset) % len(self._cycle)]
