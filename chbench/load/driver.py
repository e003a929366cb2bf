"""A whole load run: every concurrency level in turn, each level's report in
clickhouse-benchmark's shape, the sweep and its knee, the ``--out`` results file
(rewritten after every level and every few seconds within one) and ``--json``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, TextIO

from chbench.errors import QueryError, ServerLost, SetupFailed
from chbench.export.numbers import count
from chbench.load.benchmark_text import level_lines, sweep_lines
from chbench.load.config import LoadConfig
from chbench.load.document import level_entry, new_document, outcome_of, sweep_rows, views
from chbench.load.levels import Host, LevelResult, SourceFactory, local_source, run_level
from chbench.load.summary import benchmark_json, knee
from chbench.observer import Observer
from chbench.outcome import Outcome
from chbench.results import LoadDocument, LoadLevel, ResultsWriter, write_atomic
from chbench.targets import make_target
from chbench.ui.load import make_display


def statements(cfg: LoadConfig, hosts: list[Host], which: list[str], strict: bool) -> list[str]:
    """The workload's set-up (``strict``: a refusal stops the run) or tear-down (best
    effort: failures are returned) on every host, untimed, writes allowed."""
    failures = []
    for h in hosts:
        target = make_target(h.spec, cfg.credentials)
        try:
            for sql in which:
                try:
                    target.statement(sql, {k: v for k, v in h.settings.items() if k != "readonly"})
                except (QueryError, ServerLost) as e:
                    if strict:
                        raise SetupFailed(f"{h.label}: set-up failed: {' '.join(sql.split())[:80]}: "
                                          f"{getattr(e, 'message', None) or e}") from None
                    failures.append(f"{h.label}: {' '.join(sql.split())[:80]}: {getattr(e, 'message', None) or e}")
        finally:
            target.close()
    return failures


def per_host_lines(per_host: list[dict[str, Any]]) -> list[str]:
    """A cluster target's hosts, one line each."""
    from chbench.stats.histogram import Histogram

    lines = ["Per host:"]
    for h in per_host:
        hist = Histogram.from_json(h["histogram"])
        p50, p99 = hist.percentile(50), hist.percentile(99)
        lines.append(f"  {h['label']}: {count(h['queries'], 'query')}, {count(h['errors'], 'error')}"
                     + (f", p50 {p50:.3f} ms, p99 {p99:.3f} ms" if p50 is not None and p99 is not None else ""))
    return lines


def run_load(cfg: LoadConfig, hosts: list[Host], out: str | None, json_path: str | None, quiet: bool,
             err: TextIO, metrics: Observer | None = None, sources: SourceFactory = local_source) -> LevelResult:
    """Set-up, every level, tear-down; returns the last level (its fatal/interrupted/failure
    say why it ended)."""
    statements(cfg, hosts, cfg.setup, strict=True)
    try:
        return _levels(cfg, hosts, out, json_path, quiet, err, metrics, sources)
    finally:
        for failure in statements(cfg, hosts, cfg.teardown, strict=False):
            err.write(f"chbench: note: tear-down failed on {failure}\n")


def _levels(cfg: LoadConfig, hosts: list[Host], out: str | None, json_path: str | None, quiet: bool,
            err: TextIO, metrics: Observer | None, sources: SourceFactory) -> LevelResult:
    doc = new_document(cfg, hosts)
    with ResultsWriter(out, doc) as writer:  # an unexpected error still finishes the file ("failed")
        last = _each_level(cfg, hosts, doc, writer, quiet, err, metrics, sources)
    if json_path:
        write_atomic(json_path, benchmark_json(views(cfg, hosts, last), last.seconds))
    return last


def _each_level(cfg: LoadConfig, hosts: list[Host], doc: LoadDocument, writer: ResultsWriter, quiet: bool,
                err: TextIO, metrics: Observer | None, sources: SourceFactory) -> LevelResult:
    display = make_display(cfg, hosts, quiet=quiet)
    results: list[LevelResult] = []
    outcome = Outcome.COMPLETE

    class Keeper(Observer):
        """The running level in the results file, every few seconds."""

        def checkpoint(self, partial: LevelResult) -> None:
            doc.levels.append(level_entry(cfg, hosts, partial, final=False))
            try:
                writer.checkpoint(force=True)
            finally:
                doc.levels.pop()

    observers = [display, Keeper(), *([metrics] if metrics is not None else [])]
    for level in cfg.levels():
        res = run_level(cfg, hosts, level, observers, sources=sources)
        results.append(res)
        entry = level_entry(cfg, hosts, res)
        doc.levels.append(entry)
        if cfg.max_concurrency:
            err.write(f"\nConcurrency {level}:\n")
        err.write("\n" + "\n".join(level_lines(views(cfg, hosts, res), entry.to_json(), res.total(),
                                               cfg.latency_limit_ms)) + "\n")
        if entry.per_host:
            err.write("\n".join(per_host_lines(entry.per_host)) + "\n")
        err.flush()
        outcome = outcome_of(res)
        writer.checkpoint(force=True)
        if outcome is not Outcome.COMPLETE:
            break
    if cfg.max_concurrency and len(results) > 1:
        rows = sweep_rows(results)
        k = knee(rows)
        doc.sweep = {"levels": rows, "knee": k}
        err.write("\n".join(sweep_lines(rows, k)) + "\n")
    last = results[-1]
    writer.finish(outcome, last.fatal or last.failure or ("interrupted" if last.interrupted else None))
    return last


def run_capacity(cfg: LoadConfig, hosts: list[Host], search_args: dict[str, Any], out: str | None, quiet: bool,
                 err: TextIO, metrics: Observer | None = None,
                 sources: SourceFactory = local_source) -> tuple[dict[str, Any], LevelResult | None]:
    """``--slo``: set-up, the capacity search (its budget said first; every step kept as a
    level of the results file, the running step's progress checkpointed), tear-down.
    Returns the capacity and the run that stopped the search early, if any (Ctrl-C, a
    lost server)."""
    from chbench.load.capacity import CapacitySearch, bracket_line, capacity_line, progress_line, step_line

    statements(cfg, hosts, cfg.setup, strict=True)
    doc = new_document(cfg, hosts)
    try:
        with ResultsWriter(out, doc) as writer:
            def levels() -> list[LoadLevel]:  # the probe's closed-loop levels, then every step
                return [*(level_entry(replace(cfg, rate=0.0, poisson=False), hosts, res)
                          for res in search.probe_results),
                        *(level_entry(replace(cfg, rate=rate), hosts, res)
                          for rate, res in zip(search.rates, search.results, strict=True))]

            def say(line: str) -> None:
                err.write(line + "\n")
                err.flush()

            def on_progress(progress: dict[str, Any]) -> None:
                if not quiet:
                    say(progress_line(progress))
                doc.capacity = {"steps": search.steps, "running": progress, "complete": False,
                                "budget": search.budget.to_json(), "probe": search.probe}
                writer.checkpoint(force=True)

            def on_step(entry: dict[str, Any]) -> None:
                if not quiet:
                    say(f"step {len(search.steps)}: {step_line(entry)}")
                doc.levels = levels()
                doc.capacity = {"steps": search.steps, "complete": False, "budget": search.budget.to_json(),
                                "probe": search.probe}
                writer.checkpoint(force=True)

            search = CapacitySearch(cfg, hosts, observers=[metrics] if metrics is not None else [],
                            on_step=on_step, on_progress=on_progress, say=say, sources=sources,
                            **search_args)
            cap = search.run()
            doc.capacity, doc.levels = cap, levels()
            writer.finish(outcome_of(search.stopped) if search.stopped else Outcome.COMPLETE)
        say(bracket_line(cap))
        say(capacity_line(cap))
        return cap, search.stopped
    finally:
        for failure in statements(cfg, hosts, cfg.teardown, strict=False):
            err.write(f"chbench: note: tear-down failed on {failure}\n")
