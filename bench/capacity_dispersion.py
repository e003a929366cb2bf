"""Do a capacity step's bad requests come one by one, as the SLO intervals assume?
(issue 28: the error SLO's binomial interval, and a percentile's order-statistic
interval, treat every request as independent; ``chbench load --slo`` now widens them by
the dispersion this script measures.)

    python bench/capacity_dispersion.py                    # ~8 min
    python bench/capacity_dispersion.py --seconds 60 --rates 40,60,70
    python bench/capacity_dispersion.py --query "SELECT sum(cityHash64(number)) FROM numbers(2000000) \\
        SETTINGS max_threads=1" --slots 0 --limit-ms 30 --rates 120,150,170,180

By default the capacity bar's construction (``bench/capacity_bars.py``): ``SELECT
sleep(0.05)`` against the 26.9 server, which runs at most 4 at once (a fifth is refused,
code 202), 16 connections, open loop at fixed rates around its capacity (4 / service
time, ~77 QPS here). With ``--slots 0`` nothing is refused and a CPU-bound query queues
instead. Per second of each step: the requests, the errors and the answers slower than
the p99 SLO's limit (``--limit-ms``, 200), and the answers beyond the step's own p99 (the
count the p99's interval takes as binomial). Reported per rate and kind of bad request: the
count, the seconds that held one, the dispersion (``stats.quantile.pearson_dispersion``:
about 1 when independent, its sd at these counts ~0.1–0.3) over 1 s and over 5 s bins,
and the bad requests of each second. A dispersion φ means an interval that takes the
requests as independent is √φ too narrow. Writes bench/out/capacity_dispersion.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
OUT = REPO / "bench" / "out"

from chbench.load.recorder import Stats, merged  # noqa: E402
from chbench.observer import Observer  # noqa: E402
from chbench.stats.quantile import pearson_dispersion  # noqa: E402
from tests.engines import ModernServer  # noqa: E402


class _PerSecond(Observer):
    def __init__(self) -> None:
        self.seconds: list[Stats] = []

    def interval(self, level: int, row: dict[str, Any], hosts_stats: dict[int, Stats], seconds: float,
                 cumulative: dict[int, Stats], elapsed: float) -> None:
        self.seconds.append(merged(hosts_stats.values()))


def _beyond(st: Stats, ms: float | None) -> int:
    return 0 if ms is None else sum(n for v, n in st.hist.values() if v > ms)


def _round(v: float | None) -> float | None:
    return round(v, 2) if v is not None else None


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--rates", default="55,62,68,72,78")
    ap.add_argument("--seconds", type=float, default=90.0)
    ap.add_argument("--query", default="SELECT sleep(0.05)")
    ap.add_argument("--limit-ms", type=float, default=200.0, help="the p99 SLO's limit (default 200)")
    ap.add_argument("--slots", type=int, default=4, help="max_concurrent_queries_for_user; 0: none (queueing)")
    args = ap.parse_args()
    from chbench.cli import parse
    from chbench.commands.load import build_config
    from chbench.load.levels import probe_hosts, run_level

    out: list[dict[str, Any]] = []
    with ModernServer() as server:
        slots = [f"--max_concurrent_queries_for_user={args.slots}"] if args.slots else []
        ns = parse(["load", "--target", server.native_url, "-q", args.query, "-c", "16", *slots,
                    "--continue_on_errors", "--rate", "10"])
        assert ns is not None
        cfg = build_config(ns)
        hosts = probe_hosts(cfg)
        for rate in [float(r) for r in args.rates.split(",")]:
            obs = _PerSecond()
            res = run_level(replace(cfg, rate=rate, timelimit=args.seconds), hosts, cfg.concurrency, [obs])
            seconds = obs.seconds[1:-1]  # whole seconds only
            total = merged(seconds)
            p99 = total.hist.percentile(99)
            entry: dict[str, Any] = {"rate": rate, "seconds": len(seconds), "p99_ms": p99,
                                     "qps": round(res.total().queries / res.seconds, 2)}
            for kind in ("errors", "slow", "beyond_p99"):
                n = [st.queries + st.errors if kind == "errors" else st.hist.count for st in seconds]
                bad = [st.errors if kind == "errors" else _beyond(st, args.limit_ms if kind == "slow" else p99)
                       for st in seconds]
                by5 = [(sum(n[i:i + 5]), sum(bad[i:i + 5])) for i in range(0, len(n) - 4, 5)]
                entry[kind] = {"count": sum(bad), "seconds_with": sum(1 for x in bad if x),
                               "dispersion": _round(pearson_dispersion(list(zip(n, bad, strict=True)))),
                               "dispersion_5s": _round(pearson_dispersion(by5)), "per_second": bad}
            out.append(entry)
            brief = {k: {kk: vv for kk, vv in v.items() if kk != "per_second"} if isinstance(v, dict) else v
                     for k, v in entry.items()}
            print(json.dumps(brief), flush=True)
            for kind in ("errors", "slow", "beyond_p99"):
                print(f"  {kind} per second:", "".join("." if not x else str(min(x, 9))
                                                      for x in entry[kind]["per_second"]), flush=True)
    OUT.mkdir(exist_ok=True)
    (OUT / "capacity_dispersion.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
