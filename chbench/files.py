"""Reading a file the user named: one clear line when it is missing, a directory or
unreadable (query files, results files, password files)."""

from __future__ import annotations

from pathlib import Path

from chbench.errors import UsageError


def read_user_file(path: str, noun: str) -> bytes:
    """The bytes of ``path``; ``noun`` says what it should be ("query file", …)."""
    p = Path(path)
    if not p.exists():
        raise UsageError(f"{noun} not found: {path}")
    if p.is_dir():
        raise UsageError(f"{noun} is a directory: {path}")
    try:
        return p.read_bytes()
    except OSError as e:
        raise UsageError(f"cannot read {noun} {path}: {e.strerror}") from None
