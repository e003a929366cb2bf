"""From results files to explanations: each run's profile as the statistics take it,
and the ``why`` of every slower or faster row of a comparison."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from chbench.results import RunSample
from chbench.stats.explain import ProfileRun, Why, explain_query
from chbench.stats.verdict import FLAGGED

if TYPE_CHECKING:
    from chbench.compare.build import Comparison
    from chbench.compare.document import ComparisonDoc
    from chbench.compare.sides import Side

NO_PROFILES = ("these runs have no server profiles: run them again with a chbench that collects them (default "
               "since it has `chbench explain`), without --no-explain, on a server with system.query_log")


def profile_run(s: RunSample) -> ProfileRun:
    prof: dict[str, Any] = s.profile or {}
    ops = {name: float(op.get("elapsed_us", 0.0)) for name, op in (prof.get("operators") or {}).items()}
    return ProfileRun((s.session or 0, s.round), {k: float(v) for k, v in (prof.get("counters") or {}).items()}, ops,
                      {k: float(v) for k, v in (prof.get("stacks") or {}).items()})


def servers_of(a: Side, b: Side) -> dict[str, Any]:
    """What the two sides' servers are, as ``explain_query`` takes it: the counters each
    version lists, whether the versions differ, the counters they count apart — once per
    comparison, not per query (a list holds ~1,600 names)."""
    known = [None if s.explain.get("counters_known") is None else frozenset(s.explain["counters_known"])
             for s in (a, b)]
    versions = [s.configuration.get("server_version") for s in (a, b)]
    threads = {s.explain.get("threads_from") for s in (a, b)}
    protocols = [s.protocol for s in (a, b)]
    return {"known": (known[0], known[1]), "versions_differ": None not in versions and versions[0] != versions[1],
            "counted_apart": frozenset({"threads"}) if len(threads) == 2 and None not in threads else frozenset(),
            "interfaces_differ": None not in protocols and protocols[0] != protocols[1]}


def why_of(pa: list[ProfileRun], pb: list[ProfileRun], paired: bool, ratio: float | None,
           plan_changed: bool | None, servers: dict[str, Any]) -> Why:
    """One query's explanation, with what each side's server version has (``servers_of``)."""
    plan = None if plan_changed is None else ("changed" if plan_changed else "same")
    return explain_query(pa, pb, paired, ratio, plan, **servers)


def explain_rows(doc: ComparisonDoc, a: Side, b: Side, rename: dict[str, str], paired: bool,
                 every: bool = False) -> dict[str, Why]:
    """Sets ``why`` on every slower or faster row — empty, with the reason, where neither
    side has profiles; with ``every`` the other rows are explained too (returned, not
    set on them). Returns the explanations by query name."""
    b_profiles = {rename.get(n, n): runs for n, runs in b.profiles.items()}
    servers = servers_of(a, b)
    out: dict[str, Why] = {}
    for row in doc.queries:
        if not every and row.verdict not in FLAGGED:
            continue
        pa, pb = a.profiles.get(row.name) or [], b_profiles.get(row.name) or []
        if not pa or not pb:  # a side with none (an engine before 26.9 against 26.9): its own reason
            if row.verdict in FLAGGED:  # every changed row carries why: here, why it is empty
                row.why = Why(note=_missing(*[s for s, p in ((a, pa), (b, pb)) if not p])).to_json()
            continue
        why = why_of(pa, pb, paired, row.ratio, row.plan_changed, servers)
        out[row.name] = why
        if row.verdict in FLAGGED:
            row.why = why.to_json()
    return out


def _missing(*sides: Side) -> str:
    """Why a changed query has no server profile on these sides: what their runs said, or
    that they are old."""
    notes = [n for side in sides for n in (side.explain.get("notes") or [])]
    return notes[0] if notes else NO_PROFILES


def side_info(cmp: Comparison) -> dict[str, dict[str, Any]]:
    """What each side's run could collect (``meta.explain``), or why there is nothing."""
    out = {}
    for label, side in (("A", cmp.a), ("B", cmp.b)):
        info = dict(side.explain) or {"counters": False, "operators": False, "runs": 0, "notes": [NO_PROFILES]}
        if not side.profiles and info.get("runs") and not info.get("notes"):
            info["notes"] = ["no profile matched a measured run"]
        out[label] = info
    return out
