"""What a report shows, read from results files — before any formatting.

``build_report(files)`` sorts the files by kind and returns ``{"title", "files",
"sections": [...]}``; each section is plain data that the HTML and Markdown exporters
render. Comparisons are built by the same function as ``chbench compare`` and ClickBench
scores by the same as ``chbench clickbench compare``, so every number in a report is
the number those commands print for the same files.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from chbench.errors import UsageError
from chbench.results.load import read_json_object
from chbench.results.store import SCHEMA_NAME
from chbench.stats.histogram import Histogram, bucket_bounds

COMPARABLE = ("run", "foreign")


def classify(path: str) -> tuple[str, dict[str, Any]]:
    doc = read_json_object(path)
    if (doc.get("schema") or {}).get("name") == SCHEMA_NAME:
        kind = str(doc.get("kind"))
        if kind in ("run", "load", "clickbench", "ingest", "read"):
            return kind, doc
        raise UsageError(f"{path}: a chbench '{kind}' file has no report (report takes run, load, clickbench, "
                         "ingest and read files)")
    if isinstance(doc.get("result"), list) and "system" in doc:
        return "clickbench", doc
    if "statistics" in doc or "results" in doc or any(isinstance(v, dict) and "statistics" in v
                                                      for v in doc.values()):
        return "foreign", doc  # clickhouse-benchmark --json or the upgrade script: compare reads them
    raise UsageError(f"{path}: not a results file chbench knows (ours, ClickBench's, clickhouse-benchmark's "
                     "--json or the upgrade script's)")


def build_report(files: list[str], threshold: float = 0.05, alpha: float = 0.05, correction: str = "holm",
                 metric: str = "client_ms", between_run_factor: float = 0.7) -> dict[str, Any]:
    if not files:
        raise UsageError("give at least one results file")
    kinds = [(f, *classify(f)) for f in files]
    sections: list[dict[str, Any]] = []
    comparable = [f for f, k, _ in kinds if k in COMPARABLE]
    if len(comparable) > 2:
        raise UsageError(f"a report compares at most two run files, got {len(comparable)}")
    if comparable:
        sections += _runs(comparable, {f: d for f, k, d in kinds if k == "run"}, threshold, alpha, correction,
                          metric, between_run_factor)
    for f, k, d in kinds:
        if k == "load":
            sections.append(_load(f, d))
    cb = [f for f, k, _ in kinds if k == "clickbench"]
    if cb:
        sections.append(_clickbench(cb))
    for f, k, d in kinds:
        if k in ("ingest", "read"):
            sections.append({"kind": "transfer", "file": f, "doc": d})
    title = "chbench report: " + ", ".join(Path(f).name for f in files)
    return {"title": title, "files": files, "sections": sections}


# -- runs and comparisons -----------------------------------------------------------------

def _run_queries(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Per query and side: the samples of a run file, with server metrics."""
    out = []
    for q in doc.get("queries", []):
        sides: dict[str, dict[str, list[Any]]] = {}
        for s in q.get("samples", []):
            if s.get("warmup") or s.get("error"):
                continue
            side = sides.setdefault(s.get("target", "A"), {k: [] for k in ("client_ms", "server_ms", "cpu_ms",
                                                                           "memory", "read_rows")})
            sm = s.get("server_metrics") or {}
            pe = sm.get("profile_events") or {}
            cpu = None
            if pe.get("UserTimeMicroseconds") is not None:
                cpu = (pe.get("UserTimeMicroseconds", 0) + pe.get("SystemTimeMicroseconds", 0)) / 1000.0
            side["client_ms"].append(s.get("client_ms"))
            side["server_ms"].append(s.get("server_ms"))
            side["cpu_ms"].append(cpu)
            side["memory"].append(sm.get("memory_usage", s.get("memory_bytes")))
            side["read_rows"].append(sm.get("read_rows", s.get("read_rows")))
        out.append({"name": q["name"], "sql": q.get("sql"), "errors": q.get("errors", 0), "sides": sides})
    return out


def _median(values: list[Any]) -> float | None:
    v = [x for x in values if x is not None]
    return float(statistics.median(v)) if v else None


def _run_section(path: str, doc: dict[str, Any]) -> dict[str, Any]:
    labels = {t["id"]: t.get("label") or t.get("url") for t in doc.get("targets", [])}
    queries = _run_queries(doc)
    for q in queries:
        q["summary"] = {side: {k: _median(v) for k, v in data.items()} | {"runs": len(data["client_ms"])}
                        for side, data in q["sides"].items()}
    return {"kind": "run", "file": path, "status": doc.get("status"), "labels": labels, "queries": queries,
            "meta": doc.get("meta", {})}


def _runs(files: list[str], docs: dict[str, dict[str, Any]], threshold: float, alpha: float, correction: str,
          metric: str, between_run_factor: float) -> list[dict[str, Any]]:
    from chbench.commands.compare import build_comparison
    from chbench.results import load_results

    sections: list[dict[str, Any]] = []
    one_sided = len(files) == 1 and len(load_results(files[0], metric).sides) < 2
    if not one_sided:
        cmp_doc, a, b = build_comparison(files, metric, threshold, alpha, correction, between_run_factor)
        samples = {}
        for name in [r["name"] for r in cmp_doc["queries"]]:
            da, db = a.queries.get(name), b.queries.get(name)
            samples[name] = {"A": {"times": da.times if da else [], "server": da.server_times if da else []},
                             "B": {"times": db.times if db else [], "server": db.server_times if db else []}}
        sections.append({"kind": "comparison", "files": files, "doc": cmp_doc, "samples": samples})
    for f in files:
        if f in docs:
            sections.append(_run_section(f, docs[f]))
    return sections


# -- load ---------------------------------------------------------------------------------

def _load(path: str, doc: dict[str, Any]) -> dict[str, Any]:
    levels = []
    for lv in doc.get("levels", []):
        total = lv.get("total") or {}
        hist = Histogram.from_json(total["histogram"]) if total.get("histogram") else Histogram()
        buckets = [(bucket_bounds(int(i))[0] / 1000.0, bucket_bounds(int(i))[1] / 1000.0, int(n))
                   for i, n in (total.get("histogram") or {}).get("buckets", [])]
        seconds = lv.get("seconds") or 0
        levels.append({
            "concurrency": lv.get("concurrency"), "seconds": seconds, "status": lv.get("status"),
            "queries": total.get("queries", 0), "errors": total.get("errors", 0),
            "errors_by_code": total.get("errors_by_code", {}),
            "qps": total.get("queries", 0) / seconds if seconds else 0.0,
            "p50_ms": hist.percentile(50), "p90_ms": hist.percentile(90), "p99_ms": hist.percentile(99),
            "max_ms": hist.max if hist.count else None,
            "timeline": lv.get("timeline", []), "buckets": _coarsen(buckets),
            "open_loop": lv.get("open_loop"), "comparison": lv.get("comparison"),
        })
    return {"kind": "load", "file": path, "status": doc.get("status"), "levels": levels, "sweep": doc.get("sweep"),
            "targets": [t.get("label") or t.get("url") for t in doc.get("targets", [])]}


def _coarsen(buckets: list[tuple[float, float, int]], max_bars: int = 160) -> list[tuple[float, float, int]]:
    """Merge neighbouring histogram buckets so a chart has at most ``max_bars`` bars."""
    if len(buckets) <= max_bars:
        return buckets
    step = -(-len(buckets) // max_bars)
    out = []
    for i in range(0, len(buckets), step):
        part = buckets[i:i + step]
        out.append((part[0][0], part[-1][1], sum(b[2] for b in part)))
    return out


# -- ClickBench ---------------------------------------------------------------------------

def _clickbench(files: list[str]) -> dict[str, Any]:
    from chbench.clickbench.results import load_entry, score

    doc = score([load_entry(f) for f in files])
    return {"kind": "clickbench", "files": files, "doc": doc}
