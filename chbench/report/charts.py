"""Charts as report blocks: drawn (matplotlib, ``plots.py``) only when an exporter shows
them, so text reports never import matplotlib."""

from __future__ import annotations

import importlib
import zlib
from functools import partial
from typing import Any

from chbench.export.sections import Chart


def chart(name: str, plot: str, *args: Any) -> Chart:
    """The chart ``name`` drawn by ``plots.<plot>(name, *args)`` (a function and plain
    data: it can be drawn in another process)."""
    return Chart(name, partial(_draw, name, plot, args))


def _draw(name: str, plot: str, args: tuple[Any, ...]) -> str:
    plots = importlib.import_module("chbench.report.plots")
    svg: str = getattr(plots, plot)(name, *args)
    return svg


def key(text: str) -> str:
    """A stable, id-safe name for a chart (the same in every run)."""
    return f"k{zlib.crc32(text.encode()):08x}"
