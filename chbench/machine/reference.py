"""A drift reference that does not run on the engine under test.

The calibration query runs on the engine, so after a real upgrade it measures the
engine as well as the machine. For engines on this host the machine itself can be
timed instead: a helper process of its own (started once, fed over a pipe) runs a
fixed CPU-and-memory task — integer arithmetic in the interpreter and a 16 MiB copy —
and times it with its own clock. chbench asks for ``REPS`` timings between rounds
(untimed for the benchmark); ``compare`` puts the two runs' timings side by side. A
helper that dies is not an error: the readings stop and the file says so.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys

REPS = 3  # timings per reading, the first of them cold (``warm``)

HELPER = r"""
import sys, time
buf = bytearray(16 << 20)
def task():
    x = 1
    for _ in range(60000):
        x = (x * 1103515245 + 12345) & 0xFFFFFFFF
    for _ in range(4):
        bytes(buf)
    return x
task()
for line in sys.stdin:
    out = []
    for _ in range(int(line)):
        t = time.perf_counter()
        task()
        out.append(str((time.perf_counter() - t) * 1000.0))
    sys.stdout.write(" ".join(out) + "\n")
    sys.stdout.flush()
"""


def warm(ms: list[float]) -> list[float]:
    """A reading's timings after its first: the helper, idle since the last reading, ran
    its first task cold — 12.7–15.2 ms against 9.5–11.0 for the next two in every reading
    of the built-in suite's runs (embedded 26.9, 2026-12-07). With the cold ones, two runs'
    medians had a 95% interval of ±25% (15 timings each: the median falls on either
    cluster); without, ±3% (10 each), on the same files."""
    return ms[1:] if len(ms) > 1 else ms


class ReferenceProbe:
    """The helper process and its timings (milliseconds)."""

    def __init__(self) -> None:
        self.note: str | None = None
        try:
            self._proc: subprocess.Popen[str] | None = subprocess.Popen(
                [sys.executable, "-c", HELPER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, text=True, bufsize=1)
        except OSError as e:
            self._proc = None
            self.note = f"reference probe not started: {e}"

    def read(self, reps: int = REPS) -> list[float]:
        if self._proc is None or self._proc.stdin is None or self._proc.stdout is None:
            return []
        try:
            self._proc.stdin.write(f"{reps}\n")
            self._proc.stdin.flush()
            line = self._proc.stdout.readline()
            return [round(float(v), 4) for v in line.split()]
        except (OSError, ValueError):
            self.close()
            self.note = "reference probe stopped (its process ended): readings until then kept"
            return []

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                if proc.stdin:
                    proc.stdin.close()
                proc.wait(timeout=2)
            if proc.poll() is None:
                proc.kill()
                proc.wait()
