"""Sending a captured workload to one target with its original timing, on the lanes
(``core/lanes.py``).

Open loop (the default): query i is due at ``t0 + t_i / speed``, whatever happened to
the queries before it. The lanes take turns as the *leader* (one waits on the clock,
queries are claimed in order, a slow query never holds back the next one) and grow:
when no lane is idle at a hand-off, a new one is opened in the background (the pool
starts with as many lanes as the captured timing needs at this speed, plus spares, so
that is rare). A query that starts late is counted (``late``: more than 5 ms, as
``chbench load``), and its latency counts from its planned time, so a stall shows as
latency, never as a quietly thinner load.

Each lane keeps a connection per captured database; a database the target refuses
makes its queries fail one by one with the reason while the rest goes on.

Sequential mode sends one query after another on one lane, without timing."""

from __future__ import annotations

import heapq
import threading
import time
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from chbench.core.lanes import STOP_GRACE_S, Lane, Lanes, Policy, Slot
from chbench.core.schedule import Schedule
from chbench.errors import ConnectError
from chbench.stats.histogram import Histogram
from chbench.targets import Credentials, Sample, Target, make_target
from chbench.targets.base import parse_exception_code
from chbench.targets.url import parse_target_url


@dataclass(slots=True)
class Item:
    """One query to send: its position in the workload and what it runs with (its time
    comes from the schedule, ``CapturedOffsets``)."""

    index: int
    sql: str
    database: str | None
    settings: dict[str, str]
    hash_id: int  # position in the replay's list of normalized hashes
    captured_code: int = 0  # the exception code it had when captured (0: it succeeded)


class Samples:
    """Every sent query's outcome, in columns (compact: a day of queries fits)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.index = array("q")
        self.hash_id = array("l")
        self.planned_s = array("d")  # planned offset from t0 (s)
        self.lateness_ms = array("d")  # actual send - planned send
        self.latency_ms = array("d")  # answer - planned send
        self.service_ms = array("d")  # answer - actual send
        self.error_code = array("l")  # 0: ok; -1: failed without a code
        self.captured_code = array("l")  # the code it had when captured
        self.errors: dict[int, str] = {}  # one message per code
        # for the live counts, kept as the samples come (a percentile of the columns
        # while the lanes append would copy them all, under the lock, every half second)
        self.failed = 0
        self.lateness = Histogram()

    def add(self, item: Item, planned: float, lateness: float, latency: float, service: float, code: int,
            message: str | None = None) -> None:
        with self.lock:
            self.index.append(item.index)
            self.hash_id.append(item.hash_id)
            self.planned_s.append(planned)
            self.lateness_ms.append(lateness)
            self.latency_ms.append(latency)
            self.service_ms.append(service)
            self.error_code.append(code)
            self.captured_code.append(item.captured_code)
            self.lateness.record(lateness if lateness > 0.0 else 0.0)
            if code:
                self.failed += 1
                if message is not None:
                    self.errors.setdefault(code, message)

    def __len__(self) -> int:
        return len(self.index)

    def to_json(self) -> dict[str, Any]:
        with self.lock:  # copies only (memcpy): the lanes wait for no rounding of a checkpoint
            index, hash_id, planned, lateness, latency, service, code, captured = (
                a[:] for a in (self.index, self.hash_id, self.planned_s, self.lateness_ms, self.latency_ms,
                               self.service_ms, self.error_code, self.captured_code))
            errors = dict(self.errors)
        return {"index": index.tolist(), "hash": hash_id.tolist(), "planned_s": [round(v, 6) for v in planned],
                "lateness_ms": [round(v, 3) for v in lateness], "latency_ms": [round(v, 3) for v in latency],
                "service_ms": [round(v, 3) for v in service], "error_code": code.tolist(),
                "captured_code": captured.tolist(), "error_messages": {str(c): m for c, m in sorted(errors.items())}}


@dataclass
class PlayOptions:
    spec: str
    credentials: Credentials
    schedule: Schedule  # the captured offsets at --speed (CapturedOffsets), or one after another (ClosedLoop)
    timeout: float | None = None
    query_id_prefix: str = ""
    lanes: int = 1  # opened before the start (what the captured timing needs at this speed)
    max_lanes: int = 512
    databases: list[str | None] = field(default_factory=list)  # opened on every lane up front


class ReplayFeed:
    """What one target's replay sends: the captured queries in order, each at its offset
    (or one after another), in its database; every outcome into :class:`Samples`."""

    def __init__(self, opts: PlayOptions, items: Iterator[Item], side: str) -> None:
        self.opts = opts
        self.items = items
        self.side = side
        self.schedule = opts.schedule
        self.samples = Samples()
        self.base_url = parse_target_url(opts.spec, opts.credentials.user, opts.credentials.database)
        # databases this target refuses (missing there): their queries fail one by one
        # with the reason, and the rest of the workload goes on
        self.refusals: dict[str | None, tuple[int, str]] = {}

    def claim(self, lanes: Lanes, lane: Lane, k: int) -> Slot | None:
        item = next(self.items, None)
        if item is None:
            return None
        prefix = self.opts.query_id_prefix
        return Slot(k, item.database, item.sql, item.settings,
                    f"{prefix}{self.side}-{item.index}" if prefix else "", item)

    def prepare(self, lane: Lane) -> None:
        """The first lane opens the target's default database first: if that fails, the
        target is unreachable (one line). Then every captured database."""
        if lane.index == 0:
            self.connection(lane, None)
        for db in self.opts.databases or [None]:
            self.connection(lane, db)

    def connection(self, lane: Lane, where: Any) -> Target | None:
        t = lane.targets.get(where)
        if t is None:
            if where in self.refusals:
                return None
            url = self.base_url if where is None else replace(self.base_url, database=where)
            try:
                t = make_target(url, self.opts.credentials, light=True)
                t.open()
            except ConnectError as e:
                if where is None:
                    raise
                self.refusals[where] = (parse_exception_code(str(e)) or -1, str(e))
                return None
            lane.targets[where] = t
        return t

    def after(self, lane: Lane, target: Target, done: int) -> None:
        pass

    def ok(self, lane: Lane, slot: Slot, sent: float, end: float, sample: Sample) -> None:
        self._add(lane.lanes.t0, slot, sent, end, 0, None)

    def failed(self, lane: Lane, slot: Slot, sent: float, end: float, code: int, message: str, lost: bool) -> None:
        self._add(lane.lanes.t0, slot, sent, end, code or -1, message)

    def refused(self, lane: Lane, slot: Slot, sent: float) -> None:
        code, refusal = self.refusals[slot.where]
        self._add(lane.lanes.t0, slot, sent, None, code, refusal)

    def _add(self, t0: float, slot: Slot, sent: float, end: float | None, code: int, message: str | None) -> None:
        planned = sent if slot.planned is None else slot.planned  # sequential: no schedule to be late for
        latency = service = 0.0
        if end is not None:
            latency, service = (end - planned) * 1000.0, (end - sent) * 1000.0
        self.samples.add(slot.tag, planned - t0, (sent - planned) * 1000.0, latency, service, code, message)


class Player:
    """One target's replay: its lanes and what they sent."""

    def __init__(self, opts: PlayOptions, items: Iterator[Item], side: str) -> None:
        self.opts = opts
        self.feed = ReplayFeed(opts, items, side)
        self.samples = self.feed.samples
        policy = Policy(timeout=opts.timeout, one_leader=True, grow_to=opts.max_lanes if opts.schedule.timed else 0)
        self.lanes = Lanes(self.feed, policy, f"replay-{side}")

    @property
    def fatal(self) -> str | None:
        return self.lanes.fatal

    @property
    def connections(self) -> int:
        return len(self.lanes.lanes)

    def open_lanes(self) -> None:
        """The lanes the timing needs, connected before the clock starts."""
        self.lanes.setup(max(1, self.opts.lanes) if self.opts.schedule.timed else 1)

    def status(self) -> dict[str, Any]:
        """The live counts: requests claimed, started, answered (``sent``) and in flight,
        connections, requests due by now (timed), errors and the lateness p99 so far (ms)."""
        lanes, samples = self.lanes, self.samples
        with samples.lock:
            sent, errors, late_p99 = len(samples.index), samples.failed, samples.lateness.percentile(99)
        return {"claimed": lanes.claimed, "started": lanes.started, "sent": sent, "in_flight": lanes.in_flight,
                "lanes": len(lanes.lanes), "due": lanes.due(), "errors": errors, "lateness_p99_ms": late_p99}

    def close(self) -> None:
        self.lanes.close()


def lanes_needed(offsets: list[float], durations_ms: list[float], speed: float) -> int:
    """The most queries in flight at once if each took its captured time, at ``speed``."""
    ends: list[float] = []
    most = 0
    for t, d in zip(offsets, durations_ms, strict=True):
        start = t / speed
        while ends and ends[0] <= start:
            heapq.heappop(ends)
        heapq.heappush(ends, start + d / 1000.0)
        most = max(most, len(ends))
    return most


def run_players(players: list[Player], lead_s: float, tick: Callable[[], None], tick_s: float = 0.2) -> bool:
    """Start every player on one clock and wait; ``tick`` runs every ``tick_s`` (the
    driver's status event to its observers). Returns True when interrupted (Ctrl-C: sending stops, what is in flight
    may finish for ``STOP_GRACE_S``)."""
    t0 = time.monotonic() + lead_s
    for pl in players:
        pl.lanes.start(t0)
    interrupted = False
    stopped: dict[int, float] = {}

    def done(i: int, pl: Player) -> bool:
        if pl.lanes.finished.is_set():
            return True
        if pl.lanes.stop.is_set():  # lanes still in a long query are abandoned after a grace
            since = stopped.setdefault(i, time.monotonic())
            return time.monotonic() - since > STOP_GRACE_S
        return False

    try:
        while not all([done(i, pl) for i, pl in enumerate(players)]):
            time.sleep(tick_s)
            tick()
    except KeyboardInterrupt:
        interrupted = True
        for pl in players:
            pl.lanes.halt()
        deadline = time.monotonic() + STOP_GRACE_S
        for pl in players:
            pl.lanes.finished.wait(max(0.0, deadline - time.monotonic()))
    return interrupted
