"""``chbench bisect`` from the range to the file: the versions between OLD and NEW (the
engine catalog, or ``--engines-from DIR``), the judge (answers or speed), the search
(``search.py``), every run kept in one results file written after each of them."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from chbench.bisect.judge import AnswerJudge, SpeedJudge
from chbench.bisect.measure import Measurer
from chbench.bisect.search import BisectSearch, BisectStep, Decision, Judge, bisect
from chbench.engines.catalog import vkey
from chbench.engines.process import EngineLost
from chbench.errors import ServerLost
from chbench.outcome import Outcome
from chbench.results import BisectDocument, ResultsWriter
from chbench.targets import Target
from chbench.workload import Workload

KINDS = ("auto", "speed", "answer")


@dataclass
class BisectOptions:
    kind: str = "auto"  # auto: answers if OLD and NEW answer differently, else speed
    threshold: float = 0.05
    first_rounds: int = 10
    max_rounds: int = 160
    warmup: int | None = None  # None: the runner's default (Plan.warmup)
    timeout: float | None = None
    settings: dict[str, str] = field(default_factory=dict)
    precision: float | None = None  # keep measuring a decided comparison to ±this
    skipped: list[str] = field(default_factory=list)  # versions in the range not measured (--installed)


@dataclass
class BisectOutcome:
    doc: BisectDocument
    search: BisectSearch | None
    outcome: Outcome
    message: str | None = None

    @property
    def exit_code(self) -> int:
        return self.outcome.exit_code


class _Told:
    """A judge whose every comparison is said on stderr and written to the file."""

    def __init__(self, judge: Judge, versions: list[str], say: Callable[[str], None], doc: BisectDocument,
                 done: Callable[[], None]):
        self.judge, self.versions, self.say, self.doc, self.done = judge, versions, say, doc, done

    def compare(self, old: int, new: int) -> BisectStep:
        step = self.judge.compare(old, new)
        # kept as made: an interrupted bisect's file holds every comparison finished
        self.doc.bisect["steps"].append(step.to_json(self.versions))
        self.doc.bisect["comparisons"] = len(self.doc.bisect["steps"])
        extra = f" ({step.detail['rounds']} rounds)" if "rounds" in step.detail else ""
        undecided = f", undecided: leaning {step.leaning.value}" if step.decision is Decision.UNKNOWN else ""
        self.say(f"  {self.versions[old]} → {self.versions[new]}: {step.detail.get('summary', '')}  "
                 f"{step.decision.value}{undecided}{extra}")
        self.done()
        return step

    def explains(self, ref: int, k: int, end: int) -> bool | None:
        return self.judge.explains(ref, k, end)


def run_bisect(versions: list[str], make_target: Callable[[str], Target], workload: Workload,
               opts: BisectOptions, out: str | None, say: Callable[[str], None]) -> BisectOutcome:
    """Bisect ``versions`` (oldest first) for the workload's one query."""
    q = workload.queries[0]
    doc = BisectDocument(versions=versions, query={"name": q.name, "sql": q.sql, "settings": {**opts.settings,
                                                                                              **q.settings},
                                                   "setup": list(workload.setup)})
    doc.bisect = {"kind": opts.kind, "old": versions[0], "new": versions[-1], "threshold": opts.threshold,
                  "found": None, "first_changed": None, "last_same": None, "steps": [], "changes": [],
                  "comparisons": 0, "notes": [], "not_installed": list(opts.skipped)}
    measurer = Measurer(versions, make_target, workload, dict(opts.settings), opts.warmup, opts.timeout)
    try:
        measurer.check_settings()  # bad input: one line, no file (as run)
    except BaseException:
        measurer.close()
        raise
    writer = ResultsWriter(out, doc)
    measurer.on_run = lambda: _keep(doc, measurer, None, writer)
    search: BisectSearch | None = None
    with writer:
        try:
            kind = opts.kind
            answers = AnswerJudge(measurer.answer)
            if kind == "auto":
                ends = answers.compare(0, len(versions) - 1)
                kind = "answer" if ends.decision is Decision.CHANGED else "speed"
                say(f"{versions[0]} and {versions[-1]}: {ends.detail['summary']} → bisecting the "
                    f"{'answer' if kind == 'answer' else 'speed'}")
            doc.bisect["kind"] = kind
            judge: Judge = answers if kind == "answer" else SpeedJudge(measurer, opts.threshold, opts.first_rounds,
                                                                         opts.max_rounds, opts.precision)
            told = _Told(judge, versions, say, doc, lambda: _keep(doc, measurer, None, writer))
            search = bisect(len(versions), told)
            _keep(doc, measurer, search, writer)
        except (KeyboardInterrupt, ServerLost, EngineLost) as e:
            stop = Outcome.of(type(e))
            why = "interrupted" if stop is Outcome.INTERRUPTED else f"an engine was lost: {e}"
            writer.finish(stop, why)
            return BisectOutcome(doc, search, stop, why)
        finally:
            measurer.close()
        writer.finish(Outcome.COMPLETE)
    return BisectOutcome(doc, search, Outcome.COMPLETE if search and search.found else Outcome.FINDING)


def _keep(doc: BisectDocument, measurer: Measurer, search: BisectSearch | None, writer: ResultsWriter) -> None:
    doc.runs = measurer.runs
    if search is not None:
        doc.bisect.update(summarize(search, doc.versions, doc.bisect["not_installed"]))
    writer.checkpoint(force=True)


def summarize(s: BisectSearch, versions: list[str], skipped: Sequence[str] = ()) -> dict[str, Any]:
    """The ``bisect`` object's findings (the contract's keys). ``skipped``: versions of the
    range left out (``--installed``), named where a found step spans them."""
    first = s.changes[0] if s.changes else None
    notes: list[str] = []
    changes = [c.to_json(versions) for c in s.changes]
    for c, js in zip(s.changes, changes, strict=True):
        lo, hi = sorted((vkey(versions[c.last_same]), vkey(versions[c.first_changed])))
        inside = [v for v in skipped if lo < vkey(v) < hi]
        if inside:
            js["not_installed_between"] = inside
            notes.append(f"{versions[c.last_same]} → {versions[c.first_changed]} spans {', '.join(inside)}, not "
                         f"installed: the change came with one of them or with {versions[c.first_changed]}; "
                         "without --installed the search narrows it")
    for c in s.changes:
        if c.step.decision is Decision.UNKNOWN:
            notes.append(f"{versions[c.last_same]} → {versions[c.first_changed]} stayed undecided after "
                         f"{c.step.detail.get('rounds', '?')} rounds (--max-rounds): the search followed its "
                         f"estimate, leaning {c.step.leaning.value}; more rounds decide it")
        elif not c.confirmed:
            notes.append(f"no single step at {versions[c.last_same]} → {versions[c.first_changed]}: the two adjacent "
                         f"versions measured alike, yet {versions[c.first_changed]} differs from the versions before "
                         "— the change builds up over several versions (chbench trend shows each)")
    if len(s.changes) > 1:
        notes.append(f"the range holds {len(s.changes)} changes, not one: "
                     + "; ".join(f"{versions[c.last_same]} → {versions[c.first_changed]}" for c in s.changes))
    if not s.found:
        notes.append(f"{versions[0]} and {versions[-1]} alike: no change to find (a change that reverts within the "
                     "range is not seen: chbench trend shows every version)")
    undecided = [st for st in s.steps if st.decision is Decision.UNKNOWN]
    if s.steps and s.steps[0].decision is Decision.UNKNOWN:
        notes.append(f"{versions[0]} against {versions[-1]} stayed undecided: whether the range holds a change at all "
                     f"is a lean ({s.steps[0].leaning.value}), not a finding")
    tried = sorted({i for st in s.steps for i in (st.old, st.new)})
    sized = [c for c in s.changes if c.step.detail.get("ratio")]
    largest = max(sized, key=lambda c: abs(math.log(c.step.detail["ratio"])), default=None)
    return {"found": s.found, "first_changed": versions[first.first_changed] if first else None,
            "last_same": versions[first.last_same] if first else None,
            "steps": [st.to_json(versions) for st in s.steps], "changes": changes,
            "largest": largest.to_json(versions) if largest is not None and len(s.changes) > 1 else None,
            "comparisons": len(s.steps), "undecided": len(undecided), "versions_tried": [versions[i] for i in tried],
            "notes": notes}
