"""``chbench replay``: a captured workload sent again with its real timing, to one
target or to two side by side."""

from __future__ import annotations

import argparse
import sys

from chbench.commands.args import (
    PASSWORD_HELP,
    add_connection,
    add_quiet,
    add_statistics,
    positive_float,
    positive_int,
    setting,
)
from chbench.errors import UsageError
from chbench.outcome import Outcome

NAME = "replay"
HELP = "send a captured workload again with its real timing (open loop), to one or two targets"
DESCRIPTION = ("Replay a workload file made by 'chbench capture': every query at its original offset from the "
               "window start divided by --speed, on as many connections as the timing needs (open loop: a slow "
               "query never delays the next one; lateness is measured), with its captured database and settings. "
               "Read-only unless --allow-writes. With two targets: the same schedule on both, and per normalized "
               "query p50/p90/p99, ratio, interval and verdict.")
EPILOG = f"""\
examples:
  chbench replay workload.jsonl --target http://staging:8123 --out replay.json
  chbench replay workload.jsonl --target clickhouse://old:9000 --target clickhouse://new:9000 --speed 4 \\
      --check-answers --out upgrade.json
  chbench replay workload.jsonl --target http://localhost:8123 --mode sequential
  chbench replay workload.jsonl --target http://staging:8123 --setting-b max_threads=4 --out threads.json
  chbench report replay.json --html replay.html

read-only by default: only SELECT/WITH/SHOW/DESCRIBE/EXPLAIN/EXISTS are sent, with readonly=2; writes, DDL
  and SYSTEM are counted as skipped (--allow-writes lifts it); SET and USE are never sent (settings and the
  database travel with each query)
{PASSWORD_HELP}
exit codes: 0 ok, 1 a finding (a slower normalized query, an answer changed, queries failing that had not
            failed when captured), 2 bad input, 3 server lost, 130 interrupted (everything measured is kept)
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("workload", metavar="WORKLOAD", help="a workload file from chbench capture")
    add_connection(p, target_help="where the workload goes (once or twice; required)")
    w = p.add_argument_group("settings (over each query's captured ones; checked against system.settings)")
    w.add_argument("--setting", type=setting, action="append", default=[], metavar="NAME=VALUE",
                   help="sent with every query, on every target (repeatable)")
    w.add_argument("--setting-b", type=setting, action="append", default=[], metavar="NAME=VALUE",
                   help="sent to target B only; with one --target, B is that target again with these "
                        "settings: the same schedule on both, compared (repeatable)")
    r = p.add_argument_group("how it is replayed")
    r.add_argument("--speed", type=positive_float, default=1.0, metavar="F",
                   help="send at F times the original rate (default 1)")
    r.add_argument("--keep-idle-start", action="store_true",
                   help="wait out the quiet start of the window too (default: the clock starts at the first query)")
    r.add_argument("--mode", choices=["open", "sequential"], default="open",
                   help="open loop with the original timing (default) or one query after another")
    r.add_argument("--order", choices=["parallel", "sequential"], default="parallel",
                   help="two targets: both at once (default) or one after the other")
    r.add_argument("--allow-writes", action="store_true", help="also send writes, DDL and SYSTEM statements")
    r.add_argument("--check-answers", action="store_true",
                   help="two targets: compare one deterministic query's answer per normalized query (untimed)")
    r.add_argument("--timeout", type=positive_float, metavar="S", help="per-query time limit")
    r.add_argument("--max-connections", type=positive_int, default=512, metavar="N",
                   help="at most N connections per target (default 512)")
    r.add_argument("--out", metavar="FILE", help="results file (kind replay; default: chbench-replay-<time>.json)")
    add_quiet(r)
    add_statistics(p, verdict_only=True)


def run(args: argparse.Namespace) -> int:
    from chbench.commands.connection import credentials, named_targets
    from chbench.export.console import ConsoleExporter
    from chbench.export.sections import Report
    from chbench.replay.driver import ReplayOptions, replay
    from chbench.report.replay import replay_section
    from chbench.results import check_output_path
    from chbench.stats.compare import Options
    from chbench.ui.replay import ReplayProgress

    specs = named_targets(args)
    if not specs:
        raise UsageError("say where the workload goes: --target URL (replay traffic only goes to targets you name)")
    if len(specs) > 2:
        raise UsageError(f"replay takes one target or two side by side, got {len(specs)}")
    if args.setting_b and len(specs) == 1:
        specs = specs * 2  # B: the same target, its own connections, with --setting-b
    settings = [dict(args.setting), {**dict(args.setting), **dict(args.setting_b)}][:len(specs)]
    from datetime import datetime

    args.out = args.out or f"chbench-replay-{datetime.now().strftime('%Y%m%d-%H%M%S')}.json"
    check_output_path(args.out)
    opts = ReplayOptions(workload=args.workload, targets=specs, credentials=credentials(args), speed=args.speed,
                         sequential=args.mode == "sequential", order=args.order, allow_writes=args.allow_writes,
                         check_answers=args.check_answers, timeout=args.timeout, max_connections=args.max_connections,
                         keep_idle_start=args.keep_idle_start, settings=settings,
                         stats=Options(threshold=args.threshold, alpha=args.alpha, correction=args.correction))
    progress = ReplayProgress(args.quiet)
    try:
        doc, sides, outcome = replay(opts, args.out, progress)
    finally:
        progress.close()
    if not args.quiet:
        sys.stdout.write(ConsoleExporter().render(Report("", [replay_section(args.out, doc, charts=False)])))
    for s in sides:
        s.target.close()
    sys.stderr.write(f"chbench: results written to {args.out}\n")
    if outcome is Outcome.SERVER_LOST:
        sys.stderr.write(f"chbench: error: {doc.stop_reason}\n")
    found = findings(doc) if outcome is Outcome.COMPLETE else []
    if found:  # say why the exit code is 1, not only the table it can be read from
        sys.stderr.write(f"chbench: finding (exit 1): {'; '.join(found)}\n")
        outcome = Outcome.FINDING
    return outcome.exit_code


def findings(doc: object) -> list[str]:
    """What makes the exit code 1: slower normalized queries, changed answers, queries
    failing on the target that had not failed when captured."""
    from chbench.results.replay import ReplayDocument

    assert isinstance(doc, ReplayDocument)
    out = []
    rows = (doc.comparison or {}).get("queries", [])
    out += [f"{r['name']} slower" for r in rows if r.get("verdict") == "slower"]
    out += [f"{h} answer changed" for h, v in ((doc.answers or {}).get("queries") or {}).items()
            if v.get("equal") is False]
    for side, col in doc.samples.items():
        new = sum(1 for c, was in zip(col.get("error_code", []), col.get("captured_code", []), strict=False)
                  if c and not was)
        if new:
            out.append(f"{side}: {new:,} {'query' if new == 1 else 'queries'} failed that had not failed when captured")
    return out
