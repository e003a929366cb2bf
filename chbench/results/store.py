"""Writing results files atomically (temp file + fsync + rename): a crash, Ctrl-C or a
dead server never leaves a half-written or lost file."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from chbench.errors import UsageError

SCHEMA_NAME = "chbench.results"
SCHEMA_VERSION = 1


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: str | Path, doc: dict[str, Any]) -> None:
    def dump(f: IO[str]) -> None:
        json.dump(doc, f, separators=(",", ":"), allow_nan=False)
        f.write("\n")

    write_file_atomic(path, dump)


def write_text_atomic(path: str | Path, text: str) -> None:
    """A text file (a query suite) written the same way."""
    write_file_atomic(path, lambda f: f.write(text))


def check_directory(path: str | Path, what: str = "") -> None:
    """One line when the directory ``path`` would be written in is not there (results,
    reports, workloads: each said it in its own words before)."""
    parent = Path(path).resolve().parent
    if not parent.is_dir():
        raise UsageError(f"cannot write {what + ' to ' if what else ''}{path}: directory {parent} does not exist")


def rename_target(path: str | Path) -> Path | None:
    """The file a whole-file write renames onto: the path, or the file its symbolic links
    lead to (the links kept). None where a rename would replace what is not the user's
    file: a device, a pipe, or a path through /dev or /proc. Renaming over /dev/null as
    root replaced the device with a file, for every process on the machine; and
    ``--markdown /dev/stdout`` with the shell's output sent to a file (so the link led to a
    regular file) replaced the /dev/stdout link itself (2026-12-08)."""
    hop = Path(os.path.abspath(path))
    for _ in range(40):  # the kernel's own limit on a chain of links
        if hop.parts[1:2] == ("proc",) or (hop.parts[1:2] == ("dev",) and hop.parts[2:3] != ("shm",)):
            return None
        if not hop.is_symlink():
            break
        hop = Path(os.path.abspath(hop.parent / os.readlink(hop)))
    return None if hop.exists() and not hop.is_file() else hop


def write_report(path: str | Path, text: str) -> None:
    """A report the user asked for (``--html``, ``--output``): written whole and renamed
    into place like a results file, so a Ctrl-C never leaves half a page; a path a rename
    must not replace (``/dev/stdout``, a pipe: ``rename_target``) is written to as it is."""
    p = Path(path)
    check_directory(p)  # compare --output, history report --html: a traceback before
    try:
        if rename_target(p) is None:
            # appended: /dev/stdout sent to a file reopens that file, and truncating it
            # would drop what the shell wrote there before (`{ echo; chbench …; } > f`)
            with open(p, "a", encoding="utf-8") as f:
                f.write(text)
        else:
            write_text_atomic(p, text)
    except OSError as e:  # a read-only directory, a full disk
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from None


def write_file_atomic(path: str | Path, write: Callable[[IO[str]], object]) -> None:
    p = rename_target(path)
    if p is None:
        raise UsageError(f"cannot write {path}: not a regular file (results files are written whole and renamed "
                         "into place)")
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
