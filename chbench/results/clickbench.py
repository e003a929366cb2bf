"""ClickBench's results files and chbench's own ClickBench documents.

* :class:`ClickBenchEntry` — ClickBench's published format (``result-*.json``): read from
  anyone, and written by ``clickbench run --results`` with exactly its keys, in its order.
* ``kind: "clickbench"`` (``clickbench run --out``): every try of every query with its
  checksum, the cold-cache information, the reference comparison, concurrent QPS, and the
  ClickBench entry; ``"clickbench-load"``, ``"clickbench-stress"`` and
  ``"clickbench-crash-test"`` for the other subcommands (docs/clickbench.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from chbench.errors import UsageError
from chbench.results.document import Document, opt, present

N_QUERIES = 43
HEADER_KEYS = ("system", "date", "machine", "cluster_size", "proprietary", "hardware", "tuned", "tags", "load_time",
               "data_size", "concurrent_qps", "concurrent_error_ratio")


def _number(v: Any, what: str, path: str) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
        raise UsageError(f"{path}: {what} is not a non-negative number: {v!r}")
    return float(v)


@dataclass(kw_only=True)
class ClickBenchEntry:
    """One ClickBench results file: the header and 43 × tries seconds (None: failed)."""

    header: dict[str, Any]  # HEADER_KEYS, in ClickBench's order
    result: list[list[float | None]]
    path: str = ""

    @property
    def system(self) -> str:
        return str(self.header.get("system") or Path(self.path).stem)

    @property
    def machine(self) -> str:
        return str(self.header.get("machine") or "")

    @property
    def label(self) -> str:
        return f"{self.system} ({self.machine})" if self.machine else self.system

    @property
    def load_time(self) -> float | None:
        return self.header.get("load_time") or None

    @property
    def data_size(self) -> float | None:
        return self.header.get("data_size") or None

    def to_json(self) -> dict[str, Any]:
        return {**{k: self.header.get(k) for k in HEADER_KEYS}, "result": self.result}

    @classmethod
    def from_json(cls, doc: Any, path: str) -> ClickBenchEntry:
        if not isinstance(doc, dict) or not isinstance(doc.get("result"), list):
            raise UsageError(f"{path}: not a ClickBench results file (no 'result' list of 43 x 3 times)")
        rows = doc["result"]
        if len(rows) != N_QUERIES:
            raise UsageError(f"{path}: 'result' has {len(rows)} rows, ClickBench has {N_QUERIES} queries")
        tries: list[list[float | None]] = []
        for i, row in enumerate(rows, 1):
            if not isinstance(row, list) or not row:
                raise UsageError(f"{path}: result row {i} is not a list of tries")
            tries.append([_number(t, f"query {i} try", path) for t in row])
        header = {k: doc.get(k) for k in HEADER_KEYS}
        header["load_time"] = _number(doc.get("load_time"), "load_time", path)
        header["data_size"] = _number(doc.get("data_size"), "data_size", path)
        return cls(header=header, result=tries, path=path)


@dataclass(kw_only=True)
class ClickBenchRunDocument(Document):
    kind: ClassVar[str] = "clickbench"
    KEYS: ClassVar[tuple[str, ...]] = ("target", "server", "table", "load", "tries", "timeout", "queries", "cold",
                                       "concurrent", "reference", "clickbench")

    target: dict[str, Any] = field(default_factory=dict)
    server: dict[str, Any] = field(default_factory=dict)
    table: dict[str, Any] = field(default_factory=dict)  # rows, data_size
    load: dict[str, Any] | None = None  # from 'clickbench load --out'
    tries: int = 3
    timeout: float | None = None
    queries: list[dict[str, Any]] = field(default_factory=list)  # index, query, mode, rows, checksum, tries…
    cold: dict[str, Any] | None = None  # caches dropped before try 1
    concurrent: dict[str, Any] | None = None
    reference: dict[str, Any] | None = None  # differences from --reference
    clickbench: ClickBenchEntry | None = None  # once the run is complete

    def body(self) -> dict[str, Any]:
        return {"target": self.target, "server": self.server, "table": self.table, "load": self.load,
                "tries": self.tries, "timeout": self.timeout, "queries": self.queries, "cold": self.cold,
                **present(self, "concurrent", "reference"),
                **({"clickbench": self.clickbench.to_json()} if self.clickbench is not None else {})}

    @classmethod
    def parse(cls, d: dict[str, Any]) -> dict[str, Any]:
        entry = d.get("clickbench")
        return {"target": d.get("target") or {}, "server": d.get("server") or {}, "table": d.get("table") or {},
                "load": opt(d, "load"), "tries": int(d.get("tries") or 3), "timeout": d.get("timeout"),
                "queries": list(d["queries"]), "cold": opt(d, "cold"), "concurrent": opt(d, "concurrent"),
                "reference": opt(d, "reference"),
                "clickbench": ClickBenchEntry.from_json(entry, "clickbench") if isinstance(entry, dict) else None}


@dataclass(kw_only=True)
class ClickBenchLoadDocument(Document):
    kind: ClassVar[str] = "clickbench-load"
    KEYS: ClassVar[tuple[str, ...]] = ("target", "server", "load")

    target: dict[str, Any] = field(default_factory=dict)
    server: dict[str, Any] = field(default_factory=dict)
    load: dict[str, Any] | None = None  # source, table, rows, expected_rows, seconds, data_size, …

    def body(self) -> dict[str, Any]:
        return {"target": self.target, "server": self.server, "load": self.load}

    @classmethod
    def parse(cls, d: dict[str, Any]) -> dict[str, Any]:
        return {"target": d.get("target") or {}, "server": d.get("server") or {}, "load": opt(d, "load")}


@dataclass(kw_only=True)
class StressDocument(Document):
    kind: ClassVar[str] = "clickbench-stress"
    KEYS: ClassVar[tuple[str, ...]] = ("target", "server", "concurrent", "duration", "phases", "mixed")

    target: dict[str, Any] = field(default_factory=dict)
    server: dict[str, Any] = field(default_factory=dict)
    concurrent: int = 0
    duration: float = 0.0
    phases: list[dict[str, Any]] | None = None  # the concurrent test
    mixed: dict[str, Any] | None = None  # --ingest: without / with a writer

    def body(self) -> dict[str, Any]:
        return {"target": self.target, "server": self.server, "concurrent": self.concurrent,
                "duration": self.duration, **present(self, "phases", "mixed")}

    @classmethod
    def parse(cls, d: dict[str, Any]) -> dict[str, Any]:
        return {"target": d.get("target") or {}, "server": d.get("server") or {},
                "concurrent": int(d.get("concurrent") or 0), "duration": float(d.get("duration") or 0),
                "phases": d.get("phases"), "mixed": opt(d, "mixed")}


@dataclass(kw_only=True)
class CrashTestDocument(Document):
    kind: ClassVar[str] = "clickbench-crash-test"
    KEYS: ClassVar[tuple[str, ...]] = ("rows", "batch_rows", "batches", "seed", "server_version", "reference",
                                       "cycles", "ok")

    rows: int = 0
    batch_rows: int = 0
    batches: int = 0
    seed: int = 0
    server_version: str | None = None
    reference: dict[str, Any] | None = None  # the uninterrupted load: rows, checksum, seconds
    cycles: list[dict[str, Any]] = field(default_factory=list)
    ok: bool | None = None

    def body(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.KEYS}

    @classmethod
    def parse(cls, d: dict[str, Any]) -> dict[str, Any]:
        return {k: d[k] for k in cls.KEYS if k in d}
