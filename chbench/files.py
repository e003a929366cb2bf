"""Reading a file the user named: one clear line when it is missing, a directory or
unreadable (query files, results files, password files)."""

from __future__ import annotations

from pathlib import Path
from typing import IO

from chbench.errors import UsageError


def _existing(path: str, noun: str) -> Path:
    p = Path(path)
    if not p.exists():
        raise UsageError(f"{noun} not found: {path}")
    if p.is_dir():
        raise UsageError(f"{noun} is a directory: {path}")
    return p


def read_user_file(path: str, noun: str) -> bytes:
    """The bytes of ``path``; ``noun`` says what it should be ("query file", …)."""
    p = _existing(path, noun)
    try:
        return p.read_bytes()
    except OSError as e:
        raise UsageError(f"cannot read {noun} {path}: {e.strerror}") from None


def read_user_text(path: str, noun: str) -> str:
    """The text of ``path``, UTF-8, a byte-order mark dropped: Windows editors write one,
    and a query file's first ``-- name:`` line then named no query (its SQL began with it)."""
    raw = read_user_file(path, noun)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not a UTF-8 text file") from None


def open_user_file(path: str, noun: str) -> IO[str]:
    """``path`` opened as UTF-8 text, to read line by line (files too large to hold)."""
    p = _existing(path, noun)
    try:
        return open(p, encoding="utf-8-sig")  # noqa: SIM115 - the caller closes it
    except OSError as e:
        raise UsageError(f"cannot read {noun} {path}: {e.strerror}") from None
