"""The measuring engine of a ``--worker``, as a process of its own with no gevent in it.

    python -m chbench.distributed.lane_host      (started by worker.py, never by hand)

Stdin, JSON lines (``chbench/messages.py``): the ``Job``, then ``Go`` or ``Stop``.
Stdout, JSON lines: ``Ready`` or ``Failed``, ``Measured`` every tick, ``Done`` with the final
status. End of stdin (the worker died, even by SIGKILL) stops the load at once: an
orphaned engine never keeps sending queries nobody counts."""

from __future__ import annotations

import json
import os
import queue
import signal
import sys
import threading

from chbench import messages
from chbench.distributed.protocol import SHIP_S, decode_config, encode_stats
from chbench.errors import ChbenchError
from chbench.load.levels import local_source


def _emit(message: messages.Message) -> None:
    sys.stdout.write(json.dumps(message.wire()) + "\n")
    sys.stdout.flush()


def _commands(inbox: queue.Queue[messages.Message | None]) -> None:
    """The worker's lines as messages; None at the end of input (the worker is gone)."""
    for line in sys.stdin:
        if line.strip():
            inbox.put(messages.read(json.loads(line)))
    inbox.put(None)


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the worker (and its master) handle Ctrl-C
    line = sys.stdin.readline()
    if not line:
        return 0
    job = messages.read(json.loads(line))
    if not isinstance(job, messages.Job):
        return 2
    cfg = decode_config(job.config or {}, job.password)
    source = local_source(cfg, job.settings or [], cfg.concurrency)
    try:
        source.setup()
    except ChbenchError as e:
        _emit(messages.Failed(job=job.job, message=str(e)))
        return 1
    _emit(messages.Ready(job=job.job, processes=len(source.names())))
    inbox: queue.Queue[messages.Message | None] = queue.Queue()
    threading.Thread(target=_commands, args=(inbox,), daemon=True).start()
    if not isinstance(inbox.get(), messages.Go):
        source.close()
        return 0
    source.start()
    try:
        while True:
            parts, done = source.pump(SHIP_S)
            while not inbox.empty():
                if not isinstance(inbox.get(), messages.Go):  # Stop, or the end of input
                    source.stop()
            _emit(messages.Measured(job=job.job, stats=encode_stats(parts), status=source.status()))
            if done:
                break
        status = source.status()
        source.close()
        _emit(messages.Done(job=job.job, stats=encode_stats(source.drain()), status=status))
    except BrokenPipeError:  # the worker is gone: stop, and say nothing more
        source.stop()
        source.close()
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - for the interpreter's final flush
    return 0


if __name__ == "__main__":
    sys.exit(main())
