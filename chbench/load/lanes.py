"""A load level's feed for the lanes (``core/lanes.py``): what clickhouse-benchmark's
closed loop or an open-loop schedule sends, to which host, and where each outcome goes.

Closed loop (clickhouse-benchmark): a lane sends its next query as soon as the last
one answered; latency is the query's own time. Open loop (``--rate``): request k has a
planned start time (fixed spacing or Poisson arrivals) and latency counts from it, so a
stalled server shows up as latency and as late or dropped requests, never as a quietly
lower offered load (no coordinated omission).

Worker processes (``--workers N``) run the same lanes and send their stats to the
parent through a queue (``process_main``; see ``levels.py``)."""

from __future__ import annotations

import contextlib
import random
import signal
import time
from typing import Any

from chbench import messages
from chbench.core.lanes import STOP_GRACE_S, Lane, Lanes, Policy, Slot
from chbench.errors import ChbenchError, QueryError, ServerLost
from chbench.load.config import LoadConfig
from chbench.load.recorder import Recorder
from chbench.targets import Sample, Target, make_target
from chbench.targets.base import admin_query_id
from chbench.workload.mix import Mix

TICK_S = 0.2  # how often a worker process reports to the parent
ROTATE_EVERY = 25  # comparison mode: a fresh connection after this many queries (see _rotate)


def open_target(spec: str, cfg: LoadConfig) -> Target:
    """A connection for a lane: connect without the full probe (the parent probed)."""
    t = make_target(spec, cfg.credentials, light=True, stage=cfg.stage)
    t.open()
    return t


class LaneState:
    """A load lane's own choices: its seeded generator and, for ClickBench's stress, its
    permutation of the queries."""

    __slots__ = ("rng", "order", "picked")

    def __init__(self, cfg: LoadConfig, index: int) -> None:
        self.rng = random.Random(cfg.seed * 7919 + index)
        self.order: list[int] = []  # cfg.lane_order: this lane's permutation of the queries, cycled
        if cfg.lane_order:
            self.order = list(range(len(cfg.queries)))
            random.Random(cfg.seed * 1000 + index).shuffle(self.order)
        self.picked = 0


class LoadFeed:
    """What a load level sends: the workload's queries (weighted mix, or each lane's own
    order) over the hosts, on clickhouse-benchmark's closed loop or an open-loop schedule
    (fixed spacing or Poisson arrivals); outcomes into a :class:`Recorder`."""

    def __init__(self, cfg: LoadConfig, settings: list[dict[str, str]], worker: int = 0) -> None:
        self.cfg = cfg
        self.schedule = cfg.schedule()
        # per host, per query: the host's settings with the query's own on top (merged once)
        self.settings = [[{**hs, **q.settings} if q.settings else hs for q in cfg.queries] for hs in settings]
        self.worker = worker
        self.sqls = [q.sql for q in cfg.queries]
        self.members = cfg.members()  # the hosts of each target
        self.mix = Mix([q.weight for q in cfg.queries], cfg.randomize, cfg.seed, offset=worker)
        self.recorder = Recorder(cfg.latency_limit_ms, cfg.open_loop, cfg.raw, spans=cfg.precise)

    # -- what each request sends, where (under the lanes' lock) ---------------------------
    def claim(self, lanes: Lanes, lane: Lane, k: int) -> Slot | None:
        cfg = self.cfg
        if cfg.iterations and k >= cfg.iterations:
            return None
        st: LaneState = lane.state
        n_targets = len(self.members)
        hosts = self.members[0 if n_targets == 1 else st.rng.randrange(n_targets)]
        if len(hosts) == 1:
            h = hosts[0]
        else:  # a cluster target (or --roundrobin): this query's host, per-host stats
            h = hosts[st.rng.randrange(len(hosts)) if cfg.pick == "random" else k % len(hosts)]
        q = st.order[st.picked % len(st.order)] if st.order else self.mix.pick(k)
        st.picked += 1
        qid = f"{cfg.query_id_prefix}{self.worker}-{lane.index}-{k}" if cfg.query_id_prefix else ""
        return Slot(k, h, self.sqls[q], self.settings[h][q], qid, (h, q))

    # -- connections ---------------------------------------------------------------------
    def prepare(self, lane: Lane) -> None:
        lane.state = LaneState(self.cfg, lane.index)
        for h, spec in enumerate(self.cfg.targets):
            lane.targets[h] = open_target(spec, self.cfg)

    def connection(self, lane: Lane, where: Any) -> Target | None:
        return lane.targets[where]

    def after(self, lane: Lane, target: Target, done: int) -> None:
        cfg = self.cfg
        if cfg.reconnect:
            if done % cfg.reconnect == 0:
                for t in lane.targets.values():
                    t.reconnect()  # clickhouse-benchmark's --reconnect: the next query connects
        elif len(self.members) > 1 and done % ROTATE_EVERY == 0:
            _rotate(target)

    # -- outcomes ------------------------------------------------------------------------
    def ok(self, lane: Lane, slot: Slot, sent: float, end: float, s: Sample) -> None:
        service = s.client_ms or 0.0
        latency = (end - slot.planned) * 1000.0 if slot.planned is not None else service
        self.recorder.ok(slot.tag, latency, service, s.read_rows, s.read_bytes, s.result_rows, s.result_bytes,
                         (sent, end))

    def failed(self, lane: Lane, slot: Slot, sent: float, end: float, code: int, message: str, lost: bool) -> None:
        if not lost:  # a lost server ends the level: its last query is not the workload's error
            self.recorder.error(slot.tag, code, message)

    def refused(self, lane: Lane, slot: Slot, sent: float) -> None:  # every host was probed: never refused
        raise AssertionError("a load host refused a connection it had opened")


def _rotate(target: Target) -> None:
    """Comparison mode: replace the connection, outside any timing.

    Two connections to the *same* server differ by a few percent for their whole life
    (which server thread and core serves them): with one connection per host, the same
    server twice was called different by the t-test in 3 of 25 A/A runs here. Fresh
    connections every 25 queries spread that effect over both sides (0 of 25). The new
    connection is opened and primed with an unrecorded SELECT 1."""
    target.reconnect()
    with contextlib.suppress(QueryError, ServerLost):  # a real failure shows on the next query
        target.execute("SELECT 1", {}, admin_query_id(), 30.0)


class LoadLanes(Lanes):
    """A level's lanes in one process, fed by a :class:`LoadFeed`."""

    def __init__(self, cfg: LoadConfig, settings: list[dict[str, str]], worker: int = 0) -> None:
        self.load = LoadFeed(cfg, settings, worker)
        self.recorder = self.load.recorder
        super().__init__(self.load, Policy(timeout=cfg.timeout, continue_on_errors=cfg.continue_on_errors,
                                           max_consecutive_errors=cfg.max_consecutive_errors), "lane")

    def connect(self) -> None:
        """Open the level's lanes (one per ``-c``); on failure close what opened."""
        try:
            self.setup(self.load.cfg.concurrency)
        except BaseException:
            self.close()
            raise

    def begin(self, t0: float) -> None:
        self.start(t0, self.load.cfg.timelimit)

    def in_flight_now(self) -> dict[str, Any]:
        """When this was read and when the longest-running query in flight was sent
        (monotonic; None: none in flight): ``load/intervals.py`` reports a --precise
        interval once a reading after its end finds no query it started."""
        return {"read_at": time.monotonic(), "oldest": self.oldest_in_flight}

    def counts(self) -> dict[str, Any]:
        """The level's counters (the parent sums those of every process)."""
        st: dict[str, Any] = {"started": self.started, "late": self.late, "fatal": self.fatal,
                              "failure": self.failure, "elapsed": self.elapsed(), **self.in_flight_now()}
        due = self.due()
        if due is not None:
            st["due"] = min(due, self.load.cfg.iterations) if self.load.cfg.iterations else due
        return st


def process_main(cfg: LoadConfig, settings: list[dict[str, str]], worker: int, queue: Any, go: Any,
                 start_at: Any, stop: Any) -> None:
    """Entry point of a worker process (multiprocessing, spawn)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and tells us
    lanes = LoadLanes(cfg, settings, worker)
    try:
        lanes.connect()
    except ChbenchError as e:
        queue.put(messages.Failed(worker=worker, message=str(e)))
        return
    queue.put(messages.Ready(worker=worker))
    while not go.wait(0.1):
        if stop.is_set():
            lanes.close()
            return
    lanes.begin(time.monotonic() + (start_at.value - time.time()))
    while lanes.alive() and not lanes.stop.is_set():
        if stop.wait(TICK_S):
            lanes.halt()
        status = lanes.counts()  # before the swap: a query its "oldest" no longer holds is in these stats
        queue.put(messages.Measured(worker=worker, stats=lanes.recorder.swap(), status=status))
    lanes.join(STOP_GRACE_S)
    status = lanes.counts()
    queue.put(messages.Done(worker=worker, stats=lanes.recorder.swap(), status=status))
    lanes.close()
