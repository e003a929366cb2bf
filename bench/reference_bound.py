"""How far does an A/A query move with the reference task? The bound ``explains_up_to``
(chbench/stats/machine.py) lets a reference that moved by r explain a slowdown up to
max(+50%, r ** REFERENCE_POWER); this reads A/A run files already measured and prints,
per band of the reference's move, the largest query ratio and interval low end seen.

    python bench/reference_bound.py                       # the files bench/ left in bench/out
    python bench/reference_bound.py --apart 3 DIR_OR_GLOB…

Every pair of files in one group (a directory, or a glob) up to --apart apart (in name
order) is compared both ways with the library's ``build_comparison``; each query is
oriented so the run whose reference was slower is B. Seen (2026-12-08, 01:33 UTC, on
bench/reference_pairs.py's 79 short embedded runs of 2026-12-07 23:22–23:27 and the 15 full
runs of bench/bars.py's sep-pairs/aa-separate, 23:40–23:56): 5,600 verdicts, the
reference up to +102%, no ratio beyond +45% and no low end beyond +20%; +60% to +102%
(44 pairs): ratios within +35%. Writes bench/out/reference_bound.json.
"""

from __future__ import annotations

import argparse
import glob
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
OUT = REPO / "bench" / "out"
BANDS = [(1.0, 1.03), (1.03, 1.1), (1.1, 1.2), (1.2, 1.35), (1.35, 1.6), (1.6, 10.0)]
DEFAULT = [str(OUT / "reference_pairs"), str(OUT / "sep-pair-*-1.0.json"), str(OUT / "aa-sep-*.json")]


def group(spec: str) -> list[str]:
    p = Path(spec)
    return sorted(str(f) for f in p.glob("*.json")) if p.is_dir() else sorted(glob.glob(spec))


def verdicts(files: list[str], apart: int) -> list[tuple[float, float, float]]:
    """(reference ratio, query ratio, interval low end), oriented reference ≥ 1."""
    from chbench.compare import build_comparison

    out = []
    for i in range(len(files)):
        for j in range(i + 1, min(len(files), i + 1 + apart)):
            for a, b in ((files[i], files[j]), (files[j], files[i])):
                doc = build_comparison([a, b]).doc.to_json()
                ref = ((doc["summary"].get("machine") or {}).get("reference") or {}).get("ratio")
                if not ref:
                    continue
                for q in doc["queries"]:
                    if q.get("ratio") and q.get("ci"):
                        r, lo = q["ratio"], q["ci"][0]
                        out.append((ref, r, lo) if ref >= 1 else (1 / ref, 1 / r, 1 / q["ci"][1]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("groups", nargs="*", default=DEFAULT)
    ap.add_argument("--apart", type=int, default=3, help="pairs up to this many files apart (default 3)")
    args = ap.parse_args()
    rows: list[tuple[float, float, float]] = []
    for spec in args.groups:
        files = group(spec)
        rows += verdicts(files, args.apart if len(files) > 20 else len(files))
    if not rows:
        sys.exit("no A/A files with reference timings found")
    table = []
    for lo_, hi_ in BANDS:
        sel = np.array([r for r in rows if lo_ <= r[0] < hi_])
        if len(sel):
            table.append({"reference": [lo_, hi_], "verdicts": len(sel), "ratio_max": float(sel[:, 1].max()),
                          "ratio_p99": float(np.percentile(sel[:, 1], 99)), "low_end_max": float(sel[:, 2].max())})
            print(f"reference +{lo_ - 1:.0%} to +{hi_ - 1:.0%}: {len(sel):5d} verdicts, ratio max "
                  f"{sel[:, 1].max() - 1:+.1%} (p99 {np.percentile(sel[:, 1], 99) - 1:+.1%}), low end max "
                  f"{sel[:, 2].max() - 1:+.1%}")
    print(f"{len(rows)} verdicts; reference up to {max(r[0] for r in rows) - 1:+.0%}")
    OUT.mkdir(exist_ok=True)
    (OUT / "reference_bound.json").write_text(json.dumps({"bands": table, "verdicts": len(rows)}, indent=2))


if __name__ == "__main__":
    main()
