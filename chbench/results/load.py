"""``kind: "load"``: what ``chbench load --out`` measured — every concurrency level with
its counters and full histograms per host and query, the timeline, the comparison and
the open-loop accounting, and the sweep (docs/load.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from chbench.results.document import Document

_LEVEL_KEYS = ("concurrency", "workers", "seconds", "status", "total", "hosts", "timeline", "benchmark_json",
               "comparison", "open_loop", "per_worker", "per_host")


@dataclass(kw_only=True)
class LoadHost:
    """One host of a level: its counters and histogram (``stats``, a recorder's JSON) and
    the same per query (each with its ``index`` and ``name``)."""

    label: str
    stats: dict[str, Any]
    queries: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, **self.stats, "queries": self.queries}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> LoadHost:
        return cls(label=str(d["label"]), stats={k: v for k, v in d.items() if k not in ("label", "queries")},
                   queries=list(d.get("queries") or []))


@dataclass(kw_only=True)
class LoadLevel:
    concurrency: int
    workers: int
    seconds: float
    status: str
    total: dict[str, Any]  # counters and histogram of the whole level
    hosts: list[LoadHost] = field(default_factory=list)
    timeline: list[dict[str, Any]] = field(default_factory=list)  # per report interval
    benchmark_json: dict[str, Any] = field(default_factory=dict)  # clickhouse-benchmark's --json shape
    comparison: list[dict[str, Any]] | None = None
    open_loop: dict[str, Any] | None = None
    # each worker (process, or --master's worker) by index: its name, counters and histogram;
    # a --master worker that was lost has lost_at_s and lost_reason
    per_worker: list[dict[str, Any]] = field(default_factory=list)
    # a target with several hosts (clickhouse://h1,h2,h3): each host's label, target index,
    # counters and histogram (``hosts`` holds the targets)
    per_host: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in _LEVEL_KEYS}
        d["hosts"] = [h.to_json() for h in self.hosts]
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> LoadLevel:
        kw = {k: d[k] for k in _LEVEL_KEYS if k in d and k != "hosts"}
        return cls(**kw, hosts=[LoadHost.from_json(h) for h in d.get("hosts") or []])


@dataclass(kw_only=True)
class LoadDocument(Document):
    kind: ClassVar[str] = "load"
    KEYS: ClassVar[tuple[str, ...]] = ("targets", "queries", "levels", "sweep", "capacity")

    targets: list[dict[str, Any]] = field(default_factory=list)  # url, label, kind, version, settings, notes
    queries: list[dict[str, Any]] = field(default_factory=list)  # index, name, sql, weight
    levels: list[LoadLevel] = field(default_factory=list)
    sweep: dict[str, Any] | None = None  # -C: levels and the knee
    capacity: dict[str, Any] | None = None  # --slo: rate, ci, broken_at, slo, steps (load/capacity.py)

    def body(self) -> dict[str, Any]:
        return {"targets": self.targets, "queries": self.queries, "levels": [lv.to_json() for lv in self.levels],
                "sweep": self.sweep, "capacity": self.capacity}

    @classmethod
    def parse(cls, d: dict[str, Any]) -> dict[str, Any]:
        return {"targets": list(d.get("targets") or []), "queries": list(d["queries"]),
                "levels": [LoadLevel.from_json(lv) for lv in d["levels"]], "sweep": d.get("sweep"),
                "capacity": d.get("capacity")}

    def query_names(self) -> dict[int, str]:
        return {int(q["index"]): str(q["name"]) for q in self.queries}
