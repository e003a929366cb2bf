"""Reading results files for ``compare``: ours, and two foreign formats.

* ``chbench.results`` (ours): raw samples, one or two sides.
* the zero-dependency upgrade script's JSON: ``meta`` + ``results`` with per-query
  min/p50/p90/p99/max and no raw samples;
* clickhouse-benchmark's historical ``--json``: ``statistics`` +
  ``query_time_percentiles`` (seconds), alone or keyed by host.

Foreign files carry summaries only: compare says a verdict from them is weaker.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chbench.errors import UsageError
from chbench.results.store import SCHEMA_NAME, SCHEMA_VERSION
from chbench.stats.compare import SideData


@dataclass
class Side:
    label: str  # what to call it in reports
    queries: dict[str, SideData] = field(default_factory=dict)  # name -> data, in file order
    calibration: list[float] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Loaded:
    path: str
    format: str  # chbench | upgrade-script | clickhouse-benchmark
    sides: list[Side]
    status: str = "complete"


def read_json_object(path: str, what: str = "a results file") -> dict[str, Any]:
    """A JSON object from ``path``, or one clear UsageError naming ``what`` it should be."""
    p = Path(path)
    if not p.exists():
        raise UsageError(f"results file not found: {path}")
    if p.is_dir():
        raise UsageError(f"{path} is a directory, not {what}")
    try:
        doc = json.loads(p.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise UsageError(f"{path}: not {what} (not JSON)") from None
    if not isinstance(doc, dict):
        raise UsageError(f"{path}: not {what} (JSON, but not an object)")
    return doc


def load_results(path: str, metric: str = "client_ms") -> Loaded:
    doc = read_json_object(path)
    schema = doc.get("schema")
    if isinstance(schema, dict) and schema.get("name") == SCHEMA_NAME:
        if int(schema.get("version", 0)) > SCHEMA_VERSION:
            raise UsageError(
                f"{path}: results schema version {schema.get('version')} is newer than this chbench reads "
                f"({SCHEMA_VERSION}); upgrade chbench"
            )
        return _load_ours(path, doc, metric)
    if isinstance(doc.get("results"), list) and isinstance(doc.get("meta"), dict):
        return _load_upgrade_script(path, doc)
    if "statistics" in doc or (doc and all(isinstance(v, dict) and "statistics" in v for v in doc.values())):
        return _load_clickhouse_benchmark(path, doc)
    raise UsageError(f"{path}: not a results file (no chbench schema, upgrade-script or clickhouse-benchmark shape)")


def _load_ours(path: str, doc: dict[str, Any], metric: str) -> Loaded:
    if doc.get("kind") == "load":
        return _load_load_run(path, doc, metric)
    meta = doc.get("meta") or {}
    targets = doc.get("targets") or [{"id": "A", "url": "?"}]
    sides = {t["id"]: Side(label=f"{t['id']}: {t.get('label') or t.get('url')}", meta=meta) for t in targets}
    missing = 0
    try:
        for q in doc["queries"]:
            for sid in sides:
                per = [s for s in q["samples"] if s.get("target", "A") == sid and not s.get("warmup")]
                sql_sent = (q.get("sides") or {}).get(sid, {}).get("sql_sent", q.get("sql_sent"))
                if not per and sid not in (q.get("sides") or {sid: 1}):
                    continue
                data = SideData(sql=sql_sent)
                for s in per:
                    if s.get("error"):
                        data.errors += 1
                        data.error_sample = data.error_sample or _err_text(s["error"])
                        continue
                    value = s.get(metric)
                    if value is None:
                        missing += 1
                        continue
                    data.times.append(float(value))
                    if s.get("client_ms") is not None:
                        data.client_times.append(float(s["client_ms"]))
                    if s.get("server_ms") is not None:
                        data.server_times.append(float(s["server_ms"]))
                sides[sid].queries[q["name"]] = data
        for c in doc.get("calibration") or []:
            sid = c.get("target", "A")
            if sid in sides:
                sides[sid].calibration = [float(s["client_ms"]) for s in c["samples"] if not s.get("error")]
    except (KeyError, TypeError, ValueError) as e:
        raise UsageError(f"{path}: malformed chbench results file ({type(e).__name__}: {e})") from None
    if missing and not any(d.times for side in sides.values() for d in side.queries.values()):
        raise UsageError(f"{path}: no {metric} recorded (server timing needs the HTTP summary header, native "
                         "progress packets or a run with --server-metrics)")
    return Loaded(path=path, format="chbench", sides=list(sides.values()), status=doc.get("status", "complete"))


def _load_load_run(path: str, doc: dict[str, Any], metric: str) -> Loaded:
    """A ``chbench load`` file: one side per host of its last concurrency level; each
    query's latencies come back from its histogram (bucket midpoints, within 0.4%),
    thinned proportionally to at most 5,000 values."""
    from chbench.stats.histogram import Histogram

    if metric != "client_ms":
        raise UsageError(f"{path}: a load run records client latency only (use --metric client_ms)")
    try:
        levels = doc["levels"]
        if not levels:
            raise UsageError(f"{path}: load results file with no finished level")
        level = levels[-1]
        names = {q["index"]: q["name"] for q in doc["queries"]}
        sqls = {q["index"]: q["sql"] for q in doc["queries"]}
        sides = []
        for host in level["hosts"]:
            side = Side(label=f"{host['label']} (load, concurrency {level['concurrency']})", meta=doc.get("meta") or {})
            for q in host["queries"]:
                h = Histogram.from_json(q["histogram"])
                times = h.expand(5000)
                random.Random(0).shuffle(times)  # run order is not kept: no false drift from sorted values
                data = SideData(sql=sqls.get(q["index"]), times=times, errors=int(q.get("errors", 0)))
                data.client_times = list(data.times)
                if data.errors:
                    msgs = q.get("error_messages") or {}
                    data.error_sample = next(iter(msgs.values()), None)
                side.queries[names[q["index"]]] = data
            sides.append(side)
    except (KeyError, TypeError, ValueError) as e:
        raise UsageError(f"{path}: malformed chbench load results file ({type(e).__name__}: {e})") from None
    return Loaded(path=path, format="chbench-load", sides=sides, status=doc.get("status", "complete"))


def _err_text(e: Any) -> str:
    if isinstance(e, dict):
        return f"Code {e.get('code')}: {e.get('message')}"
    return str(e)


def _load_upgrade_script(path: str, doc: dict[str, Any]) -> Loaded:
    meta = doc["meta"]
    label = f"{meta.get('host', '?')}:{meta.get('port', '?')} ({meta.get('server_version', '?')})"
    side = Side(label=label, meta=meta)
    try:
        for r in doc["results"]:
            name = str(r.get("id") or r.get("query"))
            d = SideData(sql=r.get("query"), errors=int(r.get("errors") or 0))
            if r.get("p50_ms") is not None:
                d.summary = {
                    k: float(r[f"{k2}_ms"])
                    for k, k2 in (("min", "min"), ("median", "p50"), ("p90", "p90"), ("p99", "p99"), ("max", "max"))
                    if r.get(f"{k2}_ms") is not None
                }
                d.summary["runs"] = float(r.get("runs") or 0)
            if r.get("error_sample"):
                d.error_sample = str(r["error_sample"])
            side.queries[name] = d
    except (TypeError, ValueError, AttributeError) as e:
        raise UsageError(f"{path}: malformed upgrade-script results ({e})") from None
    return Loaded(path=path, format="upgrade-script", sides=[side])


def _load_clickhouse_benchmark(path: str, doc: dict[str, Any]) -> Loaded:
    hosts = {"(all)": doc} if "statistics" in doc else doc
    sides = []
    for host, body in hosts.items():
        pct = body.get("query_time_percentiles") or {}
        st = body.get("statistics") or {}
        try:
            summary = {"median": float(pct["50"]) * 1000.0}
            for k, key in (("min", "0"), ("p90", "90"), ("p99", "99"), ("max", "100")):
                if key in pct:
                    summary[k] = float(pct[key]) * 1000.0
            if "max" not in summary and "99.99" in pct:
                summary["max"] = float(pct["99.99"]) * 1000.0
        except (KeyError, TypeError, ValueError):
            raise UsageError(f"{path}: clickhouse-benchmark JSON without query_time_percentiles") from None
        d = SideData(summary=summary, errors=int(st.get("num_errors") or 0))
        side = Side(label=f"clickhouse-benchmark {host}", meta={"statistics": st})
        side.queries["clickhouse-benchmark (all queries)"] = d
        sides.append(side)
    return Loaded(path=path, format="clickhouse-benchmark", sides=sides)
