"""Sending a captured workload to one target with its original timing.

Open loop (the default): query i is due at ``t0 + t_i / speed``, whatever happened to
the queries before it. A pool of lanes (one connection each, per database) takes turns
as the *leader*: the leader claims the next due query, sleeps until its planned time,
hands leadership to an idle lane and sends. So queries are claimed in order, only one
lane waits on the clock, and a slow query never holds back the next one: when no lane
is idle at a hand-off, a new one is opened in the background (the pool starts with as
many lanes as the captured timing needs at this speed, plus spares, so that is rare). A
query that starts late is counted (``late``: more than 5 ms, as ``chbench load``), and
its latency counts from its planned time, so a stall shows as latency, never as a
quietly thinner load.

Sequential mode sends one query after another on one lane, without timing."""

from __future__ import annotations

import bisect
import contextlib
import heapq
import threading
import time
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from chbench.errors import ChbenchError, ConnectError, QueryError, ServerLost
from chbench.targets import Credentials, Target, make_target
from chbench.targets.base import parse_exception_code
from chbench.targets.url import parse_target_url

LATE_MS = 5.0  # a start later than this after its planned time is late (as chbench load)
SPARE_LANES = 4  # idle lanes kept ready beyond what the captured timing needs
STOP_GRACE_S = 2.0  # after a stop, how long queries still running may take to answer


@dataclass(slots=True)
class Item:
    """One query to send: its position in the workload, offset and what it runs with."""

    index: int
    t: float
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
            if code and message is not None:
                self.errors.setdefault(code, message)

    def __len__(self) -> int:
        return len(self.index)

    def to_json(self) -> dict[str, Any]:
        with self.lock:
            return {"index": list(self.index), "hash": list(self.hash_id),
                    "planned_s": [round(v, 6) for v in self.planned_s],
                    "lateness_ms": [round(v, 3) for v in self.lateness_ms],
                    "latency_ms": [round(v, 3) for v in self.latency_ms],
                    "service_ms": [round(v, 3) for v in self.service_ms],
                    "error_code": list(self.error_code), "captured_code": list(self.captured_code),
                    "error_messages": {str(c): m for c, m in sorted(self.errors.items())}}


@dataclass
class PlayOptions:
    spec: str
    credentials: Credentials
    speed: float = 1.0
    sequential: bool = False
    timeout: float | None = None
    query_id_prefix: str = ""
    lanes: int = 1  # opened before the start (what the captured timing needs at this speed)
    max_lanes: int = 512
    databases: list[str | None] = field(default_factory=list)  # opened on every lane up front
    offsets: list[float] = field(default_factory=list)  # every query's t, from the clock's start (for "due")


class Player:
    """One target's replay: lanes, the leader hand-off, the samples."""

    def __init__(self, opts: PlayOptions, items: Iterator[Item], side: str) -> None:
        self.opts = opts
        self.items = items
        self.side = side
        self.samples = Samples()
        self.cond = threading.Condition()
        self.leader: ReplayLane | None = None
        self.idle = 0
        self.connecting = 0  # lanes opened during the replay, not connected yet: spares to come
        self.lanes: list[ReplayLane] = []
        self.running = 0
        self.exhausted = False
        self.stop = threading.Event()
        self.finished = threading.Event()
        self.fatal: str | None = None
        self.t0 = 0.0
        self.claimed = 0
        self.in_flight = 0
        self.base_url = parse_target_url(opts.spec, opts.credentials.user, opts.credentials.database)
        # databases this target refuses (missing there): their queries fail one by one
        # with the reason, and the rest of the workload goes on
        self.refused: dict[str | None, tuple[int, str]] = {}

    # -- connections --------------------------------------------------------------------
    def connection(self, database: str | None) -> Target:
        url = self.base_url if database is None else replace(self.base_url, database=database)
        t = make_target(url, self.opts.credentials, light=True)
        t.open()
        return t

    def open_lanes(self) -> None:
        """The lanes the timing needs, connected before the clock starts. The target's
        default database first: if that fails, the target is unreachable (one line)."""
        first = ReplayLane(self, 0)
        first.targets[None] = self.connection(None)
        for db in self.opts.databases:
            if db is not None:
                first.target(db)
        self.lanes.append(first)
        for _ in range(max(1, 1 if self.opts.sequential else self.opts.lanes) - 1):
            lane = ReplayLane(self, len(self.lanes))
            for db in self.opts.databases or [None]:
                lane.target(db)
            self.lanes.append(lane)

    def start(self, t0: float) -> None:
        self.t0 = t0
        with self.cond:
            self.running = len(self.lanes)
        for lane in self.lanes:
            lane.start()

    def spawn(self) -> None:
        """Another lane, connected on a thread of its own (the hand-off never waits)."""
        with self.cond:
            if len(self.lanes) >= self.opts.max_lanes or self.stop.is_set():
                return
            lane = ReplayLane(self, len(self.lanes))
            self.lanes.append(lane)
            self.running += 1
            self.connecting += 1
        lane.start()

    def lane_exit(self) -> None:
        with self.cond:
            self.running -= 1
            if self.running <= 0:
                self.finished.set()
            self.cond.notify_all()

    def lost(self, message: str) -> None:
        with self.cond:
            self.fatal = self.fatal or message
            self.stop.set()
            self.cond.notify_all()

    def halt(self) -> None:
        with self.cond:
            self.stop.set()
            self.cond.notify_all()

    def close(self) -> None:
        for lane in self.lanes:
            lane.close()

    # -- the leader hand-off ------------------------------------------------------------
    def lead(self, lane: ReplayLane) -> Item | None:
        """Wait to be the leader, then claim the next query (None: nothing left)."""
        with self.cond:
            while self.leader is not None and not self.stop.is_set() and not self.exhausted:
                self.idle += 1
                self.cond.wait(0.5)
                self.idle -= 1
            if self.stop.is_set() or self.exhausted:
                return None
            item = next(self.items, None)
            if item is None:
                self.exhausted = True
                self.cond.notify_all()
                return None
            self.leader = lane
            self.claimed += 1
            return item

    def hand_off(self) -> None:
        with self.cond:
            self.leader = None
            self.in_flight += 1
            # lanes still connecting count as spares: a server slow to accept connections
            # would otherwise get a new one at every hand-off (measured: 512 connections
            # and a collapse at 10x on a saturated server)
            spare = self.idle + self.connecting
            self.cond.notify()
        if spare <= SPARE_LANES and not self.opts.sequential:  # the one woken leads next: keep spares ready
            self.spawn()

    def status(self) -> dict[str, Any]:
        with self.samples.lock:
            sent = len(self.samples.index)
        due = None
        if self.t0 and not self.opts.sequential:
            due = bisect.bisect_right(self.opts.offsets, (time.monotonic() - self.t0) * self.opts.speed)
        waiting = 1 if self.leader is not None else 0  # claimed, its planned time not come yet
        return {"claimed": self.claimed, "started": self.claimed - waiting, "sent": sent, "in_flight": self.in_flight,
                "lanes": len(self.lanes), "due": due}


class ReplayLane(threading.Thread):
    def __init__(self, player: Player, number: int) -> None:
        super().__init__(name=f"chbench-replay-{player.side}-{number}", daemon=True)
        self.player = player
        self.number = number
        self.targets: dict[str | None, Target] = {}

    def target(self, database: str | None) -> Target | None:
        """This lane's connection to ``database``; None when the target refuses it."""
        t = self.targets.get(database)
        if t is None:
            if database in self.player.refused:
                return None
            try:
                t = self.targets[database] = self.player.connection(database)
            except ConnectError as e:
                if database is None:
                    raise
                self.player.refused[database] = (parse_exception_code(str(e)) or -1, str(e))
                return None
        return t

    def close(self) -> None:
        for t in self.targets.values():
            with contextlib.suppress(Exception):
                t.close()

    def run(self) -> None:
        p = self.player
        try:
            if not self.targets:  # a lane opened during the replay: connected before it leads
                try:
                    for db in p.opts.databases or [None]:
                        self.target(db)
                finally:
                    with p.cond:
                        p.connecting -= 1
            while True:
                item = p.lead(self)
                if item is None:
                    return
                if not self._send(item):
                    return
        except ChbenchError as e:  # a lane that cannot connect: the server is gone or refuses
            p.lost(str(e))
        except Exception as e:  # noqa: BLE001 - never die silently: stop the side with the reason
            p.lost(f"internal error in a replay connection: {type(e).__name__}: {e}")
        finally:
            if p.leader is self:
                with p.cond:
                    p.leader = None
                    p.cond.notify()
            p.lane_exit()

    def _send(self, item: Item) -> bool:
        p = self.player
        planned = p.t0 + item.t / p.opts.speed
        target = self.target(item.database)  # a database not opened yet: while there is time
        if not p.opts.sequential:
            while True:
                wait = planned - time.monotonic()
                if wait <= 0 or p.stop.is_set():
                    break
                time.sleep(wait if wait < 0.05 else 0.05)
        if p.stop.is_set():
            with p.cond:
                p.leader = None
                p.cond.notify()
            return False
        p.hand_off()
        sent = time.monotonic()
        if target is None:  # its database is refused there: an error of its own, not sent
            code, refusal = p.refused[item.database]
            with p.cond:
                p.in_flight -= 1
            p.samples.add(item, planned - p.t0, (sent - planned) * 1000.0, 0.0, 0.0, code, refusal)
            return True
        if p.opts.sequential:
            planned = sent
        qid = f"{p.opts.query_id_prefix}{p.side}-{item.index}" if p.opts.query_id_prefix else ""
        code, message = 0, None
        try:
            target.execute(item.sql, item.settings, qid, p.opts.timeout)
        except QueryError as e:
            code, message = e.code or -1, e.message
        except ServerLost as e:
            code, message = -1, str(e)
            p.lost(str(e))
        finally:
            with p.cond:
                p.in_flight -= 1
        end = time.monotonic()
        p.samples.add(item, planned - p.t0, (sent - planned) * 1000.0, (end - planned) * 1000.0,
                      (end - sent) * 1000.0, code, message)
        return not p.stop.is_set()


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
    """Start every player on one clock and wait; ``tick`` runs every ``tick_s`` (progress,
    checkpoints). Returns True when interrupted (Ctrl-C: sending stops, what is in flight
    may finish for ``STOP_GRACE_S``)."""
    t0 = time.monotonic() + lead_s
    for pl in players:
        pl.start(t0)
    interrupted = False
    stopped: dict[int, float] = {}

    def done(i: int, pl: Player) -> bool:
        if pl.finished.is_set():
            return True
        if pl.stop.is_set():  # lanes still in a long query are abandoned after a grace
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
            pl.halt()
        deadline = time.monotonic() + STOP_GRACE_S
        for pl in players:
            pl.finished.wait(max(0.0, deadline - time.monotonic()))
    return interrupted
