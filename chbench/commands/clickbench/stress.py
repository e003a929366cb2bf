"""``chbench clickbench stress``: the concurrent QPS test, alone or with a writer."""

from __future__ import annotations

import argparse
import sys

from chbench.commands.args import (
    add_connection,
    add_quiet,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
)
from chbench.errors import EXIT_OK, ServerLost, UsageError

NAME = "stress"
HELP = "concurrent QPS test; with --ingest, while a writer streams rows"
DESCRIPTION = ("N connections, each cycling through its own seeded permutation of the 43 queries, for --duration "
               "seconds (server targets only). --ingest: the same, once alone and once while a writer streams rows "
               "into hits_ingest; latency with and without ingest, ingest rows/s.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_connection(p)
    p.add_argument("--concurrent", type=positive_int, default=4, metavar="N", help="connections (default 4)")
    p.add_argument("--duration", type=positive_float, default=30.0, metavar="S", help="seconds per phase")
    p.add_argument("--ingest", action="store_true", help="mixed load: queries with and without a writer")
    p.add_argument("--windows", type=positive_int, default=2, metavar="N",
                   help="--ingest: windows a side, taken A B B A (default 2; each two neighbours give one pair of "
                        "the QPS change's interval)")
    p.add_argument("--warmup", type=non_negative_float, metavar="S",
                   help="untimed seconds of the same load first (default 5; with --ingest one window, "
                        "--duration / --windows; 0: none)")
    p.add_argument("--seed", type=non_negative_int, default=1)
    p.add_argument("--timeout", type=positive_float, metavar="S", help="per-query limit")
    p.add_argument("--out", metavar="FILE", help="results file (JSON, raw latencies)")
    add_quiet(p)


def run(args: argparse.Namespace) -> int:
    from chbench.clickbench import workload
    from chbench.clickbench.loading import table_exists, table_rows
    from chbench.clickbench.stress import alone, mixed, require_server
    from chbench.commands.clickbench import maker, one_target
    from chbench.export.console import ConsoleExporter
    from chbench.export.sections import Report
    from chbench.report.clickbench import stress_section
    from chbench.results import ResultsWriter, StressDocument, check_output_path

    check_output_path(args.out)
    target = one_target(args, connect=False)
    try:
        require_server(target, "stress")  # before connecting: an in-process engine would make ./chbench-hits
        target.connect()
        if not table_exists(target) or table_rows(target) == 0:
            raise UsageError(f"{target.url} has no rows in table 'hits': run 'chbench clickbench load' first")
    finally:
        target.close()
    doc = StressDocument(target=target.describe(), server={"version": target.info.version if target.info else None},
                         concurrent=args.concurrent, duration=args.duration)
    queries = workload().queries
    with ResultsWriter(args.out, doc):
        if args.ingest:
            doc.mixed = mixed(maker(args), queries, args.concurrent, args.duration, args.seed, args.timeout,
                              args.windows, args.warmup)
            interrupted = bool(doc.mixed.get("interrupted"))
            lost = [doc.mixed.get(k, {}).get("lost") for k in ("without_ingest", "with_ingest")]
        else:
            phase = alone(maker(args), queries, args.concurrent, args.duration, args.seed, args.timeout,
                          args.warmup)
            doc.phases = [phase.to_json()]
            interrupted, lost = phase.interrupted, [phase.lost]
        if interrupted:
            raise KeyboardInterrupt
        sys.stdout.write(ConsoleExporter().render(Report("", [stress_section(doc)])))
        if any(lost):
            raise ServerLost(f"server lost during stress: {next(x for x in lost if x)}")
    return EXIT_OK
