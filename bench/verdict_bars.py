"""Measure issue 24's bars (verdicts on a noisy machine), with the real command line.

    python bench/verdict_bars.py                       # everything (~45 min on 2 cores)
    python bench/verdict_bars.py --only sbs --runs 3
    python bench/verdict_bars.py --only sbs --reuse    # compare the files already there again

Parts:
  sbs        side by side, built-in suite, embedded, --iterations 15: `--scale-b 1.1` (every
             query +10% rows) and A/A (`--setting-b log_comment=b`), --runs each. Bar: >= 9 of
             10 slower and none faster in each scaled run, exit 1; A/A at most 1 flagged of
             all, at least 40% of the verdicts `no change`. The unpaired verdicts of the same
             files (kept in the JSON as `unpaired`) are counted next to them.
  separate   4 A/A pairs of separate runs of the built-in suite (--iterations 15), a
             neighbour (one core, 300 ms busy / 450 ms idle) during B of pairs 2 and 4. Bar:
             <= 1 of 40 flagged; >= 6 of 10 definite verdicts in each disturbed pair.
  probes     SELECT 1 over HTTP to the 26.9 server, 300 iterations per run, probes on and
             --no-probes in alternated runs (--rounds of each): the median client_ms -
             server_ms over all samples of each within 0.05 ms of each other; every run's
             own median is recorded with their spread.
  disturbed  --pairs pairs, each an undisturbed A and a B with the neighbour, at --quiet-threshold
             (run's default when not given): definite verdicts and flags of each.
  semireal   power on real noise: the separate pairs' B files with three queries' times x1.10 and
             x1.15, compared with the measured between-run spread and with the 0.8 guess.
  simulate   the noise simulator (bench/sim_verdicts.py): false alarms per query over
             >= 10,000 A/A comparisons side by side and separate, and the power at +10%.

The machine is shared and noisy: every number comes with the spread seen. Writes
bench/out/verdict_bars.json and prints it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.drift_bars import chbench, compare  # noqa: E402 - the command line, as the other bench scripts run it

OUT = REPO / "bench" / "out"
FLAG = ("slower", "faster")
DEFINITE = ("no change", "slower", "faster")
REUSE = False

# a neighbour on one core: busy 300 ms, idle 450 ms (the disturbance)
NEIGHBOUR = """
import time
while True:
    t = time.monotonic()
    while time.monotonic() - t < 0.300:
        pass
    time.sleep(0.450)
"""


def run(path: Path, *args: str, neighbour: bool = False) -> None:
    if REUSE and path.exists():
        return
    n = subprocess.Popen([sys.executable, "-c", NEIGHBOUR]) if neighbour else None
    try:
        chbench("run", "--quiet", "--out", str(path), *args)
    finally:
        if n is not None:
            n.kill()
            n.wait()


def counts(verdicts: list[str]) -> dict[str, int]:
    return {v: verdicts.count(v) for v in sorted(set(verdicts))}


def spread_of(doc: dict) -> dict:
    """Each side's run-to-run spread (relative MAD per query) and the paired one."""
    per = []
    for q in doc["queries"]:
        p = q.get("paired") or {}
        if p.get("spread") is not None:
            per.append(p["spread"])
    return {"paired_spread_median": round(statistics.median(per), 4) if per else None,
            "paired_spread_range": [round(min(per), 4), round(max(per), 4)] if per else None}


def sbs(res: dict, runs: int) -> None:
    out: dict = {"scaled": [], "aa": []}
    for i in range(runs):
        for kind, extra in (("scaled", ["--scale-b", "1.1"]), ("aa", ["--setting-b", "log_comment=b"])):
            f = OUT / f"v24-sbs-{kind}-{i}.json"
            t = time.monotonic()
            run(f, "--iterations", "15", *extra)
            doc, code, _ = compare(str(f))
            v = [q["verdict"] for q in doc["queries"]]
            u = [(q.get("unpaired") or {}).get("verdict", q["verdict"]) for q in doc["queries"]]
            out[kind].append({"verdicts": counts(v), "unpaired": counts(u), "exit": code,
                              "seconds": round(time.monotonic() - t), **spread_of(doc)})
            print(f"  {kind} {i}: {counts(v)} (unpaired {counts(u)}), exit {code}", file=sys.stderr)
    aa = [r["verdicts"] for r in out["aa"]]
    n = sum(sum(c.values()) for c in aa)
    out["bar"] = {
        "scaled_min_slower": min(r["verdicts"].get("slower", 0) for r in out["scaled"]),
        "scaled_any_faster": any(r["verdicts"].get("faster", 0) for r in out["scaled"]),
        "scaled_exits": [r["exit"] for r in out["scaled"]],
        "aa_flagged": sum(c.get("slower", 0) + c.get("faster", 0) for c in aa), "aa_of": n,
        "aa_no_change_share": round(sum(c.get("no change", 0) for c in aa) / n, 3) if n else None,
    }
    res["sbs"] = out


def disturbed(res: dict, pairs: int, threshold: str | None) -> None:
    """Only disturbed pairs (an undisturbed A, B with the neighbour), at a given
    --quiet-threshold: definite verdicts and flags of each."""
    extra = ["--quiet-threshold", threshold] if threshold else []
    out = []
    for i in range(pairs):
        a, b = OUT / f"v24-dist{threshold or ''}-{i}-a.json", OUT / f"v24-dist{threshold or ''}-{i}-b.json"
        run(a, "--iterations", "15", *extra)
        run(b, "--iterations", "15", *extra, neighbour=True)
        doc, code, _ = compare(str(a), str(b))
        v = [q["verdict"] for q in doc["queries"]]
        out.append({"verdicts": counts(v), "definite": sum(x in DEFINITE for x in v),
                    "flagged": sum(x in FLAG for x in v), "set_aside": doc["summary"].get("set_aside")})
        print(f"  disturbed pair {i}: {out[-1]['verdicts']}", file=sys.stderr)
    res[f"disturbed{threshold or ''}"] = {"pairs": out, "bar": {"definite": [p["definite"] for p in out],
                                                               "flagged": sum(p["flagged"] for p in out)}}


def run_spread(path: Path) -> float:
    """A run file's noise: the median over its queries of the kept samples' relative MAD."""
    doc = json.loads(path.read_text())
    per = []
    for q in doc["queries"]:
        t = [s["client_ms"] for s in q["samples"] if not s["warmup"] and not s.get("set_aside") and s["client_ms"]]
        if len(t) > 2:
            m = statistics.median(t)
            per.append(statistics.median(abs(x - m) for x in t) / m)
    return round(statistics.median(per), 4) if per else float("nan")


def separate(res: dict, pairs: int) -> None:
    out = []
    for i in range(pairs):
        disturbed = i % 2 == 1
        a, b = OUT / f"v24-sep-{i}-a.json", OUT / f"v24-sep-{i}-b.json"
        run(a, "--iterations", "15")
        run(b, "--iterations", "15", neighbour=disturbed)
        doc, code, _ = compare(str(a), str(b))
        v = [q["verdict"] for q in doc["queries"]]
        m = doc["summary"].get("machine") or {}
        out.append({"disturbed": disturbed, "flagged": sum(x in FLAG for x in v),
                    "definite": sum(x in DEFINITE for x in v), "verdicts": counts(v), "exit": code,
                    "spread_a": run_spread(a), "spread_b": run_spread(b),
                    "busier": m.get("busier"), "machine": m.get("description"),
                    "set_aside": doc["summary"].get("set_aside"), "findings": doc.get("findings")})
        print(f"  pair {i} disturbed={disturbed}: {out[-1]['verdicts']} busier={out[-1]['busier']}",
              file=sys.stderr)
    dist = [p for p in out if p["disturbed"]]
    res["separate"] = {"pairs": out, "bar": {
        "flagged": sum(p["flagged"] for p in out), "of": 10 * len(out),
        "disturbed_definite": [p["definite"] for p in dist]}}


def semireal(res: dict, pairs: int) -> None:
    """Power on real noise: each separate A/A pair's B file with three queries' times
    multiplied by 1.10 and 1.15 (three disjoint triples), compared with the measured
    between-run spread (the default) and with the guess (--between-run-factor 0.8)."""
    import copy
    import os
    import tempfile

    out: dict[str, Any] = {}
    for change in (1.10, 1.15):
        found = {"measured": 0, "guess": 0}
        wrong = {"measured": 0, "guess": 0}
        changed = 0
        for i in range(pairs):
            a, b = OUT / f"v24-sep-{i}-a.json", OUT / f"v24-sep-{i}-b.json"
            doc = json.loads(b.read_text())
            for pick in ((0, 3, 6), (1, 4, 7), (2, 5, 8)):
                d = copy.deepcopy(doc)
                for q in pick:
                    for smp in d["queries"][q]["samples"]:
                        for k in ("client_ms", "server_ms"):
                            if smp.get(k):
                                smp[k] *= change
                fd, path = tempfile.mkstemp(suffix=".json")
                os.write(fd, json.dumps(d).encode())
                os.close(fd)
                try:
                    for mode, extra in (("measured", []), ("guess", ["--between-run-factor", "0.8"])):
                        v = [q["verdict"] for q in compare(str(a), path, *extra)[0]["queries"]]
                        found[mode] += sum(v[q] == "slower" for q in pick)
                        wrong[mode] += sum(x in FLAG for k, x in enumerate(v) if k not in pick)
                finally:
                    os.unlink(path)
                changed += len(pick)
        out[f"+{change - 1:.0%}"] = {"changed": changed, "slower": found, "false_alarms": wrong}
        print(f"  +{change - 1:.0%}: {found} of {changed} (false alarms {wrong})", file=sys.stderr)
    res["semireal"] = out


def _overheads(doc: dict) -> list[float]:
    return [s["client_ms"] - s["server_ms"] for s in doc["queries"][0]["samples"]
            if not s["warmup"] and not s["error"] and s["server_ms"] is not None]


def probes(res: dict, rounds: int) -> None:
    """Alternated runs (on, off, on, off, …) against one server: each run's median
    overhead, and the median over all samples of each setting (the bar)."""
    from tests.engines import ModernServer

    runs: dict[str, list[list[float]]] = {"on": [], "off": []}
    with ModernServer() as server:
        for i in range(rounds):
            for label, extra in (("on", []), ("off", ["--no-probes"])) if i % 2 == 0 else \
                    (("off", ["--no-probes"]), ("on", [])):
                f = OUT / f"v24-probes-{label}-{i}.json"
                chbench("run", "--quiet", "--target", server.http_url, "--query", "SELECT 1", "--iterations", "300",
                        *extra, "--out", str(f))
                runs[label].append(_overheads(json.loads(f.read_text())))
    med = {k: round(float(statistics.median([x for r in v for x in r])), 4) for k, v in runs.items()}
    per_run = {k: [round(float(statistics.median(r)), 4) for r in v] for k, v in runs.items()}
    spread = {k: round(max(v) - min(v), 4) for k, v in per_run.items()}
    res["probes"] = {"median_on_ms": med["on"], "median_off_ms": med["off"],
                     "on_minus_off_ms": round(med["on"] - med["off"], 4), "per_run_ms": per_run,
                     "per_run_spread_ms": spread, "bar_met": abs(med["on"] - med["off"]) <= 0.05}


def simulate(res: dict, docs: int) -> None:
    from bench.sim_verdicts import NoiseModel, false_alarms, power

    model = NoiseModel()
    t = time.monotonic()
    out: dict[str, Any] = {"model": model.to_json()}
    from dataclasses import replace

    for mode in ("side-by-side", "separate"):
        out[mode] = false_alarms(model, mode, docs)
        out[f"{mode} power +10%"] = power(model, mode, max(50, docs // 10), 1.10)
        print(f"  {mode}: {out[mode]} power {out[f'{mode} power +10%']}", file=sys.stderr)
    # a neighbour busy in 40% of B's rounds (the probes see it), and probes that saw nothing
    out["separate, bursts in B"] = false_alarms(replace(model, burst_rate=0.4), "separate", docs)
    out["separate, no probes"] = false_alarms(model, "separate", docs, probes=False)
    out["side-by-side, bursts"] = false_alarms(replace(model, burst_rate=0.4), "side-by-side", docs)
    # three sessions per side (run --sessions 3): each query's own sessions and the
    # sessions' machine levels; then levels 5% apart (sd, as real files of 2026-12-03 had
    # 2–6%) that the probes do not see
    out["sessions 3"] = false_alarms(model, "separate", docs, sessions=3)
    out["sessions 3 power +10%"] = power(model, "separate", max(50, docs // 10), 1.10, sessions=3)
    loud = replace(model, run_offset=0.05)
    out["sessions 3, levels 5%, no probes"] = false_alarms(loud, "separate", docs, probes=False, sessions=3)
    out["sessions 3, levels 5%, power +10%"] = power(loud, "separate", max(50, docs // 10), 1.10, sessions=3)
    for k in ("separate, bursts in B", "separate, no probes", "side-by-side, bursts", "sessions 3",
              "sessions 3 power +10%", "sessions 3, levels 5%, no probes", "sessions 3, levels 5%, power +10%"):
        print(f"  {k}: {out[k]}", file=sys.stderr)
    out["seconds"] = round(time.monotonic() - t)
    res["simulate"] = out


def table_of(path: Path, side: str = "A") -> tuple[list[list[float]], list[list[float]] | None]:
    """One side's times as queries × rounds, and a side-by-side file's log ratios."""
    import math

    doc = json.loads(path.read_text())
    times, ratios = [], []
    for q in doc["queries"]:
        by: dict[Any, Any] = {}
        for s in q["samples"]:
            if not s["warmup"] and not s["error"] and s["client_ms"]:
                by.setdefault(s["target"], {})[(s.get("session") or 0, s["round"])] = s["client_ms"]
        keys = sorted(by.get(side, {}))
        times.append([by[side][k] for k in keys])
        if "B" in by:
            ratios.append([math.log(by["B"][k] / by["A"][k]) for k in keys if k in by["B"]])
    n = min(len(t) for t in times)
    return [t[:n] for t in times], ([r[:n] for r in ratios] if ratios else None)


def fit_part(res: dict, files: list[str]) -> None:
    """The noise model fitted to each real file (A/A side-by-side files give the order effect)."""
    import numpy as np

    from bench.sim_verdicts import fit

    out = []
    for f in files:
        times, ratios = table_of(Path(f))
        m = fit(np.array(times), np.array(ratios) if ratios else None)
        out.append({"file": Path(f).name, **{k: v for k, v in m.to_json().items() if k != "base_ms"}})
        print(f"  {Path(f).name}: jitter median {np.median(m.jitter):.3f}, drift sd {m.drift_sd:.3f} phi "
              f"{m.drift_phi:.4f}, order {m.order:+.4f}, outliers {m.outlier_rate:.3f}", file=sys.stderr)
    res["fit"] = out


def main() -> None:
    global REUSE
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="simulate,probes,sbs,separate", help="comma-separated parts")
    ap.add_argument("--runs", type=int, default=3, help="sbs: runs of each kind (default 3)")
    ap.add_argument("--pairs", type=int, default=4, help="separate: A/A pairs (default 4)")
    ap.add_argument("--rounds", type=int, default=3, help="probes: alternations (default 3)")
    ap.add_argument("--docs", type=int, default=1000, help="simulate: comparisons of 10 queries per mode")
    ap.add_argument("--reuse", action="store_true", help="compare files already in bench/out again")
    ap.add_argument("--quiet-threshold", default=None, metavar="PCT", help="disturbed: run's --quiet-threshold")
    ap.add_argument("--fit", nargs="*", default=[], metavar="FILE", help="fit: run files to fit the noise model to")
    args = ap.parse_args()
    REUSE = args.reuse
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "verdict_bars.json"
    res: dict = json.loads(path.read_text()) if path.exists() else {}
    parts = {"sbs": lambda: sbs(res, args.runs), "separate": lambda: separate(res, args.pairs),
             "probes": lambda: probes(res, args.rounds), "simulate": lambda: simulate(res, args.docs),
             "semireal": lambda: semireal(res, args.pairs),
             "disturbed": lambda: disturbed(res, args.pairs, args.quiet_threshold),
             "fit": lambda: fit_part(res, args.fit or [str(p) for p in sorted(OUT.glob("v24-sbs-aa-*.json"))])}
    for part in args.only.split(","):
        t = time.monotonic()
        parts[part]()
        res.setdefault("part_seconds", {})[part] = round(time.monotonic() - t, 1)
        path.write_text(json.dumps(res, indent=2))
    print(json.dumps({k: v.get("bar", v) if isinstance(v, dict) else v for k, v in res.items()}, indent=2))


if __name__ == "__main__":
    main()
