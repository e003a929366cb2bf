"""What a stopwatch cannot see in an upgrade, checked on both sides of a side-by-side run
after the timed rounds (untimed, before tear-down, so set-up data is still there):

* **answers** — each query's result on both sides reduced to a row count and an
  order-independent, tie-aware checksum (``clickbench/checksum.py``), with the column
  types (a type change is a changed answer: clients see it); small results keep their
  rows so the report can show which differ;
* **plans** — ``EXPLAIN PLAN`` and ``EXPLAIN PIPELINE`` on both sides, normalised and
  fingerprinted (see :func:`plan_steps`), both texts kept;
* **settings** — the settings whose default differs between the two versions, and which
  of them the workload mentions.

Stored as ``checks`` in the run document (``results/run.py``); ``compare`` turns them
into the ``answer changed`` verdict and the ``plan changed`` flag (``compare/checks.py``).
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Any

from chbench.clickbench.checksum import analyse, checksum
from chbench.core.send import fetch
from chbench.errors import QueryError, UsageError
from chbench.observer import FinishedRounds, Observer
from chbench.runner.settings import query_settings
from chbench.workload.model import returns_rows
from chbench.workload.sql import strip_comments_and_strings

if TYPE_CHECKING:
    from chbench.plan import SidePlan
    from chbench.targets import Target
    from chbench.workload import Query

SHOWN_ROWS = 20  # results this small keep their rows (the report shows the differing ones)
_FORMAT = re.compile(r"\bFORMAT\s+\w+\s*$", re.I)
# a plan step's name, as EXPLAIN PLAN prints it in every version seen (23.x indented,
# 26.x drawn as a tree with details under each step)
_STEP = re.compile(r"^[A-Z][A-Za-z0-9]*(?: \(.*\))?$")


class Checks(Observer):
    """The untimed checks as a run's observer: after each set of rounds, before tear-down."""

    def __init__(self, data_sql: str | None = None) -> None:
        self.data_sql = data_sql

    def rounds_done(self, run: FinishedRounds, names: list[str]) -> None:
        run_checks(run, names, self.data_sql)


def run_checks(runner: FinishedRounds, names: list[str], data_sql: str | None = None) -> None:
    """Answers and plans of these queries on every side into ``runner.doc.checks`` (called
    once per performance test, before its tear-down, then for the other queries), with the
    changed setting defaults; with ``data_sql`` (a checksum of the data each side built),
    whether both built the same. Queries a side skipped or never ran are not checked."""
    sides = runner.plan.sides
    checks: dict[str, Any] = runner.doc.checks or {"answers": {}, "plans": {}, "settings": settings_diff(runner)}
    entries = {q.name: q for q in runner.doc.queries}
    if data_sql and "data" not in checks:
        got = {}
        for s in sides:
            try:
                got[s.id.lower()] = s.target.query_rows(data_sql)
            except QueryError as e:
                got[s.id.lower()] = [["error", e.message]]
        checks["data"] = {"sql": data_sql, **got, "equal": all(v == got["a"] for v in got.values())}
    runner.doc.checks = checks
    for name in names:
        per_side = [(s, s.query(name)) for s in sides]
        entry = entries.get(name)
        if any(q is None or not returns_rows(q.sql) for _, q in per_side) or entry is None or \
                any(entry.skipped(s.id) or not entry.measured(s.id) for s in sides):
            continue
        answers = {s.id.lower(): answer(runner, s, q) for s, q in per_side if q is not None}
        equal = all_equal(answers)
        if equal is False and len({tuple(a.get("types") or ()) for a in answers.values()}) == 1:
            # confirmed single-threaded before it is called a changed answer: with threads,
            # an approximate aggregate can repeat on one side and still differ from the
            # other (seen: the built-in `uniq`/`quantiles` at small scales, A/A)
            single = {s.id.lower(): answer(runner, s, q, single=True) for s, q in per_side if q}
            if all_equal(single) is True:
                answers, equal = single, True
        checks["answers"][name] = {**answers, "equal": equal}
        plans = {s.id.lower(): explain(s.target, q.sql) for s, q in per_side if q is not None}
        checks["plans"][name] = {**plans, "changed": _any_adjacent(plans, "plan"),
                                 "pipeline_changed": _any_adjacent(plans, "pipeline")}
        runner.checkpoint()
    runner.doc.checks = checks
    runner.checkpoint(force=True)


def all_equal(answers: dict[str, dict[str, Any]]) -> bool | None:
    """Every side's answer (keyed a, b, c, …) the same as the next one's: False when any
    adjacent two differ, None when some cannot be compared (``answers_equal``)."""
    got = [answers_equal(x, y) for x, y in zip(list(answers.values()), list(answers.values())[1:], strict=False)]
    return False if False in got else None if None in got else True


def _any_adjacent(plans: dict[str, dict[str, Any]], kind: str) -> bool | None:
    got = [plans_changed(x, y, kind) for x, y in zip(list(plans.values()), list(plans.values())[1:], strict=False)]
    return True if True in got else None if None in got else False


def plain(sql: str) -> str:
    """The query as written, without a trailing ``;`` or FORMAT clause (the checks ask for
    their own format); text that cannot be read (an unterminated quote) as it is."""
    body = sql.strip().rstrip(";").rstrip()
    try:
        masked = strip_comments_and_strings(body, keep_strings=False)
    except UsageError:
        return body
    m = _FORMAT.search(masked)
    return body[: m.start()].rstrip() if m else body


def answer(runner: FinishedRounds, side: SidePlan, q: Query, single: bool = False) -> dict[str, Any]:
    """{"rows", "checksum", "mode", "names", "types", "stable"[, "sample"]} or {"error": …}.

    Asked twice: some answers vary from run to run on one version (``quantiles`` samples
    and merges its threads' samples in whatever order they finish; ``any``; a LIMIT
    without ORDER BY). Such a query is asked twice more with ``max_threads = 1``, where
    thread scheduling no longer decides (measured: the built-in ``quantiles`` query varies
    in its third digit with 2 threads, not at all with one); if it still varies, its
    answer cannot be compared across versions (``stable``: false)."""
    settings, _ = query_settings(runner.base_settings(side.id, q), q.settings, runner.infos[side.id])
    return answer_of(side.target, q.sql, settings, runner.plan.timeout, single)


def answer_of(target: Target, sql: str, settings: dict[str, str], timeout: float | None,
              single: bool = False) -> dict[str, Any]:
    """One target's answer to ``sql`` (``answer`` above; also ``chbench bisect``'s)."""
    shape = analyse(sql)
    out: dict[str, Any] = {}
    for extra in ({"max_threads": "1"},) if single else ({}, {"max_threads": "1"}):
        results = []
        for _ in range(2):
            sample, got = fetch(target, plain(sql), {**settings, **extra}, "", timeout)
            if got is None:
                return {"error": sample.error}
            results.append(got)
        first, second = (checksum(r, shape) for r in results)
        out = {**first, "names": results[0].names, "types": results[0].types,
               "stable": first["checksum"] == second["checksum"]}
        if len(results[0].rows) <= SHOWN_ROWS:
            out["sample"] = results[0].rows
        if out["stable"]:
            if extra:
                out["settings"] = extra
            break
    return out


def answers_equal(a: dict[str, Any], b: dict[str, Any]) -> bool | None:
    """Same rows, checksum and column types; None when there is no answer to compare: a
    side failed, or its answer varies between two runs on the same version."""
    if "error" in a or "error" in b:
        return None
    if a["types"] != b["types"]:
        return False  # whatever the values, clients see another type
    if not (a.get("stable", True) and b.get("stable", True)):
        return None
    same = a["rows"] == b["rows"] and a["checksum"] == b["checksum"]
    if not same and a.get("mode") == "order-sensitive" and a["rows"] == b["rows"]:
        return None  # a LIMIT without a total order: either version may pick other rows
    return same


def explain(target: Target, sql: str) -> dict[str, Any]:
    """EXPLAIN PLAN and PIPELINE as text, and their normalised fingerprints."""
    out: dict[str, Any] = {}
    for kind in ("plan", "pipeline"):
        try:
            text = "\n".join(r[0] if r else "" for r in target.query_rows(f"EXPLAIN {kind.upper()} {plain(sql)}"))
        except QueryError as e:
            out[f"{kind}_error"] = e.message
            continue
        norm = plan_steps(text) if kind == "plan" else pipeline_lines(text)
        out[kind] = text
        out[f"{kind}_normalised"] = norm
        out[f"{kind}_fingerprint"] = hashlib.blake2b("\n".join(norm).encode(), digest_size=8).hexdigest()
    return out


def plan_steps(text: str) -> list[str]:
    """The plan as its steps, by depth: names only. Versions print plans differently (26.x
    draws a tree with each step's details and no Expression steps; 24.x indents, with
    Expression steps and descriptions in parentheses), so what is compared is the shape —
    which steps, nested how — not their wording."""
    steps: list[tuple[int, str]] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        content = line.lstrip(" │└├─")
        if not content or not _STEP.match(content) or ": " in content:
            continue
        name = content.split(" (", 1)[0]
        if name == "Expression":  # a projection step: printed by some versions only
            continue
        steps.append((len(line) - len(content), name))
    depths = sorted({d for d, _ in steps})
    return [f"{depths.index(d)} {name}" for d, name in steps]


def pipeline_lines(text: str) -> list[str]:
    """The pipeline's processors with their parallelism (``× 2``), whitespace normalised."""
    return [" ".join(ln.split()) for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("(")]


def plans_changed(a: dict[str, Any], b: dict[str, Any], kind: str) -> bool | None:
    """The plan's steps (or the pipeline's processors) differ; None when either side could
    not explain the query. "plan changed" is the steps: the pipeline also changes with
    each version's generic tail (24.x ends every pipeline in ``Resize 1 → 2`` and an
    ``ExpressionTransform × 2`` that 26.x no longer adds — measured on all 43 ClickBench
    queries), so it is kept and shown, not flagged."""
    key = f"{kind}_fingerprint"
    if key not in a or key not in b:
        return None
    return bool(a[key] != b[key])


def _setting_value(v: str) -> str:
    """Settings as system.settings prints them: 24.x quotes some (\\'auto(2)\\')."""
    v = v.replace("\\'", "'")
    return v[1:-1] if len(v) >= 2 and v[0] == v[-1] == "'" else v


def settings_diff(runner: FinishedRounds) -> dict[str, Any]:
    """Settings whose default differs between the sides' versions, and who mentions them."""
    a, b = (runner.infos[s.id].settings for s in runner.plan.sides[:2])
    texts: dict[str, str] = {}
    for side in runner.plan.sides:
        for q in side.queries:
            texts[q.name] = (texts.get(q.name, "") + " " + q.sql + " " + " ".join(q.settings)).lower()
        for sql in [*side.workload.setup, *side.workload.settings]:
            texts["(set-up)"] = texts.get("(set-up)", "") + " " + sql.lower()
    changed = []
    for name in sorted(set(a) & set(b)):
        va, vb = _setting_value(a[name]), _setting_value(b[name])
        if va != vb:
            users = [q for q, t in texts.items() if re.search(rf"\b{re.escape(name.lower())}\b", t)]
            changed.append({"name": name, "a": va, "b": vb, "mentioned_by": users})
    return {"changed_defaults": changed, "only_in_a": len(set(a) - set(b)), "only_in_b": len(set(b) - set(a))}
