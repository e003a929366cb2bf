"""``kind: "run"``: what ``chbench run`` measured — its targets (sides), every query with
every raw sample, the drift guard's calibration samples and the machine-state readings (docs/results-schema.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from chbench.results.document import Document, present
from chbench.targets import Sample

_SAMPLE_FIELDS = ("query_id", "client_ms", "server_ms", "read_rows", "read_bytes", "result_rows", "result_bytes",
                  "memory_bytes", "error", "target", "round", "warmup", "started_at")


@dataclass(kw_only=True)
class RunSample(Sample):
    """A target's sample, with where and when in the run it was taken."""

    target: str = "A"
    round: int = 0
    warmup: bool = False
    started_at: float = 0.0
    server_metrics: dict[str, Any] | None = None  # query_log, with --server-metrics
    server_ms_source: str | None = None  # "query_log" when server_ms came from there
    session: int | None = None  # which session of a --sessions run (absent: one session)
    # measured while another process kept the machine busy: kept, but not in the verdicts
    # and not counted towards the query's runs (chbench/runner/runner.py, --quiet-wait)
    set_aside: bool = False
    # cores other processes used while it ran (the machine's CPU timeline,
    # chbench/machine/timeline.py); absent where there is no timeline
    others_cores: float | None = None
    # the server's profile of this run, fetched after the rounds (chbench/explain/collect.py):
    # {"counters": {name: value}, "operators": {name: {"n", "elapsed_us", ...}}}
    profile: dict[str, Any] | None = None

    @classmethod
    def of(cls, s: Sample, target: str, round_no: int, warmup: bool, started_at: float) -> RunSample:
        return cls(query_id=s.query_id, client_ms=s.client_ms, server_ms=s.server_ms, read_rows=s.read_rows,
                   read_bytes=s.read_bytes, result_rows=s.result_rows, result_bytes=s.result_bytes,
                   memory_bytes=s.memory_bytes, error=s.error, target=target, round=round_no, warmup=warmup,
                   started_at=started_at)

    def to_json(self) -> dict[str, Any]:
        out = {**{k: getattr(self, k) for k in _SAMPLE_FIELDS},
               **present(self, "server_metrics", "server_ms_source", "session", "others_cores", "profile")}
        if self.set_aside:
            out["set_aside"] = True
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RunSample:
        return cls(**{k: d[k] for k in (*_SAMPLE_FIELDS, "server_metrics", "server_ms_source", "session", "set_aside",
                                                  "others_cores", "profile")
                      if k in d})

    @property
    def ok(self) -> bool:
        return not self.error and not self.warmup and not self.set_aside


@dataclass(kw_only=True)
class RunTarget:
    """One side: where it ran, what the server is, which settings were sent."""

    id: str
    kind: str
    url: str
    label: str
    server_version: str | None = None
    capabilities: dict[str, Any] = field(default_factory=dict)
    settings_requested: dict[str, str] = field(default_factory=dict)
    settings_sent: dict[str, str] = field(default_factory=dict)
    unsupported_settings: list[str] = field(default_factory=list)
    scale: float | None = None
    notes: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. an embedded engine's path, the workload

    KEYS: ClassVar[tuple[str, ...]] = ("id", "kind", "url", "label", "server_version", "capabilities",
                                       "settings_requested", "settings_sent", "unsupported_settings", "scale",
                                       "notes")

    def to_json(self) -> dict[str, Any]:
        return {**{k: getattr(self, k) for k in self.KEYS}, **self.extra}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RunTarget:
        return cls(id=d.get("id", "A"), kind=d.get("kind", "?"), url=d.get("url", "?"),
                   label=d.get("label") or d.get("url") or "?",
                   **{k: d[k] for k in cls.KEYS[4:] if d.get(k) is not None},
                   extra={k: v for k, v in d.items() if k not in cls.KEYS})


@dataclass(kw_only=True)
class QuerySide:
    """One side's version of a query: what it was and what was sent, its own settings,
    and why this side did not run it (if it did not)."""

    sql: str
    sql_sent: str
    settings: dict[str, str] | None = None  # the query's own ('-- settings:' in its file)
    unsupported_settings: list[str] | None = None  # of those, unknown to the server: not sent
    skipped: str | None = None  # a performance test's query this side did not run, and why
    failed: str | None = None  # its test's set-up failed on this side
    extra: dict[str, Any] = field(default_factory=dict)  # keys of a newer file, kept as read

    KEYS: ClassVar[tuple[str, ...]] = ("settings", "unsupported_settings", "skipped", "failed")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"sql": self.sql, "sql_sent": self.sql_sent}
        out.update({k: getattr(self, k) for k in self.KEYS if getattr(self, k) is not None})
        return {**out, **self.extra}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> QuerySide:
        return cls(sql=str(d.get("sql", "")), sql_sent=str(d.get("sql_sent", d.get("sql", ""))),
                   **{k: d[k] for k in cls.KEYS if d.get(k) is not None},
                   extra={k: v for k, v in d.items() if k not in ("sql", "sql_sent", *cls.KEYS)})


@dataclass(kw_only=True)
class RunQuery:
    name: str
    sql: str
    sql_sent: str
    target: str | list[str]  # the side, or the sides, that ran it
    sides: dict[str, QuerySide]  # per side: its SQL, what was sent, its own settings, why skipped
    samples: list[RunSample] = field(default_factory=list)
    errors: int = 0
    test: str | None = None  # the performance test it belongs to (its entry in the document's tests)

    def to_json(self) -> dict[str, Any]:
        out = {"name": self.name, "sql": self.sql, "sql_sent": self.sql_sent, "target": self.target,
               "sides": {sid: s.to_json() for sid, s in self.sides.items()},
               "samples": [s.to_json() for s in self.samples], "errors": self.errors}
        if self.test is not None:
            out["test"] = self.test
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RunQuery:
        return cls(name=str(d["name"]), sql=d.get("sql", ""), sql_sent=d.get("sql_sent", d.get("sql", "")),
                   target=d.get("target", "A"),
                   sides={sid: QuerySide.from_json(s) for sid, s in (d.get("sides") or {}).items()},
                   samples=[RunSample.from_json(s) for s in d["samples"]], errors=int(d.get("errors", 0)),
                   test=d.get("test"))

    def skipped(self, side: str) -> str | None:
        """Why this side did not run it (a missing table, an unknown setting, …), if it did not."""
        s = self.sides.get(side)
        return s.skipped if s is not None and s.skipped else None

    def side_ids(self) -> list[str]:
        return [self.target] if isinstance(self.target, str) else list(self.target)

    def measured(self, side: str, set_aside: bool = False) -> list[RunSample]:
        """The side's samples after warm-up, in run order (failed ones included; those set
        aside on a busy machine left out unless ``set_aside``: see ``RunDocument.never_quiet``)."""
        return [s for s in self.samples if s.target == side and not s.warmup and (set_aside or not s.set_aside)]

    def sql_sent_by(self, side: str) -> str:
        s = self.sides.get(side)
        return s.sql_sent if s is not None else self.sql_sent


@dataclass(kw_only=True)
class Calibration:
    """The drift guard's fixed query, measured between rounds on one side."""

    target: str
    sql: str
    samples: list[RunSample] = field(default_factory=list)
    # what it was sent with: the measurement's own settings, not the side's (None in files
    # written before 2026-12-06, where it ran with the side's settings)
    settings: dict[str, str] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "sql": self.sql, "samples": [s.to_json() for s in self.samples],
                **({} if self.settings is None else {"settings": self.settings})}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Calibration:
        return cls(target=d.get("target", "A"), sql=d.get("sql", ""),
                   samples=[RunSample.from_json(s) for s in d.get("samples") or []],
                   settings=None if d.get("settings") is None else {str(k): str(v) for k, v in d["settings"].items()})


@dataclass(kw_only=True)
class RunDocument(Document):
    kind: ClassVar[str] = "run"
    KEYS: ClassVar[tuple[str, ...]] = ("targets", "queries", "calibration", "machine", "checks", "tests", "trend")

    targets: list[RunTarget] = field(default_factory=list)
    queries: list[RunQuery] = field(default_factory=list)
    calibration: list[Calibration] = field(default_factory=list)
    # machine-state probes, one reading per round: {"client": [...], "servers": {side: [...]},
    # "notes": [...]} (chbench/machine/probes.py)
    machine: dict[str, Any] = field(default_factory=dict)
    # chbench upgrade: answers, plans and changed setting defaults of both sides
    # {"answers": {query: {"a", "b", "equal"}}, "plans": {query: {"a", "b", "changed"}},
    #  "settings": {"changed_defaults": [...]}} (chbench/upgrade/checks.py); absent otherwise
    checks: dict[str, Any] = field(default_factory=dict)
    # performance tests (chbench/workload/formats/perftest.py), in run order: name, file,
    # threshold, settings, queries (names), expanded, not_chosen, and per side why it was
    # skipped or failed, its set-up and tear-down errors (docs/results-schema.md); absent otherwise
    tests: list[dict[str, Any]] = field(default_factory=list)
    # chbench trend: per query the series over the versions and every step found
    # {"versions", "baseline", "queries": [{"name", "series"}], "steps": [...]}
    # (chbench/trend/series.py); absent otherwise
    trend: dict[str, Any] | None = None

    @property
    def never_quiet(self) -> bool:
        """The machine never got quiet within ``--quiet-wait`` (runner/quiet.py): the runs
        set aside while the budget lasted are then judged with the rest, so the verdicts see
        the machine as it was for the whole run alike, not a quiet-looking selection of its
        first part and all of the rest. Measured (2026-12-07, issue 12's neighbour busy 30 ms
        of every 100 ms during B, HTTP, 405 of B's runs set aside before the 60 s ran out):
        10 of 10 queries `unstable` with the selection (scattering ±6.8% around the machine's
        shift), 7 `no change` with every run (±2.7%); three more never-quiet pairs 0 → 8,
        8 → 8, 8 → 8 (docs/measured.md, 2026-12-07 10:51)."""
        return bool((self.machine.get("set_aside") or {}).get("never_quiet"))

    def body(self) -> dict[str, Any]:
        out = {"targets": [t.to_json() for t in self.targets], "queries": [q.to_json() for q in self.queries],
               "calibration": [c.to_json() for c in self.calibration], "machine": self.machine}
        if self.checks:
            out["checks"] = self.checks
        if self.tests:
            out["tests"] = self.tests
        if self.trend is not None:
            out["trend"] = self.trend
        return out

    @classmethod
    def parse(cls, d: dict[str, Any]) -> dict[str, Any]:
        targets = d.get("targets") or [{"id": "A", "url": "?"}]
        return {"targets": [RunTarget.from_json(t) for t in targets],
                "queries": [RunQuery.from_json(q) for q in d["queries"]],
                "calibration": [Calibration.from_json(c) for c in d.get("calibration") or []],
                "machine": d.get("machine") or {}, "checks": d.get("checks") or {}, "tests": d.get("tests") or [],
                "trend": d.get("trend") if isinstance(d.get("trend"), dict) else None}

    def side_labels(self) -> dict[str, str]:
        return {t.id: t.label or t.url for t in self.targets}


def configuration_diff(was: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """What differs between two runs' configurations (``server_version`` and the user's
    ``settings``), as "server 24.8.4.1 → 26.9.2.1", "max_threads unset → 1"."""
    parts = []
    if was.get("server_version") != now.get("server_version"):
        parts.append(f"server {was.get('server_version') or '?'} → {now.get('server_version') or '?'}")
    a, b = was.get("settings") or {}, now.get("settings") or {}
    return parts + [f"{k} {a.get(k, 'unset')} → {b.get(k, 'unset')}" for k in sorted({*a, *b}) if a.get(k) != b.get(k)]
