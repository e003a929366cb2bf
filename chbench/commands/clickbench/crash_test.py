"""``chbench clickbench crash-test``: kill -9 a server chbench starts, mid-load."""

from __future__ import annotations

import argparse
import sys

from chbench.commands.args import add_quiet, non_negative_int, positive_int
from chbench.errors import EXIT_FINDING, EXIT_OK

NAME = "crash-test"
HELP = "kill -9 a server chbench starts, mid-load; check recovery"
DESCRIPTION = ("Start a ClickHouse 26.9 server (from the chDB wheel), load synthetic rows uninterrupted for "
               "reference, then per cycle: load, kill -9 mid-load, restart, check no acknowledged batch lost and none "
               "duplicated, resume with the same deduplication tokens, compare count and checksum.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rows", type=positive_int, default=1_000_000, help="synthetic rows (default 1000000)")
    p.add_argument("--cycles", type=positive_int, default=5, help="kill -9 cycles (default 5)")
    p.add_argument("--batch-rows", type=positive_int, default=100_000, metavar="N", help="rows per batch")
    p.add_argument("--seed", type=non_negative_int, default=1)
    p.add_argument("--out", metavar="FILE", help="results file (JSON)")
    add_quiet(p)


def run(args: argparse.Namespace) -> int:
    from chbench.clickbench.crash import run_cycles
    from chbench.export.console import ConsoleExporter
    from chbench.export.sections import Report
    from chbench.report.clickbench import crash_test_section
    from chbench.results import CrashTestDocument, ResultsWriter, check_output_path
    from chbench.ui import say as ui_say

    check_output_path(args.out)
    doc = CrashTestDocument(rows=args.rows, batch_rows=args.batch_rows, seed=args.seed)
    with ResultsWriter(args.out, doc) as writer:
        def on_cycle(c: dict[str, object]) -> None:
            doc.cycles.append(c)
            writer.checkpoint(force=True)

        say = ui_say(args.quiet)
        result = run_cycles(args.rows, args.cycles, args.seed, args.batch_rows, say, on_cycle)
        for k, v in result.items():
            setattr(doc, k, v)
    sys.stdout.write(ConsoleExporter().render(Report("", [crash_test_section(doc)])))
    return EXIT_OK if doc.ok else EXIT_FINDING
