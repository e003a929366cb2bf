"""Separate ``load`` files judged as ``compare`` judges them: the A/A (one 26.9 server,
runs made one after another) and a known change (B: a second 26.9 server whose table holds
20% more rows). Load files hold no machine probes and no calibration query, so what
tells the machine's level apart from a change is the queries' common shift (4 queries or
more), or sessions (``--vs``, two files or more a side); with fewer queries a query beyond
the threshold is ``unstable`` (docs/statistics.md, "nothing known of the machine").

    python bench/load_pairs.py                      # 2 queries, 10 runs of 5 s: ~1.5 min
    python bench/load_pairs.py --queries 6 --runs 12 --seconds 4

Per case it prints the verdicts' counts: one run against the next (A/A), one run against
the next two (``--vs``: an A/A that once was called `faster`), two against the next two,
and runs of A against runs of B (1 vs 1, 2 vs 2). All but the second query are full
scans: 20% more rows slow them alike, a shift the machine's level could explain where
the files hold no probes. Writes bench/out/load_pairs.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
OUT = REPO / "bench" / "out"

from bench.replay_pairs import ROWS, make_table  # noqa: E402
from tests.engines import ModernServer  # noqa: E402

QUERIES = [
    "SELECT count() FROM bench.t WHERE x % 7 = 3",
    "SELECT sum(y) FROM bench.t WHERE x < 200000",  # the primary key prunes it: B reads the same
    "SELECT uniq(y % 97) FROM bench.t",
    "SELECT max(x) FROM bench.t WHERE y = 5",
    "SELECT avg(y) FROM bench.t WHERE x % 3 = 1",
    "SELECT count() FROM bench.t WHERE y < 100",
]


def load(url: str, out: Path, queries: int, seconds: str) -> str:
    args = [a for sql in QUERIES[:queries] for a in ("-q", sql)]
    r = subprocess.run([sys.executable, "-m", "chbench", "load", "--target", url, *args, "-c", "2", "-t", seconds,
                        "--out", str(out), "--quiet"], cwd=REPO, capture_output=True, text=True)
    assert r.returncode in (0, 1), r.stderr
    return str(out)


def verdicts(a: list[str], b: list[str]) -> list[str]:
    from chbench.compare import CompareOptions, build_comparison

    cmp = build_comparison(a, CompareOptions(), vs=b) if len(a) > 1 or len(b) > 1 else \
        build_comparison(a + b, CompareOptions())
    return [q.verdict for q in cmp.doc.queries]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=2, choices=range(1, len(QUERIES) + 1))
    ap.add_argument("--runs", type=int, default=10, help="A/A runs of A, one after another")
    ap.add_argument("--seconds", default="5", help="each run's -t")
    args = ap.parse_args()
    a, b = ModernServer(), ModernServer()
    cases: dict[str, Counter[str]] = {}
    try:
        make_table(a.http_port, ROWS)
        make_table(b.http_port, ROWS * 6 // 5)
        work = Path(tempfile.mkdtemp())
        files = [load(a.http_url, work / f"a{k}.json", args.queries, args.seconds) for k in range(args.runs)]
        shapes = {"1 vs 1": (1, 1), "1 vs 2 (--vs)": (1, 2), "2 vs 2 (--vs)": (2, 2)}
        for name, (na, nb) in shapes.items():
            got: Counter[str] = Counter()
            for i in range(0, len(files) - na - nb + 1, na + nb):
                got.update(verdicts(files[i:i + na], files[i + na:i + na + nb]))
            cases[f"A/A, {name}"] = got
        one, two = Counter[str](), Counter[str]()
        for k in range(max(1, args.runs // 5)):
            b_files = [load(b.http_url, work / f"b{k}-{j}.json", args.queries, args.seconds) for j in range(2)]
            one.update(verdicts([files[2 * k]], b_files[:1]))
            two.update(verdicts(files[2 * k:2 * k + 2], b_files))
        cases["B: 20% more rows, 1 vs 1"] = one
        cases["B: 20% more rows, 2 vs 2 (--vs)"] = two
    finally:
        a.stop()
        b.stop()
    for name, got in cases.items():
        flagged = got.get("slower", 0) + got.get("faster", 0)
        print(f"{name}: {dict(got)} — {flagged} of {sum(got.values())} flagged", flush=True)
    OUT.mkdir(exist_ok=True)
    (OUT / "load_pairs.json").write_text(json.dumps({"args": vars(args), "cases": cases}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
