"""The comparison document: what ``chbench compare --format json`` prints and every
report of a comparison shows. Typed here; its JSON is written in ``to_json`` only, with
the keys docs/results-schema.md lists."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chbench.stats.verdict import ComparisonResult, ComparisonSummary, QueryComparison


@dataclass
class TestRow:
    """One performance test in a comparison: its queries' verdicts and geometric mean."""

    name: str
    file: str | None = None
    threshold: float | None = None
    queries: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)
    geomean: float | None = None
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "file": self.file, "threshold": self.threshold,
                               "queries": self.queries, "verdicts": dict(self.verdicts), "geomean": self.geomean}
        if self.note:
            out["note"] = self.note
        return out


@dataclass
class ComparisonDoc:
    result: ComparisonResult
    a_label: str = "A"
    b_label: str = "B"
    files: list[str] = field(default_factory=list)
    vs: list[str] | None = None
    metric: str = "client_ms"
    notes: list[str] = field(default_factory=list)
    # one line per finding under the verdict table: what the machine did, what to do next
    findings: list[str] = field(default_factory=list)
    method: str = "chbench"
    tests: list[TestRow] = field(default_factory=list)
    settings_changed: list[dict[str, Any]] | None = None  # chbench upgrade
    data_check: dict[str, Any] | None = None

    @property
    def queries(self) -> list[QueryComparison]:
        return self.result.queries

    @property
    def summary(self) -> ComparisonSummary:
        return self.result.summary

    def to_json(self) -> dict[str, Any]:
        out = self.result.to_json()
        out.update(a_label=self.a_label, b_label=self.b_label, files=self.files)
        if self.vs:
            out["vs"] = self.vs
        out.update(metric=self.metric, notes=self.notes, findings=self.findings, method=self.method)
        if self.tests:
            out["tests"] = [t.to_json() for t in self.tests]
        if self.settings_changed is not None:
            out["settings_changed"] = self.settings_changed
        if self.data_check is not None:
            out["data_check"] = self.data_check
        return out
