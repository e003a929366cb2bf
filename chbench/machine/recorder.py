"""Readings of every probe of a run, one per round, into the results document."""

from __future__ import annotations

import contextlib
import time
from typing import Any
from urllib.parse import urlsplit

from chbench.machine.probes import ClientProbe, ServerProbe
from chbench.machine.reference import ReferenceProbe, warm
from chbench.machine.timeline import MIN_WINDOW_S, TICK_S, BusyTimeline
from chbench.targets import Target


class MachineRecorder:
    """The client host's probe, one server probe per distinct server target (the
    embedded engine shares the client host's probe: it runs in this process), and, when
    an engine runs on this host, the reference task timed in a process of its own."""

    def __init__(self, sides: list[tuple[str, Target]], into: dict[str, Any]) -> None:
        self.into = into
        servers: dict[int, tuple[str, Target]] = {}
        ports = []
        local = any(t.capabilities.in_process or t.is_local() for _, t in sides)
        for sid, target in sides:
            if not target.capabilities.server_host or id(target) in servers:
                continue
            servers[id(target)] = (sid, target)
            if target.is_local():
                with contextlib.suppress(ValueError):
                    port = urlsplit(target.url).port
                    if port:
                        ports.append(port)
        self.client = ClientProbe(ports)
        self.servers = {sid: ServerProbe(t) for sid, t in servers.values()}
        into.setdefault("client", [])
        into.setdefault("servers", {sid: [] for sid in self.servers})
        into.setdefault("notes", list(self.client.notes))
        self.reference = ReferenceProbe() if local else None
        if self.reference is not None:
            into.setdefault("reference", [])
        # other processes' CPU around each sample (no work in the timed path); started
        # after the reference helper, so the sampler's first look finds it among chbench's
        self.timeline = BusyTimeline(self.client.engine_pids)
        if self.timeline.note:
            into["notes"].append(self.timeline.note)
        else:
            into.setdefault("timeline", {"tick_s": TICK_S, "min_window_s": MIN_WINDOW_S})


    def read(self, round_no: int, session: int = 0) -> None:
        """One reading of each probe, after round ``round_no`` (untimed)."""
        at = {"round": round_no, "session": session, "at": round(time.time(), 3)}
        self.into["client"].append({**at, **self.client.read()})
        for sid, probe in self.servers.items():
            r = probe.read()
            if r is not None:
                self.into["servers"][sid].append({**at, **r})
            elif probe.note and probe.note not in self.into["notes"]:
                self.into["notes"].append(f"side {sid}: {probe.note}")
        self._read_reference(at)

    def top_up_reference(self, round_no: int, session: int, samples: int) -> None:
        """After a session's last round, where no timed query follows: readings of the
        reference task alone until the run holds ``samples`` timings, as many as compare
        needs to compare two runs' machines. Measured (2026-12-04, 98 + 98 one-session
        runs of 3–6 s, built-in suite): with one reading (3 timings) a run's machine went
        uncompared, and 1,186 of the 1,213 false alarms of their A/A pairs were in such
        pairs (the whole suite moved up to +36% between runs seconds apart)."""
        at = {"round": round_no, "session": session, "at": round(time.time(), 3)}
        while self.reference is not None and sum(len(warm(r["ms"])) for r in self.into.get("reference", [])) < samples:
            if not self._read_reference(at):
                break

    def _read_reference(self, at: dict[str, Any]) -> int:
        """One reading of the reference task; the number of timings it gave."""
        if self.reference is None:
            return 0
        started = time.time()
        ms = self.reference.read()
        if ms:
            self.into["reference"].append({**at, "ms": ms, "started": round(started, 3),
                                           "seconds": round(time.time() - started, 4)})
        elif self.reference.note and self.reference.note not in self.into["notes"]:
            self.into["notes"].append(self.reference.note)
        return len(ms)

    def close(self) -> None:
        self.timeline.refresh()
        # the reference task's readings too say who else used the CPU while they ran:
        # compare leaves out those taken on a busy machine, as the runs set aside
        for r in self.into.get("reference", []):
            if "started" in r and "others_cores" not in r:
                cores = self.timeline.others(r["started"], r["started"] + r["seconds"])
                if cores is not None:
                    r["others_cores"] = round(cores, 3)
        if self.timeline.note and self.timeline.note not in self.into["notes"]:
            self.into["notes"].append(self.timeline.note)
        self.timeline.close()
        if self.reference is not None:
            self.reference.close()
