"""The machine's own state while a benchmark runs: probes read between rounds, untimed
(the client host through psutil, a server host through its system.asynchronous_metrics),
so a comparison of separate runs can tell a busier machine from a slower engine."""

from chbench.machine.probes import ClientProbe, ServerProbe

__all__ = ["ClientProbe", "ServerProbe"]
