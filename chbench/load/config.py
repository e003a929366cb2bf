"""What a load run is asked to do (picklable: worker processes get a copy)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from chbench.core.schedule import ClosedLoop, FixedRate, Poisson, Schedule
from chbench.targets import Credentials
from chbench.workload import Query


@dataclass
class LoadConfig:
    targets: list[str]  # one spec per host (no secrets); a cluster target is several
    credentials: Credentials
    queries: list[Query]
    setup: list[str] = field(default_factory=list)  # the workload's, once per host before the first level
    teardown: list[str] = field(default_factory=list)  # and after the last
    concurrency: int = 1
    max_concurrency: int = 0  # -C: sweep 1..N
    iterations: int = 0  # 0: no limit
    timelimit: float = 0.0  # seconds, 0: no limit
    randomize: bool = False
    seed: int = 0
    delay: float = 1.0  # seconds between intermediate reports, 0: none
    cumulative: bool = False
    precise: bool = False  # clickhouse-benchmark's --precise: overlap-weighted interval reports (load/intervals.py)
    confidence: int = 5
    stage: str = "complete"
    query_id_prefix: str = ""
    reconnect: int = 0  # reconnect every N queries, 0: never
    continue_on_errors: bool = False
    max_consecutive_errors: int = 0  # 0: no limit
    roundrobin: bool = False
    settings: dict[str, str] = field(default_factory=dict)
    rate: float = 0.0  # open loop: requests per second, 0: closed loop
    poisson: bool = False
    latency_limit_ms: float = 0.0
    workers: int = 1
    timeout: float | None = None
    phase: float = 0.0  # open loop, fixed rate: this worker's offset in the global schedule (s)
    group_of: list[int] = field(default_factory=list)  # target index of each host (empty: one host each)
    pick: str = "roundrobin"  # a target with several hosts: 'roundrobin' or 'random' per query
    lane_order: bool = False  # each lane cycles its own seeded permutation of the queries (ClickBench's stress)
    raw: bool = False  # keep every latency as well as the histograms (Stats.samples)

    @property
    def open_loop(self) -> bool:
        return self.rate > 0

    def schedule(self) -> Schedule:
        """When the lanes send (``core/schedule.py``): clickhouse-benchmark's closed loop,
        or ``--rate`` with fixed spacing or Poisson arrivals."""
        if not self.open_loop:
            return ClosedLoop()
        return Poisson(self.rate, self.seed) if self.poisson else FixedRate(self.rate, self.phase)

    def members(self) -> list[list[int]]:
        """The hosts of each target: one each, several for a cluster target
        (``clickhouse://h1,h2,h3``), all of them as one with ``--roundrobin``."""
        if self.roundrobin:
            return [list(range(len(self.targets)))]
        out: list[list[int]] = []
        for h, g in enumerate(self.group_of or range(len(self.targets))):
            while len(out) <= g:
                out.append([])
            out[g].append(h)
        return out

    @property
    def comparison(self) -> bool:
        return len(self.members()) > 1

    def levels(self) -> list[int]:
        return list(range(1, self.max_concurrency + 1)) if self.max_concurrency else [self.concurrency]

    def share(self, worker: int, workers: int, concurrency: int) -> LoadConfig:
        """This worker's part: its connections, iterations and rate. Shares nest (a
        ``--master`` worker's share is split again over its processes): with fixed
        spacing, worker w of W takes every W-th request of the schedule, so its phase
        is the share's own phase plus w global intervals."""
        lanes = concurrency // workers + (1 if worker < concurrency % workers else 0)
        iterations = 0
        if self.iterations:
            iterations = self.iterations // workers + (1 if worker < self.iterations % workers else 0)
        return replace(self, concurrency=lanes, iterations=iterations, rate=self.rate / workers if self.rate else 0.0,
                       seed=self.seed * 1000 + worker, phase=self.phase + (worker / self.rate if self.rate else 0.0))
