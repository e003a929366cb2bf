"""The lane engine (``core/lanes.py``) through a scripted feed and fake targets: the
schedule's order and timing, the leader, growing lanes, refusals and the stop rules.
What it sends to real servers is tested by the load, stress, distributed and replay
tests; here only the engine's own rules, in milliseconds."""

from __future__ import annotations

import threading
import time
from typing import Any

from chbench.core.lanes import LATE_MS, Lane, Lanes, Policy, Slot
from chbench.core.schedule import CapturedOffsets, ClosedLoop, FixedRate, Schedule
from chbench.errors import QueryError, ServerLost
from chbench.targets import Sample, Target
from chbench.targets.fake import Call, FakeTarget


class ScriptFeed:
    """Request k at ``offsets[k]`` seconds after the start (``timed``) or as soon as a lane
    is free; ``where[k]`` picks the connection; every outcome kept in order of arrival."""

    def __init__(self, n: int, handler: Any, timed: bool = False, offsets: list[float] | None = None,
                 where: list[Any] | None = None, refuse: frozenset[Any] = frozenset()) -> None:
        self.n, self.handler = n, handler
        self.schedule: Schedule = CapturedOffsets(offsets or [0.0] * n) if timed else ClosedLoop()
        self.where = where or [None] * n
        self.refuse = refuse
        self.lock = threading.Lock()
        self.outcomes: list[dict[str, Any]] = []
        self.claims: list[int] = []

    def claim(self, lanes: Lanes, lane: Lane, k: int) -> Slot | None:
        if k >= self.n:
            return None
        self.claims.append(k)
        return Slot(k, self.where[k], f"SELECT {k}", {}, f"q{k}", k)

    def prepare(self, lane: Lane) -> None:
        lane.targets[None] = FakeTarget(self.handler)

    def connection(self, lane: Lane, where: Any) -> Target | None:
        if where in self.refuse:
            return None
        return lane.targets.setdefault(where, FakeTarget(self.handler))

    def _keep(self, slot: Slot, what: str, sent: float, end: float | None, lane: Lane, code: int = 0) -> None:
        with self.lock:
            self.outcomes.append({"k": slot.tag, "what": what, "sent": sent, "end": end, "planned": slot.planned,
                                  "lane": lane.index, "code": code})

    def ok(self, lane: Lane, slot: Slot, sent: float, end: float, sample: Sample) -> None:
        self._keep(slot, "ok", sent, end, lane)

    def failed(self, lane: Lane, slot: Slot, sent: float, end: float, code: int, message: str, lost: bool) -> None:
        self._keep(slot, "lost" if lost else "failed", sent, end, lane, code)

    def refused(self, lane: Lane, slot: Slot, sent: float) -> None:
        self._keep(slot, "refused", sent, None, lane)

    def after(self, lane: Lane, target: Target, done: int) -> None:
        pass


def sleeping(ms: float) -> Any:
    def handler(call: Call) -> float:
        time.sleep(ms / 1000.0)
        return ms
    return handler


def run(feed: ScriptFeed, lanes_n: int, policy: Policy | None = None, limit_s: float = 0.0,
        wait_s: float = 10.0) -> Lanes:
    lanes = Lanes(feed, policy or Policy())
    lanes.setup(lanes_n)
    lanes.start(time.monotonic() + 0.05, limit_s)
    lanes.join(wait_s)
    lanes.close()
    return lanes


def test_closed_loop_sends_every_request_once_and_counts_them():
    feed = ScriptFeed(200, sleeping(0.2))
    lanes = run(feed, 4)
    assert lanes.finished.is_set() and lanes.fatal is None and lanes.failure is None
    assert sorted(o["k"] for o in feed.outcomes) == list(range(200))
    assert lanes.claimed == lanes.started == 200 and lanes.in_flight == 0
    assert {o["lane"] for o in feed.outcomes} == {0, 1, 2, 3}  # every lane took a share


def test_a_timed_feed_is_claimed_in_order_and_never_sent_early():
    offsets = [i * 0.01 for i in range(30)]
    feed = ScriptFeed(30, sleeping(1), timed=True, offsets=offsets)
    run(feed, 3)
    assert feed.claims == list(range(30))
    assert len(feed.outcomes) == 30
    assert all(o["sent"] >= o["planned"] for o in feed.outcomes)


def test_a_fixed_rate_that_answers_at_once_spans_its_whole_planned_time():
    """40 requests at 200/s plan 0.2 s: the elapsed time the achieved rate divides by is
    that, not the 0.195 s to the last start (achieved would read 205/s)."""
    feed = ScriptFeed(40, sleeping(0.1))
    feed.schedule = FixedRate(200.0)
    lanes = run(feed, 2)
    assert len(feed.outcomes) == 40
    assert 0.2 - 1e-6 <= lanes.elapsed() < 1.0  # (t0 + 0.2) - t0 in floats: 0.19999999999709
    assert 40 / lanes.elapsed() <= 200.0 + 1e-3


def most_waiting(policy: Policy) -> int:
    """The most lanes waiting on the clock at once: 6 requests 80 ms apart, 4 lanes."""
    feed = ScriptFeed(6, sleeping(0.1), timed=True, offsets=[i * 0.08 for i in range(6)])
    lanes = Lanes(feed, policy)
    lanes.setup(4)
    lanes.start(time.monotonic() + 0.05)
    most = 0
    while not lanes.finished.wait(0.005):
        most = max(most, lanes.claimed - lanes.started)  # claimed, not started: waiting on the clock
    lanes.close()
    assert len(feed.outcomes) == 6 and feed.claims == list(range(6))
    return most


def test_with_one_leader_only_the_leader_waits_on_the_clock():
    assert most_waiting(Policy(one_leader=True)) == 1
    assert most_waiting(Policy()) >= 3  # otherwise every free lane holds a request of its own


def test_a_stalled_server_shows_as_late_requests_not_a_thinner_load():
    """Two lanes, queries of 50 ms every 5 ms: most requests start late, none is dropped,
    and each one's latency counts from its planned time."""
    for policy in (Policy(), Policy(one_leader=True)):
        feed = ScriptFeed(20, sleeping(50), timed=True, offsets=[i * 0.005 for i in range(20)])
        lanes = run(feed, 2, policy)
        assert len(feed.outcomes) == 20 and len(lanes.lanes) == 2
        late = [o for o in feed.outcomes if (o["sent"] - o["planned"]) * 1000.0 > LATE_MS]
        assert lanes.late == len(late) >= 10


def test_lanes_grow_when_no_lane_is_idle_and_stop_at_the_cap():
    feed = ScriptFeed(40, sleeping(60), timed=True, offsets=[i * 0.004 for i in range(40)])
    lanes = run(feed, 1, Policy(one_leader=True, grow_to=6))
    assert len(feed.outcomes) == 40
    assert len(lanes.lanes) == 6  # the cap: 40 queries of 60 ms in 160 ms want more


def test_a_refused_connection_fails_its_requests_and_the_rest_go_on():
    where = ["db1" if k % 3 == 0 else None for k in range(12)]
    feed = ScriptFeed(12, sleeping(0.1), where=where, refuse=frozenset({"db1"}))
    lanes = run(feed, 2)
    refused = sorted(o["k"] for o in feed.outcomes if o["what"] == "refused")
    assert refused == [0, 3, 6, 9] and lanes.started == 12 and lanes.in_flight == 0
    assert sorted(o["k"] for o in feed.outcomes if o["what"] == "ok") == [k for k in range(12) if k % 3]


def failing_at(*ks: int, lost: bool = False) -> Any:
    def handler(call: Call) -> float:
        if int(call.sql.split()[1]) in ks:
            if lost:
                raise ServerLost("connection refused")
            raise QueryError(60, "Table default.t does not exist")
        return 0.1
    return handler


def test_the_first_error_stops_the_lanes_unless_asked_to_continue():
    feed = ScriptFeed(100, failing_at(5))
    lanes = run(feed, 1, Policy(continue_on_errors=False))
    assert lanes.failure is not None and "Code: 60" in lanes.failure
    assert [o["k"] for o in feed.outcomes][-1] == 5 and len(feed.outcomes) == 6

    feed = ScriptFeed(100, failing_at(5))
    lanes = run(feed, 1, Policy(continue_on_errors=True))
    assert lanes.failure is None and len(feed.outcomes) == 100
    assert [o["code"] for o in feed.outcomes if o["what"] == "failed"] == [60]


def test_consecutive_errors_stop_the_lanes():
    feed = ScriptFeed(100, failing_at(*range(10, 100)))
    lanes = run(feed, 1, Policy(continue_on_errors=True, max_consecutive_errors=4))
    assert lanes.failure is not None and lanes.failure.startswith("stopped after 4 consecutive errors")
    assert len(feed.outcomes) == 14


def test_a_lost_server_is_fatal_and_its_last_query_is_reported_as_lost():
    feed = ScriptFeed(100, failing_at(7, lost=True))
    lanes = run(feed, 1)
    assert lanes.fatal == "connection refused" and lanes.stop.is_set()
    assert feed.outcomes[-1]["what"] == "lost" and len(feed.outcomes) == 8


def test_a_deadline_and_a_halt_end_the_schedule():
    feed = ScriptFeed(1000, sleeping(1), timed=True, offsets=[i * 0.01 for i in range(1000)])
    run(feed, 2, limit_s=0.2)
    assert 15 <= len(feed.outcomes) <= 21  # planned before the 0.2 s limit only

    feed = ScriptFeed(1000, sleeping(1), timed=True, offsets=[i * 0.01 for i in range(1000)])
    lanes = Lanes(feed, Policy())
    lanes.setup(2)
    lanes.start(time.monotonic())
    time.sleep(0.15)
    lanes.halt()
    halted_at = time.monotonic()
    lanes.join(5.0)
    lanes.close()
    assert lanes.finished.is_set() and lanes.fatal is None and lanes.failure is None
    assert 0 < len(feed.outcomes) < 1000
    assert all(o["planned"] <= halted_at for o in feed.outcomes)  # nothing planned after the halt was sent
