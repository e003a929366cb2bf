"""``chbench load --master`` / ``--worker``: load from several machines, coordinated by
Locust's runners and messaging (``pip install 'chbench[distributed]'``).

Locust does what it is good at — worker processes on other hosts, their connection to
the master, heartbeats, messages — and chbench's own engine (``load/``) does the
measuring: open-loop schedule, lean clients, exact histograms. Importing locust
monkey-patches the process with gevent, and measured in such a process the engine lost
accuracy (``bench/gevent_accuracy.py``: SELECT 1 at 600 QPS, p50 latency 1.6 ms against
1.0 ms, p99 3.4–3.6 ms against 1.5–1.7 ms; closed loop 7% fewer QPS), so the engine
never runs there: each worker starts it as a plain subprocess (``lane_host.py``,
JSON lines on its stdin and stdout), and the gevent processes only pass messages.

  protocol.py     the payloads that cross the wire (the messages: chbench/messages.py)
  master.py       the Locust master runner, the workers it knows, a level's source
  worker.py       the Locust worker runner and the lane host it relays to
  lane_host.py  the engine subprocess (no gevent)"""

DEFAULT_PORT = 5557  # Locust's own master port (--master-bind, --master-host)


def require_locust() -> None:
    """Import locust first thing in a master or worker process (it monkey-patches the
    process with gevent, which must happen before sockets and threads exist)."""
    from chbench.errors import UsageError

    try:
        import locust  # noqa: F401
    except ImportError:
        raise UsageError("--master and --worker need Locust: pip install 'chbench[distributed]'") from None
