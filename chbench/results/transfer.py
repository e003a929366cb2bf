"""``kind: "ingest"`` and ``kind: "read"``: which client path moves data fastest —
per path its throughput, its check (row count and checksum, or rows delivered) and its
status, next to the ceilings measured in the same run (docs/transfer.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from chbench.results.document import Document


@dataclass(kw_only=True)
class TransferDocument(Document):
    KEYS: ClassVar[tuple[str, ...]] = ("targets", "result")

    targets: dict[str, Any] = field(default_factory=dict)  # the http, native and embedded addresses
    result: dict[str, Any] = field(default_factory=dict)  # paths[], ceilings, fastest, …

    def body(self) -> dict[str, Any]:
        return {"targets": self.targets, "result": self.result}

    @classmethod
    def parse(cls, d: dict[str, Any]) -> dict[str, Any]:
        result = d.get("result") or {}
        if not isinstance(result.get("paths", []), list):
            raise ValueError("result.paths is not a list")
        return {"targets": d.get("targets") or {}, "result": result}

    @property
    def paths(self) -> list[dict[str, Any]]:
        return list(self.result.get("paths") or [])


@dataclass(kw_only=True)
class IngestDocument(TransferDocument):
    kind: ClassVar[str] = "ingest"


@dataclass(kw_only=True)
class ReadDocument(TransferDocument):
    kind: ClassVar[str] = "read"
