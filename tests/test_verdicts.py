"""Issue 24's statistics, without an engine: the paired analysis of side-by-side runs,
round factors of separate runs, the typed verdict core and its JSON, the short reasons
and findings, and the noise simulator's false-alarm rates and power."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats as sps

from bench.sim_verdicts import NoiseModel, false_alarms, fit, power, separate, side_by_side
from chbench.compare.document import ComparisonDoc
from chbench.compare.findings import findings
from chbench.export import get_exporter
from chbench.export.sections import Report
from chbench.stats.compare import Options, SideData, compare_queries
from chbench.stats.paired import Pairs, analyse, hl_interval, pair_up, signed_rank_lower
from chbench.stats.rounds import round_factors, take_out
from chbench.stats.verdict import QueryComparison


# -- the signed-rank interval -------------------------------------------------------------------
def _with_t(n: int, t: int) -> np.ndarray:
    """n values with ranks 1..n whose negative ranks sum to t."""
    neg, left = set(), t
    for r in range(n, 0, -1):
        if r <= left:
            neg.add(r)
            left -= r
    return np.array([-r if r in neg else r for r in range(1, n + 1)], dtype=float)


@pytest.mark.parametrize("n", [6, 8, 10, 15, 20, 30, 45])
def test_critical_value_matches_scipys_exact_signed_rank_test(n):
    c = signed_rank_lower(n)
    # P(T <= c) <= 2.5% < P(T <= c + 1): scipy's exact two-sided p is twice the tail
    assert sps.wilcoxon(_with_t(n, c), method="exact").pvalue / 2 <= 0.025
    assert sps.wilcoxon(_with_t(n, c + 1), method="exact").pvalue / 2 > 0.025


@pytest.mark.parametrize("n", [61, 100, 160])
@pytest.mark.parametrize("conf", [0.95, 0.99])
def test_many_pairs_use_the_normal_approximation_at_the_level_asked(n, conf):
    """Past EXACT_MAX pairs the critical value comes from the normal approximation. It
    used 1.96 whatever ``conf`` was, so bisect's 99% intervals (up to 160 rounds a step)
    were 95% ones from 61 rounds on. Against scipy's exact test: at most a few ranks off,
    and never on the narrow side."""
    c = signed_rank_lower(n, conf)
    tail = (1 - conf) / 2
    assert sps.wilcoxon(_with_t(n, c), method="exact").pvalue / 2 <= tail
    assert sps.wilcoxon(_with_t(n, c + 6), method="exact").pvalue / 2 > tail


def test_walsh_order_statistics_by_counting_match_them_built():
    """Above MATERIALISE_MAX values the Walsh averages are counted, not built: the same
    order statistics as building and sorting all n(n+1)/2 of them."""
    from chbench.stats.paired import MATERIALISE_MAX, walsh_order_stats

    rng = np.random.default_rng(11)
    for n in (MATERIALISE_MAX + 1, 450):
        d = np.round(rng.standard_t(3, n) * 0.05, 4)  # rounded: ties among the averages too
        i, j = np.triu_indices(n)
        built = np.sort((d[i] + d[j]) / 2)
        ranks = [0, 17, len(built) // 2, len(built) - 1]
        assert walsh_order_stats(d, ranks) == pytest.approx([float(built[k]) for k in ranks], abs=1e-12)


def test_too_few_pairs_give_no_finite_interval():
    assert signed_rank_lower(5) == -1  # even T = 0 has probability 1/32 > 2.5%
    assert hl_interval([0.1, 0.2, 0.3, 0.1, 0.2])[1] == -math.inf


def test_hodges_lehmann_interval_covers_the_centre_at_its_level():
    rng = np.random.default_rng(3)
    covered = 0
    for _ in range(400):
        d = rng.standard_t(4, 15) * 0.03 + 0.05  # heavy tails, centre +5%
        _, lo, hi = hl_interval(d)
        covered += lo <= 0.05 <= hi
    assert 0.92 * 400 <= covered <= 0.99 * 400


# -- paired comparison of side-by-side runs -----------------------------------------------------------
def test_side_by_side_pairs_see_through_shared_drift():
    """Each round's drift is shared by A and B: pooled, every query is unstable; paired,
    the +10% is found and A/A stays unflagged."""
    model = replace(NoiseModel(), jitter=(0.01,), drift_sd=0.15, drift_phi=0.98, outlier_rate=0.0)
    a, b = side_by_side(model, seed=5, change=1.10)
    res = compare_queries(list(a), a, b, Options(paired=True))
    assert [q.verdict for q in res.queries] == ["slower"] * 10
    assert all(q.unpaired is not None and q.unpaired.verdict != "slower" for q in res.queries)
    for q in res.queries:
        assert q.ci is not None and q.ci[0] < 1.10 < q.ci[1]
    a, b = side_by_side(model, seed=6)
    res = compare_queries(list(a), a, b, Options(paired=True))
    assert not any(q.flagged for q in res.queries)
    assert sum(q.verdict == "no change" for q in res.queries) >= 8


def test_paired_json_keeps_todays_keys_and_the_unpaired_result():
    a, b = side_by_side(NoiseModel(), seed=7, change=1.2, changed=(0,))
    doc = compare_queries(list(a), a, b, Options(paired=True)).to_json()
    row = doc["queries"][0]
    for key in ("name", "verdict", "ratio", "ci", "p_value", "p_adjusted", "a", "b", "flags", "reasons", "reasoning"):
        assert key in row
    assert row["verdict"] == "slower" and row["paired"]["pairs"] == 15
    assert set(row["unpaired"]) == {"verdict", "ratio", "ci", "p_value", "p_adjusted", "reasoning"}
    assert doc["summary"]["paired"] == 10 and doc["summary"]["verdicts"]["slower"] >= 1


def test_rounds_where_a_side_failed_are_left_out_and_too_few_pairs_fall_back():
    a, b = side_by_side(NoiseModel(), seed=8)
    for d in (b["q0"],):  # B failed in rounds 0..5 of q0: those runs have no pair
        del d.times[:6], d.keys[:6], d.client_times[:6]
        d.errors = 6
    for d in (b["q1"],):  # B has only 4 rounds of q1
        del d.times[4:], d.keys[4:], d.client_times[4:]
    res = compare_queries(list(a), a, b, Options(paired=True))
    q0, q1 = res.queries[0], res.queries[1]
    assert q0.paired is not None and q0.paired.pairs == 9 and q0.paired.unpaired_a == 6
    assert q1.paired is None and any("judged unpaired" in f for f in q1.flags)


def test_five_rounds_a_side_are_judged_pooled_as_no_paired_verdict_is_possible():
    """A slow query stopped at its budget after 5 rounds: paired, even ×20 in every round
    could not be decided (smallest signed-rank p 0.0625); pooled it is slower. Six rounds:
    paired, and slower when it is the only query."""
    a, b = side_by_side(NoiseModel(), seed=11, change=20.0, changed=(0,))
    a, b = {"q0": a["q0"]}, {"q0": b["q0"]}
    for side in (a, b):
        for d in side.values():
            del d.times[6:], d.keys[6:], d.client_times[6:]
    six = compare_queries(list(a), a, b, Options(paired=True)).queries[0]
    assert six.paired is not None and six.paired.pairs == 6 and six.verdict == "slower"
    for side in (a, b):
        for d in side.values():
            del d.times[5:], d.keys[5:], d.client_times[5:]
    five = compare_queries(list(a), a, b, Options(paired=True)).queries[0]
    assert five.paired is None and any("judged unpaired" in f for f in five.flags)
    assert five.verdict == "slower" and five.ci is not None and math.isfinite(five.ci[1])


def test_an_order_effect_is_taken_out():
    rng = np.random.default_rng(9)
    keys = [(0, r) for r in range(20)]
    # B runs second in even rounds: 6% faster there from A's warm caches; no real change
    d = np.array([(-0.06 if r % 2 == 0 else 0.0) + rng.normal(0, 0.004) for r in range(20)])
    a = [(k, 100.0) for k in keys]
    b = [(k, 100.0 * math.exp(x)) for k, x in zip(keys, d, strict=True)]
    res = analyse(pair_up(a, b))
    assert res.order_effect is not None and res.order_effect == pytest.approx(-0.03, abs=0.005)
    assert res.log_hi - res.log_lo < 0.02  # the order component no longer widens the interval
    assert res.log_lo < -0.03 < res.log_hi  # centred on the average of the two orders


def test_pairs_match_by_session_and_round():
    a = [((0, 0), 100.0), ((0, 1), 100.0), ((1, 0), 100.0)]
    b = [((0, 1), 110.0), ((1, 0), 121.0), ((2, 0), 90.0)]
    p = pair_up(a, b)
    assert isinstance(p, Pairs) and len(p) == 2 and p.unpaired_a == 1 and p.unpaired_b == 1
    assert list(np.round(np.exp(p.d), 3)) == [1.1, 1.21] and list(p.a_first) == [False, True]


# -- separate runs: round factors ---------------------------------------------------------------------
def _separate_side(rng: np.random.Generator, drift: np.ndarray, change: dict[int, float]) -> dict[str, SideData]:
    out = {}
    for q in range(10):
        d = SideData()
        for r, level in enumerate(drift):
            t = 100.0 * (q + 1) * math.exp(level + rng.normal(0, 0.01)) * change.get(q, 1.0)
            d.times.append(t)
            d.keys.append((0, r))
        out[f"q{q}"] = d
    return out


def test_round_factors_take_out_the_machine_but_keep_a_change():
    rng = np.random.default_rng(11)
    drift = rng.normal(0, 0.10, 20)  # the machine moves ±10% from round to round
    side = _separate_side(rng, drift, {3: 1.2})
    done = round_factors({n: d.keyed() for n, d in side.items()})
    assert done is not None
    adjusted, factors = done
    assert factors.spread == pytest.approx(float(np.std(drift)), rel=0.2)
    for name, d in side.items():
        raw = np.std(np.log(d.times))
        assert np.std(np.log(adjusted[name])) < raw / 3  # the shared drift is gone
    # a change of one query and a level all queries share stay in the data
    assert np.median(adjusted["q3"]) / np.median(side["q3"].times) == pytest.approx(1.0, abs=0.03)


def test_round_factors_spread_is_the_machines_within_sessions():
    """Three sessions whose machine levels stand 20% apart, ±2% from round to round within
    each: the spread is the round-to-round one, not the steps between sessions."""
    rng = np.random.default_rng(12)
    side = {f"q{q}": SideData() for q in range(8)}
    for session, level in enumerate((0.0, 0.2, -0.2)):
        drift = level + rng.normal(0, 0.02, 10)
        for q, d in enumerate(side.values()):
            for r in range(10):
                d.times.append(100 * (q + 1) * math.exp(drift[r] + rng.normal(0, 0.005)))
                d.keys.append((session, r))
    done = round_factors({n: d.keyed() for n, d in side.items()})
    assert done is not None and done[1].spread == pytest.approx(0.02, rel=0.35)


def test_round_factors_need_interleaved_rounds():
    side = {f"q{q}": SideData(times=[1.0, 2.0], keys=[(0, q), (0, q + 10)]) for q in range(5)}
    assert round_factors({n: d.keyed() for n, d in side.items()}) is None


def test_round_factors_count_the_times_in_full_rounds_not_the_rounds():
    """An adaptive run: ten queries in 6 full rounds, then 8 that stop, and one query alone
    for 14 more rounds — most rounds hold one query, most times a full round. The machine
    is taken out (a median over the rounds left such a side as measured while the other
    side of the pair had its factors, 2026-12-07); with most times in rounds of one, not."""
    rng = np.random.default_rng(13)
    drift = rng.normal(0, 0.05, 20)
    side = {f"q{q}": SideData() for q in range(10)}
    for q, d in enumerate(side.values()):
        for r in range(20 if q == 0 else 6):
            d.times.append(100 * (q + 1) * math.exp(drift[r] + rng.normal(0, 0.005)))
            d.keys.append((0, r))
    done = round_factors({n: d.keyed() for n, d in side.items()})
    assert done is not None and len(done[1].factors) == 6  # 60 of the 74 times (81%) in full rounds
    assert np.std(np.log(done[0]["q5"])) < np.std(np.log(side["q5"].times)) / 3
    lone = {n: SideData(times=d.times[:6] + d.times[6:] * 10, keys=d.keys[:6] + [(0, 100 + k) for k in range(140)])
            if n == "q0" else d for n, d in side.items()}
    assert round_factors({n: d.keyed() for n, d in lone.items()}) is None  # 60 of 200 times in full rounds


# -- the typed core: short reasons and findings -----------------------------------------------------
def test_console_table_gives_one_short_reason_and_findings_below():
    a, b = side_by_side(NoiseModel(), seed=12, change=1.15, changed=(2,))
    doc = ComparisonDoc(compare_queries(list(a), a, b, Options(paired=True)), a_label="A", b_label="B",
                        files=["ab.json"])
    doc.findings = findings(doc, separate=False)
    from chbench.compare import Comparison, Side
    from chbench.report.comparison import comparison_section

    text = get_exporter("markdown").render(Report("", [comparison_section(Comparison(doc, Side("A"), Side("B")),
                                                                          charts=False)], [], data={}))
    rows = [line for line in text.splitlines() if line[:3] == "| q" and line[3].isdigit()]
    assert len(rows) == 10
    assert all(len(line.split("|")[-2].strip()) <= 45 for line in rows), rows
    assert "Finding: judged on paired rounds" in text
    verbose = get_exporter("markdown").render(Report("", [comparison_section(
        Comparison(doc, Side("A"), Side("B")), charts=False, verbose=True)], [], data={}))
    assert "paired rounds, p adj." in verbose


def test_every_verdict_has_a_short_reason():
    a, b = side_by_side(NoiseModel(), seed=13, change=1.3, changed=(0,))
    b["q1"].times = b["q1"].times[:3]  # too few runs
    b["q1"].keys = b["q1"].keys[:3]
    res = compare_queries(list(a), a, b, Options(paired=True))
    assert all(isinstance(q, QueryComparison) and q.reason for q in res.queries)
    assert res.queries[1].verdict == "unstable" and res.queries[1].reason == "too few runs"


# -- the noise simulator ----------------------------------------------------------------------------
def test_simulator_fit_recovers_its_own_numbers():
    model = replace(NoiseModel(), jitter=(0.04,), drift_sd=0.05, drift_phi=0.995, outlier_rate=0.0, rounds=40)
    a, _ = side_by_side(model, seed=14)
    table = np.array([d.times for d in a.values()])
    got = fit(table)
    assert float(np.median(got.jitter)) == pytest.approx(0.04, rel=0.25)
    assert 0.02 < got.drift_sd < 0.09


def test_simulated_false_alarms_and_power_side_by_side():
    """A/A side by side at the default settings: false alarms per query well under 1%,
    most verdicts definite; +10% on three queries found most of the time."""
    aa = false_alarms(NoiseModel(), "side-by-side", docs=150)
    assert aa["comparisons"] == 1500 and aa["rate"] <= 0.01
    assert aa["no_change_share"] >= 0.4
    pw = power(NoiseModel(), "side-by-side", docs=30, change=1.10)
    assert pw["power"] >= 0.5 and pw["false_alarms_elsewhere"] <= 2


def test_simulated_false_alarms_separate_runs():
    aa = false_alarms(NoiseModel(), "separate", docs=100)
    assert aa["rate"] <= 0.02
    bursts = false_alarms(replace(NoiseModel(), burst_rate=0.4), "separate", docs=100)
    assert bursts["rate"] <= 0.02


def _separate_pair(n_queries: int, jitter: float, seed: int, moved: dict[int, float] | None = None,
                   ) -> tuple[dict[str, SideData], dict[str, SideData]]:
    """Two separate runs whose medians agree to within their own noise: each run's 15
    times of a query are drawn alike (``jitter``, log sd); ``moved`` multiplies B's."""
    rng = np.random.default_rng(seed)
    a, b = {}, {}
    for q in range(n_queries):
        keys = [(0, r) for r in range(15)]
        a[f"q{q}"] = SideData(times=list(100 * np.exp(rng.normal(0, jitter, 15))), keys=keys)
        b[f"q{q}"] = SideData(times=list(100 * (moved or {}).get(q, 1.0) * np.exp(rng.normal(0, jitter, 15))),
                              keys=keys)
    return a, b


def test_separate_runs_measure_the_between_run_spread_from_the_queries_scatter():
    """Ten queries, each run spreading ~3%, whose ratios agree as well as their own noise
    allows: the queries' scatter is the between-run spread these runs showed. The guess
    (0.8 x the runs' spread) left all but one or two `unstable`; measured (Student's t over
    the queries), 7 are `no change` — the other two `unstable` only because their 90%
    intervals reach just past ±5% (+2.6% [-0.8%, +6.1%] and -2.2% [-4.8%, +0.4%]: the
    equivalence test) — and a query that moved +15% stands out as `slower`."""
    a, b = _separate_pair(10, 0.03, seed=8, moved={3: 1.15})
    guessed = compare_queries(list(a), a, b, Options(between_run=0.8)).queries
    measured = compare_queries(list(a), a, b, Options(between_run=0.8, measure_between=True)).queries
    assert sum(r.verdict == "no change" for r in guessed) <= 2
    assert measured[3].verdict == "slower"
    assert sum(r.verdict == "no change" for r in measured) == 7
    for r in measured:
        if r.verdict == "unstable":
            assert r.equivalence_ci is not None and r.reasons[-1].startswith("90% interval reaches")
            assert max(r.equivalence_ci[1], 1 / r.equivalence_ci[0]) < 1.07  # just past ±5%, not far
        if r.verdict == "no change":  # its 90% interval within ±5%, inside the 95% one
            assert r.ci is not None and r.equivalence_ci is not None
            assert r.ci[0] < r.equivalence_ci[0] and 1 / 1.05 < r.equivalence_ci[0] < r.equivalence_ci[1] < 1.05
            assert r.equivalence_ci[1] < r.ci[1]
    assert not any(r.verdict in ("slower", "faster") for i, r in enumerate(measured) if i != 3)
    quiet = measured[0]
    assert quiet.between_run is not None and quiet.between_run.source == "queries' scatter"
    # the interval is Student's t with (queries kept - 1) degrees of freedom on the scatter
    own = max(r.between_run.sd for r in measured if r.between_run is not None)
    assert quiet.between_run.half <= sps.t.ppf(0.975, 8) * own + 1e-12


def _sessions_pair(seed: int) -> tuple[dict[str, SideData], dict[str, SideData], dict]:
    """Simulated separate runs of three sessions per side at half the fitted noise, with
    the round factors taken out as compare does (compare/sides.py)."""
    m = NoiseModel()
    half = replace(m, jitter=tuple(j / 2 for j in m.jitter), drift_sd=m.drift_sd / 2)
    a, b, machine = separate(half, seed, sessions=3)
    take_out(a)
    take_out(b)
    return a, b, machine


def test_findings_tell_the_machines_uneven_effect_from_noise_and_do_not_suggest_what_was_done():
    a, b, machine = _sessions_pair(0)
    doc = ComparisonDoc(compare_queries(list(a), a, b, Options(between_run=0.8), machine), a_label="A",
                        b_label="B", files=["a.json"], vs=["b.json"])
    q0, q1 = doc.queries[0], doc.queries[1]
    q0.verdict, q0.reasons = "unstable", ["moved -3.6% against the rest …: not told apart from the machine's "
                                           "uneven effect (needs beyond ±13%)"]
    q1.verdict, q1.reasons = "unstable", ["interval wider than ±5%"]
    lines = findings(doc, separate=True)
    assert any(line.startswith("1 query moved unlike the rest") and "(q0)" in line for line in lines), lines
    noise = next(line for line in lines if "unstable: noise wider" in line)
    assert "--sessions" not in noise  # these runs have sessions already
    # a drift or two groups of run times is not noise more rounds narrow (a side-by-side A/A of
    # the perf tests here: one query's B/A drifted, and the finding said "more rounds narrow it")
    q1.reasons = ["B/A drifting over the run (+6% from first to last round)", "interval wider than ±5%"]
    doc.queries[2].verdict, doc.queries[2].reasons = "unstable", ["bimodal run times"]
    lines = findings(doc, separate=True)
    rest = [q for q in doc.queries if q.verdict == "unstable" and q not in (q0, q1, doc.queries[2])]
    noise = [line for line in lines if "noise wider" in line]  # only the others this seed left unstable
    assert len(noise) == (1 if rest else 0) and all(n.startswith(f"{len(rest)} quer") for n in noise), lines
    assert any(line.startswith("1 query unstable: their times drifted") and "(q1)" in line
               and "more rounds of the same do not settle" in line for line in lines), lines
    assert any(line.startswith("1 query unstable: their run times fell into two groups (q2)") for line in lines)


def test_simulated_false_alarms_sessions():
    aa = false_alarms(NoiseModel(), "separate", docs=40, sessions=3)
    assert aa["rate"] <= 0.02


def test_sessions_machine_levels_are_added_back():
    """Sessions whose machine levels stood 5% apart (sd; 0.9–6.2% in real files), unseen by the
    probes. The round factors take each session's level out of every query, so the level
    all queries share must carry how far those levels moved: without it 2.8% of simulated
    A/A queries were flagged (200 comparisons) and a real A/A pair 5% apart was called a
    global change of the engine."""
    loud = replace(NoiseModel(), run_offset=0.05)
    assert false_alarms(loud, "separate", docs=60, probes=False, sessions=3)["rate"] <= 0.01
    a, b, machine = separate(loud, seed=3, sessions=3)
    take_out(a)
    take_out(b)
    result = compare_queries(list(a), a, b, Options(between_run=0.8, measure_between=True), machine)
    levels = result.summary.session_levels
    assert levels is not None and levels["sessions"] == [3, 3] and levels["df"] == 4
    assert 0.01 < levels["sd"] < 0.15 and levels["half"] > 2 * levels["se"]
    assert all(r.between_run is not None and "machine levels" in r.between_run.source for r in result.queries)
    assert result.summary.geomean.ci is not None
    assert math.log(result.summary.geomean.ci[1] / result.summary.geomean.ci[0]) / 2 >= levels["half"]
    # this seed's levels stood 4.5% apart: ±10% on the shared level, every query unstable, said why
    assert result.summary.verdicts == {"unstable": 10} and levels["half"] > math.log1p(0.05)
    lines = findings(ComparisonDoc(result), separate=True)
    assert any(line.startswith("10 queries unstable: the machine's level moved") and "sessions per side" in line
               for line in lines)
    # one session per side: no levels to measure, nothing added
    a1, b1, machine1 = separate(loud, seed=3)
    take_out(a1)
    take_out(b1)
    assert compare_queries(list(a1), a1, b1, Options(between_run=0.8, measure_between=True),
                           machine1).summary.session_levels is None


def test_separate_runs_of_few_queries_fall_back_to_the_factor():
    a, b = _separate_pair(5, 0.04, seed=8)
    rows = compare_queries(list(a), a, b, Options(between_run=0.8, measure_between=True)).queries
    assert all(r.between_run is not None and r.between_run.source == "factor" for r in rows)


def test_separate_runs_scatter_measured_wide_stays_unstable():
    """Queries whose ratios scatter ±10% between two runs (their own noise says ±2%): the
    measured spread is wide, and nothing is flagged or called `no change`."""
    rng = np.random.default_rng(4)
    moved = {q: float(np.exp(rng.normal(0, 0.10))) for q in range(10)}
    a, b = _separate_pair(10, 0.02, seed=9, moved=moved)
    rows = compare_queries(list(a), a, b, Options(between_run=0.8, measure_between=True)).queries
    assert not any(r.verdict in ("slower", "faster", "no change") for r in rows)


def test_separate_runs_a_shift_within_the_threshold_makes_no_query_a_finding():
    """Every query of B -3% (a shift within ±5% the probes do not explain) and one -7%:
    against 1 it is beyond the threshold, against the shift only -4%. Between separate
    runs the shift may be either machine's; it is no finding, so it must not make one:
    `unstable`, its verdict against 1 kept in vs_one. Side by side (both sides on one
    machine) the shift is the engine's and the -7% stands."""
    moved = {q: 0.97 for q in range(10)} | {3: 0.93}
    a, b = _separate_pair(10, 0.01, seed=8, moved=moved)
    probes_saw_nothing = {"probes": {"a": {}, "b": {}}, "busier": None, "material": False, "differences": []}
    res = compare_queries(list(a), a, b, Options(between_run=0.8, measure_between=True), probes_saw_nothing)
    assert res.summary.shift is not None and res.summary.shift.verdict == "no change"
    q3 = res.queries[3]
    assert q3.verdict == "unstable" and q3.vs_one is not None and q3.vs_one.verdict == "faster"
    assert q3.reason == "beyond ±5% only with the common shift"
    assert all(r.verdict == "no change" for i, r in enumerate(res.queries) if i != 3)
    side_by_side = compare_queries(list(a), a, b, Options())
    assert side_by_side.queries[3].verdict == "faster"


def test_separate_runs_of_one_session_a_shift_within_two_runs_levels_is_no_engine_finding():
    """One session a side: the level all queries share moves by itself from run to run
    (sd ~2.2% measured, the reference task steady), so two A/A runs moved -5.4% together
    and 6 of 10 queries were called faster as "a global change of the engine". A shift
    whose interval, widened by two runs' levels (±6.3%), reaches 1 is now theirs or the
    engine's, not told apart: no finding, no query faster only with it counted in. A -12%
    shift stays the engine's; with sessions (their levels measured) the rule is theirs."""
    from chbench.stats.shift import RUN_LEVEL_HALF

    probes_saw_nothing = {"probes": {"a": {}, "b": {}}, "busier": None, "material": False, "differences": []}
    opts = Options(between_run=0.8, measure_between=True)
    a, b = _separate_pair(10, 0.01, seed=8, moved={q: 0.945 for q in range(10)})
    res = compare_queries(list(a), a, b, opts, probes_saw_nothing)
    shift = res.summary.shift
    assert shift is not None and shift.verdict == "faster" and shift.finding is None
    assert shift.machine_may is not None and "two runs' levels" in shift.machine_may and shift.may_by == "runs"
    assert "±6.3%" in shift.machine_may and math.expm1(RUN_LEVEL_HALF) == pytest.approx(0.063, abs=5e-4)
    assert not any(r.verdict in ("slower", "faster") for r in res.queries)
    assert "the runs' own levels may explain it" in shift.why
    a, b = _separate_pair(10, 0.01, seed=8, moved={q: 0.88 for q in range(10)})
    shift = compare_queries(list(a), a, b, opts, probes_saw_nothing).summary.shift
    assert shift is not None and shift.finding == "faster" and shift.machine_may is None


def test_separate_runs_with_nothing_known_of_the_machine_make_no_engine_finding_of_a_shift():
    """Two separate runs whose files hold neither probes nor calibration queries (one run
    with --no-probes), every query -15%: the machine's level may have moved that much
    (an A/A pair nine minutes apart here did, all -15%), so the shift is machine or
    engine, not told apart — no finding, and no query `faster` only with it counted
    in. It was "on a machine both sides shared → a global change of the engine", the
    side-by-side reading, with 6 of 10 queries `faster`. A query that moved unlike the
    rest still stands out; side by side the same files' shift stays the engine's."""
    moved = {q: 0.85 for q in range(10)} | {3: 0.70}
    a, b = _separate_pair(10, 0.01, seed=8, moved=moved)
    res = compare_queries(list(a), a, b, Options(between_run=0.8, measure_between=True, separate=True))
    shift = res.summary.shift
    assert shift is not None and shift.finding is None and shift.verdict == "faster"
    assert shift.machine_may == "the files do not both hold machine probes or calibration queries"
    assert shift.may_by == "machine" and "the machine may explain it" in shift.why
    assert "machine or engine, not told apart" in shift.why and "both sides shared" not in shift.why
    others = [r for i, r in enumerate(res.queries) if i != 3]
    assert all(r.verdict == "unstable" and r.vs_one is not None and r.vs_one.verdict == "faster" for r in others)
    assert all(r.reason == "beyond ±5% only with a shift the machine may explain" for r in others)
    assert res.queries[3].verdict == "faster"  # -30%: -18% against the shift too
    doc = ComparisonDoc(res, a_label="A", b_label="B", files=["a.json", "b.json"])
    assert any(f.startswith("9 of 10 queries -15.0% together, which the machine may explain (the files do not both")
               for f in findings(doc, separate=True))
    # a file of clickhouse-benchmark's (no between-run factor): `separate` alone says it
    plain = compare_queries(list(a), a, b, Options(separate=True)).summary.shift
    assert plain is not None and plain.finding is None and plain.machine_may is not None
    side_by_side = compare_queries(list(a), a, b, Options()).summary.shift
    assert side_by_side is not None and side_by_side.finding == "faster" and "both sides shared" in side_by_side.why


def test_a_large_change_not_shown_after_correction_is_not_no_change():
    """Six paired rounds of ten queries: q0 is +30% in every round, a narrow interval,
    but 6 rounds cannot pass Holm over 10 queries (2/2^6 = 0.031 > 0.005). It was called
    'no change'; it is 'unstable', and says why."""
    import random

    rng = random.Random(5)
    a, b = {}, {}
    for q in range(10):
        base = [100.0 * (1 + rng.uniform(-0.02, 0.02)) for _ in range(6)]
        keys = [(0, r) for r in range(6)]
        a[f"q{q}"] = SideData(times=base, keys=keys)
        b[f"q{q}"] = SideData(times=[t * (1.3 if q == 0 else 1.0) * (1 + rng.uniform(-0.01, 0.01)) for t in base],
                              keys=keys)
    res = compare_queries(list(a), a, b, Options(paired=True))
    q0 = res.queries[0]
    assert q0.ci[0] > 1.2 and q0.p_adjusted >= 0.05
    assert q0.verdict == "unstable" and q0.reason == "beyond ±5% but not shown (paired)"
    assert "not significant once corrected" in q0.reasons[0]
    assert all(q.verdict == "no change" for q in res.queries[1:])
    # the same with rounds spreading ±10%: the interval is wider than ±5% but wholly past
    # it, and what is missing is still the test's level — said so, not "noise ±14% > ±5%"
    # (seen: max_threads=1 side by side, 8 rounds, +73% [+41%, +85%], p adj. 0.078)
    b = {k: SideData(times=[t * (1.7 if k == "q0" else 1.0) * (1 + rng.uniform(-0.1, 0.1)) for t in d.times],
                     keys=d.keys) for k, d in a.items()}
    res = compare_queries(list(a), a, b, Options(paired=True))
    q0 = res.queries[0]
    assert q0.ci[0] > 1.05 and (q0.ci[1] / q0.ci[0]) ** 0.5 > 1.05 and q0.p_adjusted >= 0.05
    assert q0.verdict == "unstable" and q0.reason == "beyond ±5% but not shown (paired)", q0.reasons
    assert "not significant once corrected" in q0.reasons[0] and "paired interval wider" in q0.reasons[1]
    said = findings(ComparisonDoc(res, a_label="A", b_label="B", files=["ab.json"]), separate=False)
    assert "1 query unstable: beyond ±5%, but not significant once corrected for the other queries (q0); more " \
           "rounds (--iterations, or a longer --max-time-per-query) narrow it" in said
    assert not any("noise wider" in f and "q0" in f for f in said)


def test_too_few_runs_for_holm_is_said_and_enough_is_not():
    """5 against 5 runs: the smallest rank-sum p is 2/252 = 0.0079, above the 0.005 Holm
    needs over 10 queries — every query +90% was 'unstable' with nothing saying why.
    Separate runs whose probes saw no difference: the +90% all share is the engine's."""
    from chbench.compare.build import too_few_to_show

    rng = np.random.default_rng(5)
    probes_saw_nothing = {"probes": {"a": {}, "b": {}}, "busier": None, "material": False, "differences": []}

    def rows(n: int) -> list[QueryComparison]:
        a = {f"q{i}": SideData(times=list(100 * np.exp(rng.normal(0, 0.01, n)))) for i in range(10)}
        b = {f"q{i}": SideData(times=list(190 * np.exp(rng.normal(0, 0.01, n)))) for i in range(10)}
        return compare_queries(list(a), a, b, Options(between_run=0.8), probes_saw_nothing).queries

    five = rows(5)
    assert all(r.verdict == "unstable" for r in five)
    note = too_few_to_show(five, 0.05)
    assert note is not None and "5 / 5 runs" in note and "--iterations 6" in note
    # a replay has no --iterations: its runs are its capture's statements (seen: "measure
    # with --iterations 5 or more" under two replays of one capture)
    from chbench.compare.findings import ADVICE

    replayed = too_few_to_show(five, 0.05, ADVICE["chbench-replay"])
    assert replayed is not None and "--iterations" not in replayed
    assert replayed.endswith("measure with a capture holding 6 statements of each query or more "
                             "(a longer --since window)")
    six = rows(6)
    assert too_few_to_show(six, 0.05) is None
    assert all(r.verdict == "slower" for r in six)
    # three sessions of ~200 runs a side: C(1200, 600) is beyond a float (it raised)
    assert too_few_to_show(rows(600), 0.05) is None


def test_no_change_is_an_equivalence_a_change_not_ruled_out_is_unstable():
    """Fifteen paired rounds of ten queries. q0 moved +4% with rounds spreading ~5%: its
    interval passes neither way — not shown beyond ±5%, not shown within — so it is
    `unstable` ("+x% not ruled out"), where the half-width rule called it `no change`.
    q1 moved +4% with rounds spreading 0.5%: a real change whose 90% interval lies
    within ±5%, `no change`. The others: A/A with a 1% spread, `no change` each, their
    90% interval inside the 95% one. (Seeded: q0 is +3.8% [+0.3%, +7.3%].)"""
    rng = np.random.default_rng(15)
    a, b = {}, {}
    for q in range(10):
        base = list(100.0 * np.exp(rng.normal(0, 0.05, 15)))
        keys = [(0, r) for r in range(15)]
        move, spread = (1.04, 0.05) if q == 0 else (1.04, 0.005) if q == 1 else (1.0, 0.01)
        a[f"q{q}"] = SideData(times=base, keys=keys)
        b[f"q{q}"] = SideData(times=list(np.array(base) * move * np.exp(rng.normal(0, spread, 15))), keys=keys)
    res = compare_queries(list(a), a, b, Options(paired=True))
    q0, q1 = res.queries[0], res.queries[1]
    assert q0.ci is not None and q0.equivalence_ci is not None
    assert (q0.ci[1] - q0.ci[0]) / 2 < 0.05 and q0.ratio is not None and q0.ratio < 1.05  # the old rule's no change
    assert q0.equivalence_ci[1] > 1.05 and q0.verdict == "unstable"
    assert q0.reason is not None and q0.reason.endswith("not ruled out (paired)")
    assert q1.verdict == "no change" and q1.p_adjusted is not None and q1.p_adjusted < 0.05
    assert q1.reasoning is not None and "a real change, its 90% interval within ±5%" in q1.reasoning
    for q in res.queries[1:]:
        assert q.verdict == "no change" and q.ci is not None and q.equivalence_ci is not None
        assert q.ci[0] < q.equivalence_ci[0] <= q.equivalence_ci[1] < q.ci[1]
        assert q.equivalence_ci[0] > 1 / 1.05 and q.equivalence_ci[1] < 1.05
        assert q.to_json()["equivalence_ci"] == list(q.equivalence_ci)


def test_the_adaptive_rule_decides_as_compare_and_spends_only_time_left():
    from chbench.stats.stopping import EXTEND, TimePool, look

    rng = np.random.default_rng(4)
    noise = rng.normal(0, 0.04, 40)  # ±1.3% for the typical ratio: precise
    assert look(np.log(1.00) + noise, 0.02, 0.05).settled  # within ±5%: no change
    assert look(np.log(1.10) + noise, 0.02, 0.05).settled  # beyond: a change
    near = look(np.log(1.045) + noise, 0.02, 0.05)
    assert near.precise and not near.decided
    assert look(np.log(1.045) + noise, 0.02, None).settled  # no threshold: precision alone (the rule before)
    assert not look([0.01], 0.02, 0.05).precise
    # a clear change in 6 rounds: decided for one query, not for ten (Holm's first step
    # needs 9 rounds all one way), while 'no change' needs no such count
    six = np.log(1.30) + noise[:6] / 4
    assert look(six, 0.02, 0.05).settled and not look(six, 0.02, 0.05, tests=10).decided
    assert look(np.log(1.30) + noise[:9] / 4, 0.02, 0.05, tests=10).settled
    assert look(noise[:6] / 4, 0.02, 0.05, tests=10).settled
    pool = TimePool(10.0)
    assert not pool.may_extend("q", 10.5)  # nothing left by anybody
    pool.finished("fast", 4.0)  # left 6 s
    assert pool.may_extend("q", 12.0) and pool.may_extend("q", 15.9)
    assert not pool.may_extend("q", 16.5)  # 6.5 s beyond: more than was left
    pool.finished("slow", 1.0)  # 9 s more
    assert not pool.may_extend("q", EXTEND * 10.0)  # never past EXTEND budgets
    pool.finished("q", 19.0)
    assert pool.to_json()["queries_beyond_budget"] == {"q": 9.0}


def test_a_common_shift_within_the_threshold_says_when_its_interval_is_not():
    """All of B −4.7% [−6.4%, −2.7%]: the estimate is within ±5%, so no finding — but the
    line says the interval reaches past it, instead of a bare "within ±5%"."""
    a, b = _separate_pair(10, 0.03, seed=4, moved={q: 0.96 for q in range(10)})
    saw_nothing = {"probes": {"a": {}, "b": {}}, "busier": None, "material": False, "differences": []}
    shift = compare_queries(list(a), a, b, Options(between_run=0.8, measure_between=True), saw_nothing).summary.shift
    assert shift is not None and shift.verdict == "no change" and shift.finding is None
    assert shift.why.endswith("within ±5%, though its 95% interval reaches -6.4% (a shift that size not ruled out): "
                              "not a finding")
    a, b = _separate_pair(10, 0.01, seed=1, moved={q: 0.96 for q in range(10)})
    shift = compare_queries(list(a), a, b, Options(between_run=0.8, measure_between=True), saw_nothing).summary.shift
    assert shift is not None and shift.why.endswith("; within ±5%: not a finding")


def test_runs_merged_into_one_side_keep_their_configuration_when_they_share_it():
    """Several files of one side (compare a1.json a2.json --vs b.json) keep the server
    version they share — what explain reads across versions — and none when they differ."""
    from chbench.compare.sides import Side, merge_sides

    old = {"server_version": "18.16.1", "settings": {}}
    same = merge_sides([Side("a1", configuration=dict(old)), Side("a2", configuration=dict(old))], "A")
    assert same.configuration == old
    mixed = merge_sides([Side("a1", configuration=dict(old)),
                         Side("a2", configuration={"server_version": "26.9.2.1", "settings": {}})], "A")
    assert mixed.configuration == {}
    # a file from before run files said where the engine ran, pooled with a newer one: the
    # version they share is kept, where the engine ran is unknown
    newer = {**old, "in_process": False}
    pooled = merge_sides([Side("a1", configuration=dict(old)), Side("a2", configuration=dict(newer))], "A")
    assert pooled.configuration == old
    assert merge_sides([Side("a1", configuration=dict(newer)), Side("a2", configuration=dict(newer))],
                       "A").configuration == newer


def test_an_interval_end_past_the_threshold_is_shown_past_it_on_its_own_side():
    """The band is symmetric in ratio (+5% above, 1/1.05 = −4.76% below): "reaches -4.9%,
    beyond ±5%" and "+5.0%, beyond ±5%" read as contradictions."""
    from chbench.stats.compare import beyond

    assert beyond(0.951, 0.05).startswith("-4.9%, beyond -4.8% (") and "1/1.05" in beyond(0.951, 0.05)
    assert beyond(1.0503, 0.05) == "+5.03%, beyond +5.00%"
    assert beyond(1.2, 0.05) == "+20.0%, beyond +5.0%"
