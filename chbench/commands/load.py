"""``chbench load``: clickhouse-benchmark's flags and reports, plus open-loop load,
concurrency sweeps, worker processes and honest comparison verdicts."""

from __future__ import annotations

import argparse
import math
import re
import sys
from typing import TYPE_CHECKING

from chbench.commands.args import (
    PASSWORD_HELP,
    add_connection,
    flag_value,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
)
from chbench.distributed import DEFAULT_PORT as DEFAULT_MASTER_PORT
from chbench.errors import UsageError

if TYPE_CHECKING:
    from chbench.distributed.master import Coordinator
    from chbench.load.config import LoadConfig
    from chbench.load.levels import Host, SourceFactory
    from chbench.load.metrics import LoadMetrics
    from chbench.workload import Workload

NAME = "load"
HELP = "put load on a server: clickhouse-benchmark's flags, open loop, sweeps"
DESCRIPTION = ("Put load on ClickHouse: clickhouse-benchmark's flags and reports, plus open-loop rates, concurrency "
               "sweeps, worker processes and comparison verdicts. Any --<setting>=value (or --setting NAME=VALUE) "
               "is sent with every query.")
PARSER = {"add_help": False}  # -h is the host, as in clickhouse-benchmark
EPILOG = f"""\
examples (clickhouse-benchmark's flags; reports on stderr, as it prints them):
  echo 'SELECT 1' | chbench load -h localhost --port 9000 -c 4 -t 10
  chbench load -q 'SELECT count() FROM hits' -C 8 -i 2000 --json cb.json --out load.json
  chbench load --port 9000 --port 9001 -c 2 -t 30 < queries.tsv      comparison mode, t-test + rank verdict
  chbench load --target http://localhost:8123 --queries mix.sql --rate 200 --poisson -t 60
  chbench load --port 9000 -c 16 --workers 2 -t 600 --max_threads=1
  chbench load --target clickhouse://h1,h2,h3:9000 --queries mix.sql -c 12 -t 60     a cluster: per-host stats
  chbench load --master --expect-workers 3 --target clickhouse://db:9000 --queries mix.sql --rate 3000 -t 600
  chbench load --worker --master-host loadbox1                 on each worker machine (Locust's messaging)

queries: stdin one per line (--queries-format tsv) or a ';'-separated script (script);
  --queries FILE with '-- name: N' and '-- weight: N' comments for a weighted mix
{PASSWORD_HELP}
exit codes: 0 ok, 1 a query failed (see --continue_on_errors), 2 bad input, 3 server lost (or a
            worker, with --stop-on-worker-loss),
            130 interrupted (the report covers everything measured)
"""
_SETTING_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SLO_LANES = 64  # connections of a capacity search when -c is not given: rates, not lanes, should limit


def confidence(text: str) -> int:
    v = non_negative_int(text)
    if v > 5:
        raise argparse.ArgumentTypeError("must be 0..5 (80, 90, 95, 98, 99, 99.5%)")
    return v


def add_arguments(p: argparse.ArgumentParser) -> None:
    from chbench.workload import FORMATS

    p.add_argument("--help", action="help", help="show this help")
    q = p.add_argument_group("queries")
    q.add_argument("-q", "--query", action="append", default=[], metavar="SQL", help="a query (repeatable)")
    q.add_argument("--queries", metavar="FILE", help="query file ('-' is stdin); '-- weight: N' weights a query")
    q.add_argument("--queries-format", "--queries_format", dest="queries_format", choices=list(FORMATS),
                   help="stdin: tsv (one per line, escaped; default) or script (';'-separated)")
    q.add_argument("-r", "--randomize", nargs="?", const=1, default=0, type=flag_value,
                   help="random order (weighted by '-- weight:')")
    q.add_argument("--seed", type=non_negative_int, default=0, help="seed for -r, host choice and --poisson")
    c = p.add_argument_group("how much load (clickhouse-benchmark)")
    c.add_argument("-c", "--concurrency", type=positive_int,
                   help=f"parallel queries (default 1; with --slo {SLO_LANES} connections)")
    c.add_argument("-C", "--max_concurrency", "--max-concurrency", dest="max_concurrency", type=positive_int,
                   help="sweep concurrency 1..N, one report per level, and find the knee")
    c.add_argument("-i", "--iterations", type=non_negative_int, default=0, help="queries to run (0: no limit)")
    c.add_argument("-t", "--timelimit", type=non_negative_float, default=0.0, metavar="SEC",
                   help="stop launching queries after SEC seconds (0: no limit)")
    c.add_argument("-d", "--delay", type=non_negative_float, default=1.0, metavar="SEC",
                   help="seconds between intermediate reports (0: none)")
    c.add_argument("--cumulative", action="store_true", help="intermediate reports over the whole run so far")
    c.add_argument("--precise", action="store_true",
                   help="intermediate reports weight each query by its time in the interval, as clickhouse-benchmark's "
                        "--precise (an interval is printed once the queries started in it have answered)")
    c.add_argument("--confidence", type=confidence, default=5, help="t-test level 0..5: 80,90,95,98,99,99.5%%")
    c.add_argument("--reconnect", nargs="?", const=1, type=non_negative_int, metavar="N",
                   help="open a new connection every N queries (default N=1)")
    c.add_argument("--continue_on_errors", "--continue-on-errors", dest="continue_on_errors", action="store_true")
    c.add_argument("--max-consecutive-errors", "--max_consecutive_errors", dest="max_consecutive_errors",
                   type=non_negative_int, default=0, metavar="N", help="with --continue_on_errors: stop after N")
    c.add_argument("--roundrobin", action="store_true", help="several hosts: spread queries, do not compare")
    c.add_argument("--pick", choices=["roundrobin", "random"],
                   help="a target with several hosts (clickhouse://h1,h2,h3:9000): each query's host in turn "
                        "(default) or at random (the default with --roundrobin)")
    c.add_argument("--stage", choices=["complete", "fetch_columns", "with_mergeable_state"], default="complete",
                   help="processing stage (native protocol only)")
    c.add_argument("--query_id_prefix", "--query-id-prefix", dest="query_id_prefix", metavar="PREFIX")
    c.add_argument("--timeout", type=positive_float, metavar="S",
                   help="limit per query: the client stops waiting, the server stops the query (max_execution_time)")
    c.add_argument("--allow-writes", action="store_true", help="lift the read-only default (readonly=2)")
    c.add_argument("--stacktrace", action="store_true", help=argparse.SUPPRESS)  # accepted for compatibility
    o = p.add_argument_group("beyond clickhouse-benchmark")
    o.add_argument("--rate", type=positive_float, metavar="QPS",
                   help="open loop: start requests at this rate; latency counts from the planned time")
    o.add_argument("--poisson", action="store_true", help="with --rate: Poisson arrivals instead of fixed spacing")
    o.add_argument("--latency-limit", "--latency_limit", dest="latency_limit", type=positive_float, metavar="MS",
                   help="count requests slower than MS")
    o.add_argument("--metrics-port", metavar="[HOST:]PORT",
                   help="serve live counters and latency histograms for Prometheus at /metrics (loopback unless "
                        "HOST is given, e.g. 0.0.0.0:9101; docs/load.md)")
    o.add_argument("--metrics-hold", type=non_negative_float, default=0.0, metavar="S",
                   help="keep serving the final values S seconds after the run (a last scrape)")
    o.add_argument("--workers", type=positive_int, default=1,
                   help="spread connections over N processes (histograms merged exactly)")
    o.add_argument("--json", metavar="FILE", help="clickhouse-benchmark's JSON report (keyed by host when comparing)")
    o.add_argument("--out", metavar="FILE", help="chbench results file (every level, histograms, timeline)")
    o.add_argument("--quiet", action="store_true", help="no intermediate reports or live view")
    _add_capacity_and_machines(p)
    add_connection(p, short=True)


def _add_capacity_and_machines(p: argparse.ArgumentParser) -> None:
    s = p.add_argument_group("capacity under an SLO (docs/load.md)")
    s.add_argument("--slo", action="append", default=[], metavar="SLO",
                   help="'p99<=200ms', 'p50<=20ms', 'errors<=0.1%%' (repeatable): find the highest open-loop rate "
                        "at which every SLO holds")
    s.add_argument("--rate-min", type=positive_float, default=10.0, metavar="QPS",
                   help="lowest rate tried; the first step offers 0.9x what a closed-loop probe answered (default 10)")
    s.add_argument("--rate-max", type=positive_float, default=10000.0, metavar="QPS",
                   help="highest rate tried (default 10000)")
    s.add_argument("--step-duration", type=positive_float, default=10.0, metavar="S",
                   help="a step holds only after S seconds at least (default 10)")
    s.add_argument("--max-time", type=positive_float, default=600.0, metavar="S",
                   help="the whole search, its probe included, ends within S seconds with the bracket it has "
                        "(default 600)")
    d = p.add_argument_group("several machines, over Locust (pip install 'chbench[distributed]'; docs/load.md)")
    d.add_argument("--master", action="store_true",
                   help="hold the workload and send each --worker its share; one report, merged exactly")
    d.add_argument("--expect-workers", type=positive_int, default=1, metavar="N",
                   help="--master: wait for N workers before the first level (default 1)")
    d.add_argument("--expect-workers-max-wait", type=non_negative_float, default=60.0, metavar="S",
                   help="--master: give up after S seconds without them (default 60, 0: wait forever)")
    d.add_argument("--master-bind", default=f"*:{DEFAULT_MASTER_PORT}", metavar="HOST:PORT",
                   help=f"--master: where workers connect (default *:{DEFAULT_MASTER_PORT}, Locust's port)")
    d.add_argument("--late-workers", choices=["refuse", "add"], default="refuse",
                   help="--master: a worker joining after the run started is refused, or takes a share from the "
                        "next level (default refuse)")
    d.add_argument("--stop-on-worker-loss", action="store_true",
                   help="--master: a lost worker stops the run (exit 3) instead of being reported")
    d.add_argument("--worker", action="store_true",
                   help="run the shares a --master sends (no queries here: they come from the master)")
    d.add_argument("--master-host", default="127.0.0.1", metavar="HOST[:PORT]",
                   help="--worker: the master to serve (default 127.0.0.1)")
    d.add_argument("--master-port", type=positive_int, metavar="PORT",
                   help=f"--worker: the master's port (default {DEFAULT_MASTER_PORT})")


def settings_from(rest: list[str], parser: argparse.ArgumentParser) -> dict[str, str]:
    """clickhouse-benchmark accepts any ClickHouse setting as --name=value (or --name
    value): what argparse does not know and looks like that is a setting. ``--setting
    NAME=VALUE`` is one too, as the other commands take it (it was sent as a setting
    named "setting": "unknown setting setting")."""
    settings: dict[str, str] = {}
    i = 0
    while i < len(rest):
        a = rest[i]
        name, eq, value = a[2:].partition("=")
        if not a.startswith("--") or not _SETTING_NAME.match(name):
            parser.error(f"unrecognized argument: {a}")
        if not eq:
            if i + 1 >= len(rest) or rest[i + 1].startswith("--"):
                parser.error(f"setting --{name} needs a value (--{name}=VALUE)")
            value = rest[i + 1]
            i += 1
        if name == "setting":  # --setting NAME=VALUE, as run, replay and bisect take it
            name, eq, value = value.partition("=")
            if not eq or not _SETTING_NAME.match(name):
                parser.error(f"--setting takes NAME=VALUE, not {value or name!r}")
        settings[name] = value
        i += 1
    return settings


def workload_of(args: argparse.Namespace) -> Workload:
    from chbench.workload import parse_workload, read_workload

    if args.query:
        return parse_workload("\n;\n".join(args.query), "--query", "script")
    if args.queries:
        wl = read_workload(args.queries, args.queries_format or "auto")
        if wl.groups:
            raise UsageError(f"{args.queries}: a performance test builds its own tables test by test; run it with "
                             "'chbench run --tests' (load takes queries on existing data)")
        return wl
    if sys.stdin is None or sys.stdin.isatty():
        raise UsageError("no queries: give --query SQL, --queries FILE, or pipe queries on standard input")
    text = sys.stdin.read()
    if not text.strip():
        raise UsageError("standard input: no queries")
    return parse_workload(text, "standard input", args.queries_format or "tsv")


def build_config(args: argparse.Namespace) -> LoadConfig:
    """The Namespace as a typed, picklable load configuration."""
    from chbench.commands.connection import credentials, target_specs
    from chbench.load.config import LoadConfig
    from chbench.targets import parse_target_url, target_class
    from chbench.targets.url import split_hosts

    if args.rate is None and args.poisson and not args.slo:
        raise UsageError("--poisson needs --rate QPS")
    if args.slo and (args.rate or args.max_concurrency or args.iterations or args.timelimit):
        raise UsageError("--slo searches the rate itself: leave out --rate, -C, -i and -t (see --rate-min, "
                         "--rate-max, --step-duration, --max-time)")
    if args.slo:
        from chbench.load.capacity import least_time, parse_slo

        for text in args.slo:
            parse_slo(text)  # a bad SLO is one line before anything connects
        if args.max_time < (least := least_time(args.step_duration)):
            raise UsageError(f"--max-time {args.max_time:g} s leaves no time for one step: the probe, one "
                             f"--step-duration {args.step_duration:g} s step, its start and stop take "
                             f"{least:g} s at least (give --max-time {math.ceil(least)} or more)")
    if args.slo and args.rate_min >= args.rate_max:
        raise UsageError(f"--rate-min {args.rate_min:g} must be below --rate-max {args.rate_max:g}")
    concurrency = args.concurrency or (SLO_LANES if args.slo else 1)
    specs, group_of = [], []
    for g, spec in enumerate(target_specs(args)):  # a cluster target: one spec per host
        hosts = split_hosts(spec)
        specs += hosts
        group_of += [g] * len(hosts)
    creds = credentials(args)
    caps = [target_class(parse_target_url(s)).capabilities for s in specs]  # what they can do, nothing started
    if args.master and args.workers > 1:
        raise UsageError("--workers on the master means nothing: give each worker its own (chbench load --worker "
                         "--workers N)")
    if args.master and args.precise:
        raise UsageError("--precise needs the queries' times on one clock: not with --master (the workers' machines "
                         "keep their own)")
    if args.master and any(not c.concurrent_sessions for c in caps):
        raise UsageError("--master needs server targets: the embedded engine lives inside one process")
    if args.workers > 1 and any(not c.concurrent_sessions for c in caps):
        raise UsageError("--workers needs a server target: the embedded engine lives inside one process")
    if (concurrency > 1 or args.max_concurrency) and any(not c.concurrent_sessions and not c.in_process
                                                              for c in caps):
        raise UsageError("a versioned embedded engine runs one query at a time in its worker process: for "
                         "concurrent load start that version's server with server@VERSION")
    workload = workload_of(args)
    settings = {**workload.settings, **args.settings}
    if not args.allow_writes:
        settings["readonly"] = settings.get("readonly", "2")
    return LoadConfig(
        targets=specs, credentials=creds, queries=workload.queries, setup=workload.setup,
        teardown=workload.teardown, concurrency=concurrency,
        max_concurrency=args.max_concurrency or 0, iterations=args.iterations, timelimit=args.timelimit,
        randomize=bool(args.randomize), seed=args.seed, delay=args.delay, cumulative=args.cumulative,
        precise=args.precise,
        confidence=args.confidence, stage=args.stage, query_id_prefix=args.query_id_prefix or "",
        reconnect=args.reconnect or 0, continue_on_errors=args.continue_on_errors or bool(args.slo),
        max_consecutive_errors=args.max_consecutive_errors, roundrobin=args.roundrobin, settings=settings,
        rate=args.rate or (args.rate_min if args.slo else 0.0), poisson=args.poisson,
        latency_limit_ms=args.latency_limit or 0.0,
        workers=args.workers, timeout=args.timeout,
        group_of=group_of if len(specs) > len(set(group_of)) else [],
        pick=args.pick or ("random" if args.roundrobin else "roundrobin"))


def run(args: argparse.Namespace) -> int:
    import time

    from chbench.load.levels import probe_hosts
    from chbench.results import check_output_path

    if args.worker:
        return _worker(args)
    if args.master:
        from chbench.distributed import require_locust

        require_locust()  # gevent's patching first, before any socket or thread exists
    started = time.monotonic()  # --max-time counts from here
    check_output_path(args.out)
    check_output_path(args.json, "clickhouse-benchmark JSON")
    cfg = build_config(args)
    hosts = probe_hosts(cfg)
    coordinator = _coordinator(args) if args.master else None
    try:
        metrics = _metrics(args, cfg, hosts)
        try:
            return _run(args, cfg, hosts, metrics, coordinator, started)
        finally:
            if metrics is not None:
                if args.metrics_hold:
                    time.sleep(args.metrics_hold)
                metrics.close()
    finally:
        if coordinator is not None:
            coordinator.close()


def _worker(args: argparse.Namespace) -> int:
    """--worker: serve a master; the workload, targets and rates come from it, the
    password from here (never over the wire)."""
    import socket

    from chbench.commands.connection import credentials
    from chbench.distributed import require_locust

    if args.master:
        raise UsageError("--master and --worker: a process is one or the other")
    if args.query or args.queries:
        raise UsageError("--worker takes its queries from the master: leave out --query and --queries")
    require_locust()
    from chbench.distributed.master import parse_hostport
    from chbench.distributed.worker import run_worker

    host, port = parse_hostport(args.master_host, args.master_port or DEFAULT_MASTER_PORT, "--master-host")
    try:
        socket.getaddrinfo(host or "127.0.0.1", port)
    except OSError as e:
        raise UsageError(f"--master-host {host}: {e.strerror or e}") from None
    return run_worker((host or "127.0.0.1", port), credentials(args).password, args.workers, sys.stderr,
                      args.allow_writes)


def _coordinator(args: argparse.Namespace) -> Coordinator:
    from chbench.distributed.master import Coordinator, parse_hostport

    bind = parse_hostport(args.master_bind, DEFAULT_MASTER_PORT, "--master-bind")
    coordinator = Coordinator(bind, args.expect_workers, args.expect_workers_max_wait, args.late_workers,
                              args.stop_on_worker_loss, sys.stderr)
    try:
        coordinator.wait_for_workers()
    except BaseException:
        coordinator.close()
        raise
    return coordinator


def _metrics(args: argparse.Namespace, cfg: LoadConfig, hosts: list[Host]) -> LoadMetrics | None:
    if not args.metrics_port:
        return None
    from chbench.load.metrics import LoadMetrics, parse_bind

    bind = parse_bind(args.metrics_port)
    metrics = LoadMetrics([h.label for h in hosts], [q.name for q in cfg.queries], cfg.rate if not args.slo else 0.0)
    port = metrics.serve(bind)
    sys.stderr.write(f"Metrics for Prometheus at http://{bind[0]}:{port}/metrics\n")
    return metrics


def _run(args: argparse.Namespace, cfg: LoadConfig, hosts: list[Host], metrics: LoadMetrics | None,
         coordinator: Coordinator | None, started: float) -> int:
    from chbench.commands.connection import named_targets
    from chbench.load.document import outcome_of
    from chbench.load.driver import run_load
    from chbench.load.levels import local_source

    err = sys.stderr
    if not named_targets(args):
        err.write("Note: no --host/--port/--target given: the load goes to the embedded engine.\n")
    err.write(f"Loaded {len(cfg.queries)} queries.\n")
    for h in hosts:
        for warning in h.warnings:
            err.write(f"Note: {warning}.\n")
    err.flush()
    sources: SourceFactory = coordinator.sources if coordinator is not None else local_source
    if args.slo:
        return _capacity(args, cfg, hosts, metrics, sources, started)
    last = run_load(cfg, hosts, args.out, args.json, args.quiet, err, metrics, sources)
    outcome = outcome_of(last)
    if last.fatal:
        err.write(f"chbench: error: {last.fatal} (report above covers everything measured)\n")
    elif last.interrupted:
        err.write("chbench: interrupted (report above covers everything measured)\n")
    elif last.failure:
        err.write(f"chbench: error: {last.failure} (use --continue_on_errors to go on)\n")
    return outcome.exit_code


def _capacity(args: argparse.Namespace, cfg: LoadConfig, hosts: list[Host], metrics: LoadMetrics | None,
              sources: SourceFactory, started: float) -> int:
    """--slo: the search, within what is left of --max-time since ``started`` (probing the
    hosts counts); its last line, ``capacity: R QPS``, also on standard output."""
    import time

    from chbench.load.capacity import capacity_line, parse_slo
    from chbench.load.document import outcome_of
    from chbench.load.driver import run_capacity
    from chbench.outcome import Outcome

    slos = [parse_slo(s) for s in args.slo]
    search = {"slos": slos, "rate_min": args.rate_min, "rate_max": args.rate_max, "step_s": args.step_duration,
              "max_time": args.max_time - (time.monotonic() - started)}
    cap, stopped = run_capacity(cfg, hosts, search, args.out, args.quiet, sys.stderr, metrics, sources)
    if stopped is not None and stopped.fatal:
        sys.stderr.write(f"chbench: error: {stopped.fatal} (the steps so far are in the report and --out)\n")
    sys.stderr.flush()
    sys.stdout.write(capacity_line(cap) + "\n")
    sys.stdout.flush()
    return outcome_of(stopped).exit_code if stopped is not None else Outcome.COMPLETE.exit_code
