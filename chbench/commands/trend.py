"""``chbench trend``: one workload over many ClickHouse versions at once — the series per
query and every step between adjacent versions (speed, answer, plan)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from chbench.commands.args import (
    add_quiet,
    add_statistics,
    add_suite,
    add_verbose,
    add_warmup,
    percent,
    positive_float,
    positive_int,
    setting,
    suite_outputs,
)
from chbench.commands.engines import add_engines_dir
from chbench.errors import EXIT_FINDING, EXIT_OK, UsageError
from chbench.outcome import Outcome

if TYPE_CHECKING:
    from chbench.targets import Target
    from chbench.versions import VersionSource

NAME = "trend"
HELP = "one workload over many ClickHouse versions: the series per query and where it stepped"
DESCRIPTION = ("Installs the versions' engines if needed, builds the same data on each, runs the workload on all of "
               "them interleaved (every round runs each version, the order rotating), checks every query's answer "
               "and plan on each, and shows per query the series with intervals and the steps between adjacent "
               "versions: speed, answer, plan.")
EPILOG = """\
examples:
  chbench trend 23.10..26.9 --suite builtin                every catalog version in the range
  chbench trend --versions 24.8,25.8,26.9 --html trend.html
  chbench trend --targets http://old:8123 http://new:8123 http://next:8123 --queries suite.sql
  chbench trend 24.8..26.9 --queries q.sql --setup tables.sql --out trend.json

the results file (--out) is a run file of N sides with a top-level 'trend' object: versions, per query the
  series, and 'steps' (every step found; empty when none). 'chbench compare FILE' reads it too.
exit codes: 0 no step slower and no answer changed; 1 otherwise; 2 bad input; 3 an engine was lost
            (results kept); 130 interrupted (results kept)
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("range", nargs="?", metavar="VERSIONS",
                   help="OLD..NEW: every version of the engine catalog (or --engines-from DIR) in between")
    p.add_argument("--versions", metavar="V1,V2,…", help="these versions, in this order")
    p.add_argument("--targets", nargs="+", metavar="T", help="any targets instead of versions (URLs, embedded@…)")
    w = p.add_argument_group("what is run")
    add_suite(w, "version")
    r = p.add_argument_group("how it is run")
    r.add_argument("--iterations", type=positive_int, help="rounds per query (default: adaptive)")
    r.add_argument("--precision", type=percent, default=0.02,
                   help="adaptive: stop a query when every compared pair's interval is within ±this (default 2%%)")
    r.add_argument("--setting", type=setting, action="append", default=[], metavar="NAME=VALUE",
                   help="a setting for every query on every version")
    add_warmup(r)
    r.add_argument("--max-time-per-query", type=positive_float, metavar="S",
                   help="time budget per query over every version (default 6 s per version)")
    r.add_argument("--timeout", type=positive_float, metavar="S", help="per-query time limit")
    r.add_argument("--out", metavar="FILE", help="results file (default: chbench-trend-<time>.json)")
    r.add_argument("--html", metavar="FILE", help="also write the report (a chart per query) here")
    r.add_argument("--yes", action="store_true", help="do not ask before installing and measuring")
    r.add_argument("--engines-from", metavar="DIR",
                   help="a directory of clickhouse binaries instead of the chDB catalog (docs/bisect.md)")
    r.add_argument("--installed", action="store_true",
                   help="only the catalog versions installed already (and OLD and NEW): no downloads")
    add_engines_dir(r)
    add_quiet(r)
    add_statistics(p)
    add_verbose(p)


def _versions(args: argparse.Namespace) -> tuple[list[str], list[Target], bool, VersionSource | None]:
    """(what each side is called, its target, whether the versions come from the catalog,
    the source to close after: servers of --engines-from)."""
    from chbench.targets import Credentials, make_target
    from chbench.ui import say
    from chbench.versions import BinariesSource, version_source

    given = [x is not None for x in (args.range, args.versions, args.targets)]
    if sum(given) != 1:
        raise UsageError("give the versions one way: OLD..NEW, --versions V1,V2,… or --targets T1 T2 …")
    if args.targets:
        if len(args.targets) < 2:
            raise UsageError("a trend needs at least two targets")
        creds = Credentials(password=os.environ.get("CLICKHOUSE_PASSWORD"))
        return list(args.targets), [make_target(t, creds) for t in args.targets], False, None
    source = version_source(args.engines_from, args.installed)
    if args.range:
        old, sep, new = args.range.partition("..")
        if not sep or not old or not new:
            raise UsageError(f"bad range {args.range!r}: OLD..NEW, e.g. 23.10..26.9")
        versions = source.between(old, new)
    else:
        versions = [source.pick(v.strip()) for v in args.versions.split(",") if v.strip()]
        if len(versions) < 2 or len(set(versions)) < len(versions):
            raise UsageError("--versions needs at least two different versions")
    if source.skipped:
        say(args.quiet)(f"versions {', '.join(versions)} ({source.describe()})")
    binaries = isinstance(source, BinariesSource)
    targets = [source.target(v) for v in versions] if binaries else []
    return versions, targets, not binaries, source


def run(args: argparse.Namespace) -> int:
    from chbench.commands.args import compare_options, test_options
    from chbench.runner import close_targets
    from chbench.trend.driver import TrendPlan, add_trend, cost, describe_cost, measure
    from chbench.ui import say
    from chbench.upgrade.workload import DATA_CHECK_SQL, upgrade_workload

    out = suite_outputs(args, "trend")
    wl = upgrade_workload(args.suite, args.queries, args.setup, args.rows, args.scale, args.tests, test_options(args),
                          args.query)
    versions, targets, catalog, source = _versions(args)
    try:
        budget = args.max_time_per_query or 6.0 * len(versions)
        say(args.quiet)(describe_cost(cost(versions, catalog, len(wl.queries), budget)))
        if not args.yes and sys.stdin.isatty() and input("go on? [y/N] ").strip().lower() not in ("y", "yes"):
            return EXIT_OK
        if catalog:
            from chbench.targets import Credentials, make_target

            targets = [make_target(f"embedded@{v}", Credentials()) for v in versions]
        scale = None if args.queries or args.query or args.tests or args.suite == "clickbench" else args.scale
        tp = TrendPlan(versions, wl, scale, args.warmup, args.iterations, budget, args.timeout, args.precision,
                       dict(args.setting), threshold=args.threshold)
        data_sql = DATA_CHECK_SQL if args.suite == "clickbench" else None  # alone: suite_outputs
        outcome = measure(tp, targets, out, args.quiet, data_sql)
    finally:
        close_targets(targets)
        if source is not None:
            source.close()
    if not outcome.outcome.finished:
        sys.stderr.write(f"chbench: error: {outcome.message} — results so far are in {out}\n")
        return outcome.exit_code
    trend = add_trend(out, versions, compare_options(args))
    code = _report(args, out, trend)
    if outcome.outcome is Outcome.FINDING:  # some query failed on some version: said, and the exit code
        sys.stderr.write(f"chbench: {outcome.message}\n")
    return max(code, outcome.exit_code)


def _report(args: argparse.Namespace, out: str, trend: dict[str, Any]) -> int:
    from chbench.export import get_exporter
    from chbench.export.sections import Report
    from chbench.report.trend import trend_section
    from chbench.results import RunDocument, open_as
    from chbench.results.store import write_report

    doc = open_as(out, RunDocument, "a chbench run file")
    if not args.quiet:
        sys.stdout.write(get_exporter("console").render(Report("", [trend_section(doc, out, charts=False)], [out])))
    if args.html:
        html = get_exporter("html").render(Report("", [trend_section(doc, out, charts=True)], [out], data=trend))
        write_report(args.html, html)
    bad = [s for s in trend["steps"] if s["kind"] == "answer" or (s["kind"] == "speed" and s["verdict"] == "slower")]
    where = f"results in {out}" + (f", report in {args.html}" if args.html else "")
    steps = trend["steps"]
    sys.stderr.write(f"chbench: trend: {len(steps)} step(s) over {len(trend['versions'])} versions"
                     f"{f' ({len(bad)} slower or answering differently)' if bad else ''} — {where}\n")
    return EXIT_FINDING if bad else EXIT_OK
