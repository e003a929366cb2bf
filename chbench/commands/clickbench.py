"""``chbench clickbench``: load the hits table, run the 43 queries with result
checksums, write ClickBench results files, compare and score them, stress a server,
and test crash recovery."""

from __future__ import annotations

import argparse
import platform
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

from chbench.clickbench import queries
from chbench.clickbench.results import load_entry, score
from chbench.commands.connection import credentials, target_specs
from chbench.errors import EXIT_FINDING, EXIT_INTERRUPTED, EXIT_OK, ChbenchError, QueryError, ServerLost, UsageError
from chbench.export import get_exporter
from chbench.results.load import read_json_object
from chbench.results.store import write_atomic
from chbench.runner.environment import document_header, now_iso
from chbench.targets import Target, make_target


class StatementFailed(ChbenchError):
    """A statement chbench itself sends (create, insert, count) was refused."""

    exit_code = EXIT_FINDING


def cmd_clickbench(args: argparse.Namespace) -> int:
    try:
        return _dispatch(args)
    except QueryError as e:
        raise StatementFailed(f"the server refused a statement: {e.message}") from None


def _dispatch(args: argparse.Namespace) -> int:
    sub = args.clickbench_command
    if sub == "compare":
        return _compare(args)
    if sub == "load":
        return _load(args)
    if sub == "run":
        return _run(args)
    if sub == "stress":
        return _stress(args)
    if sub == "crash-test":
        return _crash_test(args)
    raise UsageError("use 'chbench clickbench load|run|compare|stress|crash-test' (see --help)")


def _say(args: argparse.Namespace, text: str) -> None:
    if not getattr(args, "quiet", False):
        sys.stderr.write(text + "\n")
        sys.stderr.flush()


EMBEDDED_DIR = "chbench-hits"  # where the embedded engine keeps hits between commands


def _one_target(args: argparse.Namespace) -> Target:
    specs = target_specs(args)
    if len(specs) != 1:
        raise UsageError("give one target")
    if specs[0] == "embedded":  # in memory, the table would vanish with the process
        specs = [f"embedded:{EMBEDDED_DIR}"]
        if args.clickbench_command == "load":
            _say(args, f"note: embedded engine, data in ./{EMBEDDED_DIR} (--target embedded:DIR for another place)")
    t = make_target(specs[0], credentials(args))
    t.connect()
    return t


def _check_out(path: str | None, what: str) -> None:
    if path:
        parent = Path(path).resolve().parent
        if not parent.is_dir():
            raise UsageError(f"cannot write {what} to {path}: directory {parent} does not exist")


class _Bar:
    """A rich progress bar on a terminal, nothing otherwise."""

    def __init__(self, args: argparse.Namespace, label: str, unit: str) -> None:
        self.progress = None
        if sys.stderr.isatty() and not getattr(args, "quiet", False):
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                DownloadColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
                TransferSpeedColumn,
            )

            amount = [DownloadColumn(), TransferSpeedColumn()] if unit == "bytes" else [MofNCompleteColumn()]
            self.progress = Progress(TextColumn(label), BarColumn(), *amount, TimeRemainingColumn(),
                                     console=Console(stderr=True), transient=True)
            self.task = self.progress.add_task(label, total=None)
            self.progress.start()

    def update(self, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress.update(self.task, completed=done, total=total)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()


# -- load ---------------------------------------------------------------------------

def _load(args: argparse.Namespace) -> int:
    from chbench.clickbench.loading import check_file_source, create_table, load_file, load_synthetic

    if (args.synthetic is None) == (args.from_file is None):
        raise UsageError("give --synthetic ROWS or --from FILE")
    _check_out(args.out, "the load results")
    target = _one_target(args)
    doc = document_header("clickbench-load")
    doc["target"] = target.describe()
    doc["server"] = {"version": target.info.version if target.info else None}
    try:
        if args.from_file is not None:
            check_file_source(target, args.from_file, args.format)
        notes = create_table(target, args.replace)
        if args.synthetic is not None:
            bar = _Bar(args, "generating", "rows")
            try:
                report = load_synthetic(target, args.synthetic, args.seed, args.batch_rows, bar.update)
            finally:
                bar.close()
        else:
            bar = _Bar(args, "loading", "bytes")
            try:
                report = load_file(target, args.from_file, args.format, bar.update)
            finally:
                bar.close()
        report.notes = notes + report.notes
    finally:
        target.close()
    doc["load"] = report.to_json()
    doc["status"] = "complete"
    doc["meta"]["ended_at"] = now_iso()
    if args.out:
        write_atomic(args.out, doc)
    rate = report.rows / report.seconds if report.seconds else 0.0
    for note in report.notes:
        _say(args, f"note: {note}")
    sys.stdout.write(f"loaded {report.rows:,} rows into {report.table} in {report.seconds:.1f} s "
                     f"({rate:,.0f} rows/s); {report.data_size / 1e6:,.1f} MB on disk (system.parts); "
                     f"row count {'verified' if report.expected_rows is not None else 'not checked'}\n")
    return EXIT_OK


# -- run ----------------------------------------------------------------------------

def _default_system(target: Target) -> tuple[str, list[str]]:
    if target.kind == "embedded":
        return "chDB", ["C++", "column-oriented", "ClickHouse derivative", "embedded", "stateless"]
    return "ClickHouse", ["C++", "column-oriented", "ClickHouse derivative"]


def clickbench_entry(args: argparse.Namespace, target: Target, outcomes: list[Any], load: dict[str, Any] | None,
                     size: int, concurrent: dict[str, Any] | None) -> dict[str, Any]:
    """A results file in ClickBench's own shape (../shared/clickbench/result-*.json)."""
    system, tags = _default_system(target)

    def seconds(v: float | None) -> float | None:
        return None if v is None else max(0.001, round(v, 3))

    by_index = {o.index: o for o in outcomes}
    result = []
    for i in range(1, 44):
        o = by_index.get(i)
        row = [seconds(s) for s in o.seconds] if o else []
        result.append(row + [None] * (args.tries - len(row)))
    return {
        "system": args.system or system,
        "date": date.today().isoformat(),
        "machine": args.machine or platform.node() or "unknown",
        "cluster_size": 1,
        "proprietary": "no",
        "hardware": "cpu",
        "tuned": "no",
        "tags": tags + (["synthetic data"] if load and str(load.get("source", "")).startswith("synthetic") else []),
        "load_time": None if not load else round(float(load["seconds"]), 3),
        "data_size": size,
        "concurrent_qps": None if not concurrent else round(concurrent["qps"], 3),
        "concurrent_error_ratio": None if not concurrent else round(concurrent["error_ratio"], 3),
        "result": result,
    }


def _read_ours(path: str, kind: str) -> dict[str, Any]:
    doc = read_json_object(path, f"a chbench '{kind}' results file")
    if doc.get("kind") != kind:
        raise UsageError(f"{path}: not a chbench '{kind}' results file")
    return doc


def _run(args: argparse.Namespace) -> int:
    from chbench.clickbench.loading import data_size, table_exists, table_rows
    from chbench.clickbench.runner import CacheDropper, compare_with_reference, run_queries

    out = args.out or f"clickbench-{time.strftime('%Y%m%d-%H%M%S')}.json"
    for path, what in ((out, "results"), (args.results, "the ClickBench results file"), (args.report, "the report")):
        _check_out(path, what)
    report_path = args.report or str(Path(out).with_suffix(".md"))
    reference = _read_ours(args.reference, "clickbench") if args.reference else None
    load = _read_ours(args.load_results, "clickbench-load")["load"] if args.load_results else None
    if args.concurrent and args.duration is None:
        raise UsageError("--concurrent needs --duration S")
    only = _parse_only(args.only)
    target = _one_target(args)
    if args.concurrent:
        from chbench.clickbench.stress import require_server

        require_server(target, "--concurrent")
    if not table_exists(target) or table_rows(target) == 0:
        target.close()
        raise UsageError(f"{target.url} has no rows in table 'hits': run 'chbench clickbench load' first")
    dropper = None if args.no_cold else CacheDropper(target, args.drop_os_cache)
    doc = document_header("clickbench")
    doc["target"] = target.describe()
    doc["server"] = {"version": target.info.version if target.info else None}
    doc["table"] = {"rows": table_rows(target), "data_size": data_size(target)}
    doc["load"] = load
    doc["tries"] = args.tries
    doc["timeout"] = args.timeout
    doc["queries"] = []
    outcomes: list[Any] = []
    exit_code = EXIT_OK
    message = None

    def save(status: str | None = None) -> None:
        doc["queries"] = [o.to_json() for o in outcomes]
        doc["cold"] = dropper.describe() if dropper else None
        if status:
            doc["status"] = status
            doc["meta"]["ended_at"] = now_iso()
        write_atomic(out, doc)

    def on_try(o: Any, t: int) -> None:
        if not outcomes or outcomes[-1] is not o:
            outcomes.append(o)
        if t == args.tries - 1:
            s = o.seconds
            shown = " ".join("null" if v is None else f"{v:.3f}" for v in s)
            extra = f"  {o.flag}" if o.flag else ""
            err = next((tr["error"]["message"] for tr in o.tries if tr.get("error")), None)
            ref = o.reference_checksum()
            _say(args, f"Q{o.index - 1:<3} {shown:<24} rows {ref[0] if ref else '-'}  {o.mode}{extra}"
                 + (f"  error: {err[:100]}" if err else ""))
        save()

    try:
        run_queries(target, queries(), args.tries, args.timeout, dropper, on_try, only)
        concurrent = None
        if args.concurrent:
            from chbench.clickbench.stress import concurrent as run_concurrent

            _say(args, f"concurrent: {args.concurrent} connections for {args.duration:g} s")
            phase = run_concurrent(_maker(args), queries(), args.concurrent, args.duration, args.seed,
                                   timeout=args.timeout)
            concurrent = phase.to_json()
            doc["concurrent"] = concurrent
            _say(args, f"concurrent: {phase.qps:.3f} QPS, error ratio {phase.error_ratio:.3f}")
    except KeyboardInterrupt:
        save("interrupted")
        sys.stderr.write(f"chbench: interrupted — results so far are in {out}\n")
        target.close()
        return EXIT_INTERRUPTED
    except ServerLost as e:
        save("server_lost")
        target.close()
        raise ServerLost(f"{e} — results so far are in {out}") from None
    doc["clickbench"] = clickbench_entry(args, target, outcomes, load, doc["table"]["data_size"], concurrent)
    failed = [o.index for o in outcomes if any(v is None for v in o.seconds)]
    unstable = [o.index for o in outcomes if o.flag and o.mode != "order-sensitive"]
    if failed:
        exit_code = EXIT_FINDING
        message = f"{len(failed)} queries failed at least once: " + ", ".join(f"Q{i - 1}" for i in failed)
    if unstable:
        exit_code = EXIT_FINDING
        sys.stderr.write("chbench: results differ between tries: " + ", ".join(f"Q{i - 1}" for i in unstable) + "\n")
    if reference is not None:
        diffs = compare_with_reference(outcomes, reference)
        doc["reference"] = {"file": args.reference, "target": reference.get("target"), "differences": diffs}
        counted = [d for d in diffs if d["counted"]]
        for d in diffs:
            sys.stderr.write(f"chbench: {'correctness regression' if d['counted'] else 'note'}: Q{d['index'] - 1} "
                             f"{d['what']} ({d['mode']}): here {d['here']}, reference {d['reference']}\n")
        if counted:
            exit_code = EXIT_FINDING
        else:
            _say(args, f"checksums match the reference ({args.reference})"
                 + (f"; {len(diffs)} order-sensitive differences listed" if diffs else ""))
    save("complete")
    target.close()
    if args.results:
        write_atomic(args.results, doc["clickbench"])
    Path(report_path).write_text(get_exporter("markdown").clickbench_run(doc), encoding="utf-8")
    written = [out, report_path] + ([args.results] if args.results else [])
    if message:
        sys.stderr.write(f"chbench: {message}\n")
    sys.stderr.write("chbench: written " + ", ".join(written) + "\n")
    return exit_code


def _parse_only(text: str | None) -> list[int] | None:
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


def _maker(args: argparse.Namespace) -> Any:
    spec = target_specs(args)[0]  # stress needs a server: never the embedded default
    creds = credentials(args)
    return lambda: make_target(spec, creds, light=True)


# -- stress -------------------------------------------------------------------------

def _stress(args: argparse.Namespace) -> int:
    from chbench.clickbench.loading import table_exists, table_rows
    from chbench.clickbench.stress import concurrent, mixed, require_server

    _check_out(args.out, "results")
    target = _one_target(args)
    require_server(target, "stress")
    if not table_exists(target) or table_rows(target) == 0:
        raise UsageError(f"{target.url} has no rows in table 'hits': run 'chbench clickbench load' first")
    target.close()
    doc = document_header("clickbench-stress")
    doc["target"] = target.describe()
    doc["server"] = {"version": target.info.version if target.info else None}
    doc["concurrent"] = args.concurrent
    doc["duration"] = args.duration
    try:
        if args.ingest:
            result = mixed(_maker(args), queries(), args.concurrent, args.duration, args.seed, args.timeout)
            doc["mixed"] = result
            text = _mixed_text(result)
        else:
            phase = concurrent(_maker(args), queries(), args.concurrent, args.duration, args.seed,
                               timeout=args.timeout)
            doc["phases"] = [phase.to_json()]
            text = _phase_text(phase.to_json())
    except KeyboardInterrupt:
        doc["status"] = "interrupted"
        if args.out:
            write_atomic(args.out, doc)
        return EXIT_INTERRUPTED
    doc["status"] = "complete"
    doc["meta"]["ended_at"] = now_iso()
    if args.out:
        write_atomic(args.out, doc)
    sys.stdout.write(text)
    lost = [p.get("lost") for p in doc.get("phases", [])] + [
        doc.get("mixed", {}).get(k, {}).get("lost") for k in ("without_ingest", "with_ingest")]
    if any(lost):
        raise ServerLost(f"server lost during stress: {next(x for x in lost if x)}")
    return EXIT_OK


def _phase_text(p: dict[str, Any]) -> str:
    lines = [f"{p['phase']}: {p['queries_ok']} queries in {p['seconds']:.1f} s = {p['qps']:.3f} QPS, "
             f"error ratio {p['error_ratio']:.3f}",
             f"{'query':<6}{'ok':>6}{'errors':>8}{'p50 ms':>10}{'p90 ms':>10}{'p99 ms':>10}"]
    for q in p["per_query"]:
        def ms(v: float | None) -> str:
            return "-" if v is None else f"{v:.1f}"
        lines.append(f"Q{q['query'] - 1:<5}{q['ok']:>6}{q['errors']:>8}{ms(q['p50']):>10}{ms(q['p90']):>10}"
                     f"{ms(q['p99']):>10}" + (f"  {q['error'][:80]}" if q["error"] else ""))
    return "\n".join(lines) + "\n"


def _mixed_text(r: dict[str, Any]) -> str:
    a, b, ing = r["without_ingest"], r["with_ingest"], r["ingest"]
    lines = [f"queries only:     {a['qps']:.3f} QPS, error ratio {a['error_ratio']:.3f}",
             f"queries + ingest: {b['qps']:.3f} QPS, error ratio {b['error_ratio']:.3f}",
             f"ingest: {ing['rows']:,} rows in {ing['seconds']:.1f} s = {ing['rows_per_s']:,.0f} rows/s "
             f"({ing['method']})" + (f"; writer stopped: {ing['error']}" if ing["error"] else ""),
             f"{'query':<6}{'p50 without':>12}{'p50 with':>10}{'ratio':>8}"]
    for q in r["p50_by_query"]:
        def ms(v: float | None) -> str:
            return "-" if v is None else f"{v:.1f}"
        ratio = "-" if q["ratio"] is None else f"x{q['ratio']:.2f}"
        lines.append(f"Q{q['query'] - 1:<5}{ms(q['p50_ms_without']):>12}{ms(q['p50_ms_with']):>10}{ratio:>8}")
    return "\n".join(lines) + "\n"


# -- crash test ---------------------------------------------------------------------

def _crash_test(args: argparse.Namespace) -> int:
    from chbench.clickbench.crash import run_cycles

    _check_out(args.out, "results")
    doc = document_header("clickbench-crash-test")
    cycles: list[dict[str, Any]] = []

    def on_cycle(c: dict[str, Any]) -> None:
        cycles.append(c)
        doc["cycles"] = cycles
        if args.out:
            write_atomic(args.out, doc)

    result = run_cycles(args.rows, args.cycles, args.seed, args.batch_rows, lambda s: _say(args, s), on_cycle)
    doc.update(result)
    doc["status"] = "complete"
    doc["meta"]["ended_at"] = now_iso()
    if args.out:
        write_atomic(args.out, doc)
    ok = sum(c["ok"] for c in result["cycles"])
    sys.stdout.write(f"crash recovery: {ok} of {len(result['cycles'])} kill -9 cycles ended with the row count and "
                     f"checksum of the uninterrupted load ({result['reference']['rows']:,} rows, "
                     f"{result['reference']['checksum']})\n")
    return EXIT_OK if result["ok"] else EXIT_FINDING


# -- compare ------------------------------------------------------------------------

def _compare(args: argparse.Namespace) -> int:
    entries = [load_entry(f) for f in args.files]
    text = get_exporter(args.format).clickbench(score(entries))
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return EXIT_OK
