"""``chbench clickbench run``: the 43 queries, tries with result checksums, ClickBench's
results file and a Markdown report."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from chbench.commands.args import add_connection, add_quiet, non_negative_int, positive_float, positive_int
from chbench.errors import UsageError

if TYPE_CHECKING:
    from chbench.clickbench.driver import RunOptions

NAME = "run"
HELP = "the 43 queries, 3 tries each, with result checksums"
DESCRIPTION = ("Run the 43 queries verbatim: try 1 cold (engine caches dropped), then hot; a failed try is null. "
               "Every try's result is checksummed.")
EPILOG = """\
exit codes: 0 ok, 1 a query failed, results differ between tries or from --reference, 2 bad input,
            3 server lost (results kept), 130 interrupted (results kept)
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_connection(p)
    p.add_argument("--out", metavar="FULL.json", help="full results file (default: clickbench-<time>.json)")
    p.add_argument("--results", metavar="CLICKBENCH.json", help="also write a results file in ClickBench's format")
    p.add_argument("--report", metavar="FILE.md", help="Markdown report (default: next to --out, .md)")
    p.add_argument("--tries", type=positive_int, default=3, help="tries per query (default 3)")
    p.add_argument("--timeout", type=positive_float, metavar="S", help="per-try limit; a try over it is null")
    p.add_argument("--reference", metavar="FULL.json",
                   help="an earlier run's full results: every checksum difference is listed (exit 1)")
    p.add_argument("--load-results", metavar="FILE", help="'clickbench load --out' file: load time for the entry")
    p.add_argument("--no-cold", action="store_true", help="do not drop caches before the first try")
    p.add_argument("--drop-os-cache", action="store_true",
                   help="also drop the OS page cache before the first try (root, local server only)")
    p.add_argument("--concurrent", type=positive_int, metavar="N", help="then N connections cycling the queries")
    p.add_argument("--duration", type=positive_float, metavar="S", help="seconds of the --concurrent test")
    p.add_argument("--seed", type=non_negative_int, default=1, help="seed of the --concurrent permutations")
    p.add_argument("--only", metavar="LIST", help="only these ClickBench query numbers (0-42), e.g. 0,5,42")
    p.add_argument("--system", help="'system' in the ClickBench file (default: ClickHouse or chDB)")
    p.add_argument("--machine", help="'machine' in the ClickBench file (default: this host's name)")
    add_quiet(p, "no per-query lines")


def parse_only(text: str | None) -> list[int] | None:
    """ClickBench's query numbers (0-42) as our 1-based indexes."""
    if not text:
        return None
    out = []
    for part in text.split(","):
        try:
            q = int(part.strip().lstrip("Qq"))
        except ValueError:
            raise UsageError(f"--only takes ClickBench query numbers 0-42, got '{part}'") from None
        if not 0 <= q <= 42:
            raise UsageError(f"--only takes ClickBench query numbers 0-42, got {q}")
        out.append(q + 1)
    return out


def options(args: argparse.Namespace) -> RunOptions:
    from chbench.clickbench.driver import RunOptions
    from chbench.results import ClickBenchRunDocument, open_as

    if args.concurrent and args.duration is None:
        raise UsageError("--concurrent needs --duration S")
    reference = open_as(args.reference, ClickBenchRunDocument, "a chbench 'clickbench' results file") \
        if args.reference else None
    return RunOptions(tries=args.tries, timeout=args.timeout, cold=not args.no_cold, drop_os_cache=args.drop_os_cache,
                      concurrent=args.concurrent, duration=args.duration, seed=args.seed, only=parse_only(args.only),
                      system=args.system, machine=args.machine, reference=reference, reference_path=args.reference)


def run(args: argparse.Namespace) -> int:
    from chbench.clickbench import driver
    from chbench.clickbench.loading import data_size, table_exists, table_rows
    from chbench.commands.clickbench import maker, one_target
    from chbench.export import get_exporter
    from chbench.export.sections import Report
    from chbench.report.clickbench import run_section
    from chbench.results import (
        ClickBenchLoadDocument,
        ClickBenchRunDocument,
        ResultsWriter,
        check_output_path,
        open_as,
        write_atomic,
    )
    from chbench.results.store import write_report
    from chbench.ui import say as ui_say

    out = args.out or f"clickbench-{time.strftime('%Y%m%d-%H%M%S')}.json"
    for path, what in ((out, "results"), (args.results, "the ClickBench results file"), (args.report, "the report")):
        check_output_path(path, what)
    report_path = args.report or str(Path(out).with_suffix(".md"))
    if args.results and args.tries < 3:  # ClickBench's hot time needs tries 2 and 3
        sys.stderr.write(f"chbench: warning: --tries {args.tries}: ClickBench's hot time is the better of tries 2 "
                         f"and 3, so {args.results} will score as if its hot results were missing\n")
    opts = options(args)
    load = open_as(args.load_results, ClickBenchLoadDocument, "a chbench 'clickbench-load' results file").load \
        if args.load_results else None
    target = one_target(args)
    try:
        if not table_exists(target) or table_rows(target) == 0:
            raise UsageError(f"{target.url} has no rows in table 'hits': run 'chbench clickbench load' first")
        doc = ClickBenchRunDocument(target=target.describe(), server={"version": target.info.version if target.info
                                                                      else None},
                                    table={"rows": table_rows(target), "data_size": data_size(target)}, load=load,
                                    tries=args.tries, timeout=args.timeout)
        say = ui_say(args.quiet)
        with ResultsWriter(out, doc) as writer:
            verdict = driver.run(target, opts, writer, maker(args), say)
    finally:
        target.close()
    if args.results and doc.clickbench is not None:
        write_atomic(args.results, doc.clickbench.to_json())
    write_report(report_path, get_exporter("markdown").render(Report("", [run_section(doc)])))
    for message in verdict.messages:
        sys.stderr.write(f"chbench: {message}\n")
    written = [out, report_path] + ([args.results] if args.results else [])
    sys.stderr.write("chbench: written " + ", ".join(written) + "\n")
    return verdict.exit_code
