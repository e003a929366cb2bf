import re

import pytest

from chbench.errors import UsageError
from chbench.workload import default_suite, parse_queries, prepare_sql, query_name


def test_script_with_names_comments_and_semicolons_in_strings():
    qs = parse_queries(
        "-- name: first\nSELECT 1; -- trailing\n/* a ; comment */ SELECT 'a;b' FORMAT JSON;\n"
        "-- name: third\nSELECT 3 -- hi\n"
    )
    assert [q.name for q in qs][0] == "first"
    assert qs[1].sql == "/* a ; comment */ SELECT 'a;b' FORMAT JSON"
    assert qs[2].name == "third" and qs[2].sql == "SELECT 3 -- hi"


def test_a_set_in_a_script_sets_the_statements_after_it_and_is_not_measured():
    """As clickhouse-client runs a script. It was a measured 0.1 ms "query" of its own, and
    on the embedded engine it changed the session of the queries after it unseen."""
    qs = parse_queries("-- name: a\nSELECT 1;\nSET max_threads = 1, log_comment = 'x, y';\n"
                       "-- name: b\nSELECT 2;\n-- settings: max_threads=2\n-- name: c\nSELECT 3;\n"
                       "SET ROLE admin;\n", "t.sql")
    assert [q.name for q in qs] == ["a", "b", "c", query_name("SET ROLE admin")]  # not a setting
    assert [q.settings for q in qs[:3]] == [{}, {"max_threads": "1", "log_comment": "x, y"},
                                                    {"max_threads": "2", "log_comment": "x, y"}]


def test_one_query_per_line_files_as_clickhouse_benchmark_reads_them():
    qs = parse_queries("SELECT 1\nSELECT count() FROM numbers(10)\n\nSELECT 2\n")
    assert [q.sql for q in qs] == ["SELECT 1", "SELECT count() FROM numbers(10)", "SELECT 2"]


def test_multi_line_query_without_semicolon_is_one_query():
    qs = parse_queries("SELECT number\nFROM numbers(10)\nWHERE number > 3\n")
    assert len(qs) == 1 and qs[0].sql.startswith("SELECT number\nFROM")


def test_forced_formats():
    assert len(parse_queries("SELECT 1\nFROM t", fmt="lines")) == 2
    assert len(parse_queries("SELECT 1\nSELECT 2", fmt="script")) == 1


def test_duplicate_names_get_suffixes_and_names_are_stable():
    qs = parse_queries("-- name: q\nSELECT 1;\n-- name: q\nSELECT 2;")
    assert [q.name for q in qs] == ["q", "q#2"]
    assert query_name("SELECT  count()\nFROM hits") == query_name("SELECT count() FROM hits")
    assert query_name("SELECT 1") != query_name("SELECT 2")


@pytest.mark.parametrize(
    "text,message",
    [
        ("", "no query"),
        ("-- only a comment\n", "no query"),
        ("SELECT 'unterminated", "unterminated ' quote"),
        ("SELECT 1 /* open comment", "unterminated /* comment"),
        ("SELECT \x00 binary", "not a text file"),
    ],
)
def test_malformed_files_raise_clear_errors(text, message):
    with pytest.raises(UsageError, match=re.escape(message)):
        parse_queries(text, "q.sql")


@pytest.mark.parametrize(
    "sql,sent",
    [
        ("SELECT 1", "SELECT 1\nFORMAT Null"),
        ("SELECT 1;", "SELECT 1\nFORMAT Null"),
        ("SELECT 1 FORMAT JSONEachRow", "SELECT 1\nFORMAT Null"),
        ("select 1 format TSV ;", "select 1\nFORMAT Null"),
        ("SELECT 1 -- comment", "SELECT 1\nFORMAT Null"),
        ("SELECT 'FORMAT JSON'", "SELECT 'FORMAT JSON'\nFORMAT Null"),
        ("WITH 1 AS x SELECT x FORMAT CSV", "WITH 1 AS x SELECT x\nFORMAT Null"),
        ("INSERT INTO t FORMAT CSV", "INSERT INTO t FORMAT CSV"),
        ("DROP TABLE t", "DROP TABLE t"),
    ],
)
def test_format_stripping(sql, sent):
    assert prepare_sql(sql) == sent


def test_keep_format():
    assert prepare_sql("SELECT 1 FORMAT JSON;", keep_format=True) == "SELECT 1 FORMAT JSON"


def test_default_suite_scales_every_row_count():
    base = {q.name: q.sql for q in default_suite(1.0).queries}
    big = {q.name: q.sql for q in default_suite(1.1).queries}
    assert len(base) == 10 and set(base) == set(big)
    assert "numbers_mt(150000000)" in base["aggregation"] and "numbers_mt(165000000)" in big["aggregation"]
    assert "numbers(10000000)" in base["join"] and "numbers(11000000)" in big["join"]
    assert "% 550000" in big["group_by_large"]


def test_a_byte_order_mark_and_windows_line_ends_are_read_through(tmp_path):
    """Windows editors start a file with a BOM: the first ``-- name:`` named no query and
    the SQL began with U+FEFF. The same for a password file (a BOM broke the login)."""
    from chbench.commands.connection import password_from
    from chbench.workload import read_workload

    path = tmp_path / "q.sql"
    path.write_bytes("\ufeff-- name: first\r\nSELECT 1;\r\n-- name: second\r\nSELECT 'a;b';\r\n".encode())
    wl = read_workload(str(path))
    assert [(q.name, q.sql) for q in wl.queries] == [("first", "SELECT 1"), ("second", "SELECT 'a;b'")]
    pw = tmp_path / "pw"
    pw.write_bytes("\ufeffs3cret\r\n".encode())
    assert password_from(str(pw)) == "s3cret"
    (tmp_path / "bad.sql").write_bytes(b"\xff\xfeSELECT 1")
    with pytest.raises(UsageError, match="not a UTF-8 text file"):
        read_workload(str(tmp_path / "bad.sql"))


def test_a_vertical_terminator_ends_a_statement_as_in_clickhouse_client():
    r"""``\G`` ends a statement in clickhouse-client (with vertical output): a pasted script
    sent ``SELECT 3\G SELECT 4`` as one query, a syntax error. Inside a string it stays."""
    qs = parse_queries("SELECT 1\\G\nSELECT 'a\\Gb'\\G;\nSELECT 3;\n")
    assert [q.sql for q in qs] == ["SELECT 1", "SELECT 'a\\Gb'", "SELECT 3"]
    lines = parse_queries("SELECT 1\\G\nSELECT 2\\G\n")  # not "one query per line" with the \G kept
    assert [q.sql for q in lines] == ["SELECT 1", "SELECT 2"]
