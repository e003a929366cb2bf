"""A query's result as a target returns it from ``fetch``: column names, types, and
every value as canonical text (TSV-unescaped), one list per row."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass
class Result:
    """A query result in canonical text: TSV-unescaped values, one list per row."""

    names: list[str]
    types: list[str]
    rows: list[list[str]]


_UNESCAPE = {"b": "\b", "f": "\f", "r": "\r", "n": "\n", "t": "\t", "0": "\0", "'": "'", "\\": "\\", "N": "\\N"}


def unescape_tsv(value: str) -> str:
    if "\\" not in value:
        return value
    return re.sub(r"\\(.)", lambda m: _UNESCAPE.get(m.group(1), m.group(1)), value)


def parse_tsv_with_types(text: str) -> Result:
    """TabSeparatedWithNamesAndTypes → Result."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) < 2:
        return Result([], [], [])
    names = [unescape_tsv(v) for v in lines[0].split("\t")]
    types = [unescape_tsv(v) for v in lines[1].split("\t")]
    rows = [[unescape_tsv(v) for v in line.split("\t")] for line in lines[2:]]
    return Result(names, types, rows)


def tsv_rows(text: str) -> list[list[str]]:
    """TabSeparated → rows of unescaped values. Lines end at ``\\n`` only: values keep
    the characters ``str.splitlines`` would also split at (``\\x1e``, ``\\u2028``, …)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [[unescape_tsv(v) for v in line.split("\t")] for line in lines]
