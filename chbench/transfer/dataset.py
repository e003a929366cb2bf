"""The deterministic event data set every ingest path sends, in every shape a path
needs — made once, before any timing.

Schema (the classic event table)::

    event_time DateTime, user_id UInt64, event_type LowCardinality(String), url String,
    duration_ms UInt32, country LowCardinality(String), revenue Decimal(10, 2)

Rows come from numpy's PCG64 seeded with ``seed``: the same seed gives the same rows on
every machine. Revenue is integer cents throughout (CSV text ``123.45`` is built from
the integer; Arrow decimals from the unscaled integers) — never through floats.

The expected checksum is computed here, from the generator's own columns, exactly as
the verification computes it from a table: CRC32 of ``country|count|cents\\n`` lines
ordered by country.
"""

from __future__ import annotations

import csv
import io
import zlib
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

COLUMNS = ["event_time", "user_id", "event_type", "url", "duration_ms", "country", "revenue"]
TYPES = ["DateTime", "UInt64", "LowCardinality(String)", "String", "UInt32", "LowCardinality(String)",
         "Decimal(10, 2)"]
EVENT_TYPES = ["view", "click", "scroll", "add_to_cart", "purchase", "signup", "login", "logout", "search", "share"]
COUNTRIES = ["AR", "AU", "BR", "CA", "CN", "DE", "ES", "FR", "GB", "ID", "IN", "IT", "JP", "KR", "MX", "NL", "PL",
             "RU", "TR", "US"]
START = 1704067200  # 2024-01-01 00:00:00 UTC
SPAN = 60 * 86400  # two months: two or three partitions by toYYYYMM


def create_table_sql(table: str) -> str:
    cols = ",\n    ".join(f"{c} {t}" for c, t in zip(COLUMNS, TYPES, strict=True))
    return (f"CREATE TABLE {table}\n(\n    {cols}\n)\nENGINE = MergeTree\nPARTITION BY toYYYYMM(event_time)\n"
            "ORDER BY (event_time, user_id)")


def checksum_text(rows: list[tuple[str, int, int]]) -> str:
    return "".join(f"{c}|{n}|{cents}\n" for c, n, cents in sorted(rows))


def crc32_of(rows: list[tuple[str, int, int]]) -> str:
    return f"{zlib.crc32(checksum_text(rows).encode()):08x}"


VERIFY_SQL = ("SELECT country, count(), toInt64(sum(revenue) * 100) FROM {table} "
              "GROUP BY country ORDER BY country")


@dataclass
class Dataset:
    rows: int
    seed: int = 1
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @cached_property
    def columns(self) -> dict[str, np.ndarray]:
        rng = np.random.Generator(np.random.PCG64(self.seed))
        n = self.rows
        event_time = np.sort(rng.integers(START, START + SPAN, n, dtype=np.uint32))
        user_id = rng.zipf(1.3, n).astype(np.uint64) % np.uint64(2_000_000) + np.uint64(1)
        event_type = rng.choice(len(EVENT_TYPES), n, p=_weights(len(EVENT_TYPES)))
        page = rng.integers(0, 50_000, n)
        duration = rng.gamma(2.0, 800.0, n).astype(np.uint32)
        country = rng.choice(len(COUNTRIES), n, p=_weights(len(COUNTRIES)))
        purchase = event_type == EVENT_TYPES.index("purchase")
        cents = np.where(purchase, rng.integers(99, 50_000, n), 0).astype(np.int64)
        return {"event_time": event_time, "user_id": user_id, "event_type": event_type, "page": page,
                "duration_ms": duration, "country": country, "cents": cents}

    # -- shapes -------------------------------------------------------------------------
    @cached_property
    def urls(self) -> list[str]:
        c = self.columns
        return [f"https://shop.example.com/{EVENT_TYPES[t]}/{p}" for t, p in zip(c["event_type"].tolist(),
                                                                                   c["page"].tolist(), strict=True)]

    @cached_property
    def revenue_text(self) -> list[str]:
        return [f"{v // 100}.{v % 100:02d}" for v in self.columns["cents"].tolist()]

    def python_columns(self) -> list[list[Any]]:
        """Column lists of plain Python values (DateTime as epoch int, Decimal as text)."""
        if "pycols" not in self._cache:
            c = self.columns
            self._cache["pycols"] = [
                [int(x) for x in c["event_time"].tolist()],
                c["user_id"].tolist(),
                [EVENT_TYPES[i] for i in c["event_type"].tolist()],
                self.urls,
                c["duration_ms"].tolist(),
                [COUNTRIES[i] for i in c["country"].tolist()],
                self.revenue_text,
            ]
        return self._cache["pycols"]

    def csv_bytes(self, start: int = 0, stop: int | None = None, header: bool = True) -> bytes:
        """Rows start…stop as CSV (CSVWithNames when ``header``); DateTime as epoch seconds."""
        stop = self.rows if stop is None else stop
        cols = self.python_columns()
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        if header:
            w.writerow(COLUMNS)
        w.writerows(zip(*(col[start:stop] for col in cols), strict=True))
        return buf.getvalue().encode()

    def arrow_table(self) -> Any:
        """A pyarrow Table; revenue as decimal128(10, 2) from the unscaled cents."""
        import pyarrow as pa

        if "arrow" not in self._cache:
            c = self.columns
            cents = c["cents"]
            unscaled = np.zeros((len(cents), 2), dtype=np.int64)  # 16-byte little-endian two's complement
            unscaled[:, 0] = cents
            unscaled[:, 1] = np.where(cents < 0, -1, 0)
            revenue = pa.Array.from_buffers(pa.decimal128(10, 2), len(cents), [None, pa.py_buffer(unscaled)])
            self._cache["arrow"] = pa.table({
                "event_time": pa.array(c["event_time"].astype("datetime64[s]"), pa.timestamp("s")),
                "user_id": pa.array(c["user_id"], pa.uint64()),
                "event_type": pa.DictionaryArray.from_arrays(pa.array(c["event_type"].astype(np.int32)),
                                                             pa.array(EVENT_TYPES)),
                "url": pa.array(self.urls, pa.string()),
                "duration_ms": pa.array(c["duration_ms"], pa.uint32()),
                "country": pa.DictionaryArray.from_arrays(pa.array(c["country"].astype(np.int32)),
                                                          pa.array(COUNTRIES)),
                "revenue": revenue,
            })
        return self._cache["arrow"]

    def expected(self) -> tuple[list[tuple[str, int, int]], str]:
        c = self.columns
        counts = np.bincount(c["country"], minlength=len(COUNTRIES))
        cents = np.bincount(c["country"], weights=None, minlength=len(COUNTRIES))
        sums = np.zeros(len(COUNTRIES), dtype=np.int64)
        np.add.at(sums, c["country"], c["cents"])
        rows = [(COUNTRIES[i], int(counts[i]), int(sums[i])) for i in range(len(COUNTRIES)) if cents[i] > 0]
        return rows, crc32_of(rows)

    def batches(self, size: int) -> list[tuple[int, int]]:
        return [(s, min(s + size, self.rows)) for s in range(0, self.rows, size)]


def _weights(n: int) -> np.ndarray:
    w = 1.0 / np.arange(1, n + 1) ** 0.8
    return w / w.sum()
