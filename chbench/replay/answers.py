"""``--check-answers``: after the replay, untimed, one representative query per
normalized hash asked on both targets and its result reduced to a row count and an
order-independent checksum (``clickbench/checksum.py``, as ``chbench upgrade`` does).
Asked twice per side: a result that differs between two runs on one target is not
deterministic (``now()``, ``rand()``, a LIMIT without order…) and is not compared."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from chbench.clickbench.checksum import analyse, checksum
from chbench.core.send import fetch
from chbench.errors import ConnectError, QueryError, ServerLost
from chbench.targets import Target
from chbench.upgrade.checks import answers_equal, plain
from chbench.workload.model import returns_rows
from chbench.workload.sql import strip_comments_and_strings

# functions whose answer changes from run to run by design: such queries are not asked
_VOLATILE = re.compile(r"\b(now|now64|today|yesterday|rand|rand64|randConstant|generateUUIDv[47]|randomString|"
                       r"randomPrintableASCII|nowInBlock|currentQueryID|queryID|uptime|rowNumberInAllBlocks|"
                       r"blockNumber)\s*\(", re.I)


def deterministic(sql: str) -> bool:
    try:
        masked = strip_comments_and_strings(sql, keep_strings=False)
    except Exception:  # noqa: BLE001
        return False
    return returns_rows(sql) and not _VOLATILE.search(masked)


def answer(target: Target, sql: str, settings: dict[str, str], timeout: float | None) -> dict[str, Any]:
    shape = analyse(sql)
    results = []
    for _ in range(2):
        sample, got = fetch(target, plain(sql), settings, "", timeout)
        if got is None:
            return {"error": sample.error}
        results.append(got)
    first, second = (checksum(r, shape) for r in results)
    return {**first, "types": results[0].types, "stable": first["checksum"] == second["checksum"]}


def check_answers(ids: list[str], connect: Callable[[str, str | None], Target], representatives: list[dict[str, Any]],
                  timeout: float | None) -> dict[str, Any]:
    """{hash: {"a": …, "b": …, "equal": True/False/None}} and the counts; ``connect(side,
    database)`` gives a connection to that side in the query's captured database."""
    out: dict[str, Any] = {}
    for rep in representatives:
        if not deterministic(rep["sql"]):
            out[rep["hash"]] = {"equal": None, "reason": "not deterministic (reads the clock or a random source)"}
            continue
        got = {}
        for side in ids:
            try:
                got[side.lower()] = answer(connect(side, rep["database"]), rep["sql"], rep["settings"][side], timeout)
            except (QueryError, ServerLost, ConnectError) as e:
                got[side.lower()] = {"error": {"message": str(e)}}
        a, b = got[ids[0].lower()], got[ids[1].lower()]
        equal = answers_equal(a, b)
        out[rep["hash"]] = {**got, "equal": equal}
    counts = {"checked": len(out), "equal": sum(1 for v in out.values() if v["equal"] is True),
              "changed": sum(1 for v in out.values() if v["equal"] is False),
              "not_compared": sum(1 for v in out.values() if v["equal"] is None)}
    return {"queries": out, **counts}
