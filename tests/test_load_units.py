"""The pieces of ``chbench load`` that need no server: histograms, mixes, the t-test,
the knee, and flag parsing."""

from __future__ import annotations

import pickle
import random

import numpy as np
import pytest

from chbench.cli import parse
from chbench.load.intervals import Intervals
from chbench.load.recorder import Recorder, Stats
from chbench.load.summary import knee
from chbench.stats.histogram import N_BUCKETS, Histogram, bucket_bounds, bucket_of
from chbench.stats.ttest import student_t
from chbench.workload import parse_queries
from chbench.workload.mix import Mix, smooth_cycle


def test_buckets_tile_the_range_and_are_narrow():
    for i in range(1, N_BUCKETS):
        lo, hi = bucket_bounds(i)
        assert bucket_of(lo) == i and bucket_of(hi - 1) == i
        assert bucket_bounds(i - 1)[1] == lo
        assert (hi - lo) / lo <= 1 / 128 or hi - lo == 1


def test_percentiles_match_exact_values_within_half_a_bucket():
    rng = random.Random(1)
    xs = [rng.lognormvariate(0, 1) * 20 for _ in range(50_000)]
    h = Histogram()
    for x in xs:
        h.record(x)
    for p in (10, 50, 90, 99, 99.9):
        exact = float(np.percentile(xs, p, method="inverted_cdf"))
        assert abs(h.percentile(p) - exact) / exact < 0.005, p
    assert h.percentile(0) == min(xs) and h.percentile(100) == max(xs)
    assert h.mean == pytest.approx(np.mean(xs)) and h.variance == pytest.approx(np.var(xs, ddof=1))


def test_merge_is_exact_and_memory_is_bounded():
    rng = random.Random(2)
    whole, parts = Histogram(), [Histogram() for _ in range(4)]
    for i in range(40_000):
        x = rng.expovariate(1.0) * 5
        whole.record(x)
        parts[i % 4].record(x)
    merged = Histogram()
    for p in parts:
        merged.merge(pickle.loads(pickle.dumps(p)))  # as worker processes send them
    assert merged.counts == whole.counts and merged.count == whole.count
    assert merged.total == pytest.approx(whole.total) and merged.max == whole.max
    before = len(whole.counts)
    for _ in range(100_000):
        whole.record(rng.expovariate(1.0) * 5)
    assert len(whole.counts) < before * 1.5 and len(whole.counts) < N_BUCKETS
    assert Histogram.from_json(whole.to_json()).counts == whole.counts


def test_recorder_swaps_and_stats_round_trip():
    r = Recorder(latency_limit_ms=2.0, open_loop=True)
    r.ok((0, 0), 3.0, 1.0, 10, 100, 1, 8)
    r.ok((0, 0), 1.0, 1.0, 10, 100, 1, 8)
    r.error((0, 1), 395, "Code: 395. boom")
    got = r.swap()
    assert r.swap() == {}
    st = got[(0, 0)]
    assert st.queries == 2 and st.over_limit == 1 and st.read_rows == 20 and st.service.count == 2
    assert got[(0, 1)].error_codes == {395: 1}
    back = Stats.from_json(st.to_json())
    assert back.hist.counts == st.hist.counts and back.service.count == 2


def test_smooth_mix_keeps_proportions_in_order_and_at_random():
    assert sorted(smooth_cycle([3, 1])) == [0, 0, 0, 1]
    assert smooth_cycle([3, 1]) != [0, 0, 0, 1]  # spread out, not a burst
    m = Mix([5, 2, 1], randomize=False, seed=0)
    picks = [m.pick(k) for k in range(800)]
    assert [picks.count(i) for i in range(3)] == [500, 200, 100]
    r = Mix([5, 2, 1], randomize=True, seed=3)
    picks = [r.pick(k) for k in range(8000)]
    for i, share in enumerate((5 / 8, 2 / 8, 1 / 8)):
        assert abs(picks.count(i) / 8000 - share) < 0.02


def test_weights_in_query_files():
    qs = parse_queries("-- weight: 5\nSELECT 1\nSELECT 2 -- weight: 2\nSELECT '-- weight: 9'\n", fmt="tsv")
    assert [q.weight for q in qs] == [5, 2, 1] and qs[1].sql == "SELECT 2"
    qs = parse_queries("-- name: a\n-- weight: 3\nSELECT 1;\nSELECT 2;", fmt="script")
    assert [(q.name, q.weight) for q in qs][0] == ("a", 3)
    assert parse_queries("SELECT 'a\\\\nb'\n", fmt="tsv")[0].sql == "SELECT 'a\\nb'"


def test_student_t_on_histograms():
    rng = random.Random(4)
    a, a2, b = Histogram(), Histogram(), Histogram()
    for _ in range(3000):
        a.record(rng.gauss(10, 1))
        a2.record(rng.gauss(10, 1))
        b.record(rng.gauss(11, 1))
    same = student_t(a, a2, 5)
    assert not same.proven and same.words() == "no difference proven at 99.5%"
    diff = student_t(a, b, 5)
    assert diff.proven and 8 < diff.relative < 12
    assert diff.words().startswith("difference of +") and diff.words().endswith("at 99.5%")
    assert student_t(a, b, 0).confidence == 80.0


def test_knee_is_where_p99_outgrows_qps():
    levels = [
        {"concurrency": 1, "qps": 100.0, "p99_ms": 10.0},
        {"concurrency": 2, "qps": 190.0, "p99_ms": 11.0},
        {"concurrency": 3, "qps": 200.0, "p99_ms": 16.0},
        {"concurrency": 4, "qps": 201.0, "p99_ms": 21.0},
    ]
    k = knee(levels)
    assert k is not None and k["concurrency"] == 2 and k["next"] == 3
    assert knee(levels[:2]) is None


def test_clickhouse_benchmark_flags_parse():
    args = parse(["load", "-c", "4", "-C", "3", "-i", "100", "-t", "5", "-r", "-d", "0", "--cumulative",
                  "--confidence", "2", "-h", "a", "-h", "b", "-p", "9000", "-s", "--stage",
                  "fetch_columns", "--query_id_prefix", "x", "--reconnect", "--continue_on_errors",
                  "--max-consecutive-errors", "5", "--roundrobin", "--max_threads=2",
                  "--max_block_size", "1000", "--json", "j.json"])
    assert args is not None
    assert (args.concurrency, args.max_concurrency, args.iterations, args.timelimit) == (4, 3, 100, 5.0)
    assert args.randomize == 1 and args.delay == 0 and args.cumulative and args.confidence == 2
    assert args.host == ["a", "b"] and args.port == [9000] and args.secure and args.stage == "fetch_columns"
    assert args.reconnect == 1 and args.continue_on_errors and args.max_consecutive_errors == 5 and args.roundrobin
    assert args.settings == {"max_threads": "2", "max_block_size": "1000"}
    args = parse(["load", "-r", "0", "--reconnect=7", "--randomize=1"])
    assert args is not None
    assert args.reconnect == 7 and args.randomize == 1


def test_cluster_target_urls_split_into_hosts():
    from chbench.errors import UsageError
    from chbench.load.config import LoadConfig
    from chbench.targets import Credentials
    from chbench.targets.url import split_hosts

    assert split_hosts("clickhouse://h1,h2:9001,h3:9000/db") == [
        "clickhouse://h1:9000/db", "clickhouse://h2:9001/db", "clickhouse://h3:9000/db"]
    assert split_hosts("http://a,b") == ["http://a", "http://b"]
    assert split_hosts("embedded") == ["embedded"] and split_hosts("clickhouse://x:1") == ["clickhouse://x:1"]
    with pytest.raises(UsageError):
        split_hosts("clickhouse://a,,b:9000")
    cfg = LoadConfig(targets=["a", "b", "c", "d"], credentials=Credentials(), queries=[], group_of=[0, 0, 0, 1])
    assert cfg.members() == [[0, 1, 2], [3]] and cfg.comparison
    assert LoadConfig(targets=["a", "b"], credentials=Credentials(), queries=[], roundrobin=True).members() == [[0, 1]]
    # shares nest: worker 1 of 3 (of a master), then process 1 of 2 (of that worker)
    base = LoadConfig(targets=["a"], credentials=Credentials(), queries=[], rate=600.0, concurrency=12)
    node = base.share(1, 3, 12)
    proc = node.share(1, 2, node.concurrency)
    assert (node.rate, proc.rate) == (200.0, 100.0) and proc.phase == pytest.approx(1 / 600 + 1 / 200)


def test_no_worker_gets_a_share_of_zero_iterations():
    """-i 1 --workers 2: one process (a share of 0 iterations would mean 'no limit')."""
    from chbench.load.config import LoadConfig
    from chbench.load.levels import LocalSource, ProcessSource, local_source
    from chbench.targets import Credentials
    from chbench.workload import Query

    cfg = LoadConfig(targets=["clickhouse://127.0.0.1:1"], credentials=Credentials(),
                     queries=[Query("q", "SELECT 1")], iterations=1, workers=2, concurrency=2)
    assert isinstance(local_source(cfg, [{}], 2), LocalSource)
    cfg.iterations = 5
    assert isinstance(local_source(cfg, [{}], 2), ProcessSource)


def test_precise_intervals_weigh_each_query_by_its_time_in_them():
    """--precise (clickhouse-benchmark's PR 86684): a query's weights over the intervals
    its span overlapped sum to 1; its latency, count and errors stay where it finished;
    an interval waits for the queries started in it, read after its end."""
    rec = Recorder(0.0, open_loop=False, spans=True)
    iv = Intervals(0.0, precise=True)
    rec.ok((0, 0), 700.0, 700.0, 10, 100, 1, 8, (0.5, 1.2))  # 0.5 in [0, 1), 0.2 in [1, 2)
    rec.ok((0, 0), 0.0, 0.0, 1, 1, 1, 1, (0.9, 0.9))  # no measurable time: all of it where it finished
    iv.close(1.0)
    assert iv.ready({"read_at": 0.99, "oldest": None}, done=False) == []  # read before its end: not yet
    assert iv.ready({"read_at": 1.05, "oldest": 0.5}, done=False) == []  # a query it started is in flight
    part = rec.swap()
    iv.add(part)
    assert all(st.spans is None for st in part.values())  # taken out before the totals see them
    iv.close(2.0)
    first, second = iv.ready({"read_at": 2.1, "oldest": None}, done=False)
    a, b = Intervals.stats_by_host(first)[0], Intervals.stats_by_host(second)[0]
    assert a.counted().queries == pytest.approx(1 + 0.5 / 0.7) and b.counted().queries == pytest.approx(0.2 / 0.7)
    assert a.counted().read_bytes + b.counted().read_bytes == pytest.approx(101)
    assert a.queries == 0 and b.queries == 2 and b.hist.count == 2  # both finished in the second
    # without --precise: what finished, at once, counted whole
    plain = Intervals(0.0, precise=False)
    rec = Recorder(0.0, open_loop=False)
    rec.ok((0, 0), 700.0, 700.0, 10, 100, 1, 8, (0.5, 1.2))
    plain.close(1.0)
    plain.add(rec.swap())
    plain.close(2.0)
    done = plain.ready({"read_at": 0.0, "oldest": 0.0}, done=False)
    assert [Intervals.stats_by_host(i).get(0, Stats()).counted().queries for i in done] == [0, 1]
