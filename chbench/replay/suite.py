"""What a capture says about where the server's time goes: the summary printed after
every capture (queries per normalized hash, the top 20 by total time and the share they
cover) and ``--suite top:N`` — those queries as a ``--queries`` file for ``chbench run``
and ``chbench upgrade`` (the script format: ``-- name:`` and ``-- settings:`` comments,
``;`` between statements)."""

from __future__ import annotations

import re
from typing import Any

from chbench.replay.statements import client_setting, short_name

TOP = 20


def top(by_hash: dict[str, list[Any]], n: int) -> list[tuple[str, list[Any]]]:
    """The ``n`` normalized queries that cost the most total time (ties: more runs first)."""
    return sorted(by_hash.items(), key=lambda kv: (-kv[1][1], -kv[1][0], kv[0]))[:n]


def summary_lines(by_hash: dict[str, list[Any]], n: int = TOP) -> list[str]:
    total_ms = sum(e[1] for e in by_hash.values()) or 0
    count = sum(e[0] for e in by_hash.values())
    best = top(by_hash, n)
    covered = sum(e[1] for _, e in best)
    kinds = f"{len(by_hash):,} normalized quer{'y' if len(by_hash) == 1 else 'ies'}"
    lines = [f"{count:,} queries, {kinds}, {total_ms / 1000:,.1f} s of query time"]
    if not best:
        return lines
    share = covered / total_ms * 100 if total_ms else 100.0
    lines.append(f"top {len(best)} by total time cover {share:.1f}% of it:")
    lines.append(f"  {'hash':>20}  {'runs':>7}  {'total s':>9}  {'share':>6}  query")
    for h, (runs, ms, sql, *_rest) in best:
        part = ms / total_ms * 100 if total_ms else 0.0
        lines.append(f"  {h:>20}  {runs:>7,}  {ms / 1000:>9,.2f}  {part:>5.1f}%  {short_name(sql or '(failed)', 8)}")
    return lines


REDACTED = ("literals redacted (--redact-literals): each query runs with '?' and 0 in place of its values, "
            "so it reads other data than your users' queries did; time it only as a stand-in")


def suite_text(by_hash: dict[str, list[Any]], n: int, source: str, redacted: bool = False) -> str:
    """The suite: one representative per normalized query (its first successful run)."""
    best = top({h: e for h, e in by_hash.items() if e[2] is not None}, n)  # those that ever succeeded
    total_ms = sum(e[1] for e in by_hash.values()) or 1
    databases = sorted({e[3] for _, e in best if e[3]})
    what = "normalized query that cost" if len(best) == 1 else f"{len(best)} normalized queries that cost"
    lines = [f"-- chbench suite: the {what} the most total time in {source}",
             f"-- they cover {sum(e[1] for _, e in best) / total_ms * 100:.1f}% of the captured query time"]
    if redacted:
        lines.append(f"-- {REDACTED}")
    if len(databases) == 1:
        lines.append(f"-- captured in database {databases[0]}: run with --database {databases[0]}")
    for i, (h, (runs, ms, sql, database, settings, _errors)) in enumerate(best, start=1):
        words = re.sub(r"[^a-z0-9]+", "-", short_name(sql, 5).lower()).strip("-")[:40]
        lines += ["", f"-- name: q{i:02d}-{h}-{words}",
                  f"-- {runs:,} runs, {ms / 1000:,.2f} s in all" + (f", in database {database}" if database else "")]
        kept = {k: v for k, v in (settings or {}).items() if not client_setting(k) and "," not in v}
        if kept:
            lines.append("-- settings: " + ", ".join(f"{k}={v}" for k, v in sorted(kept.items())))
        lines.append(sql.strip().rstrip(";").rstrip() + ";")
    return "\n".join(lines) + "\n"
