"""The one lane engine: every load level, capacity step, ClickBench stress phase,
``--workers`` process, distributed lane host and replay sends its queries here.

A *lane* is a thread with its own connections. A :class:`Feed` says what to send and
where, on which schedule (``schedule.py``: when each request is planned), and what to do
with each outcome; the lanes own the clock, the timing and the stopping:

* **Untimed feeds** (closed loop, clickhouse-benchmark; a sequential replay): a lane
  claims the next request and sends it as soon as the last one answered.
* **Timed feeds** (fixed-rate or Poisson arrivals, a captured workload's offsets): a
  free lane claims the next planned request and waits for its time; with ``one_leader``
  (replay) only one lane at a time claims and waits, then hands leadership to an idle
  lane and sends — requests are claimed in order from a stream, only one lane waits on
  the clock, and the lanes can grow. Either way a request that starts more than
  ``LATE_MS`` after its planned time is counted late and the feed gets the planned time,
  so a stalled server shows as latency, never as a quietly thinner load (no coordinated
  omission).
* **Growing** (``grow_to``, with ``one_leader``): when a hand-off finds ``SPARE_LANES``
  or fewer idle lanes, another lane is opened on a thread of its own, up to ``grow_to``.

Nothing here knows a results file, a display or a command: levels (``load/levels.py``)
and the replay driver watch a :class:`Lanes` through its counters and their feed's
recorder."""

from __future__ import annotations

import contextlib
import math
import threading
import time
from dataclasses import dataclass
from typing import Any, Protocol

from chbench.core.schedule import Schedule
from chbench.errors import ChbenchError, QueryError, ServerLost
from chbench.targets import Sample, Target

LATE_MS = 5.0  # a timed request that starts later than this after its planned time is late
SPARE_LANES = 4  # growing: idle lanes kept ready
STOP_GRACE_S = 1.0  # after a stop, how long queries still running may take to answer


@dataclass(slots=True)
class Slot:
    """One claimed request: its number, the connection it goes to (the feed's key: a
    host index, a database), what it runs, the feed's tag for the outcome (a (host,
    query) key, a captured query) and its planned time (None: untimed), which the lanes
    set from the feed's schedule."""

    k: int
    where: Any
    sql: str
    settings: dict[str, str]
    query_id: str
    tag: Any
    planned: float | None = None


class Feed(Protocol):
    """What a set of lanes sends and where the outcomes go."""

    schedule: Schedule  # when each request is planned (core/schedule.py)

    def claim(self, lanes: Lanes, lane: Lane, k: int) -> Slot | None:
        """What the ``k``-th request sends, where (called in order, under the lanes'
        lock); None: no more."""

    def prepare(self, lane: Lane) -> None:
        """Open the lane's first connections (before the clock, or on a grown lane's thread)."""

    def connection(self, lane: Lane, where: Any) -> Target | None:
        """The lane's connection for ``where``; None when the target refuses it (``refused``)."""

    def ok(self, lane: Lane, slot: Slot, sent: float, end: float, sample: Sample) -> None: ...

    def failed(self, lane: Lane, slot: Slot, sent: float, end: float, code: int, message: str, lost: bool) -> None:
        """A query that failed (code 0: none known; ``lost``: the server went away while it ran)."""

    def refused(self, lane: Lane, slot: Slot, sent: float) -> None:
        """A slot whose connection the target refuses: an error of its own, not sent."""

    def after(self, lane: Lane, target: Target, done: int) -> None:
        """After the lane's ``done``-th answered query (reconnects, rotations)."""


@dataclass
class Policy:
    """How the lanes wait, grow and stop."""

    timeout: float | None = None
    continue_on_errors: bool = True  # False: the first failed query stops the lanes (exit 1)
    max_consecutive_errors: int = 0  # 0: no limit
    # timed feeds: one lane at a time claims and waits on the clock (replay: requests
    # claimed in order from a stream, lanes that grow). Without it each free lane claims
    # the next planned request and waits for it itself: measured with load's --rate 500,
    # -c 8, SELECT 1, a leader for load made latency p99 1.44x that of claiming ahead
    # (median of 4 rounds side by side; one round 196 ms against 4 ms; docs/measured.md)
    one_leader: bool = False
    grow_to: int = 0  # one_leader: open lanes while sending, up to this many (0: never)


class Lanes:
    """One process's lanes and what they share."""

    def __init__(self, feed: Feed, policy: Policy, name: str = "lane") -> None:
        self.feed = feed
        self.policy = policy
        self.name = name
        self.stop = threading.Event()
        self.finished = threading.Event()  # every lane has returned
        self.fatal: str | None = None  # the server is gone (exit 3)
        self.failure: str | None = None  # a query failed and the lanes stop (exit 1)
        self.lanes: list[Lane] = []
        self.t0 = 0.0
        self.deadline = math.inf
        self.ended_at: float | None = None
        self.claimed = 0
        self.exhausted = False
        # claims take the plain lock (a Condition's own ``with`` is a Python-level call on
        # every closed-loop query); leaders wait on the Condition over the same lock
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self._leader: Lane | None = None
        self._idle = 0
        self._connecting = 0  # grown lanes not connected yet: spares to come
        self._running = 0
        self._consecutive = 0

    # -- set-up --------------------------------------------------------------------------
    def setup(self, n: int) -> None:
        """``n`` lanes, connected before the clock starts."""
        for _ in range(n):
            lane = Lane(self, len(self.lanes))
            self.lanes.append(lane)
            self.feed.prepare(lane)

    def start(self, t0: float, limit_s: float = 0.0) -> None:
        """Start at ``t0``; with ``limit_s`` nothing is launched after ``t0 + limit_s``."""
        self.t0 = t0
        self.deadline = t0 + limit_s if limit_s else math.inf
        with self.cond:
            self._running = len(self.lanes)
        if not self.lanes:
            self.finished.set()
        for lane in self.lanes:
            lane.start()

    def close(self) -> None:
        for lane in list(self.lanes):
            lane.close()

    # -- what lanes share -----------------------------------------------------------------
    def lead(self, lane: Lane) -> Slot | None:
        """The next request for ``lane`` (None: nothing left). With ``one_leader`` a timed
        feed's lane first waits to be the leader: the leader alone claims and waits on
        the clock."""
        feed, schedule = self.feed, self.feed.schedule
        one_leader = self.policy.one_leader and schedule.timed
        with self.lock:
            if one_leader:
                while self._leader is not None and not self.stop.is_set() and not self.exhausted:
                    self._idle += 1
                    self.cond.wait(0.5)
                    self._idle -= 1
            if self.stop.is_set() or self.exhausted or time.monotonic() >= self.deadline:
                return None
            slot = feed.claim(self, lane, self.claimed)
            if slot is not None and schedule.timed:
                slot.planned = self.t0 + schedule.at(self.claimed)
            if slot is None or (slot.planned is not None and slot.planned >= self.deadline):
                self.exhausted = True  # the schedule is over: idle lanes return
                self.cond.notify_all()
                return None
            self.claimed += 1
            if one_leader:
                self._leader = lane
            return slot

    def hand_off(self, lane: Lane) -> None:
        """The request's time has come: it starts and, with ``one_leader``, an idle lane
        leads next. Otherwise nothing is shared: the counts are the lane's own (a lock
        here cost closed-loop QPS, see docs/measured.md)."""
        lane.sent += 1
        if self._leader is not lane:  # only this lane makes itself the leader: no lock to read it
            return
        grow = False
        with self.cond:
            self._leader = None
            self.cond.notify()
            # lanes still connecting count as spares: a server slow to accept connections
            # would otherwise get a new one at every hand-off (measured: 512 connections
            # and a collapse at 10x on a saturated server)
            grow = (self.policy.grow_to > len(self.lanes) and not self.stop.is_set()
                    and self._idle + self._connecting <= SPARE_LANES)
            if grow:
                grown = Lane(self, len(self.lanes), grown=True)
                self.lanes.append(grown)
                self._running += 1
                self._connecting += 1
        if grow:
            grown.start()

    def resign(self, lane: Lane) -> None:
        """``lane`` leaves without sending what it claimed (stopped, or it failed)."""
        with self.cond:
            if self._leader is lane:
                self._leader = None
                self.cond.notify()

    def connected(self) -> None:
        with self.cond:
            self._connecting -= 1

    def succeeded(self) -> None:
        self._consecutive = 0

    def failed(self, message: str) -> None:
        policy = self.policy
        with self.cond:
            self._consecutive += 1
            if not policy.continue_on_errors:
                self.failure = self.failure or message
                self._stop()
            elif policy.max_consecutive_errors and self._consecutive >= policy.max_consecutive_errors:
                self.failure = self.failure or f"stopped after {self._consecutive} consecutive errors; last: {message}"
                self._stop()

    def lost(self, message: str) -> None:
        with self.cond:
            self.fatal = self.fatal or message
            self._stop()

    def halt(self) -> None:
        """Stop on purpose (Ctrl-C, a decided capacity step, the parent's word): the
        schedule ends now, so what was planned after this moment is not counted as due."""
        with self.cond:
            self.deadline = min(self.deadline, time.monotonic())
            self._stop()

    def _stop(self) -> None:  # under the lock
        self.stop.set()
        self.cond.notify_all()

    def lane_exit(self) -> None:
        with self.cond:
            self._running -= 1
            if self._running <= 0:
                self.ended_at = time.monotonic()
                self.finished.set()
            self.cond.notify_all()

    # -- status --------------------------------------------------------------------------
    def alive(self) -> bool:
        return not self.finished.is_set()

    def join(self, timeout: float) -> None:
        """Wait for the lanes; a lane stuck in a long query is abandoned (daemon thread)."""
        self.finished.wait(timeout)
        if self.ended_at is None:
            self.ended_at = time.monotonic()

    def due(self) -> int | None:
        """Timed feeds: the requests planned so far (up to the end, once the lanes ended
        or stopped); None for an untimed feed."""
        schedule = self.feed.schedule
        if not schedule.timed or not self.t0:
            return None
        return schedule.due(min(self.ended_at or time.monotonic(), self.deadline) - self.t0)

    @property
    def started(self) -> int:
        """Requests sent (or refused) so far."""
        return sum(lane.sent for lane in list(self.lanes))

    @property
    def in_flight(self) -> int:
        return sum(lane.sent - lane.answered for lane in list(self.lanes))

    @property
    def oldest_in_flight(self) -> float | None:
        """When the longest-running request in flight was sent (monotonic), None when none is."""
        return min((t for lane in list(self.lanes) if (t := lane.since) is not None), default=None)

    @property
    def late(self) -> int:
        """Timed requests that started more than ``LATE_MS`` after their planned time."""
        return sum(lane.late for lane in list(self.lanes))

    def elapsed(self) -> float:
        """The clock's start to the end: the lanes' last answer, or, for a timed feed that
        answered sooner, the end of the time its requests were planned in (--rate 50 -t 5:
        5 s, not the 4.98 s to the 250th start, which read 50.19 QPS achieved)."""
        if not self.t0:
            return 0.0
        end = self.ended_at or time.monotonic()
        schedule = self.feed.schedule
        if schedule.timed and self.ended_at is not None:
            planned = self.claimed if self.exhausted else (self.due() or 0)  # -i N: its N, no more
            end = max(end, min(self.t0 + schedule.end(planned), self.deadline))
        return max(0.0, end - self.t0)


class Lane(threading.Thread):
    """One connection (to each place the feed sends to) and the loop that drives it."""

    def __init__(self, lanes: Lanes, index: int, grown: bool = False) -> None:
        super().__init__(name=f"chbench-{lanes.name}-{index}", daemon=True)
        self.lanes = lanes
        self.index = index
        self.grown = grown  # opened while sending: connects on its own thread first
        self.targets: dict[Any, Target] = {}  # the feed's connections, by its key
        self.late = 0
        self.sent = 0  # requests this lane started (written by this lane only)
        self.answered = 0  # and those that came back, however
        self.since: float | None = None  # when the request in flight was sent (cleared once its outcome is in)
        self.state: Any = None  # the feed's own per-lane state

    def close(self) -> None:
        for t in list(self.targets.values()):
            with contextlib.suppress(Exception):
                t.close()

    def run(self) -> None:
        lanes = self.lanes
        try:
            if self.grown:
                try:
                    lanes.feed.prepare(self)
                finally:
                    lanes.connected()
            self._loop()
        except ChbenchError as e:  # a lane that cannot connect: the server is gone or refuses
            lanes.lost(str(e))
        except Exception as e:  # noqa: BLE001 - never die silently: stop the lanes with the reason
            lanes.lost(f"internal error in a {lanes.name}: {type(e).__name__}: {e}")
        finally:
            self.since = None
            lanes.resign(self)
            lanes.lane_exit()

    def _loop(self) -> None:
        lanes = self.lanes
        feed, stop, timeout = lanes.feed, lanes.stop, lanes.policy.timeout
        done = 0
        while True:
            slot = lanes.lead(self)
            if slot is None:
                return
            target = feed.connection(self, slot.where)  # opened while there is time
            planned = slot.planned
            if planned is not None:
                while True:
                    wait = planned - time.monotonic()
                    if wait <= 0 or stop.is_set():
                        break
                    time.sleep(wait if wait < 0.05 else 0.05)
                if stop.is_set():
                    return
            lanes.hand_off(self)
            sent = time.monotonic()
            if planned is not None and (sent - planned) * 1000.0 > LATE_MS:
                self.late += 1
            if target is None:  # refused there: an error of its own, not sent
                self.answered += 1
                feed.refused(self, slot, sent)
                continue
            self.since = sent
            try:
                s = target.execute(slot.sql, slot.settings, slot.query_id, timeout)
            except QueryError as e:
                self.answered += 1
                if stop.is_set() and timeout is None:
                    return  # abandoned at the end of the run: not the server's fault
                feed.failed(self, slot, sent, time.monotonic(), e.code or 0, e.message, False)
                self.since = None
                said = e.message if not e.code or e.message.startswith("Code:") else f"Code: {e.code}. {e.message}"
                lanes.failed(f"{target.url}: {said}")  # HTTP's message starts with its code, the native one not always
                continue
            except ServerLost as e:
                self.answered += 1
                if not stop.is_set():
                    feed.failed(self, slot, sent, time.monotonic(), 0, str(e), True)
                    lanes.lost(str(e))
                return
            end = time.monotonic()
            self.answered += 1
            feed.ok(self, slot, sent, end, s)
            self.since = None  # after its outcome is recorded: a reader of oldest_in_flight then finds it there
            lanes.succeeded()
            done += 1
            feed.after(self, target, done)
