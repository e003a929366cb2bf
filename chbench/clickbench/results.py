"""ClickBench results files: reading them and scoring them as ClickBench's README
defines it.

* per query and entry: cold = try 1; hot = min(try 2, try 3), only when both succeeded;
* ratio = (time + 0.01 s) / (best time among the compared entries + 0.01 s), the best
  taken over successful results; a missing result counts as
  2 × max(300 s, the entry's slowest successful query);
* cold and hot scores: the geometric mean of the ratios over the 43 queries;
* combined: weighted geometric mean of the load-time ratio (10%), the data-size ratio
  (10%), the cold score (20%) and the hot score (60%); load time and data size are
  plain ratios to the best entry (no 0.01 s constant); an entry without them has no
  combined score.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chbench.errors import UsageError

N_QUERIES = 43
OFFSET_S = 0.01
MISSING_FLOOR_S = 300.0
WEIGHTS = {"load_time": 0.1, "data_size": 0.1, "cold": 0.2, "hot": 0.6}
HEADER_KEYS = ("system", "date", "machine", "cluster_size", "proprietary", "hardware", "tuned", "tags", "load_time",
               "data_size", "concurrent_qps", "concurrent_error_ratio")


@dataclass
class Entry:
    path: str
    system: str
    machine: str
    load_time: float | None
    data_size: float | None
    tries: list[list[float | None]]  # 43 x 3 seconds, None where a try failed
    header: dict[str, Any]

    @property
    def label(self) -> str:
        return f"{self.system} ({self.machine})" if self.machine else self.system

    def cold(self, q: int) -> float | None:
        return self.tries[q][0] if self.tries[q] else None

    def hot(self, q: int) -> float | None:
        t = self.tries[q][1:3]
        if len(t) < 2 or t[0] is None or t[1] is None:
            return None
        return min(t[0], t[1])

    def slowest(self) -> float:
        done = [t for row in self.tries for t in row if t is not None]
        return max(done) if done else 0.0


def _number(v: Any, what: str, path: str) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
        raise UsageError(f"{path}: {what} is not a non-negative number: {v!r}")
    return float(v)


def load_entry(path: str) -> Entry:
    from chbench.results.load import read_json_object

    p = Path(path)
    doc = read_json_object(path, "a ClickBench results file")
    if isinstance(doc, dict) and doc.get("kind") == "clickbench" and "schema" in doc:  # our full results file
        if not isinstance(doc.get("clickbench"), dict):
            raise UsageError(f"{path}: this chbench clickbench run did not finish (status {doc.get('status')!r})")
        doc = doc["clickbench"]
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
    return Entry(
        path=path,
        system=str(doc.get("system") or p.stem),
        machine=str(doc.get("machine") or ""),
        load_time=_number(doc.get("load_time"), "load_time", path) or None,
        data_size=_number(doc.get("data_size"), "data_size", path) or None,
        tries=tries,
        header={k: doc.get(k) for k in HEADER_KEYS},
    )


def _ratios(values: list[float | None], entries: list[Entry]) -> list[float]:
    """One query, one value per entry (None: missing) -> ratio per entry."""
    done = [v for v in values if v is not None]
    best = min(done) if done else None
    out = []
    for v, e in zip(values, entries, strict=True):
        t = v if v is not None else 2.0 * max(MISSING_FLOOR_S, e.slowest())
        out.append((t + OFFSET_S) / ((best if best is not None else t) + OFFSET_S))
    return out


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def score(entries: list[Entry]) -> dict[str, Any]:
    """The document ``chbench clickbench compare --format json`` prints."""
    if not entries:
        raise UsageError("nothing to compare")
    cold_ratios: list[list[float]] = [[] for _ in entries]
    hot_ratios: list[list[float]] = [[] for _ in entries]
    queries = []
    for q in range(N_QUERIES):
        cold = [e.cold(q) for e in entries]
        hot = [e.hot(q) for e in entries]
        rc, rh = _ratios(cold, entries), _ratios(hot, entries)
        for i in range(len(entries)):
            cold_ratios[i].append(rc[i])
            hot_ratios[i].append(rh[i])
        queries.append({
            "query": q + 1,
            "entries": [{"cold_s": cold[i], "hot_s": hot[i], "cold_ratio": rc[i], "hot_ratio": rh[i]}
                        for i in range(len(entries))],
        })
    loads = [e.load_time for e in entries]
    sizes = [e.data_size for e in entries]
    best_load = min((v for v in loads if v), default=None)
    best_size = min((v for v in sizes if v), default=None)
    scores = []
    for i, e in enumerate(entries):
        cold, hot = _geomean(cold_ratios[i]), _geomean(hot_ratios[i])
        combined = None
        if e.load_time and e.data_size and best_load and best_size:
            parts = {"load_time": e.load_time / best_load, "data_size": e.data_size / best_size, "cold": cold,
                     "hot": hot}
            combined = math.exp(sum(WEIGHTS[k] * math.log(v) for k, v in parts.items()))
        scores.append({"system": e.system, "machine": e.machine, "file": e.path, "cold": cold, "hot": hot,
                       "combined": combined, "load_time": e.load_time, "data_size": e.data_size,
                       "failed_tries": sum(t is None for row in e.tries for t in row)})
    return {"scores": scores, "queries": queries}
