"""One process's share of a load run: its connections ("lanes"), each a thread that
claims the next request, sends it and records the outcome.

Closed loop (clickhouse-benchmark): a lane sends its next query as soon as the last
one answered; latency is the query's own time. Open loop (``--rate``): request k has a
planned start time (fixed spacing or Poisson arrivals); a lane waits for it, or starts
at once if it is already behind, and latency counts from the planned time. A stalled
server therefore shows up as latency and as late or dropped requests, never as a
quietly lower offered load (no coordinated omission).

Worker processes (``--workers N``) run the same core and send their stats to the
parent through a queue; see ``levels.py``."""

from __future__ import annotations

import contextlib
import math
import random
import signal
import threading
import time
from typing import Any

from chbench import messages
from chbench.errors import ChbenchError, QueryError, ServerLost
from chbench.load.config import LATE_MS, LoadConfig
from chbench.load.recorder import Recorder
from chbench.targets import Target, make_target
from chbench.workload.mix import Mix

TICK_S = 0.2  # how often a worker process reports to the parent
STOP_GRACE_S = 1.0  # after a stop, how long queries still running may take to answer


def open_target(spec: str, cfg: LoadConfig) -> Target:
    """A connection for a lane: connect without the full probe (the parent probed)."""
    t = make_target(spec, cfg.credentials, light=True, stage=cfg.stage)
    t.open()
    return t


class Core:
    """The lanes of one process and what they share."""

    def __init__(self, cfg: LoadConfig, settings: list[dict[str, str]], worker: int = 0) -> None:
        self.cfg = cfg
        # per host, per query: the host's settings with the query's own on top (merged once)
        self.settings = [[{**hs, **q.settings} if q.settings else hs for q in cfg.queries] for hs in settings]
        self.worker = worker
        self.sqls = [q.sql for q in cfg.queries]
        self.members = cfg.members()  # the hosts of each target
        self.mix = Mix([q.weight for q in cfg.queries], cfg.randomize, cfg.seed, offset=worker)
        self.recorder = Recorder(cfg.latency_limit_ms, cfg.open_loop, cfg.raw)
        self.stop = threading.Event()
        self.fatal: str | None = None  # the server is gone (exit 3)
        self.failure: str | None = None  # a query failed and the run stops (exit 1)
        self.lanes: list[Lane] = []
        self._lock = threading.Lock()
        self._claimed = 0
        self._started = 0
        self._consecutive = 0
        self._rng = random.Random(cfg.seed)
        self._next_time = 0.0
        self.t0 = 0.0
        self.deadline = math.inf
        self.ended_at: float | None = None
        self.finished = threading.Event()  # every lane has returned
        self._running = 0

    # -- set-up --------------------------------------------------------------------------
    def setup(self) -> None:
        for i in range(self.cfg.concurrency):
            lane = Lane(self, i)
            self.lanes.append(lane)
            for spec in self.cfg.targets:
                lane.targets.append(open_target(spec, self.cfg))

    def start(self, t0: float) -> None:
        self.t0 = t0
        self.deadline = t0 + self.cfg.timelimit if self.cfg.timelimit else math.inf
        self._next_time = t0
        self._running = len(self.lanes)
        if not self.lanes:
            self.finished.set()
        for lane in self.lanes:
            lane.start()

    def lane_exit(self) -> None:
        with self._lock:
            self._running -= 1
            if self._running <= 0:
                self.ended_at = time.monotonic()
                self.finished.set()

    def close(self) -> None:
        for lane in self.lanes:
            for t in lane.targets:
                with contextlib.suppress(Exception):
                    t.close()

    # -- shared by lanes -----------------------------------------------------------------
    def claim(self) -> tuple[int, float | None] | None:
        cfg = self.cfg
        with self._lock:
            if self.stop.is_set():
                return None
            k = self._claimed
            if cfg.iterations and k >= cfg.iterations:
                return None
            planned: float | None = None
            if cfg.open_loop:
                if cfg.poisson:
                    if k:
                        self._next_time += self._rng.expovariate(cfg.rate)
                    planned = self._next_time
                else:
                    planned = self.t0 + cfg.phase + k / cfg.rate
                if planned >= self.deadline:
                    return None
            if time.monotonic() >= self.deadline:  # -t: stop launching; what is still due is dropped
                return None
            self._claimed = k + 1
            return k, planned

    def begun(self) -> None:
        with self._lock:
            self._started += 1

    def succeeded(self) -> None:
        self._consecutive = 0

    def failed(self, message: str) -> None:
        cfg = self.cfg
        with self._lock:
            self._consecutive += 1
            if not cfg.continue_on_errors:
                self.failure = self.failure or message
                self.stop.set()
            elif cfg.max_consecutive_errors and self._consecutive >= cfg.max_consecutive_errors:
                self.failure = self.failure or f"stopped after {self._consecutive} consecutive errors; last: {message}"
                self.stop.set()

    def halt(self) -> None:
        """Stop on purpose (Ctrl-C, a decided capacity step, the parent's word): the
        schedule ends now, so what was planned after this moment is not counted as due."""
        with self._lock:
            self.deadline = min(self.deadline, time.monotonic())
        self.stop.set()

    def lost(self, message: str) -> None:
        with self._lock:
            self.fatal = self.fatal or message
            self.stop.set()

    # -- status --------------------------------------------------------------------------
    def alive(self) -> bool:
        return not self.finished.is_set()

    def join(self, timeout: float) -> None:
        """Wait for the lanes; a lane stuck in a long query is abandoned (daemon thread)."""
        self.finished.wait(timeout)
        if self.ended_at is None:
            self.ended_at = time.monotonic()

    def due(self, end: float) -> int:
        """Open loop: requests planned before ``end``."""
        cfg = self.cfg
        span = min(end, self.deadline) - self.t0 - cfg.phase
        if span <= 0:
            return 0
        if cfg.poisson:  # started + claimed but waiting + not yet drawn, all before end
            limit = self.t0 + span
            with self._lock:
                n = self._started + sum(1 for lane in self.lanes if lane.waiting is not None and lane.waiting < limit)
                t = self._next_time
                while True:
                    t += self._rng.expovariate(cfg.rate)
                    if t >= limit:
                        break
                    n += 1
                self._next_time = t
        else:
            n = math.ceil(span * cfg.rate)
        return min(n, cfg.iterations) if cfg.iterations else n

    def status(self, final: bool = False) -> dict[str, Any]:
        now = self.ended_at or time.monotonic()
        st: dict[str, Any] = {
            "started": self._started,
            "late": sum(lane.late for lane in self.lanes),
            "fatal": self.fatal,
            "failure": self.failure,
            "elapsed": max(0.0, now - self.t0) if self.t0 else 0.0,
        }
        if self.cfg.open_loop and self.t0:
            # a Poisson count draws the rest of the schedule: only once the run is over
            st["due"] = self.due(now) if final or not self.cfg.poisson else self._claimed
        return st


ROTATE_EVERY = 25  # comparison mode: a fresh connection after this many queries (see _rotate)


class Lane(threading.Thread):
    """One connection (to each host) and the loop that drives it."""

    def __init__(self, core: Core, index: int) -> None:
        super().__init__(name=f"chbench-lane-{index}", daemon=True)
        self.core = core
        self.index = index
        self.targets: list[Target] = []
        self.late = 0
        self.waiting: float | None = None  # open loop: planned time of a claimed request not started yet
        self.rng = random.Random(core.cfg.seed * 7919 + index)
        self.order: list[int] = []  # cfg.lane_order: this lane's permutation of the queries, cycled
        if core.cfg.lane_order:
            self.order = list(range(len(core.cfg.queries)))
            random.Random(core.cfg.seed * 1000 + index).shuffle(self.order)

    def run(self) -> None:
        try:
            self._loop()
        except Exception as e:  # noqa: BLE001 - never die silently: stop the run with the reason
            self.core.lost(f"internal error in a load connection: {type(e).__name__}: {e}")
        finally:
            self.core.lane_exit()

    def _rotate(self, target: Target) -> None:
        """Comparison mode: replace the connection, outside any timing.

        Two connections to the *same* server differ by a few percent for their whole
        life (which server thread and core serves them): with one connection per host,
        the same server twice was called different by the t-test in 3 of 25 A/A runs
        here. Fresh connections every 25 queries spread that effect over both sides
        (0 of 25). The new connection is opened and primed with an unrecorded SELECT 1."""
        target.reconnect()
        with contextlib.suppress(QueryError, ServerLost):  # a real failure shows on the next query
            target.execute("SELECT 1", {}, "", 30.0)

    def _loop(self) -> None:
        core, cfg = self.core, self.core.cfg
        rec, stop, sqls, settings = core.recorder, core.stop, core.sqls, core.settings
        members = core.members
        n_targets = len(members)
        random_pick = cfg.pick == "random"
        prefix = cfg.query_id_prefix
        done = done_or_failed = 0
        while True:
            slot = core.claim()
            if slot is None:
                return
            k, planned = slot
            if planned is not None:
                self.waiting = planned
                while True:
                    wait = planned - time.monotonic()
                    if wait <= 0 or stop.is_set():
                        break
                    time.sleep(wait if wait < 0.05 else 0.05)
                if stop.is_set():
                    return
                if (time.monotonic() - planned) * 1000.0 > LATE_MS:
                    self.late += 1
            hosts = members[0 if n_targets == 1 else self.rng.randrange(n_targets)]
            if len(hosts) == 1:
                h = hosts[0]
            else:  # a cluster target (or --roundrobin): this query's host, per-host stats
                h = hosts[self.rng.randrange(len(hosts)) if random_pick else k % len(hosts)]
            q = self.order[done_or_failed % len(self.order)] if self.order else core.mix.pick(k)
            done_or_failed += 1
            key = (h, q)
            target = self.targets[h]
            qid = f"{prefix}{core.worker}-{self.index}-{k}" if prefix else ""
            core.begun()
            self.waiting = None
            try:
                s = target.execute(sqls[q], settings[h][q], qid, cfg.timeout)
            except QueryError as e:
                if stop.is_set() and cfg.timeout is None:
                    return  # abandoned at the end of the run: not the server's fault
                rec.error(key, e.code, e.message)
                core.failed(f"{target.url}: Code: {e.code}. {e.message}" if e.code else f"{target.url}: {e.message}")
                continue
            except ServerLost as e:
                if not stop.is_set():
                    core.lost(str(e))
                return
            end = time.monotonic()
            service = s.client_ms or 0.0
            latency = (end - planned) * 1000.0 if planned is not None else service
            rec.ok(key, latency, service, s.read_rows, s.read_bytes, s.result_rows, s.result_bytes)
            core.succeeded()
            done += 1
            if cfg.reconnect:
                if done % cfg.reconnect == 0:
                    for t in self.targets:
                        t.reconnect()  # clickhouse-benchmark's --reconnect: the next query connects
            elif n_targets > 1 and done % ROTATE_EVERY == 0:
                self._rotate(target)


def process_main(cfg: LoadConfig, settings: list[dict[str, str]], worker: int, queue: Any, go: Any,
                 start_at: Any, stop: Any) -> None:
    """Entry point of a worker process (multiprocessing, spawn)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and tells us
    core = Core(cfg, settings, worker)
    try:
        core.setup()
    except ChbenchError as e:
        queue.put(messages.Failed(worker=worker, message=str(e)))
        core.close()
        return
    queue.put(messages.Ready(worker=worker))
    while not go.wait(0.1):
        if stop.is_set():
            core.close()
            return
    core.start(time.monotonic() + (start_at.value - time.time()))
    while core.alive() and not core.stop.is_set():
        if stop.wait(TICK_S):
            core.halt()
        queue.put(messages.Measured(worker=worker, stats=core.recorder.swap(), status=core.status()))
    core.join(STOP_GRACE_S)
    queue.put(messages.Done(worker=worker, stats=core.recorder.swap(), status=core.status(final=True)))
    core.close()
