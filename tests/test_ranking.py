"""Which client path is fastest (stats/ranking.py): pure, seeded, no engine."""

from __future__ import annotations

import numpy as np

from chbench.stats.ranking import gap, rank, rotated


def seeded_rounds(rng: np.random.Generator, speeds: dict[str, float], rounds: int) -> dict[str, list[float | None]]:
    """Each round a machine factor shared by every path (10%), and 5% noise of each path's own."""
    shared = rng.normal(0, 0.10, rounds)
    return {k: list(v * np.exp(shared + rng.normal(0, 0.05, rounds))) for k, v in speeds.items()}


def test_paths_of_equal_speed_are_rarely_told_apart():
    """The leader is chosen as the fastest, which biases each comparison its way; the
    intervals at 1 - 0.05/k keep the headline ("X is the fastest") at the 5% level."""
    rng = np.random.default_rng(7)
    for k, rounds in ((2, 3), (7, 3), (7, 5)):
        headline = anywhere = 0
        for _ in range(1500):
            r = rank(seeded_rounds(rng, {f"p{i}": 1.0 for i in range(k)}, rounds))
            assert r is not None
            headline += r.gaps[0].behind
            anywhere += any(g.behind for g in r.gaps)
        assert headline / 1500 <= 0.04, (k, rounds, headline)
        assert anywhere / 1500 <= 0.09, (k, rounds, anywhere)


def test_a_clearly_faster_path_leads_and_the_rest_are_behind():
    rng = np.random.default_rng(3)
    r = rank(seeded_rounds(rng, {"slow": 2.0, "fast": 1.0, "slower": 3.0}, 3))
    assert r is not None and r.leader == "fast"
    assert [g.other for g in r.gaps] == ["slow", "slower"] and all(g.behind for g in r.gaps)
    assert r.tied == [] and 1.6 < r.gaps[0].ratio < 2.5
    assert r.to_json()["others"][0]["path"] == "slow"


def test_pairing_takes_out_what_the_machine_did_to_a_round():
    """Round 2 ran on a machine twice as slow: both paths alike. Paired, the ratio is
    exact; the pooled times would overlap."""
    r = rank({"a": [1.0, 2.0, 1.0], "b": [1.1, 2.2, 1.1]})
    assert r is not None and r.leader == "a"
    g = r.gaps[0]
    assert abs(g.ratio - 1.1) < 1e-9 and g.ci is not None and abs(g.ci[0] - 1.1) < 1e-9 and g.behind


def test_rounds_where_one_path_failed_are_left_out_of_its_pair():
    g = gap([1.0, None, 1.0, 1.0], [2.0, 2.0, None, 2.2], "b")
    assert g is not None and g.rounds == 2
    assert gap([1.0, None], [None, 2.0]) is None


def test_one_round_gives_no_interval_and_no_claim():
    r = rank({"a": [1.0], "b": [3.0]})
    assert r is not None and r.gaps[0].ci is None and not r.gaps[0].behind and r.tied == r.gaps
    assert rank({"a": [None], "b": []}) is None


def test_rounds_rotate_the_order():
    names = ["a", "b", "c"]
    assert [rotated(names, r) for r in range(4)] == [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"],
                                                     ["a", "b", "c"]]
    assert rotated([], 2) == []


def test_pooled_noise_tells_clearly_slower_paths_apart_in_three_rounds():
    """Seven paths, three rounds: each pair's own variance has 2 degrees of freedom and,
    at the corrected level, could not tell a 1.3x gap (0.15% of runs); pooled over the
    paths (12 degrees of freedom) it can in most runs."""
    rng = np.random.default_rng(11)
    told = 0
    for _ in range(400):
        r = rank(seeded_rounds(rng, {"a": 1.0, **{f"b{j}": 1.3 for j in range(6)}}, 3))
        told += r is not None and r.leader == "a" and all(g.behind for g in r.gaps)
    assert told / 400 >= 0.7, told


def test_a_path_noisier_than_the_rest_keeps_its_own_wider_interval():
    """The pooled variance is a floor under a pair's own, never a ceiling: a path with 3x
    the others' noise and the same speed is rarely called behind."""
    rng = np.random.default_rng(12)
    called = 0
    for _ in range(1000):
        shared = rng.normal(0, 0.10, 3)
        times = {f"p{j}": list(np.exp(shared + rng.normal(0, 0.15 if j == 6 else 0.05, 3))) for j in range(7)}
        r = rank(times)
        called += r is not None and any(g.behind for g in r.gaps if g.other == "p6")
    assert called / 1000 <= 0.07, called
