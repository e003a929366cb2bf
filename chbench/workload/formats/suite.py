"""The built-in default suite: ten synthetic queries, each stressing a different part
of the engine, generating their own data from ``numbers_mt``/``numbers``.

Row counts are multiplied by ``--scale``. At scale 1.0 each query takes roughly
90–200 ms on a 2-core machine with the embedded engine (measured with chDB 26.9).
The formulations were chosen for steadiness between separate processes too: memory-
hungry variants (3M-key GROUP BY, quantileExact over 6M values, a 1.5M-row hash join)
moved by 4–10% from one run to the next here, these by 1–2%.
"""

from __future__ import annotations

from chbench.workload.model import Query, Workload

# name -> (SQL template with {n}, {m} row counts, base n, base m)
_SUITE: list[tuple[str, str, int, int]] = [
    (
        "aggregation",
        "SELECT sum(number), avg(number * 3), max(number % 1000), min(bitXor(number, 12345))"
        " FROM numbers_mt({n})",
        150_000_000, 0,
    ),
    (
        "group_by_small",
        "SELECT number % 100 AS k, count(), sum(number), avg(number) FROM numbers_mt({n}) GROUP BY k",
        100_000_000, 0,
    ),
    (
        "group_by_large",
        "SELECT intHash32(number) % {m} AS k, count(), max(number) FROM numbers_mt({n})"
        " GROUP BY k ORDER BY count() DESC, k LIMIT 10",
        12_000_000, 500_000,
    ),
    (
        "order_by_hash_limit",
        "SELECT number FROM numbers_mt({n}) ORDER BY cityHash64(number) LIMIT 10",
        150_000_000, 0,
    ),
    (
        "hashing",
        "SELECT sum(cityHash64(number)) + sum(sipHash64(number)) + sum(xxHash64(toString(number)))"
        " FROM numbers_mt({n})",
        8_000_000, 0,
    ),
    (
        "math",
        "SELECT sum(sin(number) * exp(-(number % 100) / 50.0) + log1p(number) + sqrt(number)"
        " + atan2(number, 7)) FROM numbers_mt({n})",
        10_000_000, 0,
    ),
    (
        "uniq",
        "SELECT uniq(intHash64(number)), uniqCombined(number), uniqExact(number % {m}) FROM numbers_mt({n})",
        24_000_000, 50_000,
    ),
    (
        "quantiles",
        "SELECT quantiles(0.5, 0.9, 0.99)(intHash32(number) % 100000), quantilesTDigest(0.5, 0.99)(number)"
        " FROM numbers_mt({n})",
        12_000_000, 0,
    ),
    (
        "string_search",
        "SELECT countIf(position(concat('user-', toString(number), '@example.com'), '7777') > 0),"
        " countIf(concat('https://site', toString(number % 977), '.example/p') LIKE '%site9%')"
        " FROM numbers_mt({n})",
        8_000_000, 0,
    ),
    (
        "join",
        "SELECT count(), sum(b.v) FROM (SELECT number AS k FROM numbers({n})) AS a"
        " INNER JOIN (SELECT number * 7 AS k, number AS v FROM numbers({m})) AS b ON a.k = b.k",
        10_000_000, 300_000,
    ),
]

# The drift guard: a short, fixed query measured between rounds in every run, never
# scaled, so two runs can tell how much the machine itself changed. It uses every core
# (a neighbour stealing one core slows parallel queries, not a single-threaded probe);
# servers without numbers_mt (18.x) get the single-threaded fallback.
CALIBRATION_SQL = "SELECT sum(cityHash64(number)) FROM numbers_mt(100000000)"
CALIBRATION_FALLBACK_SQL = "SELECT sum(cityHash64(number)) FROM numbers(40000000)"


# servers before 19.x (the Debian 18.16 server here) have no numbers_mt() table function:
# there every side that runs the suite reads numbers() instead (runner.suite_sources),
# one source stream, so the sides of a comparison still run one SQL
NUMBERS_MT, NUMBERS = "numbers_mt", "numbers"


def default_suite(scale: float = 1.0, numbers: str = NUMBERS_MT) -> Workload:
    """The built-in suite, every row count multiplied by ``scale``; its rows come from
    ``numbers`` (``numbers_mt``, or ``numbers`` for a server without it)."""
    queries = [Query(name=name, sql=template.replace(f"{NUMBERS_MT}(", f"{numbers}(")
                     .format(n=max(1, round(n * scale)), m=max(1, round(m * scale))))
               for name, template, n, m in _SUITE]
    source = f"built-in suite (scale {scale:g})" if numbers == NUMBERS_MT else \
        f"built-in suite (scale {scale:g}, rows from {numbers}())"
    return Workload(queries=queries, source=source)
