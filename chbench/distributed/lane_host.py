"""The measuring engine of a ``--worker``, as a process of its own with no gevent in it.

    python -m chbench.distributed.lane_host      (started by worker.py, never by hand)

Stdin, JSON lines: the job (config, host settings, processes), then ``go`` or ``stop``.
Stdout, JSON lines: ``ready`` or ``failed``, ``stats`` every tick, ``done`` with the final
status. End of stdin (the worker died, even by SIGKILL) stops the load at once: an
orphaned engine never keeps sending queries nobody counts."""

from __future__ import annotations

import json
import os
import queue
import signal
import sys
import threading
from typing import Any

from chbench.distributed.protocol import SHIP_S, decode_config, encode_stats
from chbench.errors import ChbenchError
from chbench.load.levels import local_source


def _emit(kind: str, **data: Any) -> None:
    sys.stdout.write(json.dumps({"type": kind, **data}) + "\n")
    sys.stdout.flush()


def _commands(inbox: queue.Queue[str]) -> None:
    for line in sys.stdin:
        if line.strip():
            inbox.put(json.loads(line)["type"])
    inbox.put("eof")


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the worker (and its master) handle Ctrl-C
    line = sys.stdin.readline()
    if not line:
        return 0
    job = json.loads(line)
    cfg = decode_config(job["config"], job.get("password"))
    source = local_source(cfg, job["settings"], cfg.concurrency)
    try:
        source.setup()
    except ChbenchError as e:
        _emit("failed", message=str(e))
        return 1
    _emit("ready", processes=len(source.names()))
    inbox: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_commands, args=(inbox,), daemon=True).start()
    first = inbox.get()
    if first != "go":
        source.close()
        return 0
    source.start()
    try:
        while True:
            parts, done = source.pump(SHIP_S)
            while not inbox.empty():
                if inbox.get() in ("stop", "eof"):
                    source.stop()
            _emit("stats", stats=encode_stats(parts), status=source.live())
            if done:
                break
        status = source.status()
        source.close()
        _emit("done", stats=encode_stats(source.drain()), status=status)
    except BrokenPipeError:  # the worker is gone: stop, and say nothing more
        source.stop()
        source.close()
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - for the interpreter's final flush
    return 0


if __name__ == "__main__":
    sys.exit(main())
