"""``ClickHouseUser``: chbench's targets as a Locust user, for plain locustfiles.

    from locust import constant_throughput, task
    from chbench.locust import ClickHouseUser

    class Analyst(ClickHouseUser):
        wait_time = constant_throughput(5)

        @task
        def top_pages(self):
            self.client.query("SELECT URL, count() FROM hits GROUP BY URL ORDER BY 2 DESC LIMIT 10",
                              name="top pages")

    $ locust -f mylocustfile.py --host clickhouse://db1:9000      (or http://db1:8123, https://…,
                                                                   clickhouse://db1,db2,db3:9000)

Each query fires one Locust request event — request type ``clickhouse``, named by its
``name`` or its first words, response time in ms, response length in result bytes, the
server's error as the exception — so Locust's UI, CSV, thresholds and its own
master/worker mode work as they always do. Read-only by default (``readonly=2`` on every
query; ``allow_writes = True`` lifts it); the password comes from ``CLICKHOUSE_PASSWORD``
(or the variable ``password_env`` names), never from the URL.

Locust's statistics round response times (to 1 ms under 100 ms, 10 ms under 1 s) and its
users are closed loop; for open-loop load and exact histograms use ``chbench load``
(``--master``/``--worker`` for several machines). See docs/load.md."""

from __future__ import annotations

import contextlib
import itertools
import os
import time
from typing import Any

from locust import User

from chbench.errors import ChbenchError, QueryError, ServerLost
from chbench.targets import Credentials, Sample, Target, make_target
from chbench.targets.url import split_hosts

REQUEST_TYPE = "clickhouse"
_IDS = itertools.count()  # one counter for the process: query ids stay unique across users


def query_name(sql: str, words: int = 4) -> str:
    """How a query without a name shows in Locust's tables: its first words."""
    return " ".join(sql.split()[:words])[:60]


class ClickHouseClient:
    """One connection (opened on first use) whose queries are Locust requests."""

    def __init__(self, url: str, credentials: Credentials, request_event: Any, settings: dict[str, str],
                 query_id_prefix: str = "", timeout: float | None = None) -> None:
        self.urls = split_hosts(url)  # a cluster URL (clickhouse://h1,h2,h3:9000): each query to the next host
        self.url, self.credentials, self.request_event = url, credentials, request_event
        self.settings, self.prefix, self.timeout = settings, query_id_prefix, timeout
        self._targets: dict[str, Target] = {}
        self._turn = itertools.count()

    def _connection(self, url: str) -> Target:
        t = self._targets.get(url)
        if t is None:
            t = make_target(url, self.credentials, light=True)
            t.open()
            self._targets[url] = t
        return t

    def query(self, sql: str, name: str | None = None, settings: dict[str, str] | None = None,
              query_id: str | None = None) -> Sample | None:
        """Run ``sql``; one request event whatever happens. Returns the sample (timings,
        rows, bytes) or None when it failed — the failure is Locust's to count."""
        qid = query_id or (f"{self.prefix}{os.getpid()}-{next(_IDS)}" if self.prefix else "")
        url = self.urls[next(self._turn) % len(self.urls)]
        start = time.perf_counter()
        sample: Sample | None = None
        error: Exception | None = None
        try:
            sample = self._connection(url).execute(sql, {**self.settings, **(settings or {})}, qid, self.timeout)
        except QueryError as e:
            error = e
        except (ServerLost, ChbenchError) as e:
            error = e
            self._drop(url)  # the next query to this host connects again
        elapsed_ms = (time.perf_counter() - start) * 1000.0
        self.request_event.fire(
            request_type=REQUEST_TYPE, name=name or query_name(sql),
            response_time=sample.client_ms if sample is not None and sample.client_ms is not None else elapsed_ms,
            response_length=(sample.result_bytes or 0) if sample is not None else 0,
            exception=error, context={"query_id": qid, "url": url})
        return sample

    def _drop(self, url: str) -> None:
        t = self._targets.pop(url, None)
        if t is not None:
            with contextlib.suppress(Exception):
                t.close()

    def close(self) -> None:
        for url in list(self._targets):
            self._drop(url)


class ClickHouseUser(User):
    """A Locust user with ``self.client``: a :class:`ClickHouseClient` to ``--host``."""

    abstract = True
    user: str | None = None  # ClickHouse user (default: the server's 'default')
    database: str | None = None
    password_env = "CLICKHOUSE_PASSWORD"
    ca_file: str | None = None
    settings: dict[str, str] = {}  # sent with every query  # noqa: RUF012 - a class-level default, as Locust's
    allow_writes = False
    query_id_prefix = ""  # e.g. "locust-": query ids prefix + pid + a counter (find them in query_log)
    timeout: float | None = None  # client-side limit per query, seconds

    def __init__(self, environment: Any) -> None:
        super().__init__(environment)
        if not self.host:
            raise ChbenchError("ClickHouseUser needs --host URL (clickhouse://host:9000, http://host:8123, ...)")
        settings = dict(self.settings)
        if not self.allow_writes:
            settings.setdefault("readonly", "2")
        creds = Credentials(user=self.user, password=os.environ.get(self.password_env), database=self.database,
                            ca_file=self.ca_file)
        self.client = ClickHouseClient(self.host, creds, environment.events.request, settings, self.query_id_prefix,
                                       self.timeout)

    def on_stop(self) -> None:
        self.client.close()
