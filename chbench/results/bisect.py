"""``kind: "bisect"``: what ``chbench bisect --out`` found (docs/bisect.md) — the top-level
``bisect`` object (the contract checks outside the repo read: ``kind``, ``first_changed``,
``last_same``, ``steps``, ``changes``), the query, the versions of the range, and every
side-by-side run the steps made, raw samples included (``runs``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from chbench.results.document import Document


@dataclass(kw_only=True)
class BisectDocument(Document):
    kind: ClassVar[str] = "bisect"
    KEYS: ClassVar[tuple[str, ...]] = ("bisect", "query", "versions", "runs")

    # {"kind": "speed"|"answer", "old", "new", "first_changed", "last_same", "found",
    #  "steps": [...], "changes": [...], "comparisons", "notes"}
    bisect: dict[str, Any] = field(default_factory=dict)
    query: dict[str, Any] = field(default_factory=dict)  # sql, name, setup, settings
    versions: list[str] = field(default_factory=list)  # the range, oldest first
    runs: list[dict[str, Any]] = field(default_factory=list)  # {"old", "new", "run": a run document}

    def body(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.KEYS}

    @classmethod
    def parse(cls, d: dict[str, Any]) -> dict[str, Any]:
        return {"bisect": dict(d["bisect"]), "query": dict(d.get("query") or {}),
                "versions": list(d.get("versions") or []), "runs": list(d.get("runs") or [])}
