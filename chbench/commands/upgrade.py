"""``chbench upgrade OLD NEW``: from nothing to a verdict on two real ClickHouse versions."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from chbench.commands.args import (
    add_quiet,
    add_statistics,
    add_suite,
    add_verbose,
    add_warmup,
    positive_float,
    positive_int,
    suite_outputs,
)
from chbench.commands.engines import add_engines_dir
from chbench.errors import EXIT_FINDING, EXIT_OK

if TYPE_CHECKING:
    from chbench.runner.runner import RunOutcome

NAME = "upgrade"
HELP = "two ClickHouse versions side by side: speed, answers, plans, settings — one command"
DESCRIPTION = ("Installs the two versions' engines if needed (chbench engines), builds the same data on both, runs "
               "the workload side by side (A = OLD, B = NEW, alternating A B / B A), then checks each query's "
               "answer (order-independent checksums and column types), its plan (EXPLAIN PLAN and PIPELINE) and "
               "the settings whose default changed. One results file; 'chbench compare FILE' and "
               "'chbench report FILE' read it.")
EPILOG = """\
examples:
  chbench upgrade 24.8 26.9                               built-in suite
  chbench upgrade 24.8 26.9 --queries my-queries.sql --setup my-tables.sql --html upgrade.html
  chbench upgrade 24.8 26.9 --tests perf/*.xml          ClickHouse performance tests (docs/perftests.md)
  chbench upgrade 25.8 latest --suite clickbench --rows 1000000

verdicts: the speed verdicts of compare, plus 'answer changed' (listed first) and 'fails on B only'
exit codes: 0 nothing slower, no answer changed, nothing fails on NEW only; 1 otherwise;
            2 bad input; 3 an engine was lost (results kept); 130 interrupted (results kept)
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("old", metavar="OLD", help="the version upgraded from: 24.8, 24.8.4.1 or latest")
    p.add_argument("new", metavar="NEW", help="the version upgraded to")
    w = p.add_argument_group("what is run")
    add_suite(w, "side")
    r = p.add_argument_group("how it is run")
    r.add_argument("--iterations", type=positive_int, help="runs per query and side (default: adaptive)")
    add_warmup(r)
    # 12 s per query and both sides (not run's 20) bounds a noisy machine: with one core
    # taken by another process no query reached ±2%, each spent its whole budget, and
    # `upgrade 24.8 26.9` took 229 s with 20 s, 144 s with 12 s (the bar: 3 minutes); on
    # the quiet machine it took 56 s (bench/engine_bars.py)
    r.add_argument("--max-time-per-query", type=positive_float, default=12.0, metavar="S",
                   help="time budget per query, both sides together (default 12)")
    r.add_argument("--timeout", type=positive_float, metavar="S", help="per-query time limit")
    r.add_argument("--out", metavar="FILE", help="results file (default: chbench-upgrade-<time>.json)")
    r.add_argument("--html", metavar="FILE", help="also write the report here")
    add_engines_dir(r)
    add_quiet(r)
    add_statistics(p)
    add_verbose(p)


def run(args: argparse.Namespace) -> int:
    from chbench.engines.store import EngineStore

    out = suite_outputs(args, "upgrade")
    store = EngineStore()
    old, new = store.catalog.resolve(args.old), store.catalog.resolve(args.new)  # both spellings checked first
    for release in (old, new):
        if store.find(release) is None:
            store.install(release, progress=not args.quiet)
    outcome = _measure(args, out, old.clickhouse, new.clickhouse)
    return _verdict(args, out, outcome)


def _measure(args: argparse.Namespace, out: str, old: str, new: str) -> RunOutcome:
    from chbench.commands.args import test_options
    from chbench.plan import Plan, SidePlan
    from chbench.runner import close_targets, run_plan
    from chbench.targets import Credentials, make_target
    from chbench.ui.progress import make_progress
    from chbench.upgrade.checks import Checks
    from chbench.upgrade.workload import DATA_CHECK_SQL, upgrade_workload

    wl = upgrade_workload(args.suite, args.queries, args.setup, args.rows, args.scale, args.tests, test_options(args),
                          args.query)
    targets = [make_target(f"embedded@{v}", Credentials()) for v in (old, new)]
    scale = None if args.queries or args.query or args.tests or args.suite == "clickbench" else args.scale
    sides = [SidePlan(sid, t, wl, {}, scale, label=f"ClickHouse {v}")
             for sid, t, v in zip("AB", targets, (old, new), strict=True)]
    plan = Plan(sides=sides, warmup=args.warmup, iterations=args.iterations,
                max_time_per_query=args.max_time_per_query, timeout=args.timeout, threshold=args.threshold,
                allow_writes=False)
    try:
        data_sql = DATA_CHECK_SQL if args.suite == "clickbench" else None  # alone: suite_outputs
        return run_plan(plan, out, make_progress(args.quiet), Checks(data_sql))
    finally:
        close_targets(targets)


def _verdict(args: argparse.Namespace, out: str, outcome: RunOutcome) -> int:
    from chbench.commands.args import compare_options
    from chbench.compare import build_comparison
    from chbench.export import get_exporter
    from chbench.export.sections import Report
    from chbench.report.comparison import comparison_section
    from chbench.results.store import write_report

    if not outcome.outcome.finished:  # interrupted, an engine lost: the file keeps it
        sys.stderr.write(f"chbench: error: {outcome.message} — results so far are in {out}\n")
        return outcome.exit_code
    cmp = build_comparison([out], compare_options(args))
    section = comparison_section(cmp, charts=False, verbose=args.verbose or None)
    section.title = f"chbench upgrade: {cmp.doc.a_label} → {cmp.doc.b_label}"
    if not args.quiet:
        sys.stdout.write(get_exporter("console").render(Report("", [section], [out], data=cmp.doc.to_json())))
    if args.html:
        html = comparison_section(cmp, charts=True)
        html.title = section.title
        write_report(args.html, get_exporter("html").render(Report("", [html], [out], data=cmp.doc.to_json())))
    verdicts = cmp.doc.summary.verdicts
    bad = {k: verdicts.get(k, 0) for k in ("answer changed", "fails on B only", "slower") if verdicts.get(k)}
    shift = cmp.doc.summary.shift
    if shift and shift.finding == "slower":
        bad["all slower together"] = 1
    where = f"results in {out}" + (f", report in {args.html}" if args.html else "")
    data = cmp.doc.data_check
    if data is not None and not data["equal"]:
        bad["data differs"] = 1
    if bad:
        sys.stderr.write(f"chbench: upgrade: {', '.join(f'{v} {k}' for k, v in bad.items())} — {where}\n")
        return EXIT_FINDING
    unstable = verdicts.get("unstable", 0)
    if unstable:  # not decided is not "nothing slower": say how many could not be judged
        sys.stderr.write(f"chbench: upgrade: nothing shown slower, but {unstable} of {sum(verdicts.values())} "
                         "queries unstable (not decided: more --iterations narrow them); answers equal, nothing "
                         f"fails on NEW only — {where}\n")
        return EXIT_OK
    sys.stderr.write(f"chbench: upgrade: nothing slower, answers equal, nothing fails on NEW only — {where}\n")
    return EXIT_OK
