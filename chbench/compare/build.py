"""From results files to the comparison document ``chbench compare --format json``
prints (and every report shows): open the files, pick the two sides, match queries by
name then SQL, weigh the machine's own drift, and compare query by query."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chbench.compare.checks import apply_checks
from chbench.compare.document import ComparisonDoc
from chbench.compare.findings import Advice, advice_for, findings
from chbench.compare.pertest import per_test, test_of_queries, thresholds_of
from chbench.compare.sides import Side, Sides, merge_sides, sides_of, without_round_factors
from chbench.errors import UsageError
from chbench.explain.build import explain_rows
from chbench.export.numbers import count
from chbench.machine.reference import warm
from chbench.results import open_results
from chbench.results.run import configuration_diff
from chbench.stats.compare import (
    BETWEEN_RUN_FACTOR,
    MEASURED_FROM,
    Options,
    compare_queries,
    machine_change,
    sessions_measure_level,
)
from chbench.stats.machine import REFERENCE_MIN, describe, difference, reference_change, summarize
from chbench.stats.paired import rounds_to_show_a_change
from chbench.stats.verdict import (
    FASTER,
    SLOWER,
    UNSTABLE,
    ComparisonResult,
    Evidence,
    QueryComparison,
    count_verdicts,
    pct,
)


@dataclass
class Comparison:
    """The comparison document, and both sides with their raw samples (for charts)."""

    doc: ComparisonDoc
    a: Side
    b: Side
    checks: dict[str, Any] | None = None  # a side-by-side file's answer and plan checks (chbench upgrade)
    rename: dict[str, str] = field(default_factory=dict)  # B's query names matched to A's (by SQL)
    paired: bool = False  # judged on paired rounds (one side-by-side file)


@dataclass
class CompareOptions:
    metric: str = "client_ms"
    threshold: float = 0.05
    alpha: float = 0.05
    correction: str = "holm"
    # separate runs of one session each: None measures the between-run spread from the
    # queries' scatter (6 queries or more; BETWEEN_RUN_FACTOR below that); a number is
    # the user's own guess, as a multiple of each query's run-to-run spread
    between_run_factor: float | None = None
    method: str = "chbench"  # or "clickhouse": ClickHouse CI's rule (stats/clickhouse.py)
    paired: bool = True  # side by side: per-round ratios (stats/paired.py); --unpaired pools the runs
    round_factors: bool = True  # separate runs: each round's machine factor taken out (stats/rounds.py)


def _norm(sql: str | None) -> str:
    return " ".join((sql or "").split()).lower()


def match_names(a: Side, b: Side) -> tuple[list[str], dict[str, str]]:
    """Names in report order and B's renames: matched by name, then by SQL."""
    rename: dict[str, str] = {}
    unmatched_a = {_norm(d.sql): n for n, d in a.queries.items() if n not in b.queries and d.sql}
    for n, d in b.queries.items():
        if n not in a.queries and d.sql and _norm(d.sql) in unmatched_a:
            rename[n] = unmatched_a.pop(_norm(d.sql))
    names = list(a.queries)
    names += [n for n in b.queries if n not in a.queries and n not in rename]
    return names, rename


def edited(names: list[str], a: Side, b_queries: dict[str, Any]) -> str | None:
    """The note for queries of one name whose SQL differs between two separate files: they
    are compared as one query (a rewrite may be the point), but in silence an edited query
    read as a change of speed (numbers(1000000) against numbers(2000000): +25%, no word)."""
    differ = [n for n in names if n in a.queries and n in b_queries and a.queries[n].sql and b_queries[n].sql
              and _norm(a.queries[n].sql) != _norm(b_queries[n].sql)]
    if not differ:
        return None
    return (f"{count(len(differ), 'query')} ran different SQL in A and B under one name ({', '.join(differ[:5])}"
            f"{', …' if len(differ) > 5 else ''}): compared as the same query — edited between the runs?")


def pair_view(one: Sides, pair: tuple[int, int]) -> Sides:
    """A file of N sides seen as the two ``pair`` names: its checks (answers, plans, the
    data) re-keyed so that those two are ``a`` and ``b`` (compare/checks.py reads them so)."""
    from dataclasses import replace

    from chbench.upgrade.checks import answers_equal, plans_changed

    x, y = (chr(ord("a") + i) for i in pair)
    checks: dict[str, Any] = {}
    if one.checks:
        checks["settings"] = one.checks.get("settings") if pair == (0, 1) else None
        checks["answers"] = {n: {"a": v[x], "b": v[y], "equal": answers_equal(v[x], v[y])}
                             for n, v in (one.checks.get("answers") or {}).items() if x in v and y in v}
        checks["plans"] = {n: {"a": v[x], "b": v[y], "changed": plans_changed(v[x], v[y], "plan"),
                               "pipeline_changed": plans_changed(v[x], v[y], "pipeline")}
                           for n, v in (one.checks.get("plans") or {}).items() if x in v and y in v}
        data = one.checks.get("data")
        if data and x in data and y in data:
            checks["data"] = {"sql": data["sql"], "a": data[x], "b": data[y], "equal": data[x] == data[y]}
    return replace(one, sides=[one.sides[pair[0]], one.sides[pair[1]]], checks=checks)


def load_sides(path: str, metric: str) -> Sides:
    return sides_of(path, open_results(path), metric)


# separate files whose raw samples were taken at another time: the between-run allowance
# (measured from the queries' scatter, else guessed from each query's spread) applies. A
# replay too: 14 A/A pairs of consecutive replays of one workload (4 normalized queries,
# one 26.9 server, bench/replay_pairs.py's files) flagged 6 of 56 queries without it, 1
# with it (2026-12-05). Load files too: two consecutive A/A load runs called a query
# `slower` +5.1% [+3.2%, +7.2%] without it (docs/measured.md, "Separate load files").
RAW_SEPARATE = ("chbench", "chbench-replay", "chbench-load")


def _pick(files: list[str], metric: str) -> tuple[Side, Side, list[Sides], list[str]]:
    """The two sides compared: both sides of one file, or the first side of each of two."""
    notes: list[str] = []
    if len(files) == 1:
        loaded = load_sides(files[0], metric)
        if len(loaded.sides) < 2:
            raise UsageError(f"{files[0]} holds one side only: give two results files to compare")
        return loaded.sides[0], loaded.sides[1], [loaded], notes
    if len(files) != 2:
        raise UsageError(f"compare takes one side-by-side file or two files, got {len(files)}")
    la, lb = load_sides(files[0], metric), load_sides(files[1], metric)
    for f in (la, lb):
        if len(f.sides) > 1:
            notes.append(f"{f.path} holds {len(f.sides)} sides; its first ({f.sides[0].label}) is compared")
    a, b = la.sides[0], lb.sides[0]
    a.label = f"{Path(files[0]).name} ({a.label})"
    b.label = f"{Path(files[1]).name} ({b.label})"
    return a, b, [la, lb], notes


def _pick_many(files: list[str], vs: list[str], metric: str) -> tuple[Side, Side, list[Sides], list[str]]:
    """Side A from ``files``, side B from ``vs``: each file one or more sessions of its side."""
    notes: list[str] = []
    sides = []
    loaded: list[Sides] = []
    for group in (files, vs):
        runs = [load_sides(f, metric) for f in group]
        for f in runs:  # each file a session of its side: runs, replays of one workload, or loads
            if f.format not in RAW_SEPARATE:
                raise UsageError(f"{f.path}: several files per side take chbench run, replay or load files only")
            if f.format != runs[0].format or (loaded and f.format != loaded[0].format):
                raise UsageError(f"{f.path}: several files per side must all be of one kind (run, replay or load)")
            if len(f.sides) > 1:
                notes.append(f"{f.path} holds {len(f.sides)} sides; its first ({f.sides[0].label}) is used")
        names = ", ".join(Path(f).name for f in group)
        sides.append(merge_sides([f.sides[0] for f in runs], f"{names} ({runs[0].sides[0].label.split(': ', 1)[-1]})"))
        loaded += runs
    return sides[0], sides[1], loaded, notes


def _notes(loaded: list[Sides], separate: bool, machine: dict[str, Any] | None, advice: Advice) -> list[str]:
    notes = []
    formats = [f.format for f in loaded]
    for f in loaded:
        if f.status != "complete":
            notes.append(f"{f.path} is incomplete (status: {f.status}): only what it holds is compared")
    seen: set[str] = set()
    for f in loaded:  # a slip of the command line, or a sanity check: either way, say it
        path = os.path.realpath(f.path)
        if path in seen:
            notes.append(f"{f.path} is given twice: its runs are compared with (or pooled with) themselves")
        seen.add(path)
    if "chbench-load" in formats:
        notes.append("a load run: latencies come from its histograms (within 0.4%), in no particular order, "
                     "measured under concurrency")
    if any(f not in ("chbench", "chbench-load", "chbench-replay") for f in formats):
        notes.append("a file holds summary numbers only (no raw samples): its verdicts are weaker, from "
                     "percentile ranges rather than a statistical test")
    if separate and machine is None:
        if all(f == "chbench" for f in formats):
            notes.append("no calibration samples: the machine's own drift between the runs is unknown")
        notes.append("separate runs: drift of the machine between them cannot be told from a change; "
                     f"{advice.side_by_side} is more trustworthy")
    return notes


def machine_state(a: Side, b: Side) -> dict[str, Any] | None:
    """Both runs' machine state side by side: the probes' summaries and which run was
    busier, and the calibration query's change (the drift guard) where recorded."""
    cal = machine_change(a.calibration, b.calibration)
    probes = None
    diff: dict[str, Any] = {"busier": None, "material": False, "differences": []}
    reference = None
    if a.machine and b.machine:
        probes = {"a": {k: summarize(v) for k, v in a.machine.items() if k != "reference"},
                  "b": {k: summarize(v) for k, v in b.machine.items() if k != "reference"}}
        _kept_others(probes, a, b)
        reference = reference_change(_reference_ms(a), _reference_ms(b))
        diff = difference(probes["a"], probes["b"], reference)
    if cal is None and probes is None:
        return None
    out: dict[str, Any] = {**diff, "probes": probes, "reference": reference,
                           "description": describe(diff) if probes else "no machine probes in these files"}
    if cal is not None:
        out.update(cal)
        out["material"] = diff["material"] or cal["calibration_material"]
        if probes is not None:
            # the calibration query runs on the engine under test: with probes of the
            # machine itself it is reported, not used to widen every interval
            out["log_change_bound"] = 0.0
    return out


def _reference_ms(side: Side) -> list[float]:
    """The reference task's warm timings (machine/reference.py), without those taken
    while other processes used more than the run's --quiet-threshold of the CPUs (where
    the CPU timeline judged them): the runs' busy moments were set aside, and the
    machine is compared on the rest."""
    readings = side.machine.get("reference", [])
    limit = next((rec.get("threshold") for rec in side.set_aside), None) or 0.10
    cpus = next((int(r["cpus"]) for r in side.machine.get("client", []) if r.get("cpus")), 1)
    kept = [r for r in readings if r.get("others_cores") is None or r["others_cores"] / cpus <= limit]
    use = kept if sum(len(warm(r["ms"])) for r in kept) >= REFERENCE_MIN else readings
    return [ms for r in use for ms in warm(r["ms"])]


def _kept_others(probes: dict[str, dict[str, Any]], a: Side, b: Side) -> None:
    """Where both runs have the CPU timeline, other processes' share during the samples
    the verdicts use, as ``others_share_kept``, next to the readings' ``others_share``,
    which still decides which run was busier: a run whose busy moments were set aside
    ran its kept samples on a machine that was not as quiet as a quiet run's
    (docs/statistics.md, "Runs set aside on a busy machine")."""
    if not a.kept_others or not b.kept_others:
        return
    for key, side in (("a", a), ("b", b)):
        client = probes[key].get("client")
        if client and client.get("cpus"):
            client["others_share_kept"] = sum(side.kept_others) / len(side.kept_others) / client["cpus"]


def _rank_sum_smallest_p(n: int, m: int) -> float:
    """A rank-sum test's smallest exact two-sided p: 2 / C(n + m, n), in logs (a session
    of 600 runs a side would overflow a float: seen with --sessions 3)."""
    return math.exp(math.log(2.0) - math.lgamma(n + m + 1) + math.lgamma(n + 1) + math.lgamma(m + 1))


def too_few_to_show(rows: list[QueryComparison], alpha: float, advice: Advice | None = None) -> str | None:
    """A note when no query had runs enough for any p-value to pass Holm's first step
    (alpha / queries; under BH equal small p-values can all pass, so not said there)
    (seen: two runs of --iterations 5, max_threads=1 against the default, every query
    +60–95% and 'unstable': 5 against 5 runs cannot give a rank test's p below 0.0079,
    and 10 queries need 0.005)."""
    counts: list[tuple[float, str, bool]] = []  # smallest exact two-sided p, the runs, paired
    for r in rows:
        if r.p_value is None or r.a is None or r.b is None:
            continue
        if r.paired is not None:  # signed-rank: every round's ratio the same way
            counts.append((2.0 ** (1 - max(1, r.paired.pairs)), f"{r.paired.pairs} paired rounds", True))
        elif r.a.runs and r.b.runs:  # rank-sum: every run of one side below the other's
            counts.append((_rank_sum_smallest_p(r.a.runs, r.b.runs), f"{r.a.runs} / {r.b.runs} runs", False))
    if not counts:
        return None
    need = alpha / len(counts)
    smallest, what, paired = min(counts)
    if smallest < need:
        return None
    runs = rounds_to_show_a_change(len(counts), alpha) if paired else \
        next(n for n in range(2, 1000) if _rank_sum_smallest_p(n, n) < need)
    return (f"{what} per query: no query can be shown slower or faster — a rank test's smallest p is "
            f"{smallest:.2g}, and {count(len(counts), 'query')} corrected for each other (Holm, alpha {alpha:.3g}) "
            f"need below {need:.2g}; measure with {(advice or advice_for([])).runs.format(n=runs)}")


def _between_run_note(a: Side, b_queries: dict[str, Any], factor: float, advice: Advice) -> str:
    """Where the allowance for separate runs came from: measured or the fallback factor."""
    na = max((len(d.sessions) for d in a.queries.values()), default=0) or 1
    nb = max((len(d.sessions) for d in b_queries.values()), default=0) or 1
    if na > 1 or nb > 1:
        return (f"between-run spread measured from {na} session(s) of A and {nb} of B (each query's session "
                "medians)")
    return (f"one session per side: the between-run spread is guessed as {factor:g} × each query's run-to-run "
            f"spread (--between-run-factor); {advice.sessions} would measure it")


def _configuration_changed(a: Side, b: Side) -> str | None:
    """What differs between two separate runs' configurations: the server's version, the
    user's settings (None: the same, or not known for one of them)."""
    if not a.configuration or not b.configuration:
        return None
    return ", ".join(configuration_diff(a.configuration, b.configuration)) or None


def _engine_process_changed(a: Side, b: Side) -> str | None:
    """One run's engine inside chbench's process, the other's in a worker process (``run
    --sessions`` on the embedded engine, or ``embedded@VERSION``): the pipe adds to every
    query's time (``SELECT 1``: 0.17 ms client − server against 0.04 ms in process,
    docs/measured.md), which a query of a few milliseconds shows as a change."""
    where = [s.configuration.get("in_process") for s in (a, b)]
    if None in where or where[0] == where[1]:
        return None
    said = ["in chbench's process" if w else "in an engine worker process" for w in where]
    return (f"A's engine ran {said[0]}, B's {said[1]}: the pipe to the worker adds ~0.1 ms to each query's time "
            "(a query of a few ms shows it as a change); run both with --sessions, or both with --target "
            "embedded@VERSION")


def _say_between_run(notes: list[str], result: Any, stats: Options, advice: Advice) -> None:
    """The between-run note, once the queries were judged: with sessions, how far their
    machine levels moved; with one session per side, measured as the queries' scatter,
    or guessed because too few queries were judged to measure it."""
    level = result.summary.session_levels
    at = next((i for i, n in enumerate(notes) if n.startswith("between-run spread measured")), None)
    if level and at is not None:
        notes[at] = notes[at][:-1] + f"; and the sessions' machine levels, ±{level['sd']:.1%} apart (sd))"
    at = next((i for i, n in enumerate(notes) if n.startswith("one session per side")), None)
    if at is None:
        return
    shift = result.summary.shift
    scatter = [q.between_run for q in result.queries if q.between_run is not None and "scatter" in q.between_run.source]
    if scatter:
        around = "the machine's shift" if shift and shift.explained_by_machine else "their common level"
        quiet = math.expm1(min(b.half for b in scatter))
        notes[at] = (f"one session per side: each query's between-run spread measured as the queries' scatter around "
                     f"{around} (±{quiet:.1%} for a quiet query, Student's t); {advice.sessions} would measure it "
                     "per query")
    elif result.summary.scatter and result.summary.scatter["used"] == "guess":
        sc = result.summary.scatter
        notes[at] = (f"one session per side: the queries' changes scatter ±{sc['scatter_sd']:.1%} (sd) around their "
                     f"common level, over {sc['limit']:g}× the ±{sc['guess_sd']:.1%} two runs of one configuration "
                     f"would add, and the configuration changed ({sc['configuration_changed']}): each query changed by "
                     f"its own amount, so its between-run spread is guessed as {stats.between_run:g} × its run-to-run "
                     f"spread; {advice.sessions} would measure it")
    elif stats.measure_between:
        tested = sum(1 for q in result.queries if q.between_run is not None)
        notes[at] = notes[at].replace("one session per side:", f"one session per side and {count(tested, 'query')} "
                                      f"judged (their scatter measures it from {MEASURED_FROM}):", 1)


def _overloaded(result: ComparisonResult, a: Side, b: Side) -> None:
    """Separate replays: a query slower in a replay that overloaded the server
    (``Backlog.overloaded``) cannot be told from that replay's own level. Several replays per
    side (sessions) measure how far that level moves, and a side that overloaded it where
    the other did not is a difference they show; where replays of both sides overloaded it,
    three sessions a side do not tell it either (bench/replay_pairs.py --speed 2: 4 of 16
    A/A queries flagged on the sessions alone)."""
    over = {k: side for k, side in (("A", a), ("B", b)) if any(x.overloaded for x in side.backlog)}
    for r in result.queries:
        side = "B" if r.verdict == SLOWER else "A" if r.verdict == FASTER else None
        measured = r.name in a.queries and r.name in b.queries and \
            sessions_measure_level(a.queries[r.name], b.queries[r.name])
        if side not in over or (measured and len(over) < 2):
            continue
        r.vs_one = r.vs_one or Evidence(r.verdict, ci=r.ci, p_adjusted=r.p_adjusted, reasoning=r.reasoning)
        r.verdict, r.overloaded_replay = UNSTABLE, side
        said = (f"{pct(r.ratio or 1.0)} while {side}'s replay overloaded the server "
                f"({', '.join(x.describe() for x in over[side].backlog)}): not told apart from that replay's own level")
        r.reasons.insert(0, said)
        r.reasoning = f"cannot tell a change from the replay's backlog: {said}"
        r.reason = f"{side}'s replay overloaded the server"
    result.summary.verdicts = count_verdicts(result.queries)


def set_aside_summary(a: Side, b: Side) -> dict[str, Any] | None:
    """How many runs (and rounds) each side set aside on a busy machine, how they were
    told (``timeline``: per sample; ``probes``: per reading), and whether it ever got quiet."""
    if not a.set_aside and not b.set_aside:
        return None
    out: dict[str, Any] = {"rounds": 0, "samples": 0, "threshold": None, "never_quiet": False, "by": None}
    for label, side in (("a", a), ("b", b)):
        n = sum(int(r["to_round"]) - int(r["from_round"]) + 1 for rec in side.set_aside for r in rec.get("rounds", []))
        runs = sum(int(rec.get("samples") or 0) for rec in side.set_aside)
        quiet = not any(rec.get("never_quiet") for rec in side.set_aside)
        out[label] = {"rounds": n, "samples": runs, "never_quiet": not quiet}
        out["rounds"] += n
        out["samples"] += runs
        out["never_quiet"] = out["never_quiet"] or out[label]["never_quiet"]
        out["threshold"] = out["threshold"] or next((rec.get("threshold") for rec in side.set_aside), None)
        out["by"] = out["by"] or next((rec.get("by") for rec in side.set_aside), None)
    return out


def build_comparison(files: list[str], opts: CompareOptions | None = None,
                     vs: list[str] | None = None, pair: tuple[int, int] | None = None,
                     opened: Sides | None = None) -> Comparison:
    """The comparison of one side-by-side file, two files, or ``files`` against ``vs``
    (several files per side); of a file of N sides, the sides ``pair`` names (indexes;
    ``opened``: that file already loaded — compare/nway.py)."""
    opts = opts or CompareOptions()
    notes: list[str]
    if pair is not None:
        one = opened or load_sides(files[0], opts.metric)
        a, b, loaded, notes = one.sides[pair[0]], one.sides[pair[1]], [pair_view(one, pair)], []
    else:
        a, b, loaded, notes = _pick_many(files, vs, opts.metric) if vs else _pick(files, opts.metric)
    separate = len(loaded) >= 2
    advice = advice_for([f.format for f in loaded])
    names, rename = match_names(a, b)
    b_queries = {rename.get(n, n): d for n, d in b.queries.items()}
    if not set(a.queries) & set(b_queries):
        raise UsageError("the results have no query in common (matched by name, then by SQL)")
    machine = machine_state(a, b) if separate else None
    if separate and (note := edited(names, a, b_queries)) is not None:
        notes.append(note)
    test_of = test_of_queries(a, b, rename)
    thresholds = thresholds_of(test_of, [*b.tests, *a.tests])
    stats = Options(threshold=opts.threshold, alpha=opts.alpha, correction=opts.correction,
                    query_thresholds=thresholds, paired=not separate and opts.paired, separate=separate)
    factors: dict[str, Any] = {}
    if separate and all(f.format in RAW_SEPARATE for f in loaded):
        given = opts.between_run_factor
        stats.between_run = BETWEEN_RUN_FACTOR if given is None else given
        stats.measure_between = given is None
        stats.configuration_changed = _configuration_changed(a, b)
        notes.append(_between_run_note(a, b_queries, stats.between_run, advice))
        if (where := _engine_process_changed(a, b)) is not None:
            notes.append(where)
        if opts.round_factors:
            for label, side in (("a", a), ("b", b)):
                found = without_round_factors(side)
                if found is not None:
                    factors[label] = found.to_json()
    result = compare_queries(names, a.queries, b_queries, stats, machine)
    if separate and a.backlog and b.backlog:
        notes.append("the replays: " + "; ".join(f"{k} {', '.join(x.describe() for x in s.backlog)}"
                                                 for k, s in (("A", a), ("B", b))))
        _overloaded(result, a, b)
    if stats.correction == "holm" and (few := too_few_to_show(result.queries, stats.alpha, advice)) is not None:
        notes.append(few)
    if factors:
        result.summary.round_factors = factors
    if separate:
        result.summary.set_aside = set_aside_summary(a, b)
    shift = result.summary.shift
    _say_between_run(notes, result, stats, advice)
    doc = ComparisonDoc(result, a_label=a.label, b_label=b.label, files=files, vs=vs or None, metric=opts.metric,
                        notes=notes + _notes(loaded, separate, machine, advice), method=opts.method)
    if opts.method == "clickhouse":
        from chbench.stats.clickhouse import apply_clickhouse

        apply_clickhouse(result, a.queries, b_queries, thresholds)
        if shift:
            doc.notes.append("decided by ClickHouse CI's rule: the common shift above is shown, not applied")
            shift.finding = None
    if test_of:
        doc.tests = per_test(doc.queries, test_of, a.tests or b.tests)
    checks = loaded[0].checks if not separate and loaded[0].checks else None
    if checks:
        apply_checks(doc, checks)
    paired = not separate and opts.paired
    explain_rows(doc, a, b, rename, paired)
    doc.findings = findings(doc, separate, advice)
    return Comparison(doc, a, b, checks, rename, paired)
