"""An example locustfile with chbench's ClickHouse user (docs/load.md).

    pip install 'chbench[distributed]'
    CLICKHOUSE_PASSWORD=… locust -f docs/examples/locustfile.py --host clickhouse://db1:9000
    locust -f docs/examples/locustfile.py --host http://db1:8123 --headless -u 20 -r 5 -t 5m --csv run

Every query is one Locust request (type ``clickhouse``, named by ``name=`` or its first
words): Locust's web UI, CSV files, ``--exit-code-on-error`` and its own master/worker
mode work as usual. Queries run read-only (``readonly=2``) unless ``allow_writes = True``."""

from locust import between, task

from chbench.locust import ClickHouseUser


class Analyst(ClickHouseUser):
    wait_time = between(0.5, 2.0)
    settings = {"max_threads": "4"}  # noqa: RUF012 - sent with every query of this user
    query_id_prefix = "locust-"  # find these queries in system.query_log

    @task(5)
    def recent_events(self) -> None:
        self.client.query("SELECT count() FROM system.numbers_mt LIMIT 1000000", name="count a million")

    @task(2)
    def top_functions(self) -> None:
        self.client.query("SELECT name, is_aggregate FROM system.functions ORDER BY name LIMIT 20",
                          name="list functions")

    @task(1)
    def server_clock(self) -> None:
        sample = self.client.query("SELECT now()")  # unnamed: shows as "SELECT now()"
        if sample is not None and sample.client_ms is not None and sample.client_ms > 100:
            pass  # a Sample carries the client's time, rows and bytes, if a task needs them
