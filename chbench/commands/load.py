"""``chbench load``: clickhouse-benchmark's flags and reports, plus open-loop load,
concurrency sweeps, worker processes and honest comparison verdicts."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from chbench.commands.connection import credentials
from chbench.errors import EXIT_FINDING, EXIT_INTERRUPTED, EXIT_OK, EXIT_SERVER_LOST, UsageError
from chbench.load.config import LATE_MS, LoadConfig
from chbench.load.engine import Host, LevelResult, probe_hosts, run_level
from chbench.load.live import make_display
from chbench.load.report import (
    benchmark_json,
    comparison,
    comparison_lines,
    error_lines,
    host_views,
    knee,
    open_loop_lines,
    open_loop_summary,
    sweep_lines,
    text_report,
)
from chbench.results.store import write_atomic
from chbench.runner.environment import document_header, now_iso
from chbench.stats.ttest import CONFIDENCE_LEVELS
from chbench.workload.query import Query
from chbench.workload.sqlfile import parse_queries, read_queries


def target_specs(args: argparse.Namespace) -> list[str]:
    specs = list(args.target)
    hosts, ports = list(args.host), list(args.port)
    if hosts or ports:
        if len(hosts) > 1 and len(ports) > 1 and len(hosts) != len(ports):
            raise UsageError(f"{len(hosts)} --host and {len(ports)} --port: give as many of each, or one of either")
        n = max(len(hosts), len(ports))
        hosts = hosts or ["localhost"]
        ports = ports or [9440 if args.secure else 9000]
        scheme = "clickhouses" if args.secure else "clickhouse"
        for i in range(n):
            h = hosts[i if len(hosts) > 1 else 0]
            p = ports[i if len(ports) > 1 else 0]
            specs.append(f"{scheme}://{'[' + h + ']' if ':' in h else h}:{p}")
    if not specs:
        specs = ["embedded"]
    return specs


def read_load_queries(args: argparse.Namespace) -> list[Query]:
    if args.query:
        text = "\n;\n".join(args.query)
        return parse_queries(text, "--query", "script")
    if args.queries:
        return read_queries(args.queries, _fmt(args.queries_format, "auto"))
    if sys.stdin is None or sys.stdin.isatty():
        raise UsageError("no queries: give --query SQL, --queries FILE, or pipe queries on standard input")
    text = sys.stdin.read()
    if not text.strip():
        raise UsageError("standard input: no queries")
    return parse_queries(text, "standard input", _fmt(args.queries_format, "tsv"))


def _fmt(given: str | None, default: str) -> str:
    return {"tsv": "tsv", "script": "script", "lines": "lines", None: default}[given]


def build_config(args: argparse.Namespace, settings: dict[str, str]) -> LoadConfig:
    if args.rate is None and args.poisson:
        raise UsageError("--poisson needs --rate QPS")
    specs = target_specs(args)
    if args.workers > 1 and any(s == "embedded" or s.startswith("embedded:") for s in specs):
        raise UsageError("--workers needs a server target: the embedded engine lives inside one process")
    creds = credentials(args)
    if not args.allow_writes:
        settings = {**settings, "readonly": settings.get("readonly", "2")}
    return LoadConfig(
        targets=specs,
        credentials=creds,
        queries=read_load_queries(args),
        concurrency=args.concurrency,
        max_concurrency=args.max_concurrency or 0,
        iterations=args.iterations,
        timelimit=args.timelimit,
        randomize=bool(args.randomize),
        seed=args.seed,
        delay=args.delay,
        cumulative=args.cumulative,
        confidence=args.confidence,
        stage=args.stage,
        query_id_prefix=args.query_id_prefix or "",
        reconnect=args.reconnect or 0,
        continue_on_errors=args.continue_on_errors,
        max_consecutive_errors=args.max_consecutive_errors,
        roundrobin=args.roundrobin,
        settings=settings,
        rate=args.rate or 0.0,
        poisson=args.poisson,
        latency_limit_ms=args.latency_limit or 0.0,
        workers=args.workers,
        timeout=args.timeout,
    )


# -- reports ----------------------------------------------------------------------------------
def _views_of(cfg: LoadConfig, hosts: list[Host], res: LevelResult) -> list[Any]:
    return host_views(hosts, res.by_host(), cfg.roundrobin)


def level_document(cfg: LoadConfig, hosts: list[Host], res: LevelResult, final: bool = True) -> dict[str, Any]:
    views = _views_of(cfg, hosts, res)
    total = res.total()
    doc: dict[str, Any] = {
        "concurrency": res.concurrency,
        "workers": res.workers,
        "seconds": res.seconds,
        "status": _status(res),
        "total": total.to_json(),
        "hosts": [],
        "timeline": res.timeline,
        "benchmark_json": benchmark_json(views, res.seconds),
        "comparison": comparison(views, cfg.confidence) if len(views) > 1 and final else None,
        "open_loop": None,
    }
    by_key = res.totals
    for hi, v in enumerate(views):
        per_query = []
        for qi, q in enumerate(cfg.queries):
            st = by_key.get((hi, qi))
            if st is not None:
                per_query.append({"index": qi, "name": q.name, **st.to_json()})
        doc["hosts"].append({"label": v.label, **v.stats.to_json(), "queries": per_query})
    if cfg.open_loop:
        doc["open_loop"] = open_loop_summary(cfg.rate, cfg.poisson, res.seconds, res.due or 0, res.started, res.late,
                                             total.queries, LATE_MS)
    return doc


def _status(res: LevelResult) -> str:
    if res.fatal:
        return "server_lost"
    if res.interrupted:
        return "interrupted"
    if res.failure:
        return "failed"
    return "complete"


def level_lines(cfg: LoadConfig, hosts: list[Host], res: LevelResult, doc: dict[str, Any]) -> list[str]:
    views = _views_of(cfg, hosts, res)
    total = res.total()
    lines = text_report(views, res.seconds, total.queries)
    if doc["comparison"]:
        lines += comparison_lines(doc["comparison"]) + [""]
    if doc["open_loop"]:
        lines += open_loop_lines(doc["open_loop"], total, cfg.latency_limit_ms) + [""]
    elif cfg.latency_limit_ms:
        share = total.over_limit / total.queries * 100 if total.queries else 0.0
        lines += [f"Over the latency limit of {cfg.latency_limit_ms:g} ms: {total.over_limit} of {total.queries} "
                  f"({share:.2f}%).", ""]
    el = error_lines(total)
    if el:
        lines += el + [""]
    return lines


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


class Output:
    """The --out results file, rewritten atomically after every level and checkpoint."""

    def __init__(self, path: str | None, cfg: LoadConfig, hosts: list[Host]) -> None:
        self.path = path
        self.doc: dict[str, Any] = document_header("load")
        self.doc["meta"]["options"] = _options(cfg)
        self.doc.update({
            "targets": [
                {"id": chr(ord("A") + i) if i < 26 else f"T{i}", "url": h.url, "label": h.label, "kind": h.kind,
                 "server_version": h.version, "settings_sent": h.settings, "notes": h.notes}
                for i, h in enumerate(hosts)
            ],
            "queries": [{"index": i, "name": q.name, "sql": q.sql, "weight": q.weight}
                        for i, q in enumerate(cfg.queries)],
            "levels": [],
            "sweep": None,
        })

    def save(self, status: str | None = None, partial: dict[str, Any] | None = None) -> None:
        if not self.path:
            return
        doc = dict(self.doc)
        if partial is not None:
            doc["levels"] = [*self.doc["levels"], partial]
        doc["status"] = status or self.doc["status"]
        doc["meta"] = {**self.doc["meta"], "ended_at": now_iso()}
        write_atomic(self.path, doc)


def _options(cfg: LoadConfig) -> dict[str, Any]:
    return {
        "concurrency": cfg.concurrency, "max_concurrency": cfg.max_concurrency, "iterations": cfg.iterations,
        "timelimit": cfg.timelimit, "randomize": cfg.randomize, "seed": cfg.seed, "delay": cfg.delay,
        "cumulative": cfg.cumulative, "confidence": CONFIDENCE_LEVELS[cfg.confidence], "stage": cfg.stage,
        "query_id_prefix": cfg.query_id_prefix, "reconnect": cfg.reconnect,
        "continue_on_errors": cfg.continue_on_errors, "max_consecutive_errors": cfg.max_consecutive_errors,
        "roundrobin": cfg.roundrobin, "settings": cfg.settings, "rate": cfg.rate or None, "poisson": cfg.poisson,
        "latency_limit_ms": cfg.latency_limit_ms or None, "workers": cfg.workers, "timeout": cfg.timeout,
        "late_threshold_ms": LATE_MS,
    }


def cmd_load(args: argparse.Namespace, settings: dict[str, str]) -> int:
    cfg = build_config(args, settings)
    hosts = probe_hosts(cfg)
    err = sys.stderr
    if not (args.target or args.host or args.port):
        err.write("Note: no --host/--port/--target given: the load goes to the embedded engine.\n")
    err.write(f"Loaded {len(cfg.queries)} queries.\n")
    for h in hosts:
        for note in h.notes:
            if note.startswith("embedded: the client"):
                err.write(f"Note: {note}.\n")
    err.flush()
    out = Output(args.out, cfg, hosts)
    display = make_display(cfg, hosts, quiet=args.quiet)
    results: list[LevelResult] = []
    status = "complete"
    for level in cfg.levels():
        res = run_level(cfg, hosts, level, display,
                        checkpoint=lambda r: out.save(partial=level_document(cfg, hosts, r, final=False)))
        results.append(res)
        doc = level_document(cfg, hosts, res)
        out.doc["levels"].append(doc)
        if cfg.max_concurrency:
            err.write(f"\nConcurrency {level}:\n")
        err.write("\n" + "\n".join(level_lines(cfg, hosts, res, doc)) + "\n")
        err.flush()
        status = doc["status"]
        out.save(status="running" if status == "complete" else status)
        if status != "complete":
            break
    if cfg.max_concurrency and len(results) > 1:
        rows = sweep_rows(results)
        k = knee(rows)
        out.doc["sweep"] = {"levels": rows, "knee": k}
        err.write("\n".join(sweep_lines(rows, k)) + "\n")
    out.doc["status"] = status
    out.save(status=status)
    if args.json:
        last = results[-1]
        write_atomic(args.json, benchmark_json(_views_of(cfg, hosts, last), last.seconds))
    last = results[-1]
    if last.fatal:
        err.write(f"chbench: error: {last.fatal} (report above covers everything measured)\n")
        return EXIT_SERVER_LOST
    if last.interrupted:
        err.write("chbench: interrupted (report above covers everything measured)\n")
        return EXIT_INTERRUPTED
    if last.failure:
        err.write(f"chbench: error: {last.failure} (use --continue_on_errors to go on)\n")
        return EXIT_FINDING
    return EXIT_OK

