"""The bisect search and its judges, through a simulated chain of versions (no engine:
the search is pure; tests/test_bisect_cli.py runs real engines)."""

from __future__ import annotations

import math

import numpy as np

from chbench.bisect.judge import AnswerJudge, SpeedJudge, decide
from chbench.bisect.search import Decision, bisect


def chain(levels: list[float], sd: float = 0.02, seed: int = 1) -> SpeedJudge:
    """A judge over versions whose true times are ``levels``; each round's log ratio is
    the true one plus normal noise."""
    rng = np.random.default_rng(seed)

    def measure(old: int, new: int, rounds: int) -> list[float]:
        return list(math.log(levels[new] / levels[old]) + rng.normal(0, sd, rounds))

    return SpeedJudge(measure, threshold=0.05, first_rounds=10, max_rounds=80)


def test_three_valued_decision_at_half_the_threshold():
    h = math.log1p(0.025)
    assert decide(0.03, 0.07, h) is Decision.CHANGED
    assert decide(-0.07, -0.03, h) is Decision.CHANGED
    assert decide(-0.01, 0.01, h) is Decision.SAME
    assert decide(0.0, 0.05, h) is Decision.UNKNOWN


def test_one_step_is_found_with_log2_comparisons():
    levels = [1.0] * 40 + [1.05] * 24
    s = bisect(64, chain(levels))
    assert s.found and len(s.changes) == 1
    c = s.changes[0]
    assert (c.last_same, c.first_changed) == (39, 40) and c.confirmed
    lo, hi = c.step.detail["ci"]
    assert lo < 1.05 < hi
    assert len(s.steps) <= 9  # OLD vs NEW, six halvings, the adjacent step


def test_two_steps_are_both_reported():
    levels = [1.0] * 10 + [1.05] * 30 + [1.1025] * 24
    s = bisect(64, chain(levels, seed=3))
    assert [(c.last_same, c.first_changed) for c in s.changes] == [(9, 10), (39, 40)]


def test_no_change_between_the_ends():
    s = bisect(16, chain([1.0] * 16))
    assert not s.found and s.changes == [] and len(s.steps) == 1


def test_undecided_comparison_leans_by_its_estimate_and_says_so():
    judge = chain([1.0, 1.025], sd=0.05)  # exactly half the threshold, noisy: never known
    judge.max_rounds = 20
    step = judge.compare(0, 1)
    assert step.decision is Decision.UNKNOWN and step.detail["rounds"] == 20
    assert step.leaning in (Decision.CHANGED, Decision.SAME)


def test_answers_bisect_exactly_and_once_per_version():
    asked: list[int] = []
    types = ["UInt8"] * 5 + ["Int16"] * 4

    def answer(i: int) -> dict:
        asked.append(i)
        return {"rows": 1, "checksum": "x", "types": [types[i]], "stable": True}

    s = bisect(9, AnswerJudge(answer))
    assert s.found and [(c.last_same, c.first_changed) for c in s.changes] == [(4, 5)]
    assert len(asked) == len(set(asked))  # each version asked once
    assert "UInt8 → Int16" in s.changes[0].step.detail["summary"]


def test_answer_that_changes_twice_reports_both():
    types = ["A"] * 3 + ["B"] * 3 + ["C"] * 3
    s = bisect(9, AnswerJudge(lambda i: {"rows": 1, "checksum": "x", "types": [types[i]], "stable": True}))
    assert [(c.last_same, c.first_changed) for c in s.changes] == [(2, 3), (5, 6)]


def test_a_query_that_starts_failing_is_an_answer_change():
    def answer(i: int) -> dict:
        return {"error": "Unknown function"} if i < 3 else {"rows": 1, "checksum": "x", "types": ["UInt8"]}

    s = bisect(6, AnswerJudge(answer))
    assert [(c.last_same, c.first_changed) for c in s.changes] == [(2, 3)]
    assert "error" in s.changes[0].step.detail["summary"]


def test_a_step_over_versions_not_installed_names_them():
    """``--installed`` leaves versions out of the range: a step found between two
    installed versions is named as spanning them, in the change and its headline."""
    from chbench.bisect.driver import summarize
    from chbench.report.bisect import headline

    versions = ["24.8.4.1", "25.5.2.1", "26.1.2.1", "26.9.2.1"]
    s = bisect(4, chain([1.0, 1.0, 1.0, 1.2]))
    out = summarize(s, versions, ["25.8.2.1", "26.3.9.1", "26.7.2.1"])
    (change,) = out["changes"]
    assert (change["last_same"], change["first_changed"]) == ("26.1.2.1", "26.9.2.1")
    assert change["not_installed_between"] == ["26.3.9.1", "26.7.2.1"]  # not 25.8: it is outside the step
    assert "spans 26.3.9.1, 26.7.2.1, not installed: the change came with one of them or with 26.9.2.1" \
        in " ".join(out["notes"])
    assert "(spans 26.3.9.1, 26.7.2.1, not installed)" in headline({**out, "found": True})
    assert "not_installed_between" not in summarize(s, versions)["changes"][0]


def test_the_measurer_warms_up_past_the_jit_once_per_version():
    """A version's engine lives through the search: its first run goes past the JIT's
    compile (4 warm-up runs on today's defaults); later runs of versions measured before
    need one. An explicit --warmup is kept for every run."""
    from chbench.bisect.measure import Measurer
    from chbench.targets.fake import FakeTarget
    from chbench.workload import Query, Workload

    jit = {"readonly": "0", "compile_expressions": "1", "min_count_to_compile_expression": "3"}
    wl = Workload(queries=[Query("q", "SELECT 1")], source="test")

    def warmups(run: dict) -> dict[str, int]:
        out: dict[str, int] = {}
        for s in run["run"]["queries"][0]["samples"]:
            out[s["target"]] = out.get(s["target"], 0) + bool(s["warmup"])
        return out

    m = Measurer(["1", "2", "3"], lambda v: FakeTarget(settings=dict(jit)), wl)
    assert len(m(0, 2, 3)) == 3 and len(m(0, 2, 3)) == 3 and len(m(0, 1, 3)) == 3
    assert [warmups(r) for r in m.runs] == [{"A": 4, "B": 4}, {"A": 1, "B": 1}, {"A": 4, "B": 4}]
    m = Measurer(["1", "2"], lambda v: FakeTarget(settings=dict(jit)), wl, warmup=2)
    m(0, 1, 3)
    m(0, 1, 3)
    assert [warmups(r) for r in m.runs] == [{"A": 2, "B": 2}, {"A": 2, "B": 2}]


def test_a_setting_neither_end_knows_is_refused_before_anything_runs(tmp_path):
    """``--setting max_thread=1`` (a typo) was silently not sent: the bisect measured the
    default. Now one line, no file, nothing sent; a setting only NEW knows is no typo."""
    import pytest

    from chbench.bisect.driver import BisectOptions, run_bisect
    from chbench.errors import UsageError
    from chbench.targets.fake import FakeTarget
    from chbench.workload import load_workload

    made: dict[str, FakeTarget] = {}

    def make(v: str) -> FakeTarget:
        known = {"readonly": "0", "max_threads": "2", **({"new_thing": "0"} if v == "26.9" else {})}
        made[v] = FakeTarget(version=v, settings=known)
        return made[v]

    wl = load_workload([], ["SELECT 1"])
    out = tmp_path / "b.json"
    with pytest.raises(UsageError, match="unknown setting max_thread .*did you mean max_threads"):
        run_bisect(["26.1", "26.5", "26.9"], make, wl, BisectOptions(settings={"max_thread": "1"}), str(out),
                   lambda _: None)
    assert not out.exists()
    assert all(not t.calls for t in made.values())
    assert all(t.closed for t in made.values())
    made.clear()
    done = run_bisect(["26.1", "26.9"], make, wl, BisectOptions(kind="answer", settings={"new_thing": "1"}),
                      str(out), lambda _: None)
    assert out.exists() and done.doc.bisect["comparisons"] == 1


def test_a_search_on_undecided_comparisons_says_it_leaned_not_found():
    """Every comparison at its --max-rounds: the headline said 'first change: … (not
    confirmed)' and a note that the adjacent versions 'measured alike' — they were never
    decided either way."""
    from chbench.bisect.driver import summarize
    from chbench.report.bisect import headline

    judge = chain([1.0, 1.0, 1.04], sd=0.08, seed=2)
    judge.max_rounds = 10
    s = bisect(3, judge)
    assert s.steps[0].decision is Decision.UNKNOWN and s.found  # the search follows the lean
    b = {"old": "1", "new": "3", **summarize(s, ["1", "2", "3"])}
    assert b["undecided"] == sum(st.decision is Decision.UNKNOWN for st in s.steps) >= 1
    assert headline(b).startswith("undecided, leaning changed — ")
    assert any("stayed undecided: whether the range holds a change at all is a lean" in n for n in b["notes"])
    assert b["changes"] and all(c["undecided"] for c in b["changes"]) and "(undecided: leaning)" in headline(b)
    assert not any("measured alike" in n for n in b["notes"])
