"""Running a load level: probe the hosts, start the lanes (in this process, or in
``--workers`` processes), collect their stats every tick, report every ``-d`` seconds,
and stop on the time limit, the iteration count, an error, a lost server or Ctrl-C —
always with everything measured so far."""

from __future__ import annotations

import contextlib
import math
import multiprocessing as mp
import queue as queue_mod
import signal
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Protocol

from chbench import messages
from chbench.core.lanes import STOP_GRACE_S
from chbench.errors import ConnectError
from chbench.load.config import LoadConfig
from chbench.load.intervals import Intervals
from chbench.load.lanes import TICK_S, LoadLanes, process_main
from chbench.load.recorder import Key, Stats, merge_all, merge_into, merged
from chbench.observer import Observer, Observers
from chbench.targets import ServerInfo, make_target
from chbench.targets.base import refused_setting


@dataclass
class Host:
    spec: str
    url: str
    label: str  # host:port, as clickhouse-benchmark names it
    kind: str
    version: str
    settings: dict[str, str]  # sent with every query
    notes: list[str] = field(default_factory=list)  # recorded in the results file
    warnings: list[str] = field(default_factory=list)  # also said before the load starts


@dataclass
class LevelResult:
    concurrency: int
    workers: int
    seconds: float
    totals: dict[Key, Stats]
    timeline: list[dict[str, Any]]
    started: int = 0
    late: int = 0
    due: int | None = None
    fatal: str | None = None
    failure: str | None = None
    interrupted: bool = False
    per_worker: list[dict[str, Any]] = field(default_factory=list)  # each worker's name, totals, loss

    def by_host(self) -> dict[int, Stats]:
        return merge_all(self.totals, "host")

    def total(self) -> Stats:
        return merged(self.totals.values())


def probe_hosts(cfg: LoadConfig) -> list[Host]:
    """Connect once to every host: version, known settings; fail early in one line."""
    hosts = []
    for spec in cfg.targets:
        t = make_target(spec, cfg.credentials, light=True, stage=cfg.stage)
        try:
            info: ServerInfo = t.connect()
            asked = {*cfg.settings, *(k for q in cfg.queries for k in q.settings)}
            unknown = sorted(k for k in asked if not info.knows(k))
            if unknown:
                raise info.unknown_settings(unknown, f"{t.url}: ")
            if (refused := refused_setting(t, dict(cfg.settings), cfg.settings, f"{t.url}: ")) is not None:
                raise refused
        finally:
            t.close()
        notes = list(info.notes)
        preferred, why = t.preferred_settings()  # e.g. HTTP: results in the Native wire format
        preferred = {k: v for k, v in preferred.items() if k not in cfg.settings}
        settings = {**cfg.settings, **preferred}
        notes += why if preferred else []
        if cfg.timeout and info.knows("max_execution_time") and "max_execution_time" not in settings:
            # the server stops a query the client gave up on (the embedded engine cannot be
            # stopped from outside: without it, --timeout 0.2 let sleep(0.5) count as a success)
            settings["max_execution_time"] = info.time_limit(cfg.timeout)
        warnings = []
        if not t.capabilities.concurrent_sessions:
            warnings.append(f"{t.kind}: the client threads share one in-process session, which runs one query "
                            "at a time; -c N measures queueing on that session, not server concurrency")
        # how reports name a host: host:port for the native protocol, as clickhouse-benchmark does
        hosts.append(Host(spec, t.url, t.label, t.kind, info.version, settings, notes + warnings, warnings))
    labels = [h.label for h in hosts]
    for i, h in enumerate(hosts):  # the same server twice: keep the keys of the JSON apart
        if labels.count(h.label) > 1:
            h.label = f"{h.label}#{labels[:i + 1].count(h.label)}"
    return hosts


# -- where the lanes run ------------------------------------------------------------------------
class Source(Protocol):
    def setup(self) -> None: ...
    def start(self) -> None: ...
    def pump(self, timeout: float) -> tuple[list[tuple[int, dict[Key, Stats]]], bool]: ...
    def stop(self) -> None: ...
    def status(self) -> dict[str, Any]: ...
    def close(self) -> None: ...
    def drain(self) -> list[tuple[int, dict[Key, Stats]]]: ...
    def names(self) -> dict[int, dict[str, Any]]: ...


# what builds a level's source: ``local_source`` here, ``distributed.master`` for --master
SourceFactory = Callable[[LoadConfig, list[dict[str, str]], int], Source]


class LocalSource:
    """Lanes as threads of this process."""

    def __init__(self, cfg: LoadConfig, settings: list[dict[str, str]]) -> None:
        self.lanes = LoadLanes(cfg, settings, 0)
        self.recorder = self.lanes.recorder
        self._stopped_at: float | None = None
        self._flight: dict[str, Any] = {}  # what was in flight, read before the last swap (load/intervals.py)

    def setup(self) -> None:
        self.lanes.connect()

    def start(self) -> None:
        self.lanes.begin(time.monotonic())

    def pump(self, timeout: float) -> tuple[list[tuple[int, dict[Key, Stats]]], bool]:
        lanes = self.lanes
        done = lanes.finished.wait(timeout)
        if not done and lanes.stop.is_set():
            if self._stopped_at is None:
                self._stopped_at = time.monotonic()
            elif time.monotonic() - self._stopped_at >= STOP_GRACE_S:
                lanes.join(0.0)  # lanes stuck in long queries are abandoned
                done = True
        self._flight = lanes.in_flight_now()
        return [(0, self.recorder.swap())], done

    def stop(self) -> None:
        self.lanes.halt()

    def status(self) -> dict[str, Any]:
        return {**self.lanes.counts(), **self._flight}

    def close(self) -> None:
        self.lanes.join(0.0)
        self.lanes.close()

    def drain(self) -> list[tuple[int, dict[Key, Stats]]]:
        return [(0, self.recorder.swap())]

    def names(self) -> dict[int, dict[str, Any]]:
        return {0: {"name": "local"}}


def sum_statuses(statuses: Iterable[dict[str, Any]], fatal: str | None = None) -> dict[str, Any]:
    """Several cores' (or workers') status as one: counts add up, the time is the
    longest, the first fatal error or failure wins."""
    out: dict[str, Any] = {"started": 0, "late": 0, "elapsed": 0.0, "fatal": fatal, "failure": None}
    for st in statuses:
        out["started"] += st.get("started", 0)
        out["late"] += st.get("late", 0)
        out["elapsed"] = max(out["elapsed"], st.get("elapsed", 0.0))
        if "due" in st:
            out["due"] = out.get("due", 0) + st["due"]
        if "read_at" in st:  # --precise: the stalest reading, and the longest-running query in flight of any
            out["read_at"] = min(out.get("read_at", math.inf), st["read_at"])
            if st.get("oldest") is not None:
                out["oldest"] = min(out.get("oldest") or math.inf, st["oldest"])
        out["fatal"] = out["fatal"] or st.get("fatal")
        out["failure"] = out["failure"] or st.get("failure")
    return out


class ProcessSource:
    """Lanes in worker processes (spawned: each its own interpreter and GIL)."""

    def __init__(self, cfg: LoadConfig, settings: list[dict[str, str]], workers: int, level: int) -> None:
        ctx = mp.get_context("spawn")
        self.queue: Any = ctx.Queue()
        self.go = ctx.Event()
        self.stop_event = ctx.Event()
        self.start_at: Any = ctx.Value("d", 0.0)
        self.procs = [
            ctx.Process(target=process_main, name=f"chbench-worker-{w}", daemon=True,
                        args=(cfg.share(w, workers, level), settings, w, self.queue, self.go, self.start_at,
                              self.stop_event))
            for w in range(workers)
        ]
        self.statuses: dict[int, dict[str, Any]] = {}
        self.done: set[int] = set()

    def setup(self) -> None:
        for p in self.procs:
            p.start()
        ready: set[int] = set()
        deadline = time.monotonic() + 120
        while len(ready) < len(self.procs):
            try:
                m = self.queue.get(timeout=0.5)
            except queue_mod.Empty:
                dead = [p for i, p in enumerate(self.procs) if i not in ready and not p.is_alive()]
                if dead or time.monotonic() > deadline:
                    self.close()
                    raise ConnectError("a worker process could not start") from None
                continue
            if isinstance(m, messages.Failed):
                self.close()
                raise ConnectError(m.message)
            ready.add(m.worker)

    def start(self) -> None:
        self.start_at.value = time.time() + 0.05
        self.go.set()

    def pump(self, timeout: float) -> tuple[list[tuple[int, dict[Key, Stats]]], bool]:
        parts = []
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            try:
                m = self.queue.get(timeout=max(0.001, left))
            except queue_mod.Empty:
                break
            if not isinstance(m, messages.Measured):
                continue
            parts.append((m.worker, m.stats))
            self.statuses[m.worker] = m.status or {}
            if isinstance(m, messages.Done):
                self.done.add(m.worker)
                for key in ("read_at", "oldest"):  # it sends nothing more: nothing of it is in flight
                    self.statuses[m.worker].pop(key, None)
            if time.monotonic() >= end:
                break
        for i, p in enumerate(self.procs):
            if i not in self.done and not p.is_alive():
                self.done.add(i)
                self.statuses.setdefault(i, {})["fatal"] = f"worker process {i} died (exit code {p.exitcode})"
        return parts, len(self.done) == len(self.procs)

    def stop(self) -> None:
        self.stop_event.set()

    def status(self) -> dict[str, Any]:
        return sum_statuses(self.statuses.values())

    def drain(self) -> list[tuple[int, dict[Key, Stats]]]:
        """Anything sent while closing."""
        parts, _ = self.pump(0.0)
        return parts

    def names(self) -> dict[int, dict[str, Any]]:
        return {i: {"name": p.name} for i, p in enumerate(self.procs)}

    def close(self) -> None:
        self.stop_event.set()
        for p in self.procs:
            if p.pid is not None:
                p.join(timeout=3)
                if p.is_alive():
                    p.terminate()
                    p.join(timeout=2)


# -- the level loop ------------------------------------------------------------------------------
class _Interrupt:
    """First Ctrl-C: stop launching queries and report; a second one: leave at once."""

    def __init__(self) -> None:
        self.hit = False
        self._old: Any = None

    def __enter__(self) -> _Interrupt:
        def handler(signum: int, frame: FrameType | None) -> None:
            if self.hit:
                raise KeyboardInterrupt
            self.hit = True

        with contextlib.suppress(ValueError):  # not the main thread: no handler
            self._old = signal.signal(signal.SIGINT, handler)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)


def timeline_row(t: float, seconds: float, st: Stats) -> dict[str, Any]:
    h = st.hist
    return {
        "t": round(t, 3),
        "seconds": round(seconds, 3),
        "queries": st.queries,
        "errors": st.errors,
        "qps": st.counted().queries / seconds if seconds > 0 else 0.0,  # --precise: weighted
        "p50_ms": h.percentile(50),
        "p90_ms": h.percentile(90),
        "p99_ms": h.percentile(99),
        "max_ms": h.max if h.count else None,
    }


CHECKPOINT_S = 5.0  # how often a partial level is written to --out


def local_source(cfg: LoadConfig, settings: list[dict[str, str]], level: int) -> Source:
    """``level`` connections as threads of this process, or over ``--workers`` processes."""
    workers = max(1, min(cfg.workers, level, cfg.iterations or level))  # -i 1: no worker with 0 (no limit)
    if workers == 1:
        return LocalSource(cfg.share(0, 1, level), settings)
    return ProcessSource(cfg, settings, workers, level)


def _per_worker(source: Source, by_worker: dict[int, Stats]) -> list[dict[str, Any]]:
    """Each worker's name (and loss) with its totals; one that measured nothing has zeros."""
    names = source.names()
    return [{"worker": w, **names.get(w, {}), **by_worker.get(w, Stats()).to_json()}
            for w in sorted({*names, *by_worker})]


class _Tally:
    """A level's totals, per (host, query) and per worker, as parts arrive."""

    def __init__(self, observer: Observer) -> None:
        self.totals: dict[Key, Stats] = {}
        self.by_worker: dict[int, Stats] = {}
        self.observer = observer

    def add(self, worker: int, part: dict[Key, Stats]) -> None:
        merge_into(self.totals, part)
        mine = self.by_worker.setdefault(worker, Stats())
        for st in part.values():
            mine.merge(st)
        self.observer.add(worker, part)


def run_level(cfg: LoadConfig, hosts: list[Host], level: int, observers: list[Observer],
              sources: SourceFactory = local_source) -> LevelResult:
    """One level, to its end: the time limit, the iterations, an error, a lost server,
    Ctrl-C, or an observer that finds it decided (a capacity step)."""
    settings = [h.settings for h in hosts]
    source = sources(cfg, settings, level)
    source.setup()
    workers = len(source.names())
    obs = Observers(observers)
    tally = _Tally(obs)
    totals, by_worker, add = tally.totals, tally.by_worker, tally.add
    timeline: list[dict[str, Any]] = []
    period = cfg.delay if cfg.delay > 0 else 1.0
    obs.level_started(level)
    interrupted = source_stopped = False
    with _Interrupt() as ctrl_c:
        t0 = time.monotonic()
        intervals = Intervals(t0, cfg.precise and cfg.delay > 0 and not cfg.cumulative)
        source.start()
        last = last_checkpoint = t0
        try:
            while True:
                parts, done = source.pump(TICK_S)
                for worker, part in parts:
                    intervals.add(part)  # first: it takes --precise's spans out of the part
                    add(worker, part)
                status = source.status()
                obs.status(status)
                now = time.monotonic()
                if not done and not source_stopped and obs.decided(totals, status, now - t0):
                    source_stopped = True
                    source.stop()
                if now - last >= period or done:
                    intervals.close(now, last=done)
                    last = now
                for iv in intervals.ready(status, done):
                    assert iv.end is not None
                    interval_by_host = intervals.stats_by_host(iv)  # merged once: the row sums the hosts
                    ist = merged(interval_by_host.values())
                    if ist.queries or ist.errors or not iv.last:
                        timeline.append(timeline_row(iv.end - t0, iv.end - iv.start, ist))
                        if iv.last:  # shorter than -d: the level ended in it
                            timeline[-1]["last"] = True
                        obs.interval(level, timeline[-1], interval_by_host, iv.end - iv.start,
                                     merge_all(totals, "host"), now - t0)
                if obs.checkpoints and now - last_checkpoint >= CHECKPOINT_S and not done:
                    last_checkpoint = now
                    copied = {k: Stats().merge(v) for k, v in totals.items()}
                    obs.checkpoint(LevelResult(level, workers, now - t0, copied, list(timeline), interrupted=True,
                                               per_worker=_per_worker(source, by_worker)))
                if done:
                    break
                if ctrl_c.hit and not interrupted:
                    interrupted = True
                    source.stop()
        except KeyboardInterrupt:  # second Ctrl-C: stop waiting for the lanes
            interrupted = True
            source.stop()
        st = source.status()
        source.close()
    for worker, part in source.drain():  # anything sent while closing
        add(worker, part)
    obs.status(st, final=True)
    obs.level_finished()
    seconds = st.get("elapsed") or (time.monotonic() - t0)
    return LevelResult(
        concurrency=level,
        workers=workers,
        seconds=seconds,
        totals=totals,
        timeline=timeline,
        started=st.get("started", 0),
        late=st.get("late", 0),
        due=st.get("due"),
        fatal=st.get("fatal"),
        failure=st.get("failure"),
        interrupted=interrupted,
        per_worker=_per_worker(source, by_worker),
    )

