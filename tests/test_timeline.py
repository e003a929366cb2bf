"""The CPU timeline (chbench/machine/timeline.py) on this machine's real counters: our
own processes' CPU is not "other processes'", a process outside chbench's tree is."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import time

import pytest

from chbench.machine.timeline import RESCAN_S, BusyTimeline

SPIN = "import time\nt = time.monotonic()\nwhile time.monotonic() - t < {s}:\n    pass\n"


def _spin(seconds: float) -> None:
    t = time.monotonic()
    while time.monotonic() - t < seconds:
        pass


def _wait_for(tl: BusyTimeline, t: float) -> None:
    deadline = time.monotonic() + 5
    while not tl.covers(t) and time.monotonic() < deadline:
        time.sleep(0.05)
        tl.refresh()
    assert tl.covers(t)


@pytest.fixture
def timeline():
    tl = BusyTimeline()
    if not tl.available:
        pytest.skip(tl.note or "no timeline here")
    time.sleep(0.7)  # the sampler's first look for child processes is behind it
    yield tl
    tl.close()


def test_our_own_processes_are_not_others(timeline):
    child = multiprocessing.get_context("spawn").Process(target=_spin, args=(RESCAN_S + 1.5,))
    child.start()
    time.sleep(RESCAN_S + 0.5)  # the sampler has found the child (it looks every RESCAN_S)
    a = time.time()
    _spin(0.6)  # this process and its child: two cores busy
    b = time.time()
    child.join()
    _wait_for(timeline, b + 0.2)
    others = timeline.others(a, b)
    assert others is not None and others < 0.6


def test_a_process_outside_chbench_is_seen(timeline):
    # started by a shell that exits at once: the spinner belongs to init, not to this tree
    subprocess.run(["sh", "-c", f"{sys.executable} -c '{SPIN.format(s=1.5)}' >/dev/null 2>&1 &"], check=True)
    time.sleep(0.5)
    a = time.time()
    time.sleep(0.6)
    b = time.time()
    _wait_for(timeline, b + 0.2)
    others = timeline.others(a, b)
    assert others is not None and others > 0.6
    assert timeline.others(b + 100, b + 101) is None  # not reached yet
