"""Measure the bars of ``chbench report`` (issue 6).

    python bench/report_bars.py        # ~2 min

  * a 43-query ClickBench comparison (a fresh 'clickbench run' on 1M synthetic rows in the
    embedded engine, against the two published results files in ../shared/clickbench):
    HTML size (bar: < 3 MB) and render time in headless Chromium, navigation start to
    the load event, median of 5 opens (bar: < 2 s);
  * every number in the report's tables equals what 'chbench clickbench compare
    --format json' prints; and, for a comparison of two runs of the built-in suite,
    what 'chbench compare --format json' prints.

Writes bench/out/report_bars.json.
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
OUT = REPO / "bench" / "out"
SHARED = Path("/work/shared/clickbench")

from tests.browser import Browser  # noqa: E402


def chbench(*args: str) -> subprocess.CompletedProcess[str]:
    p = subprocess.run([sys.executable, "-m", "chbench", *args], cwd=REPO, capture_output=True, text=True)
    if p.returncode not in (0, 1):
        raise SystemExit(f"chbench {' '.join(args)}: {p.stderr}")
    return p


def cells(html: str, attr: str) -> dict[str, list[float | None]]:
    out = {}
    for m in re.finditer(rf'<tr {attr}="([^"]*)">(.*?)</tr>', html, re.S):
        out[m.group(1)] = [None if v == "" else float(v) for v in re.findall(r'data-value="([^"]*)"', m.group(2))]
    return out


def main() -> None:
    res: dict = {"started": time.strftime("%Y-%m-%d %H:%M:%S")}
    with tempfile.TemporaryDirectory(prefix="chbench-report-bars-") as tmp:
        d = Path(tmp)
        db = f"embedded:{d / 'db'}"
        chbench("clickbench", "load", "--target", db, "--synthetic", "1000000", "--quiet", "--out", str(d / "l.json"))
        chbench("clickbench", "run", "--target", db, "--load-results", str(d / "l.json"), "--out",
                str(d / "cb.json"), "--quiet")
        inputs = [str(d / "cb.json")] + [str(p) for p in sorted(SHARED.glob("result-*.json"))]
        html_path = d / "cb.html"
        chbench("report", *inputs, "--html", str(html_path))
        size = html_path.stat().st_size
        b = Browser()
        try:
            loads = []
            errors = []
            for _ in range(5):
                r = b.open(html_path)
                loads.append(r["load_ms"])
                errors += r["errors"]
        finally:
            b.close()
        scores = json.loads(chbench("clickbench", "compare", *inputs, "--format", "json").stdout)
        html = html_path.read_text()
        entries, per_query = cells(html, "data-entry"), cells(html, "data-query")
        shown = checked = 0
        for s in scores["scores"]:
            label = f"{s['system']} ({s['machine']})" if s["machine"] else s["system"]
            checked += 3
            shown += sum(a == b for a, b in zip(entries[label][:3], [s["cold"], s["hot"], s["combined"]],
                                                strict=True))
        for q in scores["queries"]:
            expected = [x for e in q["entries"] for x in (e["cold_s"], e["hot_s"], e["hot_ratio"])]
            got = per_query[str(q["query"] - 1)][1:]
            checked += len(expected)
            shown += sum(a == b for a, b in zip(got, expected, strict=True))
        res["clickbench"] = {"entries": len(inputs), "html_bytes": size, "load_ms": loads,
                             "load_ms_median": statistics.median(loads), "console_errors": len(errors),
                             "numbers_checked": checked, "numbers_equal": shown}
        print(f"ClickBench report ({len(inputs)} entries, 43 queries): {size / 1e6:.2f} MB, renders in "
              f"{statistics.median(loads):.0f} ms (median of 5; {min(loads):.0f}–{max(loads):.0f}), "
              f"{len(errors)} console errors; {shown}/{checked} numbers equal clickbench compare --format json")
        # a comparison of two runs of the built-in suite
        for name in ("a", "b"):
            chbench("run", "--iterations", "5", "--quiet", "--out", str(d / f"{name}.json"))
        cmp_html = d / "cmp.html"
        chbench("report", str(d / "a.json"), str(d / "b.json"), "--html", str(cmp_html))
        doc = json.loads(chbench("compare", str(d / "a.json"), str(d / "b.json"), "--format", "json").stdout)
        rows = cells(cmp_html.read_text(), "data-query")
        shown = checked = 0
        for q in doc["queries"]:
            ci = q["ci"] or [None, None]
            expected = [q["a"]["median"], q["b"]["median"], q["ratio"], ci[0], ci[1], q["p_adjusted"],
                        q["a"]["runs"], q["b"]["runs"]]
            checked += len(expected)
            shown += sum(a == b for a, b in zip(rows[q["name"]][:8], expected, strict=True))
        res["comparison"] = {"queries": len(doc["queries"]), "numbers_checked": checked, "numbers_equal": shown,
                             "html_bytes": cmp_html.stat().st_size}
        print(f"run comparison report ({len(doc['queries'])} queries): {shown}/{checked} numbers equal compare "
              f"--format json; {cmp_html.stat().st_size / 1e6:.2f} MB")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "report_bars.json").write_text(json.dumps(res, indent=2))
    print(f"written {OUT / 'report_bars.json'}")


if __name__ == "__main__":
    main()
