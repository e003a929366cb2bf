"""A/A pairs of short separate runs: how often does `compare` flag a query, and in which
pairs — those whose machines the reference task compared, or not?

    python bench/reference_pairs.py                     # ~11 min of runs, then ~5 min of comparisons
    python bench/reference_pairs.py --minutes 5 --only embedded
    python bench/reference_pairs.py --reuse DIR         # compare the files already in DIR again
    python bench/reference_pairs.py --changes --minutes 7   # real changes: how many are found

One-session runs of the built-in suite (``--iterations 10 --scale 0.1``: 3–6 s each) back to
back, alternately on the embedded engine and on a 26.9 server over HTTP, until --minutes
have passed. Every pair of runs of one engine up to --apart runs apart is compared in both
orders (the library's ``build_comparison``, as ``chbench compare a.json b.json``): each
query's verdict is A/A, so every ``slower``/``faster`` is a false alarm. They are counted per
engine and by what the machine comparison could say: the reference task not compared (too
few timings in a run), compared and alike, one machine busier, or one that may have been
(the reference moved >= 3%, not significantly).

``--changes``: the same short runs on the embedded engine, three kinds in turn — A as above,
B with 10% more rows (``--scale 0.11``), C with ``max_threads=1`` (~1.8x slower on 2 cores,
the single-threaded join unchanged) — and each A compared with the B and C runs up to one
apart: how many of the query verdicts are ``slower`` (every query of B and nine of C
really are), by what the machine comparison said. Writes bench/out/reference_changes.json.

Why (2026-12-04): such runs held one probe reading (3 timings of the reference task), fewer
than compare needs, and 6.4% of their A/A verdicts were false alarms; the runner now tops
the reference up after a session's last round. Writes bench/out/reference_pairs.json.
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
OUT = REPO / "bench" / "out"

RUN = ["--iterations", "10", "--scale", "0.1", "--quiet"]


def collect(work: Path, minutes: float, only: str | None) -> None:
    from chbench.servers import ModernServer

    server = ModernServer() if only != "embedded" else None
    try:
        targets = {"embedded": [], "http": ["--target", server.http_url]} if server else {"embedded": []}
        if only == "http":
            targets.pop("embedded")
        runs_in_turn(work, minutes, targets)
    finally:
        if server is not None:
            server.stop()


CHANGES = {"A": [], "B": ["--scale", "0.11"], "C": ["--setting", "max_threads=1"]}


def runs_in_turn(work: Path, minutes: float, kinds: dict[str, list[str]]) -> None:
    """Short runs of each kind in turn (``KIND-NNN.json``) until ``minutes`` have passed."""
    end, i = time.monotonic() + 60 * minutes, 0
    while time.monotonic() < end:
        for kind, extra in kinds.items():
            # the kind's options after RUN's: the last --scale wins (until 2026-12-08 B's
            # 0.11 came first, so every "+10% rows" run was read at 0.1, an A/A run)
            subprocess.run([sys.executable, "-m", "chbench", "run", *RUN, *extra, "--out",
                            str(work / f"{kind}-{i:03d}.json")], cwd=work, check=False,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        i += 1


def analyse_changes(work: Path) -> dict[str, Any]:
    from chbench.compare import build_comparison

    out: dict[str, Any] = {}
    for kind in ("B", "C"):
        verdicts: Counter[str] = Counter()
        pairs: Counter[str] = Counter()
        for a in sorted(work.glob("A-*.json")):
            n = int(a.stem[2:])
            for other in (work / f"{kind}-{k:03d}.json" for k in (n - 1, n, n + 1)):
                if not other.exists():
                    continue
                doc = build_comparison([str(a), str(other)]).doc.to_json()
                how = state(doc["summary"].get("machine") or {})
                pairs[how] += 1
                for q in doc["queries"]:
                    verdicts[q["verdict"]] += 1
                    verdicts[f"{how}: {q['verdict']}"] += 1
        out[kind] = {"pairs": dict(pairs), "verdicts": dict(verdicts)}
    return out


def state(machine: dict[str, Any]) -> str:
    if not machine.get("reference"):
        return "reference not compared"
    if machine.get("busier"):
        return "busier"
    return "may have been busier" if machine.get("maybe_busier") else "reference compared, alike"


def analyse(work: Path, apart: int) -> dict[str, Any]:
    from chbench.compare import build_comparison
    from chbench.errors import ChbenchError

    out: dict[str, Any] = {}
    for engine in sorted({p.name.split("-")[0] for p in work.glob("*-*.json")}):
        files = sorted(work.glob(f"{engine}-*.json"))
        flags: Counter[str] = Counter()
        verdicts: Counter[str] = Counter()
        pairs: Counter[str] = Counter()
        for i, j in itertools.combinations(range(len(files)), 2):
            if j - i > apart:
                continue
            for a, b in ((files[i], files[j]), (files[j], files[i])):
                try:
                    doc = build_comparison([str(a), str(b)]).doc.to_json()
                except (ChbenchError, ValueError, KeyError) as e:  # a run cut short: said, not counted
                    print(f"skipped {a.name} vs {b.name}: {e}", file=sys.stderr)
                    continue
                how = state(doc["summary"].get("machine") or {})
                pairs[how] += 1
                for q in doc["queries"]:
                    verdicts[q["verdict"]] += 1
                    flags[how] += q["verdict"] in ("slower", "faster")
                    verdicts[f"{how}: queries"] += 1
        total = sum(v for k, v in verdicts.items() if ":" not in k)
        out[engine] = {"runs": len(files), "query_verdicts": total, "verdicts": dict(verdicts),
                       "pairs": dict(pairs), "false_alarms": dict(flags),
                       "false_alarm_rate": sum(flags.values()) / total if total else None}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=11.0)
    ap.add_argument("--apart", type=int, default=5, help="pairs of runs at most this many runs apart")
    ap.add_argument("--only", choices=["embedded", "http"])
    ap.add_argument("--reuse", type=Path, help="a folder of runs made before: only compare them")
    ap.add_argument("--changes", action="store_true", help="real changes instead of A/A pairs (see above)")
    args = ap.parse_args()
    if args.changes:
        work = args.reuse or OUT / "reference_changes"
        if not args.reuse:
            work.mkdir(parents=True, exist_ok=True)
            for old in work.glob("*.json"):
                old.unlink()
            runs_in_turn(work, args.minutes, CHANGES)
        changes = {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "kinds": analyse_changes(work)}
        OUT.mkdir(exist_ok=True)
        (OUT / "reference_changes.json").write_text(json.dumps(changes, indent=1))
        print(json.dumps(changes, indent=1))
        return
    work = args.reuse or OUT / "reference_pairs"
    if not args.reuse:
        work.mkdir(parents=True, exist_ok=True)
        for old in work.glob("*.json"):
            old.unlink()
        collect(work, args.minutes, args.only)
    result = {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "apart": args.apart,
              "engines": analyse(work, args.apart)}
    OUT.mkdir(exist_ok=True)
    (OUT / "reference_pairs.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
