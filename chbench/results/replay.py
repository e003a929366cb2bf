"""``kind: "replay"``: what ``chbench replay --out`` measured (docs/replay.md) — the
workload replayed (its header), every target, how well the schedule held (top-level
``schedule``), the statements skipped by reason, every sample of every target (in
columns), the per-hash table, and with two targets the comparison and the answers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from chbench.results.document import Document


@dataclass(kw_only=True)
class ReplayDocument(Document):
    kind: ClassVar[str] = "replay"
    KEYS: ClassVar[tuple[str, ...]] = ("workload", "options", "targets", "schedule", "skipped", "hashes", "samples",
                                       "by_hash", "comparison", "answers")

    workload: dict[str, Any] = field(default_factory=dict)  # path and header
    options: dict[str, Any] = field(default_factory=dict)
    targets: list[dict[str, Any]] = field(default_factory=list)  # id, url, label, kind, version, schedule, …
    # {"planned", "sent", "late", "dropped", "skipped", "lateness_ms": {"p50", "p99", "max"}} over every target
    schedule: dict[str, Any] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> statements not replayed
    hashes: list[dict[str, Any]] = field(default_factory=list)  # normalized queries: hash, name, sql, count
    samples: dict[str, dict[str, Any]] = field(default_factory=dict)  # target id -> columns
    by_hash: list[dict[str, Any]] = field(default_factory=list)
    comparison: dict[str, Any] | None = None
    answers: dict[str, Any] | None = None

    def body(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.KEYS}

    @classmethod
    def parse(cls, d: dict[str, Any]) -> dict[str, Any]:
        return {"workload": dict(d.get("workload") or {}), "options": dict(d.get("options") or {}),
                "targets": list(d["targets"]), "schedule": dict(d["schedule"]), "skipped": dict(d.get("skipped") or {}),
                "hashes": list(d.get("hashes") or []), "samples": dict(d.get("samples") or {}),
                "by_hash": list(d.get("by_hash") or []), "comparison": d.get("comparison"),
                "answers": d.get("answers")}
