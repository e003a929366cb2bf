"""``chbench load --metrics-port``: the live Prometheus endpoint, scraped while a real
load runs against the 26.9 server (several worker processes, a failing query in the mix)."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.conftest import REPO, assert_one_line_error, load, run_cli
from tests.engines import ModernServer, free_port

SERIES = re.compile(r'^(chbench_[a-z_]+)(\{[^}]*\})? ([0-9.e+-]+)$', re.M)


def scrape(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    return {m.group(1) + (m.group(2) or ""): float(m.group(3)) for m in SERIES.finditer(text)}


def test_metrics_while_loading(modern: ModernServer, tmp_path: Path) -> None:
    port, out, queries = free_port(), tmp_path / "load.json", tmp_path / "q.sql"
    queries.write_text("-- name: one\nSELECT 1;\n-- name: bad\nSELECT * FROM no_such_table_here;\n")
    proc = subprocess.Popen([sys.executable, "-m", "chbench", "load", "--target", modern.native_url, "--queries",
                             str(queries), "-c", "4", "--workers", "2", "--rate", "300", "-t", "3", "-d", "0",
                             "--continue_on_errors", "--quiet", "--metrics-port", str(port), "--metrics-hold", "3",
                             "--out", str(out)], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    scrapes = []
    try:
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            with contextlib.suppress(OSError):  # not listening yet
                scrapes.append(scrape(port))
            if out.exists() and load(out)["status"] != "running":
                break
            time.sleep(0.2)
        time.sleep(0.5)
        final = scrape(port)  # --metrics-hold: the final values stay up after the run
    finally:
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    total = load(out)["levels"][-1]["total"]
    count = sum(v for k, v in final.items() if k.startswith("chbench_queries_total"))
    assert count == total["queries"] and count > 0
    assert sum(v for k, v in final.items() if k.startswith("chbench_errors_total")) == total["errors"] > 0
    assert any('code="60"' in k for k in final if k.startswith("chbench_errors_total"))
    assert any('worker="1"' in k for k in final if k.startswith("chbench_queries_total"))  # per worker
    hist = sum(v for k, v in final.items() if k.startswith("chbench_latency_seconds_count"))
    assert hist == total["histogram"]["count"] and final["chbench_offered_qps"] == 300
    inf = [v for k, v in final.items() if k.startswith("chbench_latency_seconds_bucket") and 'le="+Inf"' in k]
    assert sum(inf) == hist
    # counters never go back between scrapes
    for a, b in zip(scrapes, scrapes[1:] + [final], strict=False):
        for k, v in a.items():
            if k.endswith("_total") or "_total{" in k or "_bucket" in k or "_count" in k:
                assert b.get(k, 0) >= v, k


def test_bad_metrics_port_is_one_line() -> None:
    assert_one_line_error(run_cli("load", "-q", "SELECT 1", "-i", "1", "--metrics-port", "nope"))
