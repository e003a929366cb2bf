"""One line per finding under the verdict table: what the machine did, what was decided
from it and what to do next — the short form of the reasoning the JSON, the HTML report
and ``compare --verbose`` keep in full."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from chbench.compare.document import ComparisonDoc
from chbench.export.numbers import count
from chbench.stats.compare import LEVEL_UNKNOWN, NOT_SHOWN
from chbench.stats.shift import who_may
from chbench.stats.verdict import FLAGGED, NO_CHANGE, UNSTABLE, CommonShift, QueryComparison, pct


@dataclass(frozen=True)
class Advice:
    """What narrows a comparison, in the words of the command that made its files: a
    replay has no --iterations, --sessions or --setting-b to suggest."""

    side_by_side: str  # both sides measured at once
    more: str  # more of the same, for the sides of one file (with its verb)
    sessions: str  # several sessions per side, for separate files
    runs: str  # N runs of each query, ``{n}`` in it (a replay's runs are its capture's statements)


ADVICE = {
    "chbench": Advice("a side-by-side run (--target A --target B, or --setting-b/--scale-b)",
                      "more rounds (--iterations, or a longer --max-time-per-query) narrow it",
                      "--sessions 3 per side", "--iterations {n} or more"),
    "chbench-replay": Advice("one replay of both targets (chbench replay --target A --target B)",
                             "a longer capture (more statements of each query) narrows it",
                             "several replays per side (compare R1 R2 R3 --vs R4 R5 R6)",
                             "a capture holding {n} statements of each query or more (a longer --since window)"),
    "chbench-load": Advice("one load of both targets (chbench load --target A --target B)",
                           "a longer load (-t) narrows it", "several loads per side (compare L1 L2 L3 --vs L4 L5 L6)",
                           "a load of {n} requests of each query or more (a longer -t)"),
}


def advice_for(formats: list[str]) -> Advice:
    """The files' own advice where they are all of one kind; else a run's."""
    return ADVICE.get(formats[0], ADVICE["chbench"]) if len(set(formats)) == 1 else ADVICE["chbench"]


def measure_with(advice: Advice) -> str:
    return f"measure with {advice.sessions}, or side by side"


def _queries(n: int) -> str:
    return f"{n} quer{'y' if n == 1 else 'ies'}"


def sessions_needed(sd: float, half: float, most: int = 30) -> str:
    """How many sessions per side (as many on each) bring the shared level's 95%
    half-width, Student's t × sd × √(2/k), within ``half`` (log sd, relative half)."""
    from chbench.stats.compare import t95

    k = next((k for k in range(2, most + 1) if t95(2 * k - 2) * sd * math.sqrt(2 / k) <= math.log1p(half)), None)
    return f"about {k}" if k else f"more than {most}"


def _not_told(doc: ComparisonDoc, advice: Advice) -> tuple[list[str], list[QueryComparison]]:
    """Queries beyond the threshold not told apart from a replay's backlog (by side), or
    from the machine's level between files that say nothing of it; and those queries."""
    out = []
    rows = [q for q in doc.queries if q.verdict == UNSTABLE and q.overloaded_replay]
    for side in sorted({q.overloaded_replay for q in rows if q.overloaded_replay}):
        hit = [q for q in rows if q.overloaded_replay == side]
        out.append(f"{_queries(len(hit))} slower in {side}, whose replay overloaded the server (its times are "
                   f"mostly waiting; such a replay's level moves by several times from one replay to the next): "
                   f"not told apart from it ({', '.join(q.name for q in hit[:5])}); measure with "
                   f"{advice.sessions}, or replay at a lower --speed")
    unknown = [q for q in doc.queries if q.verdict == UNSTABLE and q.reasons and LEVEL_UNKNOWN in q.reasons[0]]
    if unknown:
        out.append(f"{_queries(len(unknown))} beyond ±{doc.summary.threshold:.0%} between files that hold nothing of "
                   f"the machine and too few queries to show a shift all share "
                   f"({', '.join(q.name for q in unknown[:5])}): not told apart from the machine's level; "
                   f"{measure_with(advice)}")
    return out, rows + unknown


def _not_the_machine(machine: dict[str, Any], separate: bool) -> str:
    """Why a shift all queries share is the engine's: a shared machine, or one whose state
    cannot make it (beyond what the busier run's state explains, stats/shift.py)."""
    limit = machine.get("explains_up_to")
    if not separate:
        return "on a machine both sides shared"
    if limit and (machine.get("busier") or machine.get("maybe_busier")):
        return f"beyond the {pct(limit)} the machine's state can explain"
    return "the machine does not explain it"


def _together(shift: CommonShift) -> str:
    """The queries that moved together, counted: "all queries" read as every query, beside
    a geometric mean of +52% where 8 of 10 moved +70% (max_threads=1 side by side)."""
    who = "all queries" if shift.queries_sharing >= shift.queries else \
        f"{shift.queries_sharing} of {shift.queries} queries"
    return f"{who} {pct(shift.ratio)} together"


def findings(doc: ComparisonDoc, separate: bool, advice: Advice = ADVICE["chbench"]) -> list[str]:
    out: list[str] = []
    s = doc.summary
    machine, shift = s.machine or {}, s.shift
    busier = machine.get("busier")
    what = ", ".join(machine.get("differences") or [])
    if shift is not None and shift.explained_by_machine:
        out.append(f"{busier or 'one run'} ran on a busier machine ({what or shift.explained_by}): "
                   f"{_together(shift)}, taken out of each verdict; rerun {busier or 'it'} on a quiet "
                   "machine, or measure side by side")
    elif shift is not None and shift.finding:
        out.append(f"{_together(shift)}, {_not_the_machine(machine, separate)}: a global "
                   "change of the engine or its configuration")
    elif shift is not None and shift.machine_may and shift.verdict != "no change":
        out.append(f"{_together(shift)}, which {who_may(shift.may_by)} may explain "
                   f"({shift.machine_may}): machine or engine, not told apart; {measure_with(advice)}")
    elif busier and doc.queries and all(q.verdict in (NO_CHANGE, *FLAGGED) for q in doc.queries):
        # said, not alarming: a "rerun B" under ten `no change` read as if they were in doubt
        out.append(f"{busier} ran on a busier machine ({what}), and every verdict is definite all the same")
    elif busier:
        out.append(f"{busier} ran on a busier machine ({what}); rerun {busier}, or measure side by side")
    out += _set_aside_lines(s.set_aside or {})
    qualified = [q for q in doc.queries if q.verdict == UNSTABLE and q.busier_machine]
    if qualified and not busier and machine.get("maybe_busier"):
        out.append(f"{_queries(len(qualified))} slower in {machine['maybe_busier']}, whose machine may have been "
                   f"busier ({machine.get('maybe_why')}): not told apart from the machine "
                   f"({', '.join(q.name for q in qualified[:5])}); {measure_with(advice)}")
    elif qualified:
        out.append(f"{_queries(len(qualified))} slower in {busier}, which ran on the "
                   f"busier machine: not told apart from the machine ({', '.join(q.name for q in qualified[:5])})")
    lines, said = _not_told(doc, advice)
    out += lines
    unstable = [q for q in doc.queries if q.verdict == UNSTABLE and q not in qualified and q not in said]
    uneven = [q for q in unstable if any("uneven effect" in r for r in q.reasons)]
    if uneven:
        out.append(f"{_queries(len(uneven))} moved unlike the rest while the machine moved them all "
                   f"({', '.join(q.name for q in uneven[:5])}): not told apart from the machine's uneven effect; "
                   "rerun on a quiet machine, or measure side by side")
    unstable = [q for q in unstable if q not in uneven]
    out += _unstable_lines(unstable, doc, separate, advice)
    paired = [q for q in doc.queries if q.paired is not None]
    if paired:
        spreads = sorted(q.paired.spread for q in paired if q.paired is not None and math.isfinite(q.paired.spread))
        mid = spreads[len(spreads) // 2] if spreads else math.nan
        out.append(f"judged on paired rounds ({len(paired)} of {count(len(doc.queries), 'query')}): B/A varied "
                   f"±{mid:.1%} "
                   "from round to round (median); the pooled verdicts are in the JSON (unpaired)")
    if machine.get("log_change_bound"):
        out.append("the calibration query moved between the runs and these files have no probes: intervals widened")
    return out + _flag_lines(doc)


def _flag_lines(doc: ComparisonDoc) -> list[str]:
    """Each flag with the queries that carry it: a table a person scans shows one reason a
    row, so "too short to measure well" or "fails in A only" showed only with --verbose."""
    by_flag: dict[str, list[str]] = {}
    for q in doc.queries:
        for flag in q.flags:
            by_flag.setdefault(flag, []).append(q.name)
    return [f"{flag}: {', '.join(names[:5])}{' …' if len(names) > 5 else ''}" for flag, names in by_flag.items()]


def _unstable_lines(unstable: list[QueryComparison], doc: ComparisonDoc, separate: bool,
                    advice: Advice) -> list[str]:
    """The unstable queries no line above explained, grouped by why: the sessions' machine
    levels, drift or two groups of run times, summary numbers only, a change past the
    threshold not shown after correction, and the rest (noise wider than the threshold)."""
    out: list[str] = []
    s = doc.summary
    level = s.session_levels
    if unstable and level and level["half"] > math.log1p(s.threshold / 2):
        # the sessions' machine levels, more than half the threshold, leave too little
        # room for each query's own spread
        a, b = level["sessions"]
        out.append(f"{_queries(len(unstable))} unstable: the machine's level moved ±{level['sd']:.1%} from session "
                   f"to session (sd over {a} + {b} sessions), so the level all queries share is known only to "
                   f"±{math.expm1(level['half']):.1%}; {sessions_needed(level['sd'], s.threshold / 2)} sessions per "
                   f"side would be needed to narrow that to ±{s.threshold / 2:.1%} — or measure side by side")
        unstable = []
    for word, what in (("drifting", "their times drifted from the first rounds to the last"),
                       ("bimodal", "their run times fell into two groups")):
        hit = [q for q in unstable if any(word in r for r in q.reasons)]
        if hit:  # more of the same rounds do not settle these: not "noise wider than" the threshold
            out.append(f"{_queries(len(hit))} unstable: {what} ({', '.join(q.name for q in hit[:5])}); more "
                       "rounds of the same do not settle that: look at their runs (report --html) and rerun")
        unstable = [q for q in unstable if q not in hit]
    summarized = [q for q in unstable if any("no raw samples" in r for r in q.reasons)]
    if summarized:  # no test is possible on these: more rounds of the same file format add nothing
        out.append(f"{_queries(len(summarized))} unstable: the medians differ, but a file of summary numbers "
                   "only (clickhouse-benchmark's --json, the upgrade script's) allows no test and the runs' ranges "
                   "overlap; measure with chbench (run, or load --out) to keep every sample")
        unstable = [q for q in unstable if q not in summarized]
    not_shown = [q for q in unstable if q.reasons and NOT_SHOWN in q.reasons[0]]
    if not_shown:  # past the threshold, the test's level missing: not "noise wider than" it
        out.append(f"{_queries(len(not_shown))} unstable: beyond ±{s.threshold:.0%}, but not significant once "
                   f"corrected for the other queries ({', '.join(q.name for q in not_shown[:5])}"
                   f"{' …' if len(not_shown) > 5 else ''}); {advice.more}")
        unstable = [q for q in unstable if q not in not_shown]
    if unstable:
        sessions = any(q.between_run is not None and "sessions" in q.between_run.source for q in unstable)
        several = "" if sessions else f" or {advice.sessions}"
        what_next = f"{advice.side_by_side}{several} narrows it" if separate else advice.more
        out.append(f"{_queries(len(unstable))} unstable: noise wider than the ±{s.threshold:.0%} a verdict "
                   f"needs; {what_next}")
    return out


def _set_aside_lines(aside: dict[str, Any]) -> list[str]:
    """Runs set aside on a busy machine, per side, and where the machine never got quiet
    (then every run is judged, those set aside too: ``RunDocument.never_quiet``)."""
    out: list[str] = []
    unit = "samples" if aside.get("samples") else "rounds"  # files before the timeline counted rounds
    if aside.get(unit):
        sides = [k for k in ("a", "b") if aside.get(k, {}).get(unit)]
        per = ", ".join(f"{k.upper()} {aside[k][unit]}" for k in sides)
        what = "runs" if unit == "samples" else "rounds"
        kept_out = [k.upper() for k in sides if not aside[k].get("never_quiet")]
        fate = ("not in the verdicts" if len(kept_out) == len(sides) else
                f"not in {' and '.join(kept_out)}'s verdicts" if kept_out else "in the verdicts (below)")
        out.append(f"{aside[unit]} {what} set aside ({per}): another process used more than "
                   f"{aside['threshold']:.0%} of the CPUs while they ran; kept in the files, measured again, {fate}")
    if aside.get("never_quiet"):
        who = " and ".join(k.upper() for k in ("a", "b") if aside.get(k, {}).get("never_quiet"))
        out.append(f"the machine never got quiet during {who} within --quiet-wait: the rest was measured as it was, "
                   "and every run is judged, those set aside too (the machine as it was for the whole run, not a "
                   "quiet-looking part of it); rerun when the other work is done, or measure side by side")
    return out
