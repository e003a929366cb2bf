"""The schedules (``core/schedule.py``): when the k-th request is planned, and how many
were due by a moment — the numbers load's open-loop summary and replay's progress read."""

from __future__ import annotations

import random

import pytest

from chbench.core.schedule import CapturedOffsets, ClosedLoop, FixedRate, Poisson, round_order


def test_fixed_rate_spaces_requests_evenly_from_its_phase():
    s = FixedRate(100.0, phase=0.005)
    assert [round(s.at(k), 6) for k in range(3)] == [0.005, 0.015, 0.025]
    assert s.due(0.005) == 0  # planned *before* the moment
    assert s.due(0.0051) == 1
    assert s.due(1.005) == 100


def test_worker_shares_of_a_fixed_rate_interleave_into_the_whole_schedule():
    whole = FixedRate(300.0)
    shares = [FixedRate(100.0, phase=w / 300.0) for w in range(3)]
    merged = sorted(s.at(k) for s in shares for k in range(50))
    assert merged == pytest.approx([whole.at(k) for k in range(150)])
    assert sum(s.due(0.2) for s in shares) == whole.due(0.2)


def test_poisson_counts_what_it_planned_even_when_due_draws_ahead_of_the_lanes():
    a, b = Poisson(500.0, seed=7), Poisson(500.0, seed=7)
    due_first = a.due(3.0)  # the status thread drew ahead before any lane claimed
    offsets = [a.at(k) for k in range(2000)]
    assert offsets == [b.at(k) for k in range(2000)]  # the same sequence either way
    assert offsets[0] == 0.0 and offsets == sorted(offsets)
    assert due_first == sum(1 for t in offsets if t < 3.0) == b.due(3.0)
    assert 1300 < due_first < 1700  # ~500 a second


def test_poisson_keeps_only_what_is_still_to_be_read():
    s = Poisson(10_000.0, seed=1)
    for k in range(60_000):
        s.at(k)
        if k % 1000 == 0:
            s.due(k / 10_000.0)
    assert len(s._drawn) < 3 * Poisson.KEEP  # a long run does not keep every offset
    assert s.due(100.0) > 60_000 and s.due(1.0) >= s.due(0.5)  # never goes back


def test_captured_offsets_run_at_speed():
    offsets = sorted(random.Random(3).uniform(0, 10) for _ in range(100))
    s = CapturedOffsets(offsets, speed=4.0)
    assert s.at(10) == offsets[10] / 4.0
    assert s.due(1.0) == sum(1 for t in offsets if t < 4.0)


def test_the_time_planned_for_n_requests_is_n_gaps():
    """What an open loop's achieved rate divides by: --rate 50 -t 5 plans 250 requests in
    5 s (the 250th starts at 4.98 s; dividing by that read 50.19 QPS achieved)."""
    assert FixedRate(50.0).end(250) == pytest.approx(5.0)
    assert FixedRate(25.0, phase=0.02).end(125) == pytest.approx(5.02)
    p = Poisson(100.0, seed=3)
    assert p.end(10) == p.at(10) > p.at(9)
    assert CapturedOffsets([0.0, 1.0, 3.0], speed=2.0).end(3) == 1.5  # a capture ends at its last query
    assert CapturedOffsets([0.0, 1.0], speed=1.0).end(0) == 0.0 and ClosedLoop().end(5) == 0.0


def test_a_closed_loop_plans_nothing():
    s = ClosedLoop()
    assert not s.timed and s.due(10.0) == 0
    with pytest.raises(AssertionError):
        s.at(0)


def test_round_order_alternates_two_sides_and_rotates_more():
    assert [round_order(["A", "B"], r) for r in range(3)] == [["A", "B"], ["B", "A"], ["A", "B"]]
    firsts = [round_order(["A", "B", "C"], r)[0] for r in range(6)]
    assert sorted(firsts) == ["A", "A", "B", "B", "C", "C"]
