"""Bad input, as a new user would type it, across every command: one clear line on
stderr and a non-zero exit code, never a traceback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import assert_one_line_error, run_cli

CASES = [
    (["run", "--target", "http://[::1"], "bad target URL"),
    (["load", "-q", "SELECT 1", "--target", "http://[::1"], "bad target URL"),
    (["run", "--target", "clickhouse://127.0.0.1:notaport"], "bad target URL"),
    (["run", "--target", "ftp://db"], "unknown target scheme"),
    (["run", "--host", "a", "--host", "b", "--port", "1", "--port", "2", "--port", "3"], "give as many of each"),
    (["run", "--query", "SELECT 1", "--setting", "max_threads"], "is not name=value"),
    (["run", "--queries", "/nonexistent.sql"], "query file not found"),
    (["load", "-q", "SELECT 1", "--rate", "0"], "must be positive"),
    (["load", "-q", "SELECT 1", "--poisson"], "--poisson needs --rate"),
    (["load", "-q", "SELECT 1", "--workers", "2"], "needs a server target"),
    (["load", "-q", "SELECT 1", "--stage", "fetch_columns"], "native protocol only"),
    (["load", "-q", "SELECT 1", "--confidence", "9"], "must be 0..5"),
    (["load", "-q", "SELECT 1", "--slo", "p99<=50ms", "--max-time", "15"], "take 20.5 s at least"),
    (["load", "-q", "SELECT 1", "--max_threads"], "needs a value"),
    (["ingest", "--paths", "carrier-pigeon"], "unknown ingest path"),
    (["ingest", "--batch-size", "ten"], "--batch-size takes row counts"),
    (["read", "--query", "SELECT 1", "--rows", "5"], "put {rows} in the query"),
    (["read", "--target", "http://a:1", "--target", "http://b:2"], "at most one http target"),
    (["clickbench", "load"], "--synthetic ROWS or --from FILE"),
    (["clickbench", "run", "--only", "99"], "0-42"),
    (["clickbench", "run", "--concurrent", "2"], "--concurrent needs --duration"),
    (["clickbench", "compare", "/nonexistent.json"], "file not found"),
    (["report", "/nonexistent.json", "--html", "/tmp/x.html"], "results file not found"),
    (["report", "README.md"], "--html FILE"),
    (["compare", "/nonexistent-a.json", "/nonexistent-b.json"], "results file not found"),
    (["compare", "a.json", "b.json", "c.json"], "one side-by-side file or two files"),
    (["compare", "x.json", "--format", "pdf"], "invalid choice"),
    (["explain", "x.json", "--top", "-1"], "must be a positive number"),
    (["compare", "x.json", "--alpha", "0"], "must lie between 0 and 1"),
    (["history", "check", "--alpha", "5"], "must lie between 0 and 1"),
    (["run", "--quiet-wait", "-5"], "must be zero or more"),
    (["compare", "x.json", "--between-run-factor", "-1"], "must be zero or more"),
    (["ingest", "--seed", "-1"], "zero or more"),
    (["run", "--timeout", "inf"], "must be a finite number"),
    (["compare", "x.json", "--between-run-factor", "nan"], "must be a finite number"),
    (["read", "--timeout", "1e309"], "must be a finite number"),
    (["run", "--target", "https://127.0.0.1:1", "--ca-file", "/nonexistent-ca.pem"], "CA file not found"),
    (["history", "list", "--store", "https://127.0.0.1:1/x", "--store-ca-file", "/nonexistent"], "CA file not found"),
    # a value the server cannot take: refused before anything runs (it failed every query)
    (["run", "--query", "SELECT 1", "--setting", "max_threads=abc"], "setting max_threads=abc: refused by ClickHouse"),
    (["run", "--query", "SELECT 1", "--setting-b", "join_algorithm=nope"], "side B: setting join_algorithm=nope"),
    (["load", "-q", "SELECT 1", "-i", "1", "--use_uncompressed_cache=maybe"], "setting use_uncompressed_cache=maybe"),
    (["load", "-q", "SELECT 1", "-i", "1", "--setting", "max_block_size=0"], "setting max_block_size=0: refused"),
    (["load", "-q", "SELECT 1", "--setting", "max_threads"], "--setting takes NAME=VALUE"),
    # the embedded engine keeps settings for its session: readonly=1 would refuse every later SET
    (["run", "--query", "SELECT 1", "--setting", "readonly=1"], "readonly=2, chbench's default"),
]


@pytest.mark.parametrize("args,needle", CASES, ids=[" ".join(a)[:60] for a, _ in CASES])
def test_one_clear_line(args, needle, tmp_path):
    if args[0] in ("run",):
        args = [*args, "--out", str(tmp_path / "x.json")]
    r = run_cli(*args, stdin="")
    assert_one_line_error(r)
    assert needle in r.stderr, r.stderr


@pytest.mark.parametrize("command", [["run"], ["load", "-q", "SELECT 1", "-i", "1"]])
def test_native_protocol_at_an_http_port_names_the_mistake(modern, command, tmp_path):
    r = run_cli(*command, "--target", f"clickhouse://127.0.0.1:{modern.http_port}", "--out", str(tmp_path / "x.json"))
    assert_one_line_error(r)
    assert "does not speak the native protocol" in r.stderr and "http://" in r.stderr


@pytest.mark.parametrize("command", [["run", "--query", "SELECT 1"], ["load", "-q", "SELECT 1", "-i", "1"]])
def test_results_never_replace_a_device(command, tmp_path):
    """Results are renamed into place: over /dev/null (as root) that would replace the
    device itself, for every process on the machine."""
    import stat

    r = run_cli(*command, "--out", os.devnull)
    assert r.code == 2 and "not a regular file" in r.stderr, r.stderr
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_a_whole_file_write_never_replaces_a_link_into_proc_or_the_users_link(tmp_path):
    """``chbench report cb.json --markdown /dev/stdout`` with the shell's output sent to a
    file: /dev/stdout led to a regular file, so the report was renamed over the link and
    /dev/stdout became a file for every process on the machine (2026-12-08, as root). A
    path through /dev or /proc is written in place; a user's own link keeps being a link,
    the file it leads to replaced. The report of that one clickhouse-benchmark file was
    empty besides: it now shows what the file says."""
    import json
    import subprocess
    import sys

    from chbench.results.store import rename_target, write_report

    assert rename_target("/dev/stdout") is None and rename_target(os.devnull) is None
    assert rename_target("/proc/self/fd/1") is None and rename_target("/dev/shm/x.json") == Path("/dev/shm/x.json")
    real = tmp_path / "real.html"
    real.write_text("old")
    (tmp_path / "mine.html").symlink_to(real)
    assert rename_target(tmp_path / "mine.html") == real
    write_report(tmp_path / "mine.html", "new")
    assert (tmp_path / "mine.html").is_symlink() and real.read_text() == "new"
    cb = tmp_path / "cb.json"
    cb.write_text(json.dumps({"statistics": {"QPS": 1471.9, "num_queries": 200, "num_errors": 0},
                              "query_time_percentiles": {"0": 0.001, "50": 0.00126, "90": 0.0015, "99": 0.002,
                                                         "99.99": 0.0045}}))
    out = tmp_path / "stdout.txt"
    stdout_link = tmp_path / "stdout"  # as /dev/stdout is, but where a regression does no harm
    stdout_link.symlink_to("/proc/self/fd/1")
    with open(out, "w") as f:
        f.write("written before\n")
        f.flush()
        r = subprocess.run([sys.executable, "-m", "chbench", "report", str(cb), "--markdown", str(stdout_link)],
                           stdout=f, stderr=subprocess.PIPE, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert stdout_link.is_symlink()
    text = out.read_text()
    assert text.startswith("written before\n")  # appended, as the shell's > leaves it
    assert "Summary: cb.json" in text and "clickhouse-benchmark (all queries)" in text and "1.26" in text
    assert "1471.9 QPS over 200 queries" in text


@pytest.mark.parametrize("args", [["history", "list", "--store", "http://u:s3cr3t@127.0.0.1:1/db"],
                                  ["history", "list", "--store", "ftp://u:s3cr3t@h/db"],
                                  ["run", "--target", "http://u:s3cr3t@[::1"]])
def test_a_password_written_into_a_url_is_refused_without_being_echoed(args, tmp_path):
    """The refusal of ``--store http://u:secret@…`` printed the URL, password and all."""
    r = run_cli(*args, "--out", str(tmp_path / "x.json")) if args[0] == "run" else run_cli(*args)
    assert_one_line_error(r)
    assert "s3cr3t" not in r.stderr and "***" in r.stderr, r.stderr
