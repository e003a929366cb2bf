"""Why a query got slower (or faster): the server's own counters and operator times,
each compared between the sides like the time itself (docs/statistics.md, "Why").

Per query, every metric the server recorded for its measured runs — each ProfileEvents
counter and query_log column (``chbench/explain/collect.py``), and each operator's
``elapsed_us`` from ``system.processors_profile_log`` — is compared as the time is:
side by side on the per-round log ratios (Hodges–Lehmann with the signed-rank interval,
Wilcoxon's test; ``stats/paired.py``), otherwise on the two samples (ratio of medians,
bootstrap interval, Mann–Whitney). Counters are counts: compared as value + 1, so a
counter that is 0 on one side has a finite ratio. False discoveries are controlled
across the query's metrics by Benjamini–Hochberg (many metrics, few of them real); a
metric is *changed* when its adjusted p < 0.05 and it moved by at least 5%.

Ranking, most explanatory first:
1. causes: what was read (marks, parts, ranges, rows, bytes), threads, caches, compiled
   expressions, spilling, what was sent — and operators found on one side only (the
   plan changed);
2. operators, by how much of the time change their own time accounts for; other
   counters by the size of their change;
3. the generic time counters (real, user, system, CPU, wait): effects, kept for the
   CPU-versus-wall fact.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chbench.stats.compare import SEED, benjamini_hochberg, ratio_interval
from chbench.stats.paired import MIN_PAIRS, hl_interval, pair_up

ALPHA = 0.05
MATERIAL = 0.05  # a changed metric moved at least this much
MIN_RUNS = 3  # per side
# a result of the same rows under this many bytes on both sides: its bytes are the blocks
# it sits in, not work the query did (moving a MiB takes well under a millisecond)
SMALL_RESULT = 1 << 20
PLAN_SHARE = 0.10  # an operator on one side only that takes this share of the operators' time

# the counters a ClickHouse engineer reads first: what the query read, how, and where
# its time went besides computing (substrings of the names)
CAUSES = ("SelectedMarks", "SelectedParts", "SelectedRanges", "SelectedRows", "SelectedBytes",
          "read_rows", "read_bytes", "result_rows", "result_bytes", "threads", "QueryCache",
          "UncompressedCache", "MarkCache", "CompileFunction", "CompileExpressions", "CompiledExpression",
          "ExternalSort", "ExternalAggregation", "ExternalJoin", "ExternalProcessing", "NetworkSendBytes",
          "FilteringMarksWith", "SkipIndex", "ReadInOrder")
EFFECTS = ("RealTimeMicroseconds", "UserTimeMicroseconds", "SystemTimeMicroseconds",
           "OSCPUVirtualTimeMicroseconds", "OSCPUWaitMicroseconds", "OSIOWaitMicroseconds",
           "query_duration_ms", "NetworkSendElapsedMicroseconds", "SoftPageFaults", "HardPageFaults",
           "ContextLock", "RWLockAcquiredReadLocks")


@dataclass(frozen=True)
class ProfileRun:
    """One measured run's profile: its round key, and the server's numbers."""

    key: tuple[int, int]  # (session, round)
    counters: dict[str, float]
    operators: dict[str, float]  # operator name -> elapsed microseconds (all its instances)
    stacks: dict[str, float] = field(default_factory=dict)  # sampled stack (root first, ';') -> samples


@dataclass
class MetricChange:
    kind: str  # "counter" | "operator"
    name: str
    a: float  # median over A's runs
    b: float
    ratio: float
    ci: tuple[float, float]
    p: float
    p_adj: float = 1.0
    changed: bool = False
    tier: int = 2
    share: float | None = None  # operators: this operator's share of all operators' time change
    only: str | None = None  # an operator on one side only ("a" or "b")
    per_row: float | None = None  # where the rows read changed: the ratio per row read

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "a": self.a, "b": self.b, "ratio": self.ratio,
                               "ci": list(self.ci), "p_adj": self.p_adj}
        if self.share is not None:
            out["share"] = self.share
        if self.only is not None:
            out["only"] = self.only
        if self.per_row is not None:
            out["per_row"] = self.per_row
        return out

    def phrase(self) -> str:
        if self.only == "b":
            return f"{self.name} new in B ({_us(self.b)})"
        if self.only == "a":
            return f"{self.name} gone in B (was {_us(self.a)})"
        return f"{self.name} {_times(self.ratio)} ({number(self.a)} → {number(self.b)})"


@dataclass
class Why:
    counters: list[MetricChange] = field(default_factory=list)  # changed, ranked
    operators: list[MetricChange] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)
    tested: int = 0
    note: str | None = None  # why there is nothing to say (no profiles, too few runs)
    # counters one side's server never logged and may not have: "a"/"b" -> names
    unknown: dict[str, list[str]] = field(default_factory=dict)
    listed: tuple[str, ...] = ()  # the sides whose server listed its counters (not a guess)

    @property
    def top(self) -> list[MetricChange]:
        """Counters and operators together, most explanatory first."""
        both = self.counters + self.operators
        return sorted(both, key=_rank_key)

    @property
    def summary(self) -> str:
        if self.facts:
            return "; ".join(self.facts[:2])
        if self.top:
            return "; ".join(m.phrase() for m in self.top[:2])
        return self.note or "no counter or operator changed"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"counters": [m.to_json() for m in self.counters],
                               "operators": [m.to_json() for m in self.operators],
                               "summary": self.summary, "facts": self.facts,
                               "top": [m.name for m in self.top[:5]], "tested": self.tested,
                               "changed": len(self.counters) + len(self.operators)}
        if self.note:
            out["note"] = self.note
        if self.unknown:  # per side: counters its version may not have, by its own list or not
            out["not_compared"] = {k.upper(): {"counters": v, "by_its_list": k in self.listed}
                                   for k, v in self.unknown.items()}
        return out


def _rank_key(m: MetricChange) -> tuple[int, int, float]:
    """Causes first (by the size of their change), then operators (by their share of the
    time change), then the other counters, then the generic time counters."""
    size = abs(math.log(max(m.ratio, 1e-12)))
    if m.tier == INTERFACE_TIER:
        return (INTERFACE_TIER, 0, -size)
    if m.kind == "operator":
        if m.only:  # the plan changed: an operator of real weight first, a trivial one after the causes
            return (0 if (m.share or 0.0) >= PLAN_SHARE else 1, 1, -(m.share or 0.0))
        return (2, 0, -(m.share or 0.0))
    return (m.tier, 0 if m.tier == 1 else 1, -size)


def tier_of(name: str) -> int:
    if any(c in name for c in CAUSES):
        return 1
    if name in EFFECTS:
        return 3
    return 2


def signed_rank_p(d: np.ndarray) -> float:
    """Wilcoxon's signed-rank p (two-sided) of the per-round log ratios. Counters are
    integers, so their ratios tie: scipy's exact test then falls back to a permutation
    test that took 0.15 s a metric (14.5 s for a query's 60 metrics × 10 queries); the
    normal approximation with the tie correction is used there instead."""
    from scipy import stats as sps

    nonzero = d[d != 0]
    if len(nonzero) == 0:
        return 1.0
    ties = len(np.unique(np.abs(nonzero))) < len(nonzero) or len(nonzero) < len(d)
    p = float(sps.wilcoxon(nonzero, method="approx" if ties else "auto").pvalue)
    return p if math.isfinite(p) else 1.0


def _compare(kind: str, name: str, a: list[ProfileRun], b: list[ProfileRun], get: Any, paired: bool,
             seed: int) -> MetricChange | None:
    va = [(r.key, float(get(r))) for r in a]
    vb = [(r.key, float(get(r))) for r in b]
    xa = [v for _, v in va]
    xb = [v for _, v in vb]
    if not any(xa) and not any(xb):
        return None
    ma, mb = float(np.median(xa)), float(np.median(xb))
    # counts compared as value + 1 only where a run counted 0 (a ratio needs no zero);
    # otherwise as they are, so 3 threads against 1 reads 1/3
    shift = 1.0 if min(xa + xb) <= 0 else 0.0
    if paired:
        pairs = pair_up([(k, v + shift) for k, v in va], [(k, v + shift) for k, v in vb])
        if len(pairs) >= MIN_PAIRS:
            if not np.any(pairs.d):  # the same in every round: nothing changed
                return MetricChange(kind, name, ma, mb, 1.0, (1.0, 1.0), 1.0)
            centre, lo, hi = hl_interval(pairs.d)
            return MetricChange(kind, name, ma, mb, math.exp(centre), (math.exp(lo), math.exp(hi)),
                                signed_rank_p(pairs.d))
    if xa == xb or (len(set(xa)) == 1 and set(xa) == set(xb)):
        return MetricChange(kind, name, ma, mb, 1.0, (1.0, 1.0), 1.0)
    from scipy import stats as sps

    p = float(sps.mannwhitneyu(xa, xb, alternative="two-sided").pvalue)
    ratio, lo, hi = ratio_interval([x + shift for x in xa], [x + shift for x in xb], seed)
    return MetricChange(kind, name, ma, mb, ratio, (math.exp(lo), math.exp(hi)), p if math.isfinite(p) else 1.0)


def unknown_counters(a: list[ProfileRun], b: list[ProfileRun], known_a: frozenset[str] | None,
                     known_b: frozenset[str] | None, versions_differ: bool) -> dict[str, list[str]]:
    """Counters one side logged and the other never did, where the other's server does
    not have them: by its own list, or — a server that cannot list them (18.16) — on
    another version, where "never logged" cannot tell 0 from unknown. Left uncompared: a
    counter 26.9 added is not a cause of 26.9 against 18.16."""
    out: dict[str, list[str]] = {}
    for side, mine, other, known in (("a", a, b, known_a), ("b", b, a, known_b)):
        if known is None and not versions_differ:
            continue
        logged = {n for r in mine for n in r.counters}
        names = sorted({n for r in other for n in r.counters} - logged - (known or frozenset()))
        if names:
            out[side] = names
    return out


def explain_query(a: list[ProfileRun], b: list[ProfileRun], paired: bool, time_ratio: float | None = None,
                  plan: str | None = None, known: tuple[frozenset[str] | None, frozenset[str] | None] = (None, None),
                  versions_differ: bool = False, counted_apart: frozenset[str] = frozenset(),
                  interfaces_differ: bool = False) -> Why:
    """What changed between A's and B's runs of one query, ranked. ``time_ratio``: the
    query's own B/A time ratio (for the facts); ``plan``: "same" or "changed" where the
    plans were compared (chbench upgrade); ``known``: the counters each side's server
    has, where it listed them; ``versions_differ``: the sides ran different versions;
    ``counted_apart``: counters the two servers count differently (``threads`` from
    different query_log columns); ``interfaces_differ``: the sides' results left through
    different interfaces (the embedded engine, HTTP, native), whose output stages differ
    by design."""
    if len(a) < MIN_RUNS or len(b) < MIN_RUNS:
        return Why(note=f"too few runs with a server profile ({len(a)} and {len(b)})")
    tested: list[MetricChange] = []
    unknown = unknown_counters(a, b, *known, versions_differ)
    skip = {n for names in unknown.values() for n in names}
    counters = sorted({n for r in a + b for n in r.counters} - skip)
    for i, name in enumerate(counters):
        m = _compare("counter", name, a, b, lambda r, n=name: r.counters.get(n, 0.0), paired, SEED + 100 + i)
        if m is not None:
            m.tier = tier_of(name)
            tested.append(m)
    # operators only where both sides have operator times: a server without
    # processors_profile_log (18.16) has none, and every operator read "gone in B"
    ops = sorted({n for r in a + b for n in r.operators}) if any(r.operators for r in a) and \
        any(r.operators for r in b) else []
    for i, name in enumerate(ops):
        m = _compare("operator", name, a, b, lambda r, n=name: r.operators.get(n, 0.0), paired, SEED + 5000 + i)
        if m is None:
            continue
        in_a = sum(1 for r in a if name in r.operators) / len(a)
        in_b = sum(1 for r in b if name in r.operators) / len(b)
        if in_a < 0.5 <= in_b:
            m.only = "b"
        elif in_b < 0.5 <= in_a:
            m.only = "a"
        tested.append(m)
    listed = tuple(side for side, k in zip("ab", known, strict=True) if k is not None)
    if not tested:
        return Why(note="the server recorded no counters for these runs", unknown=unknown, listed=listed)
    for m, p_adj in zip(tested, benjamini_hochberg([m.p for m in tested]), strict=True):
        m.p_adj = p_adj
        m.changed = (p_adj < ALPHA and abs(m.ratio - 1.0) >= MATERIAL) or (m.only is not None and p_adj < ALPHA)
    changed_ops = [m for m in tested if m.kind == "operator" and m.changed]
    total = sum(abs(m.b - m.a) for m in changed_ops) or 1.0
    for m in changed_ops:
        m.share = abs(m.b - m.a) / total
    side_total = {"a": sum(m.a for m in tested if m.kind == "operator") or 1.0,
                  "b": sum(m.b for m in tested if m.kind == "operator") or 1.0}
    for m in changed_ops:
        if m.only is not None:  # its share of its own side's operator time
            m.share = (m.b if m.only == "b" else m.a) / side_total[m.only]
    rows = next((m for m in tested if m.name == "read_rows"), None)
    rows_ratio = rows.ratio if rows is not None and rows.changed and rows.a > 0 and rows.b > 0 else None
    if rows_ratio is not None:  # normalised per row read: time spent per row, not more rows
        for m in tested:
            if m.kind == "operator" or m.name in EFFECTS:
                m.per_row = m.ratio / rows_ratio
    why = Why(counters=sorted([m for m in tested if m.kind == "counter" and m.changed], key=_rank_key),
              operators=sorted(changed_ops, key=_rank_key), tested=len(tested), unknown=unknown, listed=listed)
    every = {m.name: m for m in tested}
    apart = set(counted_apart) | (_interfaces_own(tested) if interfaces_differ else set())
    same_rows = "result_rows" in every and not every["result_rows"].changed
    small = "result_bytes" in every and max(every["result_bytes"].a, every["result_bytes"].b) < SMALL_RESULT
    if same_rows and (versions_differ or small):
        # the same rows, in bytes as each version counts them (18.16: 8, 26.9: 136 for one
        # UInt64): not "the result is 17× the bytes"; nor, on one version, the blocks a
        # small result sits in (10 rows: 256 bytes, 9,328 with max_threads=1 on chDB 26.9)
        apart.add("result_bytes")
    for name in apart & set(every):  # each side's own accounting: not a cause, no fact
        every[name].tier = max(3, every[name].tier)  # ranked with the effects, last (an interface's after them)
    why.counters.sort(key=_rank_key)
    why.facts = facts(why, every, time_ratio, plan, apart)
    if rows_ratio is not None and time_ratio is not None:
        why.facts.append(f"per row read {_pct(time_ratio / rows_ratio)} ({_times(rows_ratio)} the rows)")
    return why


def _interfaces_own(tested: list[MetricChange]) -> set[str]:
    """What two interfaces do each of their own (their ways out, their counters), ranked
    after everything else: not a cause, not the plan."""
    own = {m.name for m in tested if (m.kind == "operator" and m.only and output_stage(m.name))
           or (m.kind == "counter" and (m.name == "threads" or m.name.startswith(INTERFACE_COUNTERS)))}
    for m in tested:
        if m.name in own:
            m.tier = INTERFACE_TIER
    return own


# the operators a query's results leave through: each interface its own (measured 26.9,
# 2026-12-07: the embedded engine LazyOutputFormat, HTTP with FORMAT Null "Null" after a
# MaterializingTransform), read as "plan changed: new Null; gone LazyOutputFormat" when an
# engine was run side by side with its own server
OUTPUT_STAGE = frozenset({"LazyOutputFormat", "Null", "MaterializingTransform"})


# what an interface counts of its own (prefixes; and ``threads``): the embedded engine sends
# nothing over a network nor fills an HTTP buffer, and its pulling thread is one of the
# query's (26.9, numbers(20000000), 2026-12-07: NetworkSendBytes, InterfaceHTTPSendBytes and
# IOBufferAllocBytes new over HTTP, ranked first; 2 threads embedded, 1 over HTTP)
INTERFACE_COUNTERS = ("Network", "InterfaceHTTP", "InterfaceNative", "InterfaceMySQL", "InterfacePostgreSQL",
                      "InterfacePrometheus", "IOBuffer")
INTERFACE_TIER = 4  # ranked after everything else


def output_stage(name: str) -> bool:
    return name in OUTPUT_STAGE or name.endswith("OutputFormat")


def facts(why: Why, every: dict[str, MetricChange], time_ratio: float | None, plan: str | None,
          apart: set[str] | None = None) -> list[str]:
    """What the numbers say in words, most telling first (none of the counters in
    ``apart``: the two sides count them differently)."""
    out: list[str] = []
    changed = {m.name: m for m in why.counters if m.name not in (apart or set())}
    ops_only = [m for m in why.operators if m.only and m.name not in (apart or set())]
    ways_out = {side: [m.name for m in why.operators if m.only == side and m.name in (apart or set())]
                for side in ("a", "b")}
    if plan == "changed" or ops_only:
        new = [m.name for m in ops_only if m.only == "b"]
        gone = [m.name for m in ops_only if m.only == "a"]
        parts = ([f"new {', '.join(new[:3])}"] if new else []) + ([f"gone {', '.join(gone[:3])}"] if gone else [])
        out.append("plan changed" + (f": {'; '.join(parts)}" if parts else ""))
    if ways_out["a"] or ways_out["b"]:
        out.append(f"results left through {', '.join(ways_out['b']) or 'no operator of its own'} instead of "
                   f"{', '.join(ways_out['a']) or 'none of its own'} (each side's interface, not its plan)")
    t = changed.get("threads")
    if t is not None:
        out.append(f"ran on {number(t.b)} thread{'s' if t.b != 1 else ''} instead of {number(t.a)}")
    hits = changed.get("QueryCacheHits")
    if hits is not None:
        out.append("answered from the query cache" if hits.ratio > 1 else "no longer answered from the query cache")
    # rows from query_log's own column first: every version has it, while a version without
    # the SelectedRows event (18.16) would read "reads no rows"
    for name, what in (("SelectedMarks", "marks"), ("SelectedParts", "parts"), ("read_rows", "rows"),
                       ("SelectedRows", "rows")):
        if name == "read_rows" and name in every and name not in changed:
            break  # the same rows read, as every version counts them
        m = changed.get(name)
        if m is not None:
            out.append(f"reads {number(m.b)} {what}, none in A" if m.a == 0 else
                       f"reads no {what}, {number(m.a)} in A" if m.b == 0 else f"reads {_times(m.ratio)} the {what}")
            break
    for name, what in (("UncompressedCacheHits", "uncompressed cache hits"), ("MarkCacheHits", "mark cache hits")):
        m = changed.get(name)
        if m is not None and m.a != m.b:
            out.append(f"{what} {number(m.a)} → {number(m.b)}")
    comp = [m for n, m in changed.items() if "Compile" in n]
    if comp:
        out.append("expressions compiled differently (" + ", ".join(m.name for m in comp[:2]) + ")")
    m = changed.get("result_bytes")
    if m is not None:
        out.append(f"the result is {_times(m.ratio)} the bytes")
    cpu = every.get("OSCPUVirtualTimeMicroseconds") or every.get("UserTimeMicroseconds")
    wall = every.get("RealTimeMicroseconds")
    if time_ratio is not None and cpu is not None and abs(time_ratio - 1) >= 0.1:
        if not cpu.changed or abs(cpu.ratio - 1) < abs(time_ratio - 1) / 3:
            if t is not None:
                how = "the same work on fewer threads" if t.ratio < 1 else "the same work on more threads"
            else:
                how = f"{'more' if time_ratio > 1 else 'less'} waiting (locks, I/O, other processes)"
            out.append(f"CPU time unchanged, wall {_pct(time_ratio)}: {how}")
        elif wall is not None and cpu.changed:
            out.append(f"CPU time {_pct(cpu.ratio)}, wall {_pct(time_ratio)}")
    plain_ops = [m for m in why.operators if not m.only]
    if len(plain_ops) == 1 and not ops_only and len(every) > 1:
        out.append(f"{plain_ops[0].name} {_pct(plain_ops[0].ratio)}, every other operator unchanged")
    elif plain_ops and not out:
        top = plain_ops[0]
        out.append(f"{top.name} {_pct(top.ratio)} ({(top.share or 0):.0%} of the operators' time change)")
    if plan == "same" and not ops_only:
        out.append("same plan")
    return out


def _times(r: float) -> str:
    return f"{r:.2g}×" if r < 10 else f"{r:.0f}×"


def _pct(r: float) -> str:
    return "±0%" if abs(r - 1) < 0.005 else f"{r - 1:+.0%}"


def number(v: float) -> str:
    """A count or a time, short: 16.0M, 48.2k, 3."""
    if abs(v) >= 1e9:
        return f"{v / 1e9:.3g}G"
    if abs(v) >= 1e6:
        return f"{v / 1e6:.3g}M"
    if abs(v) >= 1e4:
        return f"{v / 1e3:.3g}k"
    return f"{v:.4g}"


def _us(v: float) -> str:
    return f"{v / 1000:.3g} ms"
