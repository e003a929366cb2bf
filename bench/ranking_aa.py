"""A/A on real runs for "which client path is fastest" (stats/ranking.py).

    python bench/ranking_aa.py [--runs 30] [--rows 600000] [--repeat 3]

Each run is ``chbench ingest --paths http-native,driver-columns --batch-size
100000,100001`` on a 26.9 server: four units, two twins of each path whose batches
differ by one row in 100,000 — the same work, told apart only by noise. A twin called
*behind* its leading twin is a false alarm; the two paths (4× apart here) should be
told apart every time. Prints the counts; writes bench/out/ranking_aa.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
OUT = REPO / "bench" / "out"

from tests.engines import ModernServer  # noqa: E402

TWINS = ("100000", "100001")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--rows", type=int, default=600_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    server = ModernServer()
    false_twin = told_paths = headline_twin = 0
    runs = []
    try:
        with tempfile.TemporaryDirectory(prefix="chbench-ranking-aa-") as tmp:
            for i in range(args.runs):
                out = Path(tmp) / f"i{i}.json"
                p = subprocess.run([sys.executable, "-m", "chbench", "ingest", "--target", server.http_url,
                                    "--target", server.native_url, "--paths", "http-native,driver-columns",
                                    "--batch-size", ",".join(TWINS), "--rows", str(args.rows), "--repeat",
                                    str(args.repeat), "--quiet", "--out", str(out)], cwd=REPO, capture_output=True,
                                   text=True)
                rk = json.loads(out.read_text())["result"]["ranking"]
                leader = rk["leader"]
                path = leader.split("@")[0]
                twin = next(g for g in rk["others"] if g["path"].split("@")[0] == path)
                other = [g for g in rk["others"] if g["path"].split("@")[0] != path]
                false_twin += twin["behind"]
                headline_twin += rk["others"][0]["path"] == twin["path"] and twin["behind"]
                told_paths += all(g["behind"] for g in other)
                runs.append({"exit": p.returncode, "leader": leader, "twin": twin, "others": other})
                print(f"run {i + 1}: leader {leader}; twin {twin['path']} {twin['ratio']:.3f}x "
                      f"[{twin['ci'][0]:.3f}, {twin['ci'][1]:.3f}] {'BEHIND' if twin['behind'] else 'within noise'}; "
                      f"other path {'told apart' if all(g['behind'] for g in other) else 'NOT told apart'}",
                      flush=True)
    finally:
        server.stop()
    print(f"twin called behind its leading twin: {false_twin} of {args.runs}; the other path told apart: "
          f"{told_paths} of {args.runs}")
    (OUT / "ranking_aa.json").write_text(json.dumps({"started": time.strftime("%Y-%m-%d %H:%M:%S"), "runs": runs,
                                                     "false_twin": false_twin, "told_paths": told_paths}, indent=1))


if __name__ == "__main__":
    main()
