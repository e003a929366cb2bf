"""What every results file records about the machine and the tool."""

from __future__ import annotations

import os
import platform
import socket
import sys
from datetime import datetime, timezone
from typing import Any

from chbench import __version__


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def host_info() -> dict[str, Any]:
    return {
        "hostname": socket.gethostname(),
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def tool_info() -> dict[str, Any]:
    return {"name": "chbench", "version": __version__}


def sanitized_argv(argv: list[str] | None = None) -> list[str]:
    """The command line with any password value masked."""
    args = list(sys.argv if argv is None else argv)
    out: list[str] = []
    mask_next = False
    for a in args:
        if mask_next:
            out.append("***")
            mask_next = False
        elif a == "--password":
            out.append(a)
            mask_next = True
        elif a.startswith("--password="):
            out.append("--password=***")
        else:
            out.append(a)
    return out


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
