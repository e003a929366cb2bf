"""Does chbench's engine keep its accuracy in a process that imported locust (gevent's
monkey-patching of sockets, threads and time)? Issue 16 asks to measure it; the answer
decides where the measuring engine runs under ``--master``/``--worker``.

    python bench/gevent_accuracy.py          # ~2 min, the 26.9 server started here

The same engine code (``load.lanes.LoadLanes``: the core's lanes with load's feed, as
threads, the native target) runs in two child processes one after the other: plain, and
after ``import locust``. Each does
  - timer: 2,000 sleeps of 1 ms, the overshoot of each;
  - open loop: SELECT 1 at 600 QPS for 10 s, -c 8: late starts (> 5 ms) and p99 latency
    from the planned time;
  - closed loop: SELECT 1, -c 4, 10 s: QPS.
Writes bench/out/gevent_accuracy.json."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def child(mode: str, url: str) -> dict:
    if mode == "gevent":
        import locust  # noqa: F401 - the monkey-patching is the point

    from chbench.load.config import LoadConfig
    from chbench.load.lanes import LoadLanes
    from chbench.targets import Credentials
    from chbench.workload import Query

    over = []
    for _ in range(2000):
        t = time.perf_counter()
        time.sleep(0.001)
        over.append((time.perf_counter() - t - 0.001) * 1000.0)
    over.sort()
    out: dict = {"mode": mode, "sleep_overshoot_ms": {"p50": round(over[1000], 3), "p99": round(over[1980], 3),
                                                      "max": round(over[-1], 3)}}

    def level(**kw: object) -> tuple[LoadLanes, float]:
        cfg = LoadConfig(targets=[url], credentials=Credentials(), queries=[Query(name="q", sql="SELECT 1")],
                         settings={}, **kw)  # type: ignore[arg-type]
        core = LoadLanes(cfg, [{}], 0)
        core.connect()
        t0 = time.monotonic()
        core.begin(t0)
        core.finished.wait(kw["timelimit"] + 5)  # type: ignore[operator]
        core.close()
        return core, time.monotonic() - t0

    core, secs = level(concurrency=8, rate=600.0, timelimit=10.0)
    st = core.recorder.swap()[(0, 0)]
    out["open_loop_600"] = {"completed": st.queries, "late": core.counts()["late"],
                            "p50_ms": round(st.hist.percentile(50) or 0.0, 3),
                            "p99_ms": round(st.hist.percentile(99) or 0.0, 3),
                            "max_ms": round(st.hist.max, 3)}
    core, secs = level(concurrency=4, timelimit=10.0)
    st = core.recorder.swap()[(0, 0)]
    out["closed_loop_c4_qps"] = round(st.queries / secs, 1)
    return out


def main() -> None:
    from tests.engines import ModernServer

    rows = []
    with ModernServer() as server:
        for mode in ("plain", "gevent", "plain", "gevent"):
            p = subprocess.run([sys.executable, __file__, "--child", mode, server.native_url], capture_output=True,
                               text=True, cwd=REPO, check=True)
            rows.append(json.loads(p.stdout.strip().splitlines()[-1]))
            print(json.dumps(rows[-1]), flush=True)
    (REPO / "bench" / "out").mkdir(exist_ok=True)
    (REPO / "bench" / "out" / "gevent_accuracy.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(child(sys.argv[2], sys.argv[3])))
    else:
        main()
