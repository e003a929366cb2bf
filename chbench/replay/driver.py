"""``chbench replay``: a captured workload against one or two targets.

Read the workload once to plan (what is skipped and why, the hashes, the databases and
settings it needs, how many connections its timing needs), probe every target (which of
the captured settings it knows), replay — on every target at once (``--order
parallel``) or one after another — and write the ``kind: "replay"`` document
(``results/replay.py``) with every sample, the schedule's accuracy, the per-hash table
and, with two targets, the comparison and the answers."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from chbench.core.lanes import LATE_MS, SPARE_LANES
from chbench.core.schedule import CapturedOffsets, ClosedLoop, Schedule
from chbench.errors import UsageError
from chbench.observer import Observer, Observers
from chbench.outcome import Outcome
from chbench.replay import analysis
from chbench.replay.answers import check_answers
from chbench.replay.player import Item, Player, PlayOptions, lanes_needed, run_players
from chbench.replay.statements import client_setting, short_name, skip_reason
from chbench.replay.workload_file import read_header, records
from chbench.results import Meta, ResultsWriter
from chbench.results.replay import ReplayDocument
from chbench.stats.compare import Options
from chbench.targets import Credentials, Target, make_target
from chbench.targets.base import known_to_none, refused_setting
from chbench.targets.url import parse_target_url

# connections opened before the clock starts: as many as the captured timing needs if
# every query took SLOWDOWN times its captured time (a replay at speed makes queries
# slower: measured, 5 ms queries took 20-30 ms in a burst at 4x on 2 cores, and every
# lane opened during a burst made the next queries late by its 10 ms connect), plus
# spares; beyond this many, lanes open as needed
SLOWDOWN = 4.0
INITIAL_LANES_CAP = 64
MAX_REPRESENTATIVES = 2000  # --check-answers: at most this many normalized queries are asked
# the results file is rewritten this often during a replay; a checkpoint serializes every
# sample while the lanes send (one GIL): past 50,000 samples every 30 s instead of 5 s
CHECKPOINT_S = 5.0
CHECKPOINT_LARGE_S = 30.0


@dataclass
class ReplayOptions:
    workload: str
    targets: list[str]
    credentials: Credentials
    speed: float = 1.0
    sequential: bool = False  # --mode sequential
    order: str = "parallel"  # two targets: parallel | sequential
    allow_writes: bool = False
    check_answers: bool = False
    timeout: float | None = None
    max_connections: int = 512
    keep_idle_start: bool = False  # wait out the window's quiet start (default: the first query starts it)
    settings: list[dict[str, str]] = field(default_factory=list)  # per target: the user's, over the captured ones
    stats: Options = field(default_factory=Options)


@dataclass
class ReplayPlan:
    """What one pass over the workload found."""

    header: Any
    lines: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    hashes: dict[str, int] = field(default_factory=dict)  # hash -> position
    info: list[dict[str, Any]] = field(default_factory=list)  # per position: hash, name, sql, count, settings
    originals: list[list[float]] = field(default_factory=list)  # per position: captured durations
    databases: set[str | None] = field(default_factory=set)
    setting_names: set[str] = field(default_factory=set)
    offsets: list[float] = field(default_factory=list)
    durations: list[float] = field(default_factory=list)

    @property
    def replayed(self) -> int:
        return self.lines - sum(self.skipped.values())

    def clock_start(self, keep_idle_start: bool) -> float:
        """The captured time the replay's clock starts at: the first query, unless
        --keep-idle-start (a window that began quiet would otherwise be waited out)."""
        return 0.0 if keep_idle_start or not self.offsets else self.offsets[0]


def plan(opts: ReplayOptions) -> ReplayPlan:
    p = ReplayPlan(header=read_header(opts.workload))
    for rec in records(opts.workload):
        p.lines += 1
        reason = skip_reason(rec["query"], opts.allow_writes)
        if reason is not None:
            p.skipped[reason] = p.skipped.get(reason, 0) + 1
            continue
        h = str(rec.get("normalized_query_hash") or "")
        pos = p.hashes.get(h)
        if pos is None:
            pos = p.hashes[h] = len(p.info)
            p.info.append({"hash": h, "name": short_name(rec["query"]), "sql": rec["query"], "count": 0,
                           "settings": dict(rec.get("settings") or {}), "database": rec.get("database")})
            p.originals.append([])
        info = p.info[pos]
        if info.get("failed") is None:
            info["failed"] = bool(rec.get("exception_code"))
        if info["failed"] and not rec.get("exception_code"):  # a representative that ran when captured
            info.update(sql=rec["query"], settings=dict(rec.get("settings") or {}), database=rec.get("database"),
                        failed=False)
        info["count"] += 1
        p.originals[pos].append(float(rec.get("duration_ms") or 0))
        p.databases.add(rec.get("database") or None)
        p.setting_names.update((rec.get("settings") or {}).keys())
        p.offsets.append(float(rec["t"]))
        p.durations.append(float(rec.get("duration_ms") or 0))
    return p


@dataclass
class ReplaySide:
    id: str
    spec: str
    target: Target  # the probing connection (answers are asked on it too)
    version: str
    unknown: list[str]  # captured settings this target does not know: not sent
    notes: list[str] = field(default_factory=list)
    player: Player | None = None
    settings: dict[str, str] = field(default_factory=dict)  # --setting(-b): on top of each query's, known ones
    time_limit: str | None = None  # --timeout as max_execution_time (the embedded engine cannot be stopped otherwise)

    def settings_for(self, captured: dict[str, str], read_only: bool) -> dict[str, str]:
        sent = {k: v for k, v in captured.items() if k not in self.unknown and not client_setting(k)}
        if self.time_limit:
            sent["max_execution_time"] = self.time_limit
        sent.update(self.settings)
        if read_only:  # last: a --setting does not lift it (--allow-writes does)
            sent["readonly"] = "2"
        return sent


def probe(opts: ReplayOptions, p: ReplayPlan) -> list[ReplaySide]:
    sides, infos = [], []
    for i, spec in enumerate(opts.targets):
        t = make_target(spec, opts.credentials)
        info = t.connect()
        infos.append(info)
        unknown = sorted(k for k in p.setting_names if not client_setting(k) and not info.knows(k))
        wanted = opts.settings[i] if i < len(opts.settings) else {}
        side = ReplaySide(chr(ord("A") + i), spec, t, info.version, unknown,
                          settings={k: v for k, v in wanted.items() if info.knows(k)},
                          time_limit=info.time_limit(opts.timeout) if opts.timeout else None)
        if set(wanted) - set(side.settings):
            side.notes.append(f"--setting not known to ClickHouse {info.version}, not sent: "
                              f"{', '.join(sorted(set(wanted) - set(side.settings)))}")
        if not t.capabilities.concurrent_sessions:
            side.notes.append(f"{t.kind}: one in-process session runs one query at a time; concurrent queries of "
                              "the workload queue on it")
        if unknown:
            side.notes.append(f"settings not known to ClickHouse {info.version}, not sent: {', '.join(unknown)}")
        sides.append(side)
    # a --setting/--setting-b no target knows is a typo: one line before anything is sent, as
    # run and load say it (one that some targets know is a note above)
    typos = known_to_none((k for wanted in opts.settings for k in wanted), infos)
    refused = infos[0].unknown_settings(typos) if typos else None
    for s in [] if typos else sides:  # and a value a target refuses (run and load check it alike)
        if (refused := refused_setting(s.target, s.settings, s.settings,
                                       f"side {s.id}: " if len(sides) > 1 else "")) is not None:
            break
    if refused is not None:
        for s in sides:
            s.target.close()
        raise refused
    return sides


def items(opts: ReplayOptions, p: ReplayPlan, side: ReplaySide) -> Iterator[Item]:
    """The queries to send to ``side``, in order, each with what it runs with there (when:
    the schedule's offsets, ``_play``)."""
    read_only = not opts.allow_writes
    for index, rec in enumerate(records(opts.workload)):
        if skip_reason(rec["query"], opts.allow_writes) is not None:
            continue
        yield Item(index, rec["query"], rec.get("database") or None,
                   side.settings_for(dict(rec.get("settings") or {}), read_only),
                   p.hashes[str(rec.get("normalized_query_hash") or "")], int(rec.get("exception_code") or 0))


def new_document(opts: ReplayOptions, p: ReplayPlan, sides: list[ReplaySide], prefix: str) -> ReplayDocument:
    hashes = []
    for info, orig in zip(p.info, p.originals, strict=True):
        hashes.append({"hash": info["hash"], "name": info["name"], "sql": info["sql"], "count": info["count"],
                       "original_p50_ms": float(np.median(orig)) if orig else None})
    return ReplayDocument(
        meta=Meta(),
        workload={"path": opts.workload, **p.header.to_json()},
        options={"speed": opts.speed, "mode": "sequential" if opts.sequential else "open",
                 "order": opts.order, "allow_writes": opts.allow_writes, "read_only": not opts.allow_writes,
                 "check_answers": opts.check_answers, "timeout": opts.timeout, "query_id_prefix": prefix,
                 "late_threshold_ms": LATE_MS, "clock_starts_at_t": p.clock_start(opts.keep_idle_start)},
        targets=[{"id": s.id, "url": s.target.url, "kind": s.target.kind,
                  "label": ", ".join([s.target.label, *(f"{k}={v}" for k, v in s.settings.items())]),
                  "settings": s.settings, "server_version": s.version, "settings_not_sent": s.unknown,
                  "notes": s.notes} for s in sides],
        skipped=dict(sorted(p.skipped.items())), hashes=hashes)


def replay(opts: ReplayOptions, out: str | None, *observers: Observer,
           ) -> tuple[ReplayDocument, list[ReplaySide], Outcome]:
    """The whole replay; the document is written to ``out`` however it ends (checkpointed
    as it goes), and each observer (the live display) gets the players' counts. Returns
    the document, the sides and how it ended (complete, interrupted, server_lost)."""
    p = plan(opts)
    if p.replayed == 0:
        raise UsageError(f"{opts.workload}: nothing to replay ({p.lines} queries"
                         + (f", all skipped: {', '.join(f'{n} {r}' for r, n in sorted(p.skipped.items()))}"
                            if p.skipped else "") + ")")
    sides = probe(opts, p)
    prefix = f"chbench-replay-{secrets.token_hex(4)}-"
    doc = new_document(opts, p, sides, prefix)
    with ResultsWriter(out, doc, every_s=5.0) as writer:
        watch = Observers([*observers, _Checkpoints(doc, p, sides, writer)])
        try:
            interrupted = _play(opts, p, sides, prefix, watch)
        finally:
            fill(doc, p, sides, final=True, opts=opts)
            watch.status(statuses(sides), final=True)
        if opts.check_answers and len(sides) == 2 and not interrupted:
            doc.answers = _answers(opts, p, sides)
        fatal = next((s.player.fatal for s in sides if s.player and s.player.fatal), None)
        outcome = Outcome.INTERRUPTED if interrupted else Outcome.SERVER_LOST if fatal else Outcome.COMPLETE
        writer.finish(outcome, "interrupted" if interrupted else fatal)
    return doc, sides, outcome


def _play(opts: ReplayOptions, p: ReplayPlan, sides: list[ReplaySide], prefix: str, watch: Observer) -> bool:
    """Every target at once (or one after another); True when interrupted."""
    need = 1 if opts.sequential else min(opts.max_connections, INITIAL_LANES_CAP,
                                         lanes_needed(p.offsets, [d * SLOWDOWN for d in p.durations], opts.speed)
                                         + SPARE_LANES)
    databases = sorted(p.databases, key=lambda d: d or "")[:8]
    start = p.clock_start(opts.keep_idle_start)
    offsets = [t - start for t in p.offsets]
    schedule: Schedule = ClosedLoop() if opts.sequential else CapturedOffsets(offsets, opts.speed)
    for group in [sides] if opts.order == "parallel" else [[s] for s in sides]:
        for s in group:
            s.player = Player(PlayOptions(s.spec, opts.credentials, schedule, opts.timeout,
                                          prefix, need, opts.max_connections, databases),
                              items(opts, p, s), s.id)
            s.player.open_lanes()

        players = [s.player for s in group if s.player is not None]
        try:
            interrupted = run_players(players, 0.2, lambda: watch.status(statuses(sides)))
        finally:
            for pl in players:
                pl.close()
        if interrupted or any(pl.fatal for pl in players):
            return interrupted
    return False


def _answers(opts: ReplayOptions, p: ReplayPlan, sides: list[ReplaySide]) -> dict[str, Any]:
    """--check-answers, on connections in each query's captured database."""
    by_id = {s.id: s for s in sides}
    opened: dict[tuple[str, str | None], Target] = {}

    def connect(side: str, database: str | None) -> Target:
        t = opened.get((side, database))
        if t is None:
            base = parse_target_url(by_id[side].spec, opts.credentials.user, opts.credentials.database)
            t = opened[(side, database)] = make_target(replace(base, database=database) if database else base,
                                                       opts.credentials)
            t.connect()
        return t

    try:
        return check_answers([s.id for s in sides], connect, representatives(p, sides, opts), opts.timeout)
    finally:
        for t in opened.values():
            t.close()


def statuses(sides: list[ReplaySide]) -> dict[str, Any]:
    """What the observers see: per target, the player's counts (``Player.status``) — or
    ``waiting`` for a target whose turn has not come (``--order sequential``)."""
    return {"targets": [{"id": s.id, **(s.player.status() if s.player else {"waiting": True})} for s in sides]}


class _Checkpoints(Observer):
    """The results file, rewritten every ``CHECKPOINT_S`` while the players send."""

    def __init__(self, doc: ReplayDocument, p: ReplayPlan, sides: list[ReplaySide], writer: ResultsWriter) -> None:
        self.doc, self.p, self.sides, self.writer = doc, p, sides, writer
        self.last = time.monotonic()

    def status(self, status: dict[str, Any], final: bool = False) -> None:
        sent = sum(t.get("sent", 0) for t in status["targets"])
        if not final and time.monotonic() - self.last >= (CHECKPOINT_S if sent < 50_000 else CHECKPOINT_LARGE_S):
            fill(self.doc, self.p, self.sides, final=False)
            self.writer.checkpoint(force=True)
            self.last = time.monotonic()


def representatives(p: ReplayPlan, sides: list[ReplaySide], opts: ReplayOptions) -> list[dict[str, Any]]:
    return [{"hash": info["hash"], "sql": info["sql"], "database": info["database"],
             "settings": {s.id: s.settings_for(info["settings"], not opts.allow_writes) for s in sides}}
            for info in p.info[:MAX_REPRESENTATIVES]]


def fill(doc: ReplayDocument, p: ReplayPlan, sides: list[ReplaySide], final: bool,
         opts: ReplayOptions | None = None) -> None:
    """The document's measured parts from the samples so far."""
    columns = {s.id: s.player.samples.to_json() for s in sides if s.player is not None}
    timed = not (opts.sequential if opts else doc.options.get("mode") == "sequential")
    doc.samples = columns
    skipped = sum(p.skipped.values())
    doc.schedule = analysis.schedule_summary(p.lines, skipped, list(columns.values()), len(sides), LATE_MS, timed)
    for t, s in zip(doc.targets, sides, strict=True):
        one = analysis.schedule_summary(p.lines, skipped, [columns[s.id]] if s.id in columns else [], 1, LATE_MS,
                                        timed)
        t["schedule"] = {**one, "connections": s.player.connections if s.player else 0,
                         "fatal": s.player.fatal if s.player else None}
    if final:
        doc.by_hash = analysis.by_hash(doc.hashes, columns)
        if len(columns) == 2 and opts is not None:
            doc.comparison = analysis.compare(doc.hashes, columns, opts.stats)
