"""``chbench capture``: a server's query_log (or an exported one) as a replayable
workload file, or as a suite of the queries that cost the most."""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
from typing import Any

from chbench.commands.args import PASSWORD_HELP, add_connection, non_negative_int, positive_int
from chbench.errors import EXIT_OK, UsageError

NAME = "capture"
HELP = "what your users really run: system.query_log as a workload file (for replay) or a suite"
DESCRIPTION = ("Read system.query_log of a server (after SYSTEM FLUSH LOGS; with --cluster every replica), or a "
               "query_log exported to a file, and write the queries in start-time order as a workload file (JSON "
               "lines) for 'chbench replay' — or, with --suite top:N, the N normalized queries that cost the most "
               "total time as a --queries file for 'chbench run' and 'chbench upgrade'. Initial queries only; "
               "password-like settings are never captured.")
EPILOG = f"""\
examples:
  chbench capture --target http://localhost:8123 --since 1h --out workload.jsonl
  chbench capture --target clickhouse://ch1:9000 --cluster prod --since 2026-12-01T09:00 --until 2026-12-01T10:00 \\
      --database shop --min-duration-ms 5 --out peak.jsonl
  chbench capture --from query_log.parquet --out workload.jsonl      nothing pointed at production
  chbench capture --target http://localhost:8123 --since 1d --suite top:20 --out suite.sql
  chbench run --queries suite.sql --out before.json

exported query_log: SELECT * FROM system.query_log WHERE … INTO OUTFILE 'log.parquet' (Parquet, TSVWithNames or
  JSONEachRow; text exports carry no time zone: --from-timezone, default UTC)
{PASSWORD_HELP}
exit codes: 0 ok, 2 bad input (no query_log, no access, bad file or window)
"""


def suite_size(text: str) -> int:
    m = re.fullmatch(r"top:(\d+)", text.strip())
    if not m or int(m.group(1)) < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not top:N (e.g. top:20)")
    return int(m.group(1))


def fraction(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not 0 < v <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {text}")
    return v


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_connection(p, target_help="the server whose query_log is read (http://, clickhouse://)",
                   who="--connect-user")
    s = p.add_argument_group("where the log comes from")
    s.add_argument("--cluster", metavar="NAME", help="every replica's log (clusterAllReplicas)")
    s.add_argument("--from", dest="from_file", metavar="FILE", help="a query_log exported to a file instead")
    s.add_argument("--from-format", metavar="FORMAT", help="Parquet, TSVWithNames or JSONEachRow (default: from "
                                                           "the file's extension)")
    s.add_argument("--from-timezone", default="UTC", metavar="TZ",
                   help="the time zone of a text export's times (default UTC)")
    f = p.add_argument_group("which queries")
    f.add_argument("--since", help="window start: 1h, 30m, 2d (ago) or 2026-12-01T10:00:00 (UTC unless given)")
    f.add_argument("--until", help="window end (same forms; default now)")
    f.add_argument("--database", dest="filter_databases", action="append", default=[], metavar="DB",
                   help="only queries run in this database (repeatable)")
    f.add_argument("--user", dest="filter_users", action="append", default=[], metavar="USER",
                   help="only this user's queries (repeatable)")
    f.add_argument("--query-kind", dest="kinds", action="append", default=[], metavar="KIND",
                   help="Select (default), Insert, … or all (repeatable)")
    f.add_argument("--min-duration-ms", type=non_negative_int, default=0, metavar="MS")
    f.add_argument("--exclude-regex", metavar="REGEX", help="leave out queries whose text matches (Python re)")
    f.add_argument("--limit", type=positive_int, metavar="N", help="the first N queries of the window")
    f.add_argument("--sample", type=fraction, default=1.0, metavar="FRACTION",
                   help="keep this fraction, chosen by a seeded hash of the query id")
    f.add_argument("--seed", type=non_negative_int, default=0, help="for --sample (default 0)")
    f.add_argument("--include-failed", action="store_true", help="also queries that failed while running")
    o = p.add_argument_group("output")
    o.add_argument("--out", required=True, metavar="FILE", help="the workload file (JSON lines) or, with --suite, "
                                                                "the suite (.sql)")
    o.add_argument("--suite", type=suite_size, metavar="top:N", help="write the N costliest normalized queries as "
                                                                     "a --queries file instead")
    o.add_argument("--redact-literals", action="store_true",
                   help="replace string literals with '?' and numbers with 0 (the text still runs)")
    o.add_argument("--quiet", action="store_true", help="no summary")


def run(args: argparse.Namespace) -> int:
    from chbench.commands.connection import credentials, named_targets
    from chbench.export.numbers import count
    from chbench.replay.capture import CaptureOptions, capture
    from chbench.replay.suite import REDACTED, suite_text, summary_lines
    from chbench.results import check_output_path
    from chbench.results.store import write_text_atomic
    from chbench.targets import make_target

    check_output_path(args.out, "the workload")  # before the query_log is read, not after
    specs = named_targets(args)
    if args.from_file and specs:
        raise UsageError("give either --from FILE or a --target, not both")
    if not args.from_file and len(specs) != 1:
        raise UsageError("say whose query_log to read: one --target URL (or --from FILE)" if not specs else
                         f"capture reads one target's query_log, got {len(specs)} (use --cluster for replicas)")
    opts = CaptureOptions(out=args.out, since=args.since, until=args.until, databases=args.filter_databases,
                          users=args.filter_users, kinds=args.kinds or ["Select"], min_duration_ms=args.min_duration_ms,
                          exclude_regex=args.exclude_regex, limit=args.limit or 0, sample=args.sample, seed=args.seed,
                          include_failed=args.include_failed, redact_literals=args.redact_literals,
                          cluster=args.cluster, from_file=args.from_file, from_format=args.from_format,
                          from_timezone=args.from_timezone, suite=args.suite or 0)
    target = None
    if args.from_file:
        info = {"file": args.from_file}
    else:
        target = make_target(specs[0], credentials(args))
    try:
        if target is not None:
            info = _connect(target, args.cluster)
            opts.now_us = int(info.pop("now_us"))
        got = capture(opts, target, info)
    finally:
        if target is not None:
            target.close()
    if not args.quiet:
        sys.stderr.write("\n".join(summary_lines(got.by_hash)) + "\n")
    if got.settings_dropped:
        sys.stderr.write("chbench: note: password-like settings not captured: "
                         f"{', '.join(sorted(got.settings_dropped))}\n")
    missing = got.header.source.get("columns_missing") or []
    if missing:
        sys.stderr.write(f"chbench: note: this query_log has no {', '.join(missing)}: "
                         + _degraded(missing) + "\n")
    if not got.written:
        since = got.header.window.get("since") or "the log's start"
        sys.stderr.write(f"chbench: note: no query in the window {since} … "
                         f"{got.header.window.get('until') or 'now'} passed the filters\n")
    if opts.suite:
        text = suite_text(got.by_hash, opts.suite, info.get("file") or info.get("target", ""), opts.redact_literals)
        if opts.redact_literals:
            sys.stderr.write(f"chbench: note: {REDACTED}\n")
        write_text_atomic(args.out, text)
        suite = count(text.count("\n-- name: "), "query")
        sys.stderr.write(f"chbench: suite of {suite} written to {args.out}\n")
    else:
        sys.stderr.write(f"chbench: {count(got.written, 'query')} written to {args.out}\n")
    return EXIT_OK


def _degraded(missing: list[str]) -> str:
    says = {"query_start_time_microseconds": "start times are whole seconds",
            "current_database": "queries replay in the target's default database",
            "normalized_query_hash": "queries are grouped by chbench's own normalized hash",
            "query_kind": "the kind is read off each statement's first keyword",
            "exception_code": "error codes are read off the exception text"}
    return "; ".join(says[c] for c in missing if c in says)


def _connect(target: object, cluster: str | None) -> dict[str, Any]:
    from chbench.errors import ChbenchError, ConnectError, QueryError
    from chbench.replay.capture import server_now
    from chbench.targets import Target

    assert isinstance(target, Target)
    try:
        now_us = server_now(target)
    except (QueryError, ChbenchError):
        now_us = None  # connect() says why in one line
    info = target.connect()
    if not target.capabilities.query_log:
        raise UsageError(f"{target.url}: the {target.kind} engine keeps no system.query_log; capture from a server "
                         "(http://, clickhouse://) or --from an exported file")
    try:
        target.flush_logs()
    except QueryError as e:  # no SYSTEM FLUSH LOGS grant: what is flushed already is read
        sys.stderr.write(f"chbench: note: {target.url}: SYSTEM FLUSH LOGS refused ({e.message}); the last "
                         "seconds of the log may be missing\n")
    except ConnectError:
        raise
    with contextlib.suppress(QueryError):
        target.query_rows("SELECT 1 FROM system.query_log LIMIT 0")
        return {"target": target.url, "server_version": info.version, "now_us": now_us or server_now(target),
                **({"cluster": cluster} if cluster else {})}
    raise UsageError(f"{target.url}: cannot read system.query_log (it needs a <query_log> section in the server's "
                     "config and the SELECT grant on it)")
