"""When each request is sent: the schedules every sender runs on.

* :func:`round_order` — ``run``'s rounds: every query once on each side per round, the
  sides alternating (A B, then B A; three or more rotate).
* :class:`ClosedLoop` — clickhouse-benchmark's closed loop (and a sequential replay): no
  planned times, a lane sends its next request as soon as the last one answered.
* :class:`FixedRate`, :class:`Poisson` — load's open loop (``--rate``, ``--poisson``).
* :class:`CapturedOffsets` — a captured workload's own offsets at ``--speed`` (replay).

The lanes (``core/lanes.py``) ask a feed's schedule for the ``k``-th request's offset
from the clock's start, in order, under their lock; a level's status asks how many were
due by now. A schedule knows no target, query or result."""

from __future__ import annotations

import bisect
import math
import random
import threading
from typing import Protocol


def round_order(ids: list[str], round_no: int) -> list[str]:
    """The order the sides run in a round. Two: A B, then B A, alternating. More: the
    order rotates every two rounds and every second round is reversed (A B C, C B A,
    B C A, A C B, C A B, B A C): each side is first equally often, and every pair of
    sides runs in both orders within each two rounds, so slow drift favours neither."""
    if len(ids) <= 2:
        return list(ids) if round_no % 2 == 0 else list(reversed(ids))
    k = (round_no // 2) % len(ids)
    rotated = list(ids[k:]) + list(ids[:k])
    return rotated if round_no % 2 == 0 else list(reversed(rotated))


class Schedule(Protocol):
    """The planned offsets (seconds from the clock's start) of a sender's requests."""

    timed: bool  # False: no planned times (sent when a lane is free)

    def at(self, k: int) -> float:
        """Request ``k``'s offset (timed schedules; called with k = 0, 1, 2, … in order)."""

    def due(self, span: float) -> int:
        """How many requests are planned in the first ``span`` seconds."""

    def end(self, n: int) -> float:
        """When the time planned for the first ``n`` requests is up: a rate's ``n``
        requests take ``n`` gaps, not the ``n - 1`` between their starts."""


class ClosedLoop:
    """No planned times: the next request goes as soon as a lane is free."""

    timed = False

    def at(self, k: int) -> float:
        raise AssertionError("a closed loop plans no times")

    def due(self, span: float) -> int:
        return 0

    def end(self, n: int) -> float:
        return 0.0


class FixedRate:
    """``rate`` requests a second, evenly spaced from ``phase`` (a ``--workers`` share
    takes every W-th request of the whole schedule: its rate / W, phased by its index)."""

    timed = True

    def __init__(self, rate: float, phase: float = 0.0) -> None:
        self.rate, self.phase = rate, phase

    def at(self, k: int) -> float:
        return self.phase + k / self.rate

    def due(self, span: float) -> int:
        return math.ceil((span - self.phase) * self.rate) if span > self.phase else 0

    def end(self, n: int) -> float:
        return self.at(n)


class Poisson:
    """Poisson arrivals at ``rate`` (exponential gaps from a seeded generator), the first
    at 0. The offsets drawn are kept until both the lanes and ``due`` have passed them
    (``due`` may draw ahead of the lanes: the same generator, the same sequence)."""

    timed = True
    KEEP = 4096  # offsets both readers passed are dropped in chunks of this many

    def __init__(self, rate: float, seed: int) -> None:
        self.rate = rate
        self._rng = random.Random(seed)
        self._lock = threading.Lock()  # ``at`` runs on a lane, ``due`` on the status thread
        self._drawn: list[float] = [0.0]  # offsets from index _base on
        self._base = 0
        self._claimed = 0  # at() was asked up to here
        self._counted = 0  # due() counted up to here

    def _draw_past(self, index: int, span: float) -> None:  # under the lock
        drawn = self._drawn
        while self._base + len(drawn) <= index or drawn[-1] < span:
            drawn.append(drawn[-1] + self._rng.expovariate(self.rate))
        passed = min(self._claimed, self._counted) - self._base
        if passed >= self.KEEP:
            del drawn[:passed]
            self._base += passed

    def at(self, k: int) -> float:
        with self._lock:
            self._draw_past(k, -math.inf)
            self._claimed = max(self._claimed, k)
            return self._drawn[k - self._base]

    def due(self, span: float) -> int:
        with self._lock:
            self._draw_past(0, span)
            n = self._base + bisect.bisect_left(self._drawn, span)
            self._counted = max(self._counted, n)  # never fewer than it said before
            return self._counted

    def end(self, n: int) -> float:
        return self.at(n)  # the next arrival: the n-th gap ends there


class CapturedOffsets:
    """A captured workload's offsets (seconds from its first query, in order) at ``speed``."""

    timed = True

    def __init__(self, offsets: list[float], speed: float = 1.0) -> None:
        self.offsets, self.speed = offsets, speed

    def at(self, k: int) -> float:
        return self.offsets[k] / self.speed

    def due(self, span: float) -> int:
        return bisect.bisect_left(self.offsets, span * self.speed)

    def end(self, n: int) -> float:
        return self.offsets[min(n, len(self.offsets)) - 1] / self.speed if n and self.offsets else 0.0
