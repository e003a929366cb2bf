"""Files other tools write, read (never written) by chbench: the zero-dependency upgrade
script's JSON and clickhouse-benchmark's historical ``--json``. Both carry summary
numbers only (no raw samples): a comparison says its verdicts from them are weaker.

* the upgrade script: ``meta`` (host, port, server_version, …) and ``results``:
  ``[{id, query, runs, errors, min_ms, p50_ms, p90_ms, p99_ms, max_ms, mean_ms, qps,
  error_sample}]``;
* clickhouse-benchmark: ``statistics`` + ``query_time_percentiles`` (seconds), alone or
  keyed by host (its comparison mode).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(kw_only=True)
class UpgradeScriptFile:
    format: str = "upgrade-script"
    meta: dict[str, Any]
    results: list[dict[str, Any]]

    @classmethod
    def matches(cls, doc: dict[str, Any]) -> bool:
        return isinstance(doc.get("results"), list) and isinstance(doc.get("meta"), dict)


@dataclass(kw_only=True)
class ClickHouseBenchmarkFile:
    format: str = "clickhouse-benchmark"
    hosts: dict[str, dict[str, Any]]  # "(all)" when the file is not keyed by host

    @classmethod
    def matches(cls, doc: dict[str, Any]) -> bool:
        return "statistics" in doc or bool(doc) and all(isinstance(v, dict) and "statistics" in v
                                                        for v in doc.values())

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> ClickHouseBenchmarkFile:
        return cls(hosts={"(all)": doc} if "statistics" in doc else doc)
