"""``chbench run``: build the plan, run it, write the results file, print a summary."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path

from chbench.commands.connection import build_targets
from chbench.errors import UsageError
from chbench.export.console import ConsoleExporter
from chbench.plan import Plan, SidePlan
from chbench.runner import run_plan
from chbench.runner.progress import make_progress
from chbench.runner.runner import close_targets
from chbench.workload import Query, default_suite, parse_queries, read_queries


def _queries(args: argparse.Namespace, file: str | None, scale: float) -> tuple[list[Query], float | None]:
    """The workload for one side; the scale applies only to the built-in suite."""
    queries: list[Query] = []
    if file:
        queries += read_queries(file, args.queries_format)
    for i, sql in enumerate(args.query):
        if sql == "-":
            queries += read_queries("-", args.queries_format)
        else:
            queries += parse_queries(sql, f"--query #{i + 1}", "script")
    if queries:
        return queries, None
    return default_suite(scale), scale


def build_plan(args: argparse.Namespace) -> Plan:
    if [args.queries, args.queries_b, *args.query].count("-") > 1:
        raise UsageError("only one of --queries, --queries-b and --query can read standard input ('-')")
    targets = build_targets(args)
    if len(targets) > 2:
        raise UsageError(f"at most two targets (a side-by-side run), got {len(targets)}")
    settings = dict(args.setting)
    queries_a, scale_a = _queries(args, args.queries, args.scale)
    variant_b = bool(args.setting_b or args.scale_b or args.queries_b)
    sides = [SidePlan("A", targets[0], queries_a, settings, scale_a)]
    if len(targets) == 2 or variant_b:
        if args.scale_b and scale_a is None:
            raise UsageError("--scale-b applies to the built-in suite only (no --queries/--query)")
        if args.queries_b:
            queries_b, scale_b = _queries(args, args.queries_b, args.scale)
        elif args.scale_b:
            queries_b, scale_b = default_suite(args.scale_b), args.scale_b
        else:
            queries_b, scale_b = queries_a, scale_a
        target_b = targets[1] if len(targets) == 2 else targets[0]
        sides.append(SidePlan("B", target_b, queries_b, {**settings, **dict(args.setting_b)}, scale_b))
        if not set(q.name for q in queries_a) & set(q.name for q in queries_b):
            raise UsageError("the two sides have no query name in common")
    for side in sides:
        parts = [side.target.url]
        if side.settings:
            parts.append(" ".join(f"{k}={v}" for k, v in side.settings.items()))
        if side.scale is not None and side.scale != 1.0:
            parts.append(f"scale={side.scale:g}")
        side.label = ", ".join(parts)
    return Plan(
        sides=sides,
        warmup=args.warmup,
        iterations=args.iterations,
        min_runs=args.min_runs,
        target_precision=args.precision,
        max_time_per_query=args.max_time_per_query,
        timeout=args.timeout,
        keep_format=args.keep_format,
        allow_writes=args.allow_writes,
        interleave=not args.no_interleave,
        server_metrics=args.server_metrics,
        calibration=not args.no_calibration,
        max_threads=args.max_threads,
    )


def cmd_run(args: argparse.Namespace) -> int:
    out = args.out or f"chbench-{datetime.now().strftime('%Y%m%d-%H%M%S')}.json"
    parent = Path(out).resolve().parent
    if not parent.is_dir():
        raise UsageError(f"cannot write results to {out}: directory {parent} does not exist")
    plan = build_plan(args)
    try:
        outcome = run_plan(plan, out, make_progress(args.quiet))
    finally:
        close_targets([s.target for s in plan.sides])
    if not args.quiet:
        sys.stdout.write(ConsoleExporter().run_summary(outcome.doc))
    if outcome.message:
        sys.stderr.write(f"chbench: {'error' if outcome.exit_code else 'note'}: {outcome.message}"
                         f" — results so far are in {out}\n")
    else:
        sys.stderr.write(f"chbench: results written to {out}\n")
    return outcome.exit_code
