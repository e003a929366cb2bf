"""Who else used the CPU while each query ran: a timeline of other processes' CPU.

The probes between rounds (probes.py) see a neighbour only as an average over seconds:
a neighbour busy 300 ms of every 750 ms shows up in every reading, so a whole run was
set aside and then measured as it was. Per query it is different: about half of the
queries ran while the neighbour slept, and those are as good as on a quiet machine.

A sampler process of its own (stdlib only, started once, no work in the timed path)
reads every ``TICK_S`` the kernel's cumulative counters — all CPUs' busy time
(/proc/stat) and the CPU time of chbench's own processes and of the engines it measures
(/proc/PID/stat, followed per process so one that starts or ends moves nothing) — and
appends one line to a file. Between rounds the runner reads the new lines and asks, for
each sample, how many cores other processes used around it. The counters are
cumulative, so a gap (a sampler descheduled for a while) only coarsens the timeline.

Measured here (2 cores, built-in suite, a neighbour busy 300 ms / idle 450 ms on one
core): samples that overlapped a busy period took 1.14x their query's median, the rest
0.92x; "others above 0.2 cores" caught 74 of the 85 overlapping samples and 1 of the 65
others. The counters tick at 100 Hz, so a window shorter than ``MIN_WINDOW_S`` is
widened to it (shorter windows read up to ±0.3 cores on a quiet machine).
Linux only: without /proc the timeline is unavailable and the runner falls back to the
probes' per-reading rule.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import subprocess
import sys
import tempfile

TICK_S = 0.02  # the sampler's period; its own cost measured: 1.4% of one core (10 s, idle machine)
MIN_WINDOW_S = 0.25  # a sample's window is at least this long (the counters' 10 ms ticks)
RESCAN_S = 2.0  # how often the sampler looks for new child processes (listing /proc costs)

SAMPLER = r"""
import os, sys, time
path, every, rescan, root = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
extra = [int(p) for p in sys.argv[5:]]
parent = os.getppid()

def stat(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            rest = f.read().rsplit(b")", 1)[1].split()
        return int(rest[1])  # ppid
    except (OSError, IndexError, ValueError):
        return None

def family():
    children = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            ppid = stat(name)
            if ppid is not None:
                children.setdefault(ppid, []).append(int(name))
    out, stack = set(extra), [root]
    while stack:
        pid = stack.pop()
        out.add(pid)
        stack.extend(children.get(pid, []))
    return out

def ticks(fd):  # utime + stime of an open /proc/PID/stat (read again from its start)
    rest = os.pread(fd, 1024, 0).rsplit(b")", 1)[1].split()
    return int(rest[11]) + int(rest[12])

# files kept open and read with pread: opening them every tick cost 2.6% of a core
cpu = os.open("/proc/stat", os.O_RDONLY)
tracked, own, last_scan = {}, 0, -1e9  # pid -> [fd, last ticks]
with open(path, "w", buffering=1) as out:
    while os.getppid() == parent:
        t0 = time.monotonic()
        if t0 - last_scan >= rescan:
            for pid in family() - tracked.keys():
                try:
                    fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
                    tracked[pid] = [fd, ticks(fd)]  # counted from now on: its past is not this window's
                except (OSError, IndexError, ValueError):
                    pass
            last_scan = t0
        v = os.pread(cpu, 256, 0).split(b"\n", 1)[0].split()[1:8]
        busy = int(v[0]) + int(v[1]) + int(v[2]) + int(v[5]) + int(v[6])  # user nice system irq softirq
        for pid, entry in list(tracked.items()):
            try:
                now = ticks(entry[0])
            except (OSError, IndexError, ValueError):  # ended
                os.close(entry[0])
                del tracked[pid]
                continue
            own += now - entry[1]
            entry[1] = now
        out.write(f"{time.time():.4f} {busy} {own}\n")
        time.sleep(max(0.0, every - (time.monotonic() - t0)))
try:
    os.unlink(path)  # chbench ended without closing it (killed)
except OSError:
    pass
"""


class BusyTimeline:
    """The sampler process and the readings it has written: (wall time, busy ticks of
    all CPUs, ticks of chbench's processes), cumulative."""

    def __init__(self, extra_pids: list[int] | None = None, tick_s: float = TICK_S) -> None:
        self.note: str | None = None
        self.hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self.cpus = os.cpu_count() or 1
        self.t: list[float] = []
        self.busy: list[int] = []
        self.own: list[int] = []
        self._proc: subprocess.Popen[bytes] | None = None
        self._file = None
        self._partial = ""
        self.path = ""
        if not os.path.exists("/proc/stat"):
            self.note = "no per-query CPU timeline (no /proc): busy rounds are told by the probes' readings"
            return
        fd, self.path = tempfile.mkstemp(prefix="chbench-timeline-", suffix=".txt")
        os.close(fd)
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-c", SAMPLER, self.path, str(tick_s), str(RESCAN_S), str(os.getpid()),
                 *(str(p) for p in extra_pids or [])],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self._file = open(self.path)  # noqa: SIM115 - read as the sampler appends, closed in close()
        except OSError as e:
            self.note = f"no per-query CPU timeline (sampler not started: {e})"
            self.close()

    @property
    def available(self) -> bool:
        return self._file is not None

    def refresh(self) -> None:
        """Read what the sampler appended since the last call (complete lines only)."""
        if self._file is None:
            return
        chunk = self._partial + self._file.read()
        lines = chunk.split("\n")
        self._partial = lines.pop()
        for line in lines:
            parts = line.split()
            if len(parts) != 3:
                continue
            self.t.append(float(parts[0]))
            self.busy.append(int(parts[1]))
            self.own.append(int(parts[2]))
        if self._proc is not None and self._proc.poll() is not None and self.note is None:
            self.note = "the per-query CPU timeline stopped (its process ended): samples after it were not judged"

    def covers(self, t: float) -> bool:
        return bool(self.t) and self.t[-1] >= t

    def others(self, start: float, end: float) -> float | None:
        """Cores other processes used around [start, end] (wall time), the window
        widened to ``MIN_WINDOW_S`` around its middle; None when the timeline does not
        reach that far (yet) or began after it."""
        half = max(end - start, MIN_WINDOW_S) / 2
        mid = (start + end) / 2
        a, b = mid - half, mid + half
        if not self.t or self.t[-1] < b or self.t[0] > start:
            return None
        i = max(0, bisect.bisect_right(self.t, a) - 1)
        j = bisect.bisect_left(self.t, b)
        seconds = self.t[j] - self.t[i]
        if seconds <= 0:
            return None
        ticks = (self.busy[j] - self.busy[i]) - (self.own[j] - self.own[i])
        return max(0.0, ticks / self.hz / seconds)

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=2)
        f, self._file = self._file, None
        if f is not None:
            f.close()
        if self.path:
            with contextlib.suppress(OSError):
                os.unlink(self.path)
