"""``chbench load --master``/``--worker`` (Locust's runners, chbench's engine) and
``chbench.locust.ClickHouseUser`` in a real ``locust --headless`` run, against the 26.9
server; every count checked against what the server logged in ``system.query_log``."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.conftest import REPO, Result, assert_one_line_error, load, run_cli
from tests.engines import ModernServer, free_port, http_post

# never import locust here: it would monkey-patch this pytest process with gevent (and
# break tests that run after these); the processes under test import it
if importlib.util.find_spec("locust") is None:
    pytest.skip("the distributed extra: pip install 'chbench[distributed]'", allow_module_level=True)


def logged(server: ModernServer, prefix: str) -> int:
    """Finished queries (success or error) the server logged under a query-id prefix."""
    http_post(server.http_port, "SYSTEM FLUSH LOGS")
    return int(http_post(server.http_port, "SELECT count() FROM system.query_log WHERE type != 'QueryStart' AND "
                                           f"startsWith(query_id, '{prefix}')"))


class Cluster:
    """A master and its workers, each a real ``chbench load`` process on loopback."""

    def __init__(self, server: ModernServer, tmp: Path, workers: int, *args: str,
                 worker_env: list[dict[str, str]] | None = None) -> None:
        self.port = free_port()
        self.out, self.bjson = tmp / "load.json", tmp / "benchmark.json"
        self.prefix = f"t{uuid.uuid4().hex[:8]}-"
        env = {k: v for k, v in os.environ.items() if k != "CLICKHOUSE_PASSWORD"}
        self.master = subprocess.Popen(
            [sys.executable, "-m", "chbench", "load", "--master", "--expect-workers", str(workers), "--master-bind",
             f"127.0.0.1:{self.port}", "--target", server.native_url, "--query_id_prefix", self.prefix, "-d", "0",
             "--quiet", "--out", str(self.out), "--json", str(self.bjson), *args],
            cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.workers = [subprocess.Popen(
            [sys.executable, "-m", "chbench", "load", "--worker", "--master-host", f"127.0.0.1:{self.port}"],
            cwd=REPO, env={**env, **((worker_env or [])[i] if worker_env and i < len(worker_env) else {})},
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for i in range(workers)]

    def wait(self, timeout: float = 120) -> Result:
        out, err = self.master.communicate(timeout=timeout)
        for w in self.workers:
            try:
                w.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                w.kill()
                w.communicate()
        return Result(self.master.returncode, out, err)


def test_master_and_three_workers_count_what_the_server_logged(modern: ModernServer, tmp_path: Path) -> None:
    c = Cluster(modern, tmp_path, 3, "-q", "SELECT 1", "-q", "SELECT number FROM numbers(10)", "--rate", "150", "-t",
                "4", "-c", "6")
    r = c.wait()
    assert r.code == 0, r.stderr
    doc = load(c.out)
    lv = doc["levels"][-1]
    assert lv["workers"] == 3 and lv["status"] == "complete"
    total = lv["total"]["queries"]
    assert load(c.bjson)["statistics"]["num_queries"] == total
    assert total == logged(modern, c.prefix)  # not one query more or less than the server saw
    assert 540 <= total <= 600  # 150 QPS for 4 s
    per_worker = lv["per_worker"]
    assert len(per_worker) == 3 and len({w["name"] for w in per_worker}) == 3
    for i, w in enumerate(per_worker):
        assert w["queries"] == logged(modern, f"{c.prefix}{i}.") > 0
    # exact merge: the workers' histograms add up to the master's, bucket by bucket
    assert sum(w["histogram"]["count"] for w in per_worker) == lv["total"]["histogram"]["count"] == total
    buckets: dict[int, int] = {}
    for w in per_worker:
        for b, n in w["histogram"]["buckets"]:
            buckets[b] = buckets.get(b, 0) + n
    assert sorted(buckets.items()) == [tuple(x) for x in lv["total"]["histogram"]["buckets"]]
    ol = lv["open_loop"]  # every request planned was sent (or counted dropped), every one sent answered
    assert ol["planned"] == ol["started"] + ol["dropped"] and ol["started"] == total


def test_a_worker_killed_mid_run_is_reported_and_the_run_goes_on(modern: ModernServer, tmp_path: Path) -> None:
    c = Cluster(modern, tmp_path, 3, "-q", "SELECT 1", "--rate", "90", "-t", "12", "-c", "3")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (c.out.exists() and load(c.out)["levels"]):
        time.sleep(0.2)  # the first checkpoint: the level runs
    time.sleep(1.0)
    victim = c.workers[1]
    victim.send_signal(signal.SIGKILL)
    killed_at = time.monotonic()
    r = c.wait()
    assert r.code == 0, r.stderr
    assert "Traceback" not in r.stderr
    lv = load(c.out)["levels"][-1]
    lost = [w for w in lv["per_worker"] if "lost_at_s" in w]
    assert len(lost) == 1, lv["per_worker"]
    assert f"worker {lost[0]['name']} lost at" in r.stderr
    assert lost[0]["queries"] > 0  # what it shipped before stays counted
    survivors = [w for w in lv["per_worker"] if "lost_at_s" not in w]
    assert all(w["queries"] >= 330 for w in survivors)  # 30 QPS each for 12 s: they went on to the end
    # the killed worker's engine stopped with it: nothing under its prefix after the kill
    i = lv["per_worker"].index(lost[0])
    before = logged(modern, f"{c.prefix}{i}.")
    # at most what was in flight or not yet shipped: two 0.2 s ticks (lane host -> worker ->
    # master) at this worker's 30 QPS, and its queries in flight; an engine that went on after
    # the kill would add ~300 (seen in a loaded CI run: 12, over a first bound of 10)
    assert before - lost[0]["queries"] <= 15
    assert time.monotonic() - killed_at > 3
    assert logged(modern, f"{c.prefix}{i}.") == before
    assert lv["total"]["queries"] == sum(w["queries"] for w in lv["per_worker"])


def test_stop_on_worker_loss(modern: ModernServer, tmp_path: Path) -> None:
    c = Cluster(modern, tmp_path, 2, "-q", "SELECT 1", "--rate", "40", "-t", "30", "-c", "2",
                "--stop-on-worker-loss")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (c.out.exists() and load(c.out)["levels"]):
        time.sleep(0.2)
    c.workers[0].send_signal(signal.SIGKILL)
    r = c.wait()
    assert r.code == 3, r.stderr
    assert "lost at" in r.stderr.splitlines()[-1] and "Traceback" not in r.stderr
    doc = load(c.out)
    assert doc["status"] == "server_lost" and doc["levels"][-1]["total"]["queries"] > 0
    assert doc["levels"][-1]["seconds"] < 25


def test_a_worker_that_cannot_reach_the_target(modern: ModernServer, tmp_path: Path) -> None:
    """The second worker's credentials are refused by the server: it is named, the level
    goes on with the first, which then carries the whole rate."""
    c = Cluster(modern, tmp_path, 2, "-q", "SELECT 1", "--rate", "60", "-t", "3", "-c", "2",
                worker_env=[{}, {"CLICKHOUSE_PASSWORD": "wrong-password"}])
    r = c.wait()
    assert r.code == 0, r.stderr
    assert "Traceback" not in r.stderr
    bad = [ln for ln in r.stderr.splitlines() if ln.startswith("chbench: worker ")
           and ("password" in ln.lower() or "authentic" in ln.lower())]
    assert len(bad) == 1, r.stderr
    lv = load(c.out)["levels"][-1]
    assert len(lv["per_worker"]) == 1
    assert lv["total"]["queries"] == logged(modern, c.prefix) >= 150  # 60 QPS for 3 s, all from the one
    assert lv["open_loop"]["offered_qps"] == 60 and lv["open_loop"]["planned"] >= 170


def test_master_without_workers_times_out_in_one_line(modern: ModernServer) -> None:
    r = run_cli("load", "--master", "--expect-workers", "2", "--expect-workers-max-wait", "1.5", "--master-bind",
                f"127.0.0.1:{free_port()}", "--target", modern.native_url, "-q", "SELECT 1", "-t", "1")
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("chbench: error:")]
    assert len(lines) == 1, r.stderr
    assert "0 of 2 workers connected to the master at 127.0.0.1:" in lines[0]
    assert lines[0].endswith("within 1.5 s (--expect-workers-max-wait)")
    assert r.code == 2 and "Traceback" not in r.stderr


def test_worker_flags_are_checked() -> None:
    assert_one_line_error(run_cli("load", "--worker", "-q", "SELECT 1"))
    assert_one_line_error(run_cli("load", "--master", "--workers", "2", "-q", "SELECT 1", "--target",
                                  "clickhouse://127.0.0.1:1"))
    assert_one_line_error(run_cli("load", "--master", "-q", "SELECT 1"))  # the embedded engine: one process
    assert_one_line_error(run_cli("load", "--worker", "--master-host", "nonexistent.invalid:5557"))


def test_locust_user_in_a_real_headless_run(modern: ModernServer, tmp_path: Path) -> None:
    prefix = f"loc{uuid.uuid4().hex[:8]}-"
    locustfile = tmp_path / "locustfile.py"
    # each user stops itself after 40 queries, well before -t: no query is in flight when
    # Locust stops (it kills users mid-request at the time limit, and the server then logs a
    # cancelled query Locust never counted)
    locustfile.write_text(f'''
from locust import constant, task
from locust.exception import StopUser

from chbench.locust import ClickHouseUser


class Analyst(ClickHouseUser):
    wait_time = constant(0.01)
    query_id_prefix = "{prefix}"
    sent = 0

    def count(self):
        self.sent += 1
        if self.sent >= 40:
            raise StopUser()

    @task(3)
    def one(self):
        self.client.query("SELECT 1", name="one")
        self.count()

    @task
    def numbers(self):
        self.client.query("SELECT sum(number) FROM numbers(1000)")
        self.count()

    @task
    def bad(self):
        self.client.query("SELECT throwIf(1, 'on purpose')", name="bad")
        self.count()
''')
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    p = subprocess.run([sys.executable, "-m", "locust", "-f", str(locustfile), "--headless", "-u", "3", "-r", "3",
                        "-t", "6s", "--host", f"clickhouse://127.0.0.1,localhost:{modern.tcp_port}", "--csv",
                        str(tmp_path / "run"), "--only-summary", "--exit-code-on-error", "0"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    import csv

    rows = {(r["Type"], r["Name"]): r for r in csv.DictReader((tmp_path / "run_stats.csv").open())}
    total = rows[("", "Aggregated")]
    requests, failures = int(total["Request Count"]), int(total["Failure Count"])
    assert requests == 120  # 3 users, 40 each
    assert requests == logged(modern, prefix)  # one request event per query the server saw
    assert int(rows[("clickhouse", "bad")]["Failure Count"]) == int(rows[("clickhouse", "bad")]["Request Count"]) > 0
    assert failures == int(rows[("clickhouse", "bad")]["Request Count"])
    assert ("clickhouse", "SELECT sum(number) FROM numbers(1000)") in rows  # unnamed: its first words
    assert "on purpose" in (tmp_path / "run_failures.csv").read_text()


def test_capacity_search_and_live_metrics_on_the_master(modern: ModernServer, tmp_path: Path) -> None:
    """--slo with --master: every step is a level spread over the workers; the master's
    --metrics-port serves the merged counts of every worker."""
    import re
    import urllib.request

    mport = free_port()
    c = Cluster(modern, tmp_path, 2, "-q", "SELECT 1", "--slo", "p90<=500ms", "--rate-min", "20", "--rate-max",
                "60", "--step-duration", "1", "-c", "4", "--metrics-port", str(mport), "--metrics-hold", "4")
    last: str | None = None
    deadline = time.monotonic() + 120
    while c.master.poll() is None and time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=5) as r:
                last = r.read().decode()
        except OSError:
            pass
        time.sleep(0.3)
    r = c.wait()
    assert r.code == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "capacity: 60.0 QPS"
    doc = load(c.out)
    cap = doc["capacity"]  # the probe answers far more than --rate-max: the first step is at it, and holds
    assert cap["rate"] == 60 and [s["verdict"] for s in cap["steps"]] == ["holds"] and cap["ended_by"] == "rate-max"
    assert len(doc["levels"]) == len(cap["probe"]["levels"]) + 1  # the probe's levels are kept, then the step
    assert all(lv["workers"] == 2 and len(lv["per_worker"]) == 2 for lv in doc["levels"][-1:])
    total = sum(lv["total"]["queries"] for lv in doc["levels"])
    assert total == logged(modern, c.prefix)
    assert last is not None
    by_worker = {m.group(1): float(m.group(2)) for m in
                 re.finditer(r'^chbench_queries_total\{[^}]*worker="(\d+)"[^}]*\} ([0-9.e+]+)$', last, re.M)}
    assert set(by_worker) == {"0", "1"} and sum(by_worker.values()) == total


def test_late_workers_are_refused_or_added(modern: ModernServer, tmp_path: Path) -> None:
    """A sweep -C 2 with one expected worker; a second worker connects during level 1:
    by default it is refused (it exits 2), with --late-workers add it runs in level 2."""
    for policy in ("refuse", "add"):
        out_dir = tmp_path / policy
        out_dir.mkdir()
        c = Cluster(modern, out_dir, 1, "-q", "SELECT 1", "-C", "2", "-t", "4", "--late-workers", policy)
        assert c.workers[0].stderr is not None
        for line in c.workers[0].stderr:  # the first worker says when it takes level 1
            if line.startswith("chbench worker: level 1:"):
                break
        time.sleep(0.5)
        env = {k: v for k, v in os.environ.items() if k != "CLICKHOUSE_PASSWORD"}
        late = subprocess.Popen([sys.executable, "-m", "chbench", "load", "--worker", "--master-host",
                                 f"127.0.0.1:{c.port}"], cwd=REPO, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        r = c.wait()
        _, late_err = late.communicate(timeout=60)
        assert r.code == 0, r.stderr
        levels = load(c.out)["levels"]
        assert [lv["workers"] for lv in levels] == ([1, 1] if policy == "refuse" else [1, 2]), r.stderr
        if policy == "refuse":
            assert late.returncode == 2 and "refused by the master" in late_err
            assert "after the run started: refused" in r.stderr
        else:
            assert late.returncode == 0 and "takes a share from the next level" in r.stderr
        assert sum(lv["total"]["queries"] for lv in levels) == logged(modern, c.prefix)


def test_a_worker_sends_writes_only_if_its_own_command_line_allows(modern: ModernServer, tmp_path: Path) -> None:
    c = Cluster(modern, tmp_path, 1, "-q", "SELECT 1", "-t", "1", "--allow-writes")
    r = c.wait()
    assert r.code == 2 and "Traceback" not in r.stderr
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("chbench: error:")]
    assert len(errors) == 1 and "read-only" in errors[0], r.stderr
    assert logged(modern, c.prefix) == 0


def test_a_stalled_worker_is_reported_by_name_and_time(modern: ModernServer, tmp_path: Path) -> None:
    """SIGSTOP on a worker: its heartbeats and shipments stop; the master names it lost
    within seconds and the run goes on with the other one."""
    c = Cluster(modern, tmp_path, 2, "-q", "SELECT 1", "--rate", "40", "-t", "12", "-c", "2")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (c.out.exists() and load(c.out)["levels"]):
        time.sleep(0.2)
    stalled = c.workers[0]
    stalled.send_signal(signal.SIGSTOP)
    try:
        time.sleep(7)
    finally:
        stalled.send_signal(signal.SIGCONT)
    r = c.wait()
    assert r.code == 0, r.stderr
    lv = load(c.out)["levels"][-1]
    lost = [w for w in lv["per_worker"] if "lost_at_s" in w]
    assert len(lost) == 1 and 4 < lost[0]["lost_at_s"] < 12, lv["per_worker"]
    assert f"worker {lost[0]['name']} lost at" in r.stderr
    other = next(w for w in lv["per_worker"] if "lost_at_s" not in w)
    assert other["queries"] >= 220  # 20 QPS for 12 s: it went on
    assert lv["total"]["queries"] <= logged(modern, c.prefix)  # never more than the server saw
