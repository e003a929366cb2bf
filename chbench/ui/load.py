"""What a load run shows while it runs: clickhouse-benchmark's intermediate reports
every ``-d`` seconds (on a pipe or file), or a live rich view on a terminal (QPS,
errors, p50/p99 of the last interval)."""

from __future__ import annotations

import sys
from typing import Any, TextIO

from chbench.export.numbers import num
from chbench.load.benchmark_text import text_report
from chbench.load.config import LoadConfig
from chbench.load.levels import Host
from chbench.load.recorder import Stats
from chbench.load.summary import host_views
from chbench.observer import Observer


class TextDisplay(Observer):
    def __init__(self, cfg: LoadConfig, hosts: list[Host], stream: TextIO | None = None) -> None:
        self.cfg, self.hosts = cfg, hosts
        self.stream = stream or sys.stderr

    def level_started(self, level: int) -> None:
        if self.cfg.max_concurrency and self.cfg.delay > 0:
            self.stream.write(f"\nConcurrency {level}: intermediate reports\n")
            self.stream.flush()

    def interval(self, level: int, row: dict[str, Any], hosts_stats: dict[int, Stats], seconds: float,
                 cumulative: dict[int, Stats], elapsed: float) -> None:
        if self.cfg.delay <= 0 or row.get("last"):
            # clickhouse-benchmark prints no report for the part-interval the run ended in:
            # the final report (of the whole run) follows at once
            return
        by_host, span = (cumulative, elapsed) if self.cfg.cumulative else (hosts_stats, seconds)
        executed = sum(st.queries for st in cumulative.values())
        lines = text_report(host_views(self.hosts, by_host, self.cfg), span, executed)
        self.stream.write("\n" + "\n".join(lines) + "\n")
        self.stream.flush()


class LiveDisplay(Observer):
    def __init__(self, cfg: LoadConfig, hosts: list[Host]) -> None:
        from rich.console import Console
        from rich.live import Live

        self.cfg, self.hosts = cfg, hosts
        self.console = Console(stderr=True)
        self.live = Live(console=self.console, auto_refresh=False, transient=True)
        self.level = 0

    def level_started(self, level: int) -> None:
        self.level = level
        self.live.start()
        self.live.update(f"chbench load: concurrency {level}, starting…", refresh=True)

    def interval(self, level: int, row: dict[str, Any], hosts_stats: dict[int, Stats], seconds: float,
                 cumulative: dict[int, Stats], elapsed: float) -> None:
        from rich.table import Table

        t = Table(title=f"chbench load — concurrency {level}, {elapsed:.0f} s", title_justify="left")
        for col in ("host", "queries", "errors", "QPS (last)", "p50 ms (last)", "p99 ms (last)"):
            t.add_column(col, justify="right" if col != "host" else "left")
        for v, c in zip(host_views(self.hosts, hosts_stats, self.cfg),
                        host_views(self.hosts, cumulative, self.cfg), strict=True):
            h = v.stats.hist
            p50, p99 = h.percentile(50), h.percentile(99)
            qps = v.stats.counted().queries / seconds if seconds > 0 else None
            t.add_row(v.label, str(c.stats.queries), str(c.stats.errors), num(qps, ".1f"), num(p50, ".3f"),
                      num(p99, ".3f"))
        self.live.update(t, refresh=True)

    def level_finished(self) -> None:
        self.live.stop()


def make_display(cfg: LoadConfig, hosts: list[Host], quiet: bool = False) -> Observer:
    """What shows a level while it runs; quiet, an observer that shows nothing."""
    if quiet:
        return Observer()
    if sys.stderr.isatty():
        return LiveDisplay(cfg, hosts)
    return TextDisplay(cfg, hosts)
