"""Each target kind against a real engine: probing, samples, errors, read-only, timeouts."""

from __future__ import annotations

import pytest

from chbench.errors import ConnectError, QueryError, UsageError
from chbench.explain.collect import collect, server_metrics
from chbench.targets import Credentials, make_target
from tests.conftest import PASSWORD

SETTINGS = {"use_query_cache": "0", "readonly": "2"}


def test_target_url_parsing():
    t = make_target("http://bob@db.example:8124/analytics", Credentials())
    assert t.kind == "http" and t.url == "http://bob@db.example:8124/analytics"
    t = make_target("clickhouses://db.example", Credentials(user="carol"))
    assert t.kind == "native" and t.url == "clickhouses://carol@db.example:9440"
    assert make_target("https://db.example", Credentials()).url.endswith(":8443")
    assert make_target("embedded:/tmp/x", Credentials()).path == "/tmp/x"
    with pytest.raises(UsageError, match="unknown target scheme"):
        make_target("mysql://db", Credentials())
    with pytest.raises(UsageError, match="unknown target"):
        make_target("db.example:9000", Credentials())
    with pytest.raises(UsageError, match="no password in a target URL"):
        make_target("http://u:pw@db", Credentials())


def test_embedded_target_probes_and_measures():
    t = make_target("embedded", Credentials())
    info = t.connect()
    assert info.version.startswith("26.") and info.knows("use_query_cache")
    s = t.execute("SELECT sum(number) FROM numbers_mt(2000000)\nFORMAT Null", SETTINGS, "e1", None)
    assert s.client_ms >= s.server_ms > 0 and s.read_rows == 2_000_000 and s.error is None
    with pytest.raises(QueryError) as e:
        t.execute("SELEC 1", SETTINGS, "e2", None)
    assert e.value.code == 62


def test_embedded_read_only_and_settings_ab():
    t = make_target("embedded", Credentials())
    t.connect()
    t.execute("SELECT 1", {"max_threads": "1", "readonly": "2"}, "e3", None)
    assert t.query_rows("SELECT getSetting('max_threads')") == [["1"]]
    t.execute("SELECT 1", {"readonly": "2"}, "e4", None)  # side A again: back to the default
    assert t.query_rows("SELECT getSetting('max_threads')")[0][0] != "1"
    with pytest.raises(QueryError) as e:
        t.execute("CREATE TABLE chbench_ro (x UInt8) ENGINE = Memory", {"readonly": "2"}, "e5", None)
    assert e.value.code == 164  # READONLY


@pytest.mark.parametrize("scheme", ["http", "clickhouse"])
def test_modern_server_targets(modern, scheme):
    port = modern.http_port if scheme == "http" else modern.tcp_port
    t = make_target(f"{scheme}://127.0.0.1:{port}", Credentials())
    info = t.connect()
    assert info.version.startswith("26.") and info.knows("use_query_cache")
    s = t.execute("SELECT count() FROM numbers_mt(3000000)\nFORMAT Null", SETTINGS, f"m-{scheme}-1", 30)
    assert s.server_ms is not None and 0 < s.server_ms <= s.client_ms
    assert s.read_rows == 3_000_000
    with pytest.raises(QueryError) as e:
        t.execute("DROP TABLE IF EXISTS system.one", SETTINGS, f"m-{scheme}-2", 30)
    assert e.value.code == 164
    assert "Stack trace" not in e.value.message  # the first line only, without the trace's heading
    with pytest.raises(QueryError) as e:
        t.execute("SELECT sleep(3)", {**SETTINGS, "max_execution_time": "1"}, f"m-{scheme}-3", 1)
    assert e.value.code == 159
    m = server_metrics(collect(t, [f"m-{scheme}-1"]).profiles.get(f"m-{scheme}-1"))  # query_log, by query_id
    assert m is not None
    assert m["read_rows"] == 3_000_000 and m["profile_events"]["SelectedRows"] == 3_000_000
    # user time comes from the threads' rusage, split by the kernel's ticks: a 4 ms query can
    # show 0 (seen in CI: RealTimeMicroseconds 4148, UserTimeMicroseconds 0)
    assert m["profile_events"]["RealTimeMicroseconds"] > 0 and m["profile_events"]["UserTimeMicroseconds"] >= 0
    t.close()


@pytest.mark.parametrize("scheme", ["http", "clickhouse"])
def test_legacy_server_targets(legacy, scheme):
    port = legacy.http_port if scheme == "http" else legacy.tcp_port
    t = make_target(f"{scheme}://127.0.0.1:{port}", Credentials())
    info = t.connect()
    assert info.version == "18.16.1"
    assert not info.knows("use_query_cache") and info.knows("readonly") and info.knows("max_threads")
    sent = {"readonly": "2", "log_queries": "1"}
    s = t.execute("SELECT count() FROM numbers(100000)\nFORMAT Null", sent, f"l-{scheme}-1", 30)
    assert s.client_ms > 0 and s.error is None
    with pytest.raises(QueryError) as e:  # no numbers_mt in 2018: a per-query error
        t.execute("SELECT count() FROM numbers_mt(10)\nFORMAT Null", {"readonly": "2"}, f"l-{scheme}-2", 30)
    assert e.value.code == 46
    m = server_metrics(collect(t, [f"l-{scheme}-1"]).profiles.get(f"l-{scheme}-1"))  # ProfileEvents as arrays
    assert m is not None
    assert m["read_rows"] >= 100000 and m["query_duration_ms"] >= 0 and m["memory_usage"] > 0
    assert set(m["profile_events"]) >= {"RealTimeMicroseconds", "UserTimeMicroseconds", "SystemTimeMicroseconds",
                                        "OSCPUVirtualTimeMicroseconds", "SelectedRows", "SelectedBytes"}
    assert m["profile_events"]["RealTimeMicroseconds"] > 0
    t.close()


@pytest.mark.parametrize("scheme", ["http", "clickhouse"])
def test_password_user_and_wrong_password(legacy, scheme):
    port = legacy.http_port if scheme == "http" else legacy.tcp_port
    good = make_target(f"{scheme}://bench@127.0.0.1:{port}", Credentials(password=PASSWORD))
    assert good.connect().version == "18.16.1"
    good.close()
    bad = make_target(f"{scheme}://bench@127.0.0.1:{port}", Credentials(password="wrong"))
    with pytest.raises(ConnectError) as e:
        bad.connect()
    assert "authentication failed" in str(e.value) and "wrong" not in str(e.value)


@pytest.mark.parametrize("scheme", ["http", "clickhouse"])
def test_unreachable_server(scheme):
    from tests.engines import free_port

    t = make_target(f"{scheme}://127.0.0.1:{free_port()}", Credentials())
    with pytest.raises(ConnectError, match="cannot connect"):
        t.connect()


@pytest.fixture(scope="module")
def tls_server():
    from tests.engines import LegacyServer

    server = LegacyServer(tls=True)
    yield server
    server.stop()


@pytest.mark.parametrize("scheme", ["https", "clickhouses"])
def test_tls_verifies_certificates(tls_server, scheme, tmp_path):
    from tests.conftest import assert_one_line_error, load, run_cli

    port = tls_server.https_port if scheme == "https" else tls_server.tcp_secure_port
    url = f"{scheme}://localhost:{port}"
    out = tmp_path / "tls.json"
    ok = run_cli("run", "--target", url, "--ca-file", tls_server.ca_file, "--query", "SELECT 1", "--iterations", "2",
                 "--warmup", "0", "--quiet", "--out", str(out))
    assert ok.code == 0, ok.stderr
    assert load(out)["targets"][0]["server_version"] == "18.16.1"
    refused = run_cli("run", "--target", url, "--query", "SELECT 1", "--out", str(tmp_path / "no.json"))
    assert_one_line_error(refused)  # a certificate from an unknown CA is refused by default
    assert "CERTIFICATE_VERIFY_FAILED" in refused.stderr


@pytest.mark.parametrize("kind", ["native", "https"])
def test_load_over_tls_verifies_certificates(tls_server, kind):
    """chbench load's own connections (the lean HTTP path, the light native one) verify too."""
    from tests.conftest import assert_one_line_error, run_cli

    where = (["-h", "localhost", "--port", str(tls_server.tcp_secure_port), "-s"] if kind == "native"
             else ["--target", f"https://localhost:{tls_server.https_port}"])
    ok = run_cli("load", *where, "--ca-file", tls_server.ca_file, "-i", "20", "-c", "2", "-d", "0", stdin="SELECT 1\n")
    assert ok.code == 0, ok.stderr
    assert "queries: 20" in ok.stderr
    refused = run_cli("load", *where, "-i", "5", stdin="SELECT 1\n")
    assert_one_line_error(refused)
    assert "CERTIFICATE_VERIFY_FAILED" in refused.stderr


@pytest.mark.parametrize("server", ["modern", "legacy"])
def test_the_native_connection_serves_the_next_query_after_an_error(server, request):
    """A refused setting's value makes the server close the connection (26.9: the next
    query met "Connection reset by peer", which a run took for a lost server), and 18.16
    read the empty data block after a failed query as the next packet, failing the query
    after it too. Either way the next query now runs. 18.16's typed settings: a value the
    driver cannot encode is a per-query error, not a traceback."""
    srv = request.getfixturevalue(server)
    t = make_target(f"clickhouse://127.0.0.1:{srv.tcp_port}", Credentials())
    t.connect()
    bad = [("SELEC 1", {}), ("SELECT 1", {"max_threads": "abc"}), ("SELECT 1", {"load_balancing": "nope"})]
    for i, (sql, settings) in enumerate(bad):
        with pytest.raises(QueryError):
            t.execute(sql, {"readonly": "2", **settings}, f"n-{server}-{i}", 30)
        s = t.execute("SELECT 1", {"readonly": "2"}, f"n-{server}-{i}-next", 30)
        assert s.error is None and s.result_rows == 1
    t.close()
