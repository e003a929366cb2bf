"""``chbench bisect OLD NEW``: the first version where a query's answer or speed changed."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from typing import TYPE_CHECKING

from chbench.commands.args import (
    add_quiet,
    add_warmup,
    percent,
    positive_float,
    positive_int,
    setting,
)
from chbench.commands.engines import add_engines_dir, use_engines_dir
from chbench.errors import UsageError

if TYPE_CHECKING:
    from chbench.workload import Workload

NAME = "bisect"
HELP = "the first ClickHouse version where a query got slower, faster, or answers differently"
DESCRIPTION = ("Walks the versions between OLD and NEW (the engine catalog, or --engines-from DIR), halving the range "
               "with side-by-side comparisons that answer changed / same / not known yet (more runs, up to a "
               "budget), and names the step: '26.3.9.1 → 26.5.1.1: +23% [+19%, +27%]'. A range with several "
               "changes reports each. Only the versions the search visits are installed.")
EPILOG = """\
examples:
  chbench bisect 23.10 26.9 --query 'SELECT toTypeName(if(1, 1, -1))'        answers differ: which version
  chbench bisect 24.8 26.9 --queries suite.sql --name q7 --speed --out q7.json
  chbench bisect 24.8 26.9 --query "SELECT ..." --setup tables.sql --threshold 10

what is bisected: --answer (row count, checksum, column types), --speed (paired rounds), or by
  default the answer when OLD and NEW answer differently, else the speed
decisions: a version is 'changed' when the 99% interval of its ratio to the reference lies beyond half
  the threshold, 'same' when it lies within it; otherwise more rounds (to --max-rounds), then it leans
  by its estimate and is marked undecided (docs/bisect.md)
exit codes: 0 a change found, 1 no change between OLD and NEW, 2 bad input, 3 an engine was lost (results kept),
            130 interrupted (results kept)
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("old", metavar="OLD", help="a version without the change: 24.8, 24.8.4.1")
    p.add_argument("new", metavar="NEW", help="a version with it")
    w = p.add_argument_group("what is bisected")
    w.add_argument("-q", "--query", metavar="SQL", help="the query")
    w.add_argument("--queries", metavar="FILE", help="a query file; --name picks the query")
    w.add_argument("--name", metavar="N", help="the query's name in --queries")
    w.add_argument("--setup", metavar="FILE", help="statements that build its data (on each version, untimed)")
    w.add_argument("--setting", type=setting, action="append", default=[], metavar="NAME=VALUE")
    kind = w.add_mutually_exclusive_group()
    kind.add_argument("--answer", dest="kind", action="store_const", const="answer", help="bisect the answer")
    kind.add_argument("--speed", dest="kind", action="store_const", const="speed", help="bisect the speed")
    r = p.add_argument_group("how it is measured")
    r.add_argument("--threshold", type=percent, default=0.05,
                   help="the smallest change of speed worth finding (default 5%%): versions are told apart at half "
                        "of it")
    r.add_argument("--iterations", type=positive_int, default=10, help="rounds per comparison at first (default 10)")
    r.add_argument("--max-rounds", type=positive_int, default=160,
                   help="the budget: rounds per comparison before it is called undecided (default 160)")
    r.add_argument("--precision", type=percent, metavar="PCT",
                   help="keep measuring a decided comparison until its interval is within ±this (the step's size "
                        "known better; default: stop once decided)")
    add_warmup(r)
    r.add_argument("--timeout", type=positive_float, metavar="S", help="per-query time limit")
    r.add_argument("--out", metavar="FILE", help="results file (default: chbench-bisect-<time>.json)")
    r.add_argument("--engines-from", metavar="DIR",
                   help="a directory of clickhouse binaries (one per version) instead of the chDB catalog "
                        "(docs/bisect.md)")
    r.add_argument("--installed", action="store_true",
                   help="only the catalog versions installed already (and OLD and NEW): no downloads")
    add_engines_dir(r)
    add_quiet(r)


def run(args: argparse.Namespace) -> int:
    from chbench.bisect.driver import BisectOptions, run_bisect
    from chbench.export import get_exporter
    from chbench.export.sections import Report
    from chbench.report.bisect import bisect_section
    from chbench.results import check_output_path
    from chbench.ui import say
    from chbench.versions import version_source

    use_engines_dir(args)
    out = args.out or f"chbench-bisect-{datetime.now().strftime('%Y%m%d-%H%M%S')}.json"
    check_output_path(out)
    workload = _workload(args)
    source = version_source(args.engines_from, args.installed)
    versions = source.between(args.old, args.new)
    say(args.quiet)(f"bisecting {len(versions)} versions, {versions[0]} … {versions[-1]} ({source.describe()})")
    opts = BisectOptions(kind=args.kind or "auto", threshold=args.threshold, first_rounds=args.iterations,
                         max_rounds=max(args.max_rounds, args.iterations), warmup=args.warmup, timeout=args.timeout,
                         settings=dict(args.setting), precision=args.precision, skipped=source.skipped)
    try:
        outcome = run_bisect(versions, source.target, workload, opts, out, say(args.quiet))
    finally:
        source.close()
    if not args.quiet:
        section = bisect_section(outcome.doc, out)
        sys.stdout.write(get_exporter("console").render(Report("", [section], [out])))
    if outcome.message:
        sys.stderr.write(f"chbench: error: {outcome.message} — results so far are in {out}\n")
    else:
        from chbench.report.bisect import headline

        sys.stderr.write(f"chbench: bisect: {headline(outcome.doc.bisect)} — results in {out}\n")
    return outcome.exit_code


def _workload(args: argparse.Namespace) -> Workload:
    from dataclasses import replace

    from chbench.workload import load_workload, read_workload

    if bool(args.query) == bool(args.queries):
        raise UsageError("give the query: --query SQL, or --queries FILE --name N")
    if args.query:
        wl = load_workload([], [args.query])
    else:
        wl = load_workload([args.queries], [])
        if args.name:
            q = wl.query(args.name)
            if q is None:
                raise UsageError(f"no query named {args.name!r} in {args.queries} (it has: "
                                 f"{', '.join(wl.names()[:8])})")
            wl = replace(wl, queries=[q], groups=[])
        elif len(wl.queries) != 1:
            raise UsageError(f"{args.queries} holds {len(wl.queries)} queries: pick one with --name")
    if args.setup:
        extra = read_workload(args.setup, "script")
        wl.setup = [*extra.setup, *(q.sql for q in extra.queries), *wl.setup]
    return wl
