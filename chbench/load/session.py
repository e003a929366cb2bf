"""A whole load run: every concurrency level in turn, each level's report in
clickhouse-benchmark's shape, the sweep and its knee, the ``--out`` results file
(rewritten after every level and every few seconds within one) and ``--json``."""

from __future__ import annotations

from typing import TextIO

from chbench.export.benchmark import level_lines, sweep_lines
from chbench.load.config import LoadConfig
from chbench.load.document import level_entry, new_document, sweep_rows, views
from chbench.load.engine import Host, LevelResult, run_level
from chbench.load.summary import benchmark_json, knee
from chbench.results import ResultsWriter, write_atomic
from chbench.ui.load import make_display


def run_load(cfg: LoadConfig, hosts: list[Host], out: str | None, json_path: str | None, quiet: bool,
             err: TextIO) -> LevelResult:
    """Run every level; returns the last (its fatal/interrupted/failure say why it ended)."""
    doc = new_document(cfg, hosts)
    writer = ResultsWriter(out, doc)
    display = make_display(cfg, hosts, quiet=quiet)
    results: list[LevelResult] = []
    status = "complete"

    def checkpoint(partial: LevelResult) -> None:
        doc.levels.append(level_entry(cfg, hosts, partial, final=False))
        try:
            writer.checkpoint(force=True)
        finally:
            doc.levels.pop()

    for level in cfg.levels():
        res = run_level(cfg, hosts, level, display, checkpoint=checkpoint)
        results.append(res)
        entry = level_entry(cfg, hosts, res)
        doc.levels.append(entry)
        if cfg.max_concurrency:
            err.write(f"\nConcurrency {level}:\n")
        err.write("\n" + "\n".join(level_lines(views(cfg, hosts, res), entry.to_json(), res.total(),
                                               cfg.latency_limit_ms)) + "\n")
        err.flush()
        status = entry.status
        writer.checkpoint(force=True)
        if status != "complete":
            break
    if cfg.max_concurrency and len(results) > 1:
        rows = sweep_rows(results)
        k = knee(rows)
        doc.sweep = {"levels": rows, "knee": k}
        err.write("\n".join(sweep_lines(rows, k)) + "\n")
    writer.finish(status)
    last = results[-1]
    if json_path:
        write_atomic(json_path, benchmark_json(views(cfg, hosts, last), last.seconds))
    return last
