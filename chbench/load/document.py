"""The ``kind: "load"`` document of a run (``results.LoadDocument``): its targets,
queries and options, and each level's entry built from what the engine measured."""

from __future__ import annotations

from typing import Any

from chbench.core.lanes import LATE_MS
from chbench.load.config import LoadConfig
from chbench.load.levels import Host, LevelResult
from chbench.load.recorder import Stats
from chbench.load.summary import HostView, benchmark_json, comparison, host_views, open_loop_summary
from chbench.outcome import Outcome
from chbench.results import LoadDocument, LoadHost, LoadLevel, Meta
from chbench.stats.ttest import CONFIDENCE_LEVELS


def options(cfg: LoadConfig) -> dict[str, Any]:
    return {
        "concurrency": cfg.concurrency, "max_concurrency": cfg.max_concurrency, "iterations": cfg.iterations,
        "timelimit": cfg.timelimit, "randomize": cfg.randomize, "seed": cfg.seed, "delay": cfg.delay,
        "cumulative": cfg.cumulative, "confidence": CONFIDENCE_LEVELS[cfg.confidence], "stage": cfg.stage,
        "query_id_prefix": cfg.query_id_prefix, "reconnect": cfg.reconnect,
        "continue_on_errors": cfg.continue_on_errors, "max_consecutive_errors": cfg.max_consecutive_errors,
        "roundrobin": cfg.roundrobin, "settings": cfg.settings, "rate": cfg.rate or None, "poisson": cfg.poisson,
        "latency_limit_ms": cfg.latency_limit_ms or None, "workers": cfg.workers, "timeout": cfg.timeout,
        "late_threshold_ms": LATE_MS, "setup": cfg.setup, "teardown": cfg.teardown, "pick": cfg.pick,
    }


def new_document(cfg: LoadConfig, hosts: list[Host]) -> LoadDocument:
    return LoadDocument(
        meta=Meta(extra={"options": options(cfg)}),
        targets=[{"id": chr(ord("A") + i) if i < 26 else f"T{i}", "url": h.url, "label": h.label, "kind": h.kind,
                  "server_version": h.version, "settings_sent": h.settings, "notes": h.notes,
                  **({"target": cfg.group_of[i]} if cfg.group_of else {})}
                 for i, h in enumerate(hosts)],
        queries=[{"index": i, "name": q.name, "sql": q.sql, "weight": q.weight,
                  **({"settings": q.settings} if q.settings else {})} for i, q in enumerate(cfg.queries)])


def views(cfg: LoadConfig, hosts: list[Host], res: LevelResult) -> list[HostView]:
    return host_views(hosts, res.by_host(), cfg)


def outcome_of(res: LevelResult) -> Outcome:
    """How a level ended (the last level: how the run did)."""
    if res.fatal:
        return Outcome.SERVER_LOST
    if res.interrupted:
        return Outcome.INTERRUPTED
    if res.failure:
        return Outcome.FAILED
    return Outcome.COMPLETE


def level_entry(cfg: LoadConfig, hosts: list[Host], res: LevelResult, final: bool = True) -> LoadLevel:
    """One level as the file keeps it (``final``: with the comparison, which is only
    computed once a level is over)."""
    hv = views(cfg, hosts, res)
    total = res.total()
    level = LoadLevel(concurrency=res.concurrency, workers=res.workers, seconds=res.seconds,
                      status=outcome_of(res).status,
                      total=total.to_json(), timeline=res.timeline, benchmark_json=benchmark_json(hv, res.seconds),
                      comparison=comparison(hv, cfg.confidence) if len(hv) > 1 and final else None,
                      per_worker=res.per_worker)
    for hi, v in enumerate(hv):
        per_query = [{"index": qi, "name": q.name, **st.to_json()} for qi, q in enumerate(cfg.queries)
                     if (st := res.totals.get((hi, qi))) is not None]
        level.hosts.append(LoadHost(label=v.label, stats=v.stats.to_json(), queries=per_query))
    if any(len(m) > 1 for m in cfg.members()):  # several hosts in a target: each host's own stats
        by_host = res.by_host()
        level.per_host = [{"label": hosts[h].label, "target": t, **by_host.get(h, Stats()).to_json()}
                          for t, members in enumerate(cfg.members()) for h in members]
    if cfg.open_loop:
        level.open_loop = open_loop_summary(cfg.rate, cfg.poisson, res.seconds, res.due or 0, res.started, res.late,
                                            total.queries, LATE_MS)
    return level


def sweep_rows(levels: list[LevelResult]) -> list[dict[str, Any]]:
    rows = []
    for res in levels:
        t = res.total()
        rows.append({
            "concurrency": res.concurrency,
            "qps": t.queries / res.seconds if res.seconds > 0 else 0.0,
            "p50_ms": t.hist.percentile(50),
            "p99_ms": t.hist.percentile(99),
            "errors": t.errors,
        })
    return rows
