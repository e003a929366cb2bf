"""``chbench history``: every run kept in a store, change points across the series, a CI
gate and a report (chbench/history, docs/history.md)."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from chbench.commands.args import Parser, add_format, percent, probability
from chbench.errors import EXIT_FINDING, EXIT_OK, UsageError

if TYPE_CHECKING:
    from chbench.history.store import Store

NAME = "history"
HELP = "keep every run in a store; find where each query's series changed (a CI gate)"
DESCRIPTION = ("Add results files to a store of runs (a local SQLite file by default, or a ClickHouse table a team "
               "shares), find per query where its level changed — each change confirmed on the raw samples "
               "before and after — and report the changes new since the last check.")
EPILOG = """\
examples:
  chbench history add nightly.json --label branch=main --label commit=$SHA
  chbench run --out nightly.json --history --label branch=main        add when the run ends
  chbench history check                             changes in every series; exit 1 on a new regression
  chbench history check --format json --label branch=main
  chbench history list ; chbench history show aggregation
  chbench history export --format csv > runs.csv
  chbench history report --html history.html
  chbench history check --store http://ch:8123/perf   a ClickHouse store (password: CLICKHOUSE_PASSWORD)

the local store is $XDG_DATA_HOME/chbench/history.sqlite (default ~/.local/share/chbench/) unless --store says
otherwise (a file or directory).
exit codes: 0 no new regression; 1 a new regression (check); 2 bad input or a store that cannot be reached
"""


def _store_args(p: argparse.ArgumentParser, filters: bool = True) -> None:
    p.add_argument("--store", metavar="URL", help="a path (SQLite file or directory), http(s)://host:8123/db or "
                   "clickhouse(s)://host:9000/db (default: the local store)")
    p.add_argument("--store-password-file", metavar="FILE",
                   help="the ClickHouse store's password (else CLICKHOUSE_PASSWORD)")
    p.add_argument("--store-ca-file", metavar="FILE", help="CA bundle for the ClickHouse store's TLS")
    if filters:
        p.add_argument("--label", action="append", default=[], type=label, metavar="KEY=VALUE",
                       help="only runs with this label (repeatable)")
        p.add_argument("--since", type=since, metavar="WHEN",
                       help="from this time: 2026-11-01, an ISO time, or 7d / 24h ago")


def label(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value


def since(text: str) -> float:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([dhw])", text.strip())
    if m:
        return time.time() - float(m.group(1)) * {"h": 3600, "d": 86400, "w": 604800}[m.group(2)]
    try:
        return datetime.fromisoformat(text.strip()).astimezone().timestamp()
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date, an ISO time or 7d / 24h, got {text!r}") from None


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser, required=True)
    a = sub.add_parser("add", help="add results files (chbench run's) to the store")
    a.add_argument("files", nargs="+", metavar="RESULTS.json")
    a.add_argument("--label", action="append", default=[], type=label, metavar="KEY=VALUE",
                   help="labels for these runs: branch, commit, host, anything (repeatable)")
    a.add_argument("--side", metavar="ID|LABEL", help="which side of a file of several (default: its only side)")
    _store_args(a, filters=False)
    c = sub.add_parser("check", help="find changes in every series; exit 1 on a new regression")
    _store_args(c)
    _detection_args(c)
    c.add_argument("--no-record", action="store_true", help="do not remember what this check reported "
                   "(the next check then calls the same changes new)")
    add_format(c, ["console", "json"])
    c.add_argument("--html", metavar="FILE", help="also write the report here")
    lst = sub.add_parser("list", help="the stored runs")
    _store_args(lst)
    add_format(lst, ["console", "json"])
    s = sub.add_parser("show", help="one query's series, run by run")
    s.add_argument("query", metavar="QUERY")
    _store_args(s)
    _detection_args(s)
    add_format(s, ["console", "json"])
    e = sub.add_parser("export", help="every stored run as JSON or CSV")
    _store_args(e)
    add_format(e, ["json", "csv"], default="json")
    r = sub.add_parser("report", help="an HTML page: every series, its changes, an overview")
    _store_args(r)
    r.add_argument("--html", required=True, metavar="FILE")
    _detection_args(r)


def _detection_args(p: argparse.ArgumentParser) -> None:
    """What counts as a change: the same for check, show and report, so each names the same
    changes (show and report had no --alpha, show no --threshold: they used the defaults)."""
    p.add_argument("--threshold", type=percent, default=0.02, help="least change reported (default 2%%)")
    p.add_argument("--alpha", type=probability, default=0.05, help="significance of each change's confirmation")


def open_from(args: argparse.Namespace, create: bool = False) -> Store:
    from chbench.commands.connection import ca_file_from, password_from
    from chbench.history.store import open_store

    password = password_from(getattr(args, "store_password_file", None))
    return open_store(getattr(args, "store", None), password=password,
                      ca_file=ca_file_from(getattr(args, "store_ca_file", None)), create=create)


def add_files(files: list[str], labels: dict[str, str], store: Store, side: str | None = None) -> list[str]:
    """Add results files to a store; the ids of the runs that were new."""
    from chbench.history.record import runs_from_file

    runs = [r for f in files for r in runs_from_file(f, labels, side)]
    return store.add(runs)


def run(args: argparse.Namespace) -> int:
    if args.action == "add":
        for f in args.files:
            if not os.path.isfile(f):
                raise UsageError(f"{f}: {'not a file' if os.path.exists(f) else 'no such file'}")
    from chbench.history.store import NoHistory

    store = open_from(args, create=args.action == "add")
    if isinstance(store, NoHistory):  # read as empty, made nowhere: a mistyped --store shows here
        sys.stderr.write(f"chbench: warning: no history at {store.location} yet: runs are added by "
                         "'chbench history add FILE…' or 'chbench run … --history'\n")
    try:
        return ACTIONS[args.action](args, store)
    finally:
        store.close()


def _selected(args: argparse.Namespace, store: Store, samples: bool = True, since: bool = True) -> list[Any]:
    """The runs the filters select; when they select none of a store that has runs, a
    warning names what is there — a mistyped label must not pass a CI gate in silence."""
    labels = dict(getattr(args, "label", None) or [])
    after = getattr(args, "since", None) if since else None
    runs = store.runs(since=after, labels=labels, samples=samples)
    if not runs and (labels or after is not None):
        every = store.runs(samples=False)
        if every:
            values: dict[str, set[str]] = {}
            for r in every:
                for k, v in r.labels.items():
                    values.setdefault(k, set()).add(v)
            have = [f"{k}={'|'.join(sorted(v))}" if len(v) <= 3 else f"{k} ({len(v)} values)"
                    for k, v in sorted(values.items())]
            wanted = " ".join(f"--label {k}={v}" for k, v in labels.items())
            if after is not None:
                newest = datetime.fromtimestamp(max(r.started_at for r in every), tz=timezone.utc)
                wanted += f" --since (the newest run started {newest:%Y-%m-%d %H:%M} UTC)"
            sys.stderr.write(f"chbench: warning: none of the {len(every)} stored runs matches {wanted.strip()}; "
                             f"their labels: {', '.join(have) or 'none'}\n")
    return runs


def _add(args: argparse.Namespace, store: Store) -> int:
    added = add_files(args.files, dict(args.label), store, args.side)
    skipped = len(args.files) - len(added)
    sys.stderr.write(f"chbench: {len(added)} run(s) added to {store.location}"
                     + (f" ({skipped} stored already)" if skipped else "") + "\n")
    return EXIT_OK


def _check(args: argparse.Namespace, store: Store) -> int:
    from chbench.history.check import CheckOptions, check

    runs = _selected(args, store, since=False)  # --since: which changes are reported, not which runs count
    result = check(runs, store.reported(), CheckOptions(threshold=args.threshold, alpha=args.alpha, since=args.since))
    if not args.no_record:
        store.record_reported([c.reported() for c in result.changes if c.new])
    if args.format == "json":
        sys.stdout.write(json.dumps(result.to_json(), indent=2) + "\n")
    else:
        from chbench.report.history import check_text

        sys.stdout.write(check_text(result, store.location))
    if args.html:
        _write_html(args.html, runs, result)
    return EXIT_FINDING if result.new_regressions else EXIT_OK


def _write_html(path: str, runs: list[Any], result: Any) -> None:
    from chbench.report.history import history_html
    from chbench.results.store import write_report

    write_report(path, history_html(runs, result))
    sys.stderr.write(f"chbench: report written to {path}\n")


def _list(args: argparse.Namespace, store: Store) -> int:
    runs = _selected(args, store, samples=False)
    if args.format == "json":
        from chbench.report.history import export_json

        sys.stdout.write(export_json(runs, samples=False, indent=2))
        return EXIT_OK
    from chbench.report.history import list_text

    sys.stdout.write(list_text(runs, store.location))
    return EXIT_OK


def _show(args: argparse.Namespace, store: Store) -> int:
    from chbench.history.check import CheckOptions, check

    runs = _selected(args, store)
    if not any(q.name == args.query for r in runs for q in r.queries):
        names = sorted({q.name for r in runs for q in r.queries})
        raise UsageError(f"no query named {args.query!r} in the store ({', '.join(names[:8]) or 'no runs'} …)")
    result = check(runs, store.reported(), CheckOptions(threshold=args.threshold, alpha=args.alpha))
    from chbench.report.history import show_json, show_text

    if args.format == "json":
        sys.stdout.write(json.dumps(show_json(args.query, runs, result), indent=2) + "\n")
    else:
        sys.stdout.write(show_text(args.query, runs, result))
    return EXIT_OK


def _export(args: argparse.Namespace, store: Store) -> int:
    from chbench.report.history import export_csv, export_json

    runs = _selected(args, store)
    sys.stdout.write(export_json(runs) if args.format == "json" else export_csv(runs))
    return EXIT_OK


def _report(args: argparse.Namespace, store: Store) -> int:
    from chbench.history.check import CheckOptions, check

    runs = _selected(args, store)
    result = check(runs, store.reported(), CheckOptions(threshold=args.threshold, alpha=args.alpha))
    _write_html(args.html, runs, result)
    return EXIT_OK


ACTIONS = {"add": _add, "check": _check, "list": _list, "show": _show, "export": _export, "report": _report}
