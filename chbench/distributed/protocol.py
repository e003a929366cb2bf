"""The payloads of the distributed messages (the messages themselves are in
``chbench/messages.py``): a level's config without its password (each worker reads its
own) and the lanes' stats, exact, as plain data — never pickles: a worker must not run
code a master sends."""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any

from chbench.load.config import LoadConfig
from chbench.load.recorder import Key, Stats
from chbench.targets import Credentials
from chbench.workload import Query

SHIP_S = 0.2  # how often a worker ships its stats to the master (the engine's own tick)


def encode_config(cfg: LoadConfig) -> dict[str, Any]:
    d = {f.name: getattr(cfg, f.name) for f in fields(cfg)}
    d["credentials"] = {**asdict(cfg.credentials), "password": None}
    d["queries"] = [asdict(q) for q in cfg.queries]
    d["setup"], d["teardown"] = [], []  # the master runs them, once
    return d


def decode_config(d: dict[str, Any], password: str | None) -> LoadConfig:
    kw = {f.name: d[f.name] for f in fields(LoadConfig) if f.name in d}
    kw["credentials"] = Credentials(**{**d["credentials"], "password": password})
    kw["queries"] = [Query(**q) for q in d["queries"]]
    return LoadConfig(**kw)


def encode_stats(parts: list[tuple[int, dict[Key, Stats]]]) -> list[list[Any]]:
    """Parts merged per (host, query): [[host, query, stats], ...] (exact: counters and
    histogram buckets, floats as they are)."""
    merged: dict[Key, Stats] = {}
    for _, part in parts:
        for k, st in part.items():
            merged.setdefault(k, Stats()).merge(st)
    return [[h, q, st.to_json()] for (h, q), st in merged.items()]


def decode_stats(rows: list[list[Any]]) -> dict[Key, Stats]:
    return {(int(h), int(q)): Stats.from_json(d) for h, q, d in rows}
