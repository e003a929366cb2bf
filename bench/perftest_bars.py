"""Measure issue 14's bars: ClickHouse performance tests (XML) as chbench workloads.

    python bench/perftest_bars.py                    # everything (~25 min on 2 cores)
    python bench/perftest_bars.py --only expand,aa --rounds 1

Parts (on the 21 test files in bench/perftests/, written for chbench in ClickHouse's
format: substitutions in create/fill/drop and queries, settings, a long tag, a missing
table precondition, queries on missing data sets, writes, a query from a file, legacy
elements):
  expand  for each file, the number of expanded queries the run recorded equals an
          independent count made here (regular expressions over the raw XML, no code of
          chbench's parser); and every expanded query is accounted for: measured on both
          sides, or skipped with a reason. Zero tracebacks.
  aa      `chbench run --tests bench/perftests --target embedded --target embedded`
          (the embedded engine against itself, side by side), --rounds times; both rules
          decide every measured query. Bar: chbench's rule flags (slower or faster) at
          most 2% of them; ClickHouse's rule reported beside it.
  sens    the same files with `--setting-b max_threads=1` (2 cores): how many queries each
          rule calls slower. Bar: chbench's rule finds at least as many as ClickHouse's.

Run it on an otherwise idle machine. Writes bench/out/perftest_bars.json.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TESTS = REPO / "bench" / "perftests"
OUT = REPO / "bench" / "out"
FLAG = ("slower", "faster")


def chbench(*args: str) -> subprocess.CompletedProcess[str]:
    p = subprocess.run([sys.executable, "-m", "chbench", *args], cwd=REPO, capture_output=True, text=True)
    if "Traceback" in p.stderr:
        raise SystemExit(f"chbench {' '.join(args)} printed a traceback:\n{p.stderr}")
    return p


# -- the independent counter: no ElementTree, no string.Formatter ------------------------
_ELEMENT = re.compile(r"<(query|substitution)\b([^>]*?)(/>|>(.*?)</\1>)", re.S)
_VALUE = re.compile(r"<value>(.*?)</value>", re.S)
_NAME = re.compile(r"<name>\s*(.*?)\s*</name>", re.S)
_FIELD = re.compile(r"\{([A-Za-z_][A-Za-z_0-9]*)\}")


def count_expanded(path: Path) -> int:
    """How many queries a test file expands to: per <query>, the product of the value
    counts of the distinct {names} it uses (after removing literal {{ and }})."""
    text = re.sub(r"<!--.*?-->", "", path.read_text(), flags=re.S)
    values: dict[str, int] = {}
    bodies: list[str] = []
    for m in _ELEMENT.finditer(text):
        tag, attrs, body = m.group(1), m.group(2), m.group(4) or ""
        if tag == "substitution":
            name = _NAME.search(body)
            if name:
                values[name.group(1)] = len(_VALUE.findall(body))
        else:
            file = re.search(r'file="([^"]+)"', attrs)
            bodies.append((path.parent / file.group(1)).read_text() if file else body)
    total = 0
    for body in bodies:
        names = set(_FIELD.findall(body.replace("{{", "").replace("}}", "")))
        total += math.prod(values[n] for n in names)
    return total


def run(out: Path, *extra: str) -> tuple[dict, float, int, str]:
    t0 = time.monotonic()
    p = chbench("run", "--tests", str(TESTS), "--quiet", "--out", str(out), *extra)
    return json.loads(out.read_text()), time.monotonic() - t0, p.returncode, p.stderr


def verdicts(path: Path, method: str) -> list[dict]:
    p = chbench("compare", str(path), "--format", "json", "--method", method, "--fail-on", "never")
    if p.returncode != 0:
        raise SystemExit(f"compare failed: {p.stderr}")
    return json.loads(p.stdout)["queries"]


def accounted(doc: dict) -> dict:
    """Per test: expanded (as recorded), measured on every side, skipped with a reason, and
    queries missing from both (must be none)."""
    sides = [t["id"] for t in doc["targets"]]
    queries = {q["name"]: q for q in doc["queries"]}
    out = {}
    for t in doc["tests"]:
        names = t["queries"]
        measured = skipped = 0
        for n in names:
            q = queries.get(n)
            if q is None:
                continue
            if all((q["sides"].get(s) or {}).get("skipped") for s in sides):
                skipped += 1
            elif all(any(x["target"] == s and not x["warmup"] and not x["error"] for x in q["samples"])
                     for s in sides):
                measured += 1
        out[t["name"]] = {"expanded": t["expanded"], "measured": measured, "skipped": skipped,
                          "unaccounted": t["expanded"] - measured - skipped,
                          "why_skipped": sorted({(queries[n]["sides"].get(sides[0]) or {}).get("skipped", "")
                                                 for n in names if n in queries} - {""})}
    return out


def part_expand(doc: dict) -> dict:
    recorded = {t["name"]: t["expanded"] for t in doc["tests"]}
    files = sorted(TESTS.glob("*.xml"))
    counts = {f.stem: count_expanded(f) for f in files}
    acc = accounted(doc)
    return {"files": len(files), "counts": counts, "recorded": recorded,
            "all_equal": all(recorded.get(k) == v for k, v in counts.items()),
            "expanded_total": sum(counts.values()),
            "measured": sum(a["measured"] for a in acc.values()), "skipped": sum(a["skipped"] for a in acc.values()),
            "unaccounted": sum(a["unaccounted"] for a in acc.values()), "per_test": acc}


def flagged(rows: list[dict]) -> dict:
    decided = [r for r in rows if r.get("p_value") is not None]
    n = sum(r["verdict"] in FLAG for r in decided)
    return {"decided": len(decided), "flagged": n, "share": n / len(decided) if decided else None,
            "verdicts": {v: sum(r["verdict"] == v for r in decided) for v in sorted({r["verdict"] for r in decided})},
            "flagged_queries": [f"{r['name']} {r['verdict']} {r['ratio'] - 1:+.1%}" for r in decided
                                if r["verdict"] in FLAG]}


def part_aa(rounds: int, first: tuple[dict, float, int, str] | None) -> dict:
    out: dict = {"rounds": []}
    for k in range(rounds):
        path = OUT / f"perf-aa-{k}.json"
        doc, secs, code, err = first if (k == 0 and first) else run(path, "--target", "embedded", "--target",
                                                                      "embedded")
        out["rounds"].append({"seconds": round(secs, 1), "exit": code, "chbench": flagged(verdicts(path, "chbench")),
                              "clickhouse": flagged(verdicts(path, "clickhouse"))})
        print(json.dumps(out["rounds"][-1]), file=sys.stderr)
    for rule in ("chbench", "clickhouse"):
        decided = sum(r[rule]["decided"] for r in out["rounds"])
        n = sum(r[rule]["flagged"] for r in out["rounds"])
        out[rule] = {"decided": decided, "flagged": n, "share": n / decided if decided else None}
    out["bar_met"] = out["chbench"]["share"] is not None and out["chbench"]["share"] <= 0.02
    return out


def part_sens() -> dict:
    path = OUT / "perf-sens.json"
    _, secs, code, _ = run(path, "--setting-b", "max_threads=1")
    res: dict[str, Any] = {"seconds": round(secs, 1), "exit": code}
    for rule in ("chbench", "clickhouse"):
        rows = [r for r in verdicts(path, rule) if r.get("p_value") is not None]
        res[rule] = {"decided": len(rows), "slower": sum(r["verdict"] == "slower" for r in rows),
                     "faster": sum(r["verdict"] == "faster" for r in rows),
                     "unstable": sum(r["verdict"] == "unstable" for r in rows)}
    res["bar_met"] = res["chbench"]["slower"] >= res["clickhouse"]["slower"]
    print(json.dumps(res), file=sys.stderr)
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="expand,aa,sens")
    ap.add_argument("--rounds", type=int, default=2, help="A/A rounds (default 2)")
    args = ap.parse_args()
    parts = args.only.split(",")
    OUT.mkdir(parents=True, exist_ok=True)
    result: dict = {"when": time.strftime("%Y-%m-%d %H:%M:%S")}
    first = None
    if "expand" in parts or "aa" in parts:
        first = run(OUT / "perf-aa-0.json", "--target", "embedded", "--target", "embedded")
        result["first_run"] = {"seconds": round(first[1], 1), "exit": first[2], "stderr": first[3].splitlines()}
    if "expand" in parts and first:
        result["expand"] = part_expand(first[0])
        print(json.dumps({k: v for k, v in result["expand"].items() if k != "per_test"}), file=sys.stderr)
    if "aa" in parts:
        result["aa"] = part_aa(args.rounds, first)
    if "sens" in parts:
        result["sens"] = part_sens()
    (OUT / "perftest_bars.json").write_text(json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k not in ("expand",)}, indent=1)[:4000])


if __name__ == "__main__":
    main()
