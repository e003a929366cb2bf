"""``chbench run``: build the plan, run it, write the results file, print a summary."""

from __future__ import annotations

import argparse
import re
import sys
from datetime import datetime
from typing import TYPE_CHECKING

from chbench.commands.args import (
    PASSWORD_HELP,
    add_connection,
    add_quiet,
    add_tests,
    add_warmup,
    non_negative_float,
    percent,
    positive_float,
    positive_int,
    setting,
)
from chbench.commands.history import label as history_label
from chbench.targets.url import SCHEMES

if TYPE_CHECKING:
    from chbench.plan import Plan, SidePlan

NAME = "run"
HELP = "measure a query suite on one target, two side by side, or several at once"
DESCRIPTION = "Run a query suite (the built-in one by default) and write a results file."
EPILOG = f"""\
examples:
  chbench run --out before.json                      built-in suite on the embedded engine
  chbench run --target http://localhost:8123 --out before.json
  chbench run --target clickhouse://db1 --queries suite.sql --server-metrics --out a.json
  chbench run --target http://old:8123 --target http://new:8123 --out ab.json   side by side
  chbench run --target embedded@24.8 --target embedded@25.8 --target embedded@26.9 --out abc.json
                                                     N-way: every round runs all, the order rotating
  chbench run --setting-b max_threads=1 --out threads.json    settings A/B on one target
  chbench run --scale-b 1.1 --iterations 15 --out scale.json
  chbench run --target http://db:8123 --sessions 3 --out before.json   in-place upgrade: 3 sessions before,
                                                     3 after, then: chbench compare before.json --vs after.json
  echo 'SELECT count() FROM numbers(1e8)' | chbench run --queries - --out one.json
  chbench run --tests perf/*.xml --setting-b max_threads=1 --out perf.json   ClickHouse performance tests

query files: '-- name: N' names the next statement, '-- settings: a=1, b=2' gives it its own
  settings, '-- setup' / '-- teardown' run it once per side before / after the measured
  queries (not timed, writes allowed)
performance tests (--tests, or an XML --queries file): each test's set-up, queries and tear-down in turn,
  queries named TEST.queryN; a test or query that cannot run here (missing table, unknown setting,
  tagged long) is skipped with its reason (docs/perftests.md)
{PASSWORD_HELP}
exit codes: 0 ok, 1 some query or test set-up failed, 2 bad input (a test file that cannot be read:
            after the other tests ran), 3 server lost (results kept),
            130 interrupted (results kept)
"""


def table_name(text: str) -> str:
    """DATABASE.TABLE (or TABLE), plain identifiers only: it is written into SQL."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?", text):
        raise argparse.ArgumentTypeError(f"not a table name: {text!r} (DATABASE.TABLE, letters, digits, _)")
    return text


def add_arguments(p: argparse.ArgumentParser) -> None:
    from chbench.workload import AUTO, FORMATS

    add_connection(p, target_help=f"{SCHEMES}; give two for a side-by-side run, more for an N-way run (default: the "
                                        "embedded engine)")
    w = p.add_argument_group("what is run")
    w.add_argument("--queries", metavar="FILE", help="SQL script (';'-separated, '-- name: NAME') or one query per "
                                                     "line; '-' reads stdin")
    w.add_argument("-q", "--query", action="append", default=[], metavar="SQL", help="a query (repeatable)")
    w.add_argument("--queries-format", choices=[AUTO, *FORMATS], default=AUTO)
    add_tests(w)
    w.add_argument("--scale", type=positive_float, default=1.0, help="multiply the built-in suite's row counts")
    w.add_argument("--keep-format", action="store_true", help="send queries as written (no FORMAT Null)")
    w.add_argument("--max-threads", type=positive_int)
    w.add_argument("--setting", type=setting, action="append", default=[], metavar="NAME=VALUE")
    w.add_argument("--allow-writes", action="store_true", help="lift the read-only default (readonly=2)")
    b = p.add_argument_group("side B of a side-by-side run on one target")
    b.add_argument("--setting-b", type=setting, action="append", default=[], metavar="NAME=VALUE")
    b.add_argument("--scale-b", type=positive_float)
    b.add_argument("--queries-b", metavar="FILE", help="queries for side B, matched by name")
    r = p.add_argument_group("how it is run")
    add_warmup(r)
    r.add_argument("--iterations", type=positive_int, help="runs per query (default: adaptive)")
    r.add_argument("--min-runs", type=positive_int, default=5)
    r.add_argument("--precision", type=percent, default=0.02,
                   help="adaptive: stop when the median's 95%% CI is within ±this (default 2%%)")
    r.add_argument("--threshold", type=percent, default=0.05, metavar="PCT",
                   help="adaptive, side by side: a query whose interval is precise but neither within nor beyond "
                        "±PCT (compare's threshold) goes on, on time other queries left unused (default 5%%)")
    r.add_argument("--max-time-per-query", type=positive_float, default=20.0, metavar="S")
    r.add_argument("--timeout", type=positive_float, metavar="S", help="per-query time limit, enforced on the server")
    r.add_argument("--no-interleave", action="store_true", help="all runs of a query before the next one")
    r.add_argument("--server-metrics", action="store_true", help="fetch query_log metrics for every sample")
    r.add_argument("--no-calibration", action="store_true", help="skip the drift-guard calibration query")
    r.add_argument("--no-explain", action="store_true",
                   help="do not fetch each run's server profile (ProfileEvents, operator times) after the rounds: "
                        "compare and chbench explain then cannot say why a query changed")
    r.add_argument("--profile", type=positive_float, nargs="?", const=10.0, metavar="MS",
                   help="sample the timed queries' stacks every MS milliseconds (the query profiler, real and CPU "
                        "time; default 10) for chbench explain's differential flame graphs; a real server with "
                        "<trace_log> (chDB builds never sample)")
    r.add_argument("--trace-log", type=table_name, default="system.trace_log", metavar="TABLE",
                   help="where the sampled stacks are read from (default system.trace_log)")
    r.add_argument("--no-probes", action="store_true",
                   help="no machine-state probes and no calibration query between rounds (compare of separate "
                        "runs then cannot tell a busier machine from a slower engine)")
    r.add_argument("--quiet-wait", type=non_negative_float, default=60.0, metavar="S",
                   help="one target: query runs measured while other processes kept the machine busy are set "
                        "aside and measured again, spending at most S seconds on them (default 60; 0 keeps every "
                        "run)")
    r.add_argument("--quiet-threshold", type=percent, default=0.10, metavar="PCT",
                   help="what counts as busy: other processes' CPU above this share of all CPUs (default 10%%)")
    r.add_argument("--sessions", type=positive_int, default=1, metavar="N",
                   help="N measured sessions in one file, each on fresh connections with a pause between: "
                        "compare then measures the between-run spread instead of guessing it (default 1)")
    r.add_argument("--session-gap", type=non_negative_float, default=5.0, metavar="S",
                   help="seconds between sessions (default 5)")
    r.add_argument("--out", metavar="FILE", help="results file (default: chbench-<time>.json)")
    add_quiet(r)
    h = p.add_argument_group("keep it (chbench history, docs/history.md)")
    h.add_argument("--history", nargs="?", const="", metavar="STORE",
                   help="add the run to a history when it ends: the local store, or the STORE given (a path, "
                        "http(s)://host:8123/db, clickhouse(s)://host:9000/db)")
    h.add_argument("--label", action="append", default=[], type=history_label, metavar="KEY=VALUE",
                   help="with --history: a label for the run (branch, commit, …; repeatable)")


def build_plan(args: argparse.Namespace) -> Plan:
    """The Namespace as a typed plan: targets, each side's workload and settings."""
    from chbench.commands.args import test_options
    from chbench.commands.connection import build_targets
    from chbench.errors import UsageError
    from chbench.plan import SIDE_IDS, Plan, SidePlan, side_ids
    from chbench.workload import default_suite, load_workload

    if [args.queries, args.queries_b, *args.query].count("-") > 1:
        raise UsageError("only one of --queries, --queries-b and --query can read standard input ('-')")
    targets = build_targets(args)
    if len(targets) > len(SIDE_IDS):
        raise UsageError(f"at most {len(SIDE_IDS)} targets in one run, got {len(targets)}")
    if len(targets) > 2 and (args.setting_b or args.scale_b or args.queries_b):
        raise UsageError("--setting-b, --scale-b and --queries-b make side B of a two-sided run: with "
                         f"{len(targets)} targets, give each its own --target")
    settings = dict(args.setting)
    files_a = [args.queries] if args.queries else []
    tests = test_options(args)
    workload_a = load_workload(files_a, args.query, args.queries_format, args.scale, args.tests, tests)
    scale_a = None if files_a or args.query or args.tests else args.scale
    sides = [SidePlan("A", targets[0], workload_a, settings, scale_a)]
    if len(targets) > 2:  # N-way: every target runs the same workload (core.schedule.round_order)
        sides += [SidePlan(sid, t, workload_a, settings, scale_a) for sid, t in zip(side_ids(len(targets))[1:],
                                                                                    targets[1:], strict=True)]
    elif len(targets) == 2 or args.setting_b or args.scale_b or args.queries_b:
        if args.scale_b and scale_a is None:
            raise UsageError("--scale-b applies to the built-in suite only (no --queries/--query)")
        workload_b, scale_b = workload_a, scale_a
        if args.queries_b:
            workload_b = load_workload([args.queries_b], args.query, args.queries_format, args.scale, args.tests, tests)
            scale_b = None
        elif args.scale_b:
            workload_b, scale_b = default_suite(args.scale_b), args.scale_b
        target_b = targets[1] if len(targets) == 2 else targets[0]
        sides.append(SidePlan("B", target_b, workload_b, {**settings, **dict(args.setting_b)}, scale_b))
        if not set(workload_a.names()) & set(workload_b.names()):
            raise UsageError("the two sides have no query name in common")
    notes = _process_per_session(args, sides)
    for side in sides:
        parts = [side.target.url]
        if side.settings:
            parts.append(" ".join(f"{k}={v}" for k, v in side.settings.items()))
        if side.scale is not None and side.scale != 1.0:
            parts.append(f"scale={side.scale:g}")
        side.label = ", ".join(parts)
    return Plan(sides=sides, warmup=args.warmup, iterations=args.iterations, min_runs=args.min_runs,
                target_precision=args.precision, threshold=args.threshold, max_time_per_query=args.max_time_per_query,
                timeout=args.timeout, keep_format=args.keep_format, allow_writes=args.allow_writes,
                interleave=not args.no_interleave,
                server_metrics=args.server_metrics, calibration=not (args.no_calibration or args.no_probes),
                probes=not args.no_probes, max_threads=args.max_threads, quiet_wait=max(0.0, args.quiet_wait),
                quiet_threshold=args.quiet_threshold, explain=not args.no_explain, profile_ms=args.profile,
                trace_log=args.trace_log,
                sessions=args.sessions, session_gap=max(0.0, args.session_gap), notes=notes)


def _process_per_session(args: argparse.Namespace, sides: list[SidePlan]) -> list[str]:
    """--sessions on the in-process engine: a fresh process of the same engine for each
    session, as separate runs would have (targets/engine.py; a process whose Memory tables
    hold rows is kept, and the file says so)."""
    from chbench.targets.engine import process_per_session

    if args.sessions < 2:
        return []
    asked = {id(s.target): s.target for s in sides}
    moved = {k: process_per_session(t) for k, t in asked.items()}
    for side in sides:
        side.target = moved[id(side.target)]
    return [f"--sessions {args.sessions}: the in-process engine runs as {t.url}, in a process each session starts "
            "anew (docs/run.md)" for k, t in moved.items() if t is not asked[k]]


def run(args: argparse.Namespace) -> int:
    from chbench.export.console import ConsoleExporter
    from chbench.export.sections import Report
    from chbench.report.run import run_section
    from chbench.results import check_output_path
    from chbench.runner import close_targets, run_plan
    from chbench.ui.progress import make_progress

    out = args.out or f"chbench-{datetime.now().strftime('%Y%m%d-%H%M%S')}.json"
    check_output_path(out)
    plan = build_plan(args)
    try:
        outcome = run_plan(plan, out, make_progress(args.quiet))
    finally:
        close_targets([s.target for s in plan.sides])
    if not args.quiet:
        sys.stdout.write(ConsoleExporter().render(Report("", [run_section(out, outcome.doc, charts=False)])))
    if outcome.message:
        kept = "results are in" if outcome.outcome.finished else "results so far are in"
        sys.stderr.write(f"chbench: {'error' if outcome.exit_code else 'note'}: {outcome.message} — {kept} {out}\n")
    else:
        sys.stderr.write(f"chbench: results written to {out}\n")
    if args.history is not None:
        _keep(args, out, outcome.doc.status, len(outcome.doc.targets))
    return outcome.exit_code


def _keep(args: argparse.Namespace, out: str, status: str, sides: int) -> None:
    """--history: the finished run added to the store (a run that did not finish is not:
    its missing queries would read as a change)."""
    from chbench.commands.history import add_files, open_from
    from chbench.errors import ChbenchError

    if status != "complete":
        sys.stderr.write(f"chbench: note: not added to the history: the run's status is '{status}'\n")
        return
    if sides > 1:
        sys.stderr.write("chbench: note: not added to the history: a run of several sides is several "
                         "configurations (chbench history add FILE --side ID adds one)\n")
        return
    try:
        store = open_from(argparse.Namespace(store=args.history or None, store_password_file=None,
                                             store_ca_file=args.ca_file), create=True)
        try:
            added = add_files([out], dict(args.label), store)
        finally:
            store.close()
    except ChbenchError as e:  # the results are written: a store that cannot take them is a note
        sys.stderr.write(f"chbench: error: not added to the history: {e} — add it later: chbench history add {out}\n")
        return
    sys.stderr.write(f"chbench: added to the history in {store.location}" + ("" if added else " (stored already)")
                     + "\n")
