"""What a store keeps of one run: one side of a ``run`` results file, reduced to what a
series needs — every raw sample of every query, the machine's probes, the target
(version, host), the workload's identity and the user's labels (docs/history.md).

A query's series is named by its name *and* a hash of its SQL and its own settings
(``key``): an edited query starts a new series instead of stepping an old one. Settings
given for the whole run (``--setting``) are not in the hash: they are the configuration
whose change a history is there to catch.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from chbench.errors import UsageError
from chbench.results.open import open_results
from chbench.results.run import RunDocument, RunQuery

FORMAT = 1  # of a stored run; a reader keeps what it does not know and fills what an older one lacked


@dataclass
class QueryRecord:
    """One query of one run: its raw samples (ms, failed runs left out) and identity."""

    name: str
    key: str  # the hash of its SQL and own settings: a new key is a new series
    client_ms: list[float] = field(default_factory=list)
    server_ms: list[float] = field(default_factory=list)
    errors: int = 0
    sql: str = ""

    @property
    def median_ms(self) -> float | None:
        return float(np.median(self.client_ms)) if self.client_ms else None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "key": self.key, "sql": self.sql, "client_ms": self.client_ms,
                "server_ms": self.server_ms, "errors": self.errors, "median_ms": self.median_ms}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> QueryRecord:
        return cls(name=str(d["name"]), key=str(d.get("key") or ""),
                   client_ms=[float(x) for x in d.get("client_ms") or []],
                   server_ms=[float(x) for x in d.get("server_ms") or []], errors=int(d.get("errors") or 0),
                   sql=str(d.get("sql") or ""))


@dataclass
class HistoryRun:
    """One run as a store keeps it."""

    run_id: str
    started_at: float  # epoch seconds
    labels: dict[str, str] = field(default_factory=dict)
    target: dict[str, Any] = field(default_factory=dict)  # label, kind, url, server_version, settings, in_process
    host: dict[str, Any] = field(default_factory=dict)  # hostname, cpu_model, cpu_count (of the client)
    machine: dict[str, Any] = field(default_factory=dict)  # the run's probes and calibration, summarised
    queries: list[QueryRecord] = field(default_factory=list)
    source: str = ""  # the file it came from
    format: int = FORMAT
    extra: dict[str, Any] = field(default_factory=dict)  # keys of a newer chbench, kept as read

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "started_at": self.started_at, "started": iso(self.started_at),
                "labels": self.labels, "target": self.target, "host": self.host, "machine": self.machine,
                "queries": [q.to_json() for q in self.queries], "source": self.source, "format": self.format,
                **self.extra}

    def header(self) -> dict[str, Any]:
        """Everything but the queries (a store keeps those apart)."""
        d = self.to_json()
        d.pop("queries")
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any], queries: list[QueryRecord] | None = None) -> HistoryRun:
        known = {"run_id", "started_at", "started", "labels", "target", "host", "machine", "queries", "source",
                 "format"}
        return cls(run_id=str(d["run_id"]), started_at=float(d["started_at"]),
                   labels={str(k): str(v) for k, v in (d.get("labels") or {}).items()},
                   target=dict(d.get("target") or {}), host=dict(d.get("host") or {}),
                   machine=dict(d.get("machine") or {}),
                   queries=queries if queries is not None else
                   [QueryRecord.from_json(q) for q in d.get("queries") or []],
                   source=str(d.get("source") or ""), format=int(d.get("format") or 1),
                   extra={k: v for k, v in d.items() if k not in known})

    @property
    def baseline(self) -> tuple[str, str]:
        """What a series' level depends on besides the code: the machine. A new host (the
        ``host`` label, else the client's host name) or a different CPU starts a new baseline."""
        return (self.labels.get("host") or str(self.host.get("hostname") or ""),
                str(self.host.get("cpu_model") or "") + f"×{self.host.get('cpu_count') or '?'}")


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts).astimezone().isoformat(timespec="seconds")


def query_key(sql: str, settings: dict[str, str] | None) -> str:
    """The identity of a query's series: its SQL (whitespace folded) and its own settings."""
    text = " ".join(sql.split()) + "\n" + json.dumps(sorted((settings or {}).items()))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _epoch(text: str) -> float:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def runs_from_file(path: str, labels: dict[str, str], side: str | None = None) -> list[HistoryRun]:
    """The runs a results file adds to a history: its side ``side`` (id or label), or,
    when not given, each side of a one-sided file (a file of several sides needs ``side``:
    its sides are different configurations, not one series)."""
    doc = open_results(path)
    if not isinstance(doc, RunDocument):
        what = getattr(doc, "kind", type(doc).__name__)
        raise UsageError(f"{path}: a '{what}' results file; a history keeps 'run' files (chbench run)")
    if doc.status != "complete":  # as `run --history`: the queries it never reached would read as a change
        raise UsageError(f"{path}: the run did not finish (status '{doc.status}'): a history keeps finished runs "
                         "only (the queries it never reached would read as a change)")
    sides = [t.id for t in doc.targets]
    if side is None:
        if len(sides) > 1:
            raise UsageError(f"{path}: {len(sides)} sides ({', '.join(sides)}): say which one with --side")
        chosen = sides[0]
    else:
        by_label = {t.label: t.id for t in doc.targets}
        chosen = side if side in sides else by_label.get(side, "")
        if not chosen:
            raise UsageError(f"{path}: no side '{side}' (sides: {', '.join(sides)})")
    return [_run_of(path, doc, chosen, labels)]


def _run_of(path: str, doc: RunDocument, side: str, labels: dict[str, str]) -> HistoryRun:
    target = next(t for t in doc.targets if t.id == side)
    queries = [_query_of(q, side, doc.never_quiet) for q in doc.queries if side in q.side_ids()]
    started = _epoch(doc.meta.started_at)
    firsts = [s.started_at for q in doc.queries for s in q.samples if s.started_at]
    if firsts:
        started = min(firsts)  # to the millisecond, where the samples say
    ident = json.dumps([doc.meta.started_at, doc.meta.host.get("hostname"), side,
                        [(q.name, q.key, q.client_ms[:3]) for q in queries]], sort_keys=True)
    host = {k: doc.meta.host.get(k) for k in ("hostname", "cpu_model", "cpu_count") if doc.meta.host.get(k)}
    return HistoryRun(run_id=hashlib.sha256(ident.encode()).hexdigest()[:16], started_at=started,
                      labels=dict(labels), source=os.path.abspath(path),
                      target={"id": side, "label": target.label, "kind": target.kind, "url": target.url,
                              "server_version": target.server_version,
                              "settings": target.settings_requested or {},
                              "in_process": target.capabilities.get("in_process")},
                      host=host, machine=_machine_of(doc, side), queries=queries)


def _query_of(q: RunQuery, side: str, set_aside: bool) -> QueryRecord:
    own = q.sides.get(side)
    sql = own.sql if own is not None else q.sql
    samples = q.measured(side, set_aside)  # the runs compare judges
    return QueryRecord(name=q.name, key=query_key(sql, own.settings if own is not None else None), sql=sql,
                       client_ms=[float(s.client_ms) for s in samples if not s.error and s.client_ms is not None],
                       server_ms=[float(s.server_ms) for s in samples if not s.error and s.server_ms is not None],
                       errors=sum(1 for s in samples if s.error))


def _machine_of(doc: RunDocument, side: str) -> dict[str, Any]:
    """The run's machine state in a few numbers: the calibration query's median (ms) and
    the settings it ran with, the reference task's (ms), other processes' cores and steal
    (medians over the rounds)."""
    out: dict[str, Any] = {}
    cal = [float(s.client_ms) for c in doc.calibration if c.target == side for s in c.samples
           if s.ok and s.client_ms is not None]
    if cal:
        out["calibration_ms"] = float(np.median(cal))
        sent = next((c.settings for c in doc.calibration if c.target == side), None)
        if sent is not None:  # else it ran with the side's settings (files before 2026-12-06)
            out["calibration_settings"] = sent
    ref = [float(np.median(r["ms"])) for r in (doc.machine.get("reference") or []) if r.get("ms")]
    if ref:
        out["reference_ms"] = float(np.median(ref))
    client = doc.machine.get("client") or []
    for key in ("others_cores", "steal", "iowait", "freq_mhz"):
        vals = [float(r[key]) for r in client if isinstance(r.get(key), (int, float)) and math.isfinite(r[key])]
        if vals:
            out[key] = float(np.median(vals))
    return out
