"""Scoring ClickBench results files (``results.ClickBenchEntry``) as ClickBench's README
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
from typing import Any

from chbench.errors import UsageError
from chbench.results import ClickBenchEntry

N_QUERIES = 43
OFFSET_S = 0.01
MISSING_FLOOR_S = 300.0
WEIGHTS = {"load_time": 0.1, "data_size": 0.1, "cold": 0.2, "hot": 0.6}


def cold(e: ClickBenchEntry, q: int) -> float | None:
    return e.result[q][0] if e.result[q] else None


def hot(e: ClickBenchEntry, q: int) -> float | None:
    t = e.result[q][1:3]
    if len(t) < 2 or t[0] is None or t[1] is None:
        return None
    return min(t[0], t[1])


def slowest(e: ClickBenchEntry) -> float:
    done = [t for row in e.result for t in row if t is not None]
    return max(done) if done else 0.0


def _ratios(values: list[float | None], entries: list[ClickBenchEntry]) -> list[float]:
    """One query, one value per entry (None: missing) -> ratio per entry."""
    done = [v for v in values if v is not None]
    best = min(done) if done else None
    out = []
    for v, e in zip(values, entries, strict=True):
        t = v if v is not None else 2.0 * max(MISSING_FLOOR_S, slowest(e))
        out.append((t + OFFSET_S) / ((best if best is not None else t) + OFFSET_S))
    return out


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def score(entries: list[ClickBenchEntry]) -> dict[str, Any]:
    """The document ``chbench clickbench compare --format json`` prints."""
    if not entries:
        raise UsageError("nothing to compare")
    cold_ratios: list[list[float]] = [[] for _ in entries]
    hot_ratios: list[list[float]] = [[] for _ in entries]
    queries = []
    for q in range(N_QUERIES):
        colds = [cold(e, q) for e in entries]
        hots = [hot(e, q) for e in entries]
        rc, rh = _ratios(colds, entries), _ratios(hots, entries)
        for i in range(len(entries)):
            cold_ratios[i].append(rc[i])
            hot_ratios[i].append(rh[i])
        queries.append({
            "query": q + 1,
            "entries": [{"cold_s": colds[i], "hot_s": hots[i], "cold_ratio": rc[i], "hot_ratio": rh[i]}
                        for i in range(len(entries))],
        })
    loads = [e.load_time for e in entries]
    sizes = [e.data_size for e in entries]
    best_load = min((v for v in loads if v), default=None)
    best_size = min((v for v in sizes if v), default=None)
    scores = []
    for i, e in enumerate(entries):
        cold_score, hot_score = _geomean(cold_ratios[i]), _geomean(hot_ratios[i])
        combined = None
        if e.load_time and e.data_size and best_load and best_size:
            parts = {"load_time": e.load_time / best_load, "data_size": e.data_size / best_size, "cold": cold_score,
                     "hot": hot_score}
            combined = math.exp(sum(WEIGHTS[k] * math.log(v) for k, v in parts.items()))
        scores.append({"system": e.system, "machine": e.machine, "file": e.path, "cold": cold_score,
                       "hot": hot_score, "combined": combined, "load_time": e.load_time, "data_size": e.data_size,
                       "failed_tries": sum(t is None for row in e.result for t in row)})
    return {"scores": scores, "queries": queries, "notes": _too_few_tries(entries) + _other_data(entries)}


DATA_SPREAD = 10.0  # the full hits table takes 9–25 GB across engines and formats (the shared files: 15.3, 24.8)


def _other_data(entries: list[ClickBenchEntry]) -> list[str]:
    """Entries whose data sizes differ more than storage formats explain did not load the
    same rows (seen: a --synthetic 200,000-row run, 0.04 GB, scored 1.00 against a
    published 24.8 GB entry's 36.4)."""
    sized = [e for e in entries if e.data_size]
    if len(sized) < 2:
        return []
    small, large = min(sized, key=lambda e: e.data_size or 0), max(sized, key=lambda e: e.data_size or 0)
    spread = (large.data_size or 0) / (small.data_size or 1)
    if spread <= DATA_SPREAD:
        return []
    return [f"data sizes differ {spread:,.0f}× ({small.path}: {(small.data_size or 0) / 1e9:.2f} GB, {large.path}: "
            f"{(large.data_size or 0) / 1e9:.2f} GB): they did not load the same rows (a --synthetic or sampled "
            "load?), so their times do not compare"]


def _too_few_tries(entries: list[ClickBenchEntry]) -> list[str]:
    """Entries run with fewer than ClickBench's three tries have no hot time (the better of
    tries 2 and 3): their hot results count as missing, and the reader should know why
    (seen: 'clickbench run --tries 2' scored 6,741 hot against 1.00)."""
    out = []
    for e in entries:
        tries = max((len(row) for row in e.result), default=0)
        if tries < 3:
            out.append(f"{e.path}: {tries} tries per query; ClickBench's hot time is the better of tries 2 and 3, "
                       "so this entry's hot results count as missing (run it with --tries 3)")
    return out
