"""Ad-hoc SQL: hostile queries refused or contained, the sandbox sealed, and transpiled queries from
several dialects answering exact numbers over a tiny hand-built lake."""

from __future__ import annotations

import asyncio
import io
import json
import re
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from ingest.service import Ingest
from ingest.validation import Context
from queries.adhoc.errors import SqlError
from queries.adhoc.guard import guard
from queries.adhoc.policy import VIEWS
from queries.adhoc.run import execute, run_sql
from queries.adhoc.sandbox import Sandbox, open_sandbox
from warehouse.lake import Lake

SITE = "aaaaaaaa-0000-4000-8000-000000000001"
OTHER_SITE = "bbbbbbbb-0000-4000-8000-000000000002"


def event(name: str, visitor: str, session: str, at: str, **extra) -> dict:
    return {"name": name, "visitorId": visitor, "sessionId": session, "timestamp": at, **extra}


def order(
    order_id: str, visitor: str, at: str, currency: str, total: str, items: list[dict], **extra
) -> dict:
    return {"orderId": order_id, "visitorId": visitor, "sessionId": f"s-{visitor}", "timestamp": at,
            "currency": currency, "total": total, "items": items, **extra}  # fmt: skip


def load(ingest: Ingest, site_id: str, events: list[dict], orders: list[dict]) -> None:
    ctx = Context(site_id=site_id, site_currency="EUR", received_at=datetime.now(UTC), channel="server",
                  historical=True)  # fmt: skip
    assert ingest.accept_events_sync(events, ctx).rejected == []
    if orders:
        assert ingest.accept_orders_sync(orders, ctx).rejected == []


@pytest.fixture(scope="module")
def shop(tmp_path_factory) -> Iterator[Lake]:
    """Site A: ann browses and buys (order o1, EUR, later partly refunded), then comes back identified as
    u-ann; bob views a product and buys in USD the next day; cy looks once. Site B: zed, the other tenant.
    One lake for the module: the tests only read it (a write that got past the sandbox would fail them)."""
    ingest = Ingest(data_dir=tmp_path_factory.mktemp("shop"), flush_interval_seconds=3600)
    load(ingest, SITE, [
        event("page_view", "ann", "s-ann-1", "2024-03-01T10:00:00Z", url="https://shop.example/",
              referrer="https://search.example/"),
        event("product_view", "ann", "s-ann-1", "2024-03-01T10:01:00Z", url="https://shop.example/p/1",
              metadata={"productItemCode": "P1"}, ),
        event("add_to_cart", "ann", "s-ann-1", "2024-03-01T10:02:00Z", metadata={"productItemCode": "P1"}),
        event("purchase", "ann", "s-ann-1", "2024-03-01T10:05:00Z", url="https://shop.example/thanks"),
        event("page_view", "ann", "s-ann-2", "2024-03-02T09:00:00Z", userId="u-ann", url="https://shop.example/"),
        event("page_view", "bob", "s-bob", "2024-03-01T11:00:00Z", url="https://shop.example/"),
        event("product_view", "bob", "s-bob", "2024-03-01T11:01:00Z", metadata={"productItemCode": "P2"}),
        event("page_view", "cy", "s-cy", "2024-03-02T12:00:00Z", url="https://shop.example/sale"),
    ], [
        order("o1", "ann", "2024-03-01T10:05:00Z", "EUR", "30.50", [
            {"productItemCode": "P1", "quantity": 2, "price": "10.25", "name": "Shoe", "categoryPath": "shoes"},
            {"productItemCode": "P3", "quantity": 1, "price": "10.00", "name": "Sock"},
        ]),
        order("o2", "bob", "2024-03-02T11:30:00Z", "USD", "12.00",
              [{"productItemCode": "P2", "quantity": 1, "price": "12.00", "name": "Hat"}]),
        order("o3", "ann", "2024-03-03T08:00:00Z", "EUR", "-10.00",
              [{"productItemCode": "P3", "quantity": -1, "price": "10.00", "name": "Sock"}],
              isRefund=True, refundOf="o1"),
    ])  # fmt: skip
    ctx = Context(
        site_id=SITE, site_currency="EUR", received_at=datetime.now(UTC), channel="web", historical=True
    )
    for record in (
        {
            "consentId": "c-ann",
            "visitorId": "ann",
            "sessionId": "s-ann-1",
            "timestamp": "2024-03-01T09:59:00Z",
            "source": "banner",
            "categories": {"necessary": True, "analytics": True, "marketing": False},
        },
        {
            "consentId": "c-cy",
            "visitorId": "cy",
            "timestamp": "2024-03-02T12:00:00Z",
            "categories": {"necessary": True, "analytics": False, "marketing": False, "preferences": False},
        },
    ):
        asyncio.run(ingest.accept_consent(record, ctx))
    asyncio.run(
        ingest.accept_consent(
            {
                "consentId": "c-zed",
                "visitorId": "zed",
                "timestamp": "2024-03-01T00:00:00Z",
                "categories": {"necessary": True, "analytics": True},
            },
            replace(ctx, site_id=OTHER_SITE),
        )
    )
    load(ingest, OTHER_SITE, [event("page_view", "zed", "s-zed", f"2024-03-01T0{h}:00:00Z") for h in range(5)],
         [order("ob1", "zed", "2024-03-01T05:00:00Z", "EUR", "999.00",
                [{"productItemCode": "SECRET", "quantity": 1, "price": "999.00"}])])  # fmt: skip
    ingest.flush()
    yield ingest.lake
    ingest.stop()


def rows(lake, sql: str, *, dialect: str | None = None, **kwargs) -> list[tuple]:
    result = run_sql(lake, sql, site_id=SITE, dialect=dialect, timeout_ms=20_000, **kwargs)
    return [tuple(r.values()) for r in result.table.to_pylist()]


# --- hostile queries: refused by the guard, or contained by the sandbox ------------------------------

LAKE = "<lake>"  # replaced by the real lake path in the test

HOSTILE: list[tuple[str, str, str]] = [
    # (dialect, query, expected code) - file readers
    ("duckdb", "SELECT * FROM read_parquet('/etc/passwd')", "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
    ("duckdb", f"SELECT * FROM read_parquet('{LAKE}/events/*/*/*.parquet', hive_partitioning = true)",
     "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
    ("duckdb", f"SELECT * FROM read_parquet(['{LAKE}/orders/site_id={OTHER_SITE}/*/*.parquet'])",
     "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
    ("duckdb", "SELECT * FROM parquet_scan('/etc/passwd')", "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
    ("duckdb", "SELECT * FROM read_csv('/etc/passwd')", "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
    ("duckdb", "SELECT * FROM read_csv_auto('/etc/passwd', header = false)", "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
    ("duckdb", "SELECT * FROM read_json('/etc/passwd')", "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
    ("duckdb", "SELECT * FROM read_json_auto('/etc/passwd')", "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
    ("duckdb", "SELECT * FROM read_ndjson_objects('/etc/passwd')", "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
    ("duckdb", "SELECT * FROM read_text('/etc/passwd')", "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
    ("duckdb", "SELECT content FROM read_blob('/etc/passwd')", "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
    ("duckdb", "SELECT * FROM glob('/*')", "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
    ("duckdb", "SELECT * FROM parquet_metadata('/etc/passwd')", "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
    ("duckdb", "SELECT * FROM sniff_csv('/etc/passwd')", "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
    ("duckdb", "SELECT * FROM events, LATERAL read_csv('/etc/passwd')", "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
    ("duckdb", "SELECT 'x'.read_text()", "SQL_FUNCTION_NOT_ALLOWED"),
    ("duckdb", "SELECT * FROM '/etc/passwd'", "SQL_TABLE_NOT_ALLOWED"),
    ("duckdb", f"SELECT * FROM '{LAKE}/events/x.parquet'", "SQL_TABLE_NOT_ALLOWED"),
    ("duckdb", 'SELECT * FROM "data/lake/events/site_id=x/date=2024-03-01/f.parquet"', "SQL_TABLE_NOT_ALLOWED"),
    ("postgres", "SELECT pg_read_file('/etc/passwd')", "SQL_FUNCTION_NOT_ALLOWED"),
    ("mysql", "SELECT LOAD_FILE('/etc/passwd')", "SQL_FUNCTION_NOT_ALLOWED"),
    # functions that run SQL
    ("duckdb", "SELECT * FROM query('SELECT * FROM duckdb_settings()')", "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
    ("duckdb", "SELECT * FROM query_table('_lake_events')", "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
    ("duckdb", "SELECT json_execute_serialized_sql('{}')", "SQL_FUNCTION_NOT_ALLOWED"),
    # statements other than a read-only query
    ("duckdb", "ATTACH ':memory:' AS other", "SQL_STATEMENT_NOT_ALLOWED"),
    ("duckdb", "ATTACH '/tmp/aisle.db' AS other (READ_ONLY)", "SQL_STATEMENT_NOT_ALLOWED"),
    ("duckdb", "DETACH other", "SQL_STATEMENT_NOT_ALLOWED"),
    ("duckdb", "COPY events TO '/tmp/events.csv'", "SQL_STATEMENT_NOT_ALLOWED"),
    ("duckdb", "COPY (SELECT * FROM orders) TO '/tmp/orders.parquet' (FORMAT parquet)", "SQL_STATEMENT_NOT_ALLOWED"),
    ("duckdb", "INSTALL httpfs", "SQL_STATEMENT_NOT_ALLOWED"),
    ("duckdb", "LOAD httpfs", "SQL_STATEMENT_NOT_ALLOWED"),
    ("duckdb", "PRAGMA database_list", "SQL_STATEMENT_NOT_ALLOWED"),
    ("duckdb", "SET enable_external_access = true", "SQL_STATEMENT_NOT_ALLOWED"),
    ("duckdb", "RESET lock_configuration", "SQL_STATEMENT_NOT_ALLOWED"),
    ("duckdb", "CREATE TABLE copy AS SELECT * FROM events", "SQL_STATEMENT_NOT_ALLOWED"),
    ("duckdb", "CREATE MACRO leak() AS TABLE SELECT * FROM _lake_events", "SQL_STATEMENT_NOT_ALLOWED"),
    ("duckdb", "INSERT INTO events (name) VALUES ('x')", "SQL_STATEMENT_NOT_ALLOWED"),
    ("duckdb", "UPDATE events SET name = 'x'", "SQL_STATEMENT_NOT_ALLOWED"),
    ("duckdb", "DELETE FROM events", "SQL_STATEMENT_NOT_ALLOWED"),
    ("duckdb", "DROP VIEW events", "SQL_STATEMENT_NOT_ALLOWED"),
    ("duckdb", "EXPORT DATABASE '/tmp/everything'", "SQL_STATEMENT_NOT_ALLOWED"),
    ("duckdb", "CALL pragma_version()", "SQL_STATEMENT_NOT_ALLOWED"),
    ("duckdb", "DESCRIBE events", "SQL_STATEMENT_NOT_ALLOWED"),
    ("duckdb", "SUMMARIZE events", "SQL_STATEMENT_NOT_ALLOWED"),
    ("duckdb", "USE memory", "SQL_STATEMENT_NOT_ALLOWED"),
    ("postgres", "SELECT * INTO stolen FROM events", "SQL_STATEMENT_NOT_ALLOWED"),
    ("postgres", "WITH gone AS (DELETE FROM events RETURNING *) SELECT * FROM gone", "SQL_STATEMENT_NOT_ALLOWED"),
    # several statements, and comment or quoting tricks
    ("duckdb", "SELECT 1; SELECT 2", "SQL_MULTIPLE_STATEMENTS"),
    ("duckdb", "SELECT count(*) FROM events; DROP VIEW events", "SQL_MULTIPLE_STATEMENTS"),
    ("duckdb", "SELECT 1 /* harmless; */ ; ATTACH ':memory:' AS x", "SQL_MULTIPLE_STATEMENTS"),
    ("duckdb", "SELECT 1 -- the rest is a comment\n; COPY events TO '/tmp/x.csv'", "SQL_MULTIPLE_STATEMENTS"),
    ("duckdb", "SeLeCt * FrOm ReAd_PaRqUeT('/etc/passwd')", "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
    ("duckdb", 'SELECT * FROM "read_parquet"(\'/etc/passwd\')', "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
    ("duckdb", "SELECT * FROM _lake_events", "SQL_TABLE_NOT_ALLOWED"),
    ("duckdb", 'SELECT * FROM "_lake_orders_empty"', "SQL_TABLE_NOT_ALLOWED"),
    ("duckdb", "SELECT * FROM temp.main.events", "SQL_TABLE_NOT_ALLOWED"),
    ("duckdb", "SELECT * FROM memory.main.events", "SQL_TABLE_NOT_ALLOWED"),
    ("duckdb", "SELECT * FROM (WITH pg_tables AS (SELECT 1) SELECT 1) AS a, pg_tables", "SQL_TABLE_NOT_ALLOWED"),
    ("duckdb", "WITH a AS (SELECT * FROM b), b AS (SELECT 1) SELECT * FROM a", "SQL_TABLE_NOT_ALLOWED"),
    # the catalog, settings and the environment
    ("duckdb", "SELECT * FROM information_schema.tables", "SQL_TABLE_NOT_ALLOWED"),
    ("duckdb", "SELECT * FROM information_schema.columns", "SQL_TABLE_NOT_ALLOWED"),
    ("duckdb", "SELECT * FROM duckdb_tables()", "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
    ("duckdb", "SELECT * FROM duckdb_views", "SQL_TABLE_NOT_ALLOWED"),
    ("duckdb", "SELECT * FROM duckdb_settings()", "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
    ("duckdb", "SELECT * FROM pg_catalog.pg_tables", "SQL_TABLE_NOT_ALLOWED"),
    ("duckdb", "SELECT * FROM sqlite_master", "SQL_TABLE_NOT_ALLOWED"),
    ("duckdb", "SELECT current_setting('allowed_paths')", "SQL_FUNCTION_NOT_ALLOWED"),
    ("postgres", "SELECT current_setting('enable_external_access')", "SQL_FUNCTION_NOT_ALLOWED"),
    ("duckdb", "SELECT getenv('HOME')", "SQL_FUNCTION_NOT_ALLOWED"),
    ("duckdb", "SELECT current_database(), current_schema()", "SQL_FUNCTION_NOT_ALLOWED"),
    ("duckdb", "SELECT which_secret('s3://bucket/x', 's3')", "SQL_FUNCTION_NOT_ALLOWED"),
    ("duckdb", "SELECT nextval('seq')", "SQL_FUNCTION_NOT_ALLOWED"),
    # bare names DuckDB calls a function for when no column has them
    ("duckdb", "SELECT user", "SQL_FUNCTION_NOT_ALLOWED"),
    ("duckdb", "SELECT current_role", "SQL_FUNCTION_NOT_ALLOWED"),
    ("duckdb", 'SELECT "current_schema"', "SQL_FUNCTION_NOT_ALLOWED"),
    ("postgres", "SELECT user", "SQL_FUNCTION_NOT_ALLOWED"),
    ("duckdb", "SELECT ?", "SQL_PARAMETER_UNNAMED"),
    ("duckdb", "SELECT $1", "SQL_PARAMETER_UNNAMED"),
    # hidden in subqueries, lambdas, set operations and other statements
    ("duckdb", "SELECT list_transform([1], x -> (SELECT count(*) FROM _lake_orders))", "SQL_TABLE_NOT_ALLOWED"),
    ("duckdb", "SELECT name FROM events UNION ALL SELECT name FROM _lake_events", "SQL_TABLE_NOT_ALLOWED"),
    ("duckdb", "SELECT * FROM events WHERE name IN (SELECT content FROM read_text('/etc/passwd'))",
     "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
    ("duckdb", "PIVOT events ON name USING count(*)", "SQL_STATEMENT_NOT_ALLOWED"),
    ("duckdb", "SELECT $$ ; $$ AS text; ATTACH ':memory:' AS x", "SQL_MULTIPLE_STATEMENTS"),
    ("duckdb", "SELECT " + "(" * 3000 + "1" + ")" * 3000, "SQL_TOO_COMPLEX"),
    ("mysql", "SELECT @@version", "SQL_INVALID"),  # read as a column named version: there is none
]  # fmt: skip


def test_the_hostile_table_is_large_enough():
    assert len(HOSTILE) >= 40


@pytest.mark.parametrize(("dialect", "query", "code"), HOSTILE, ids=[f"{d}:{q[:60]}" for d, q, _ in HOSTILE])
def test_hostile_query_is_refused_with_a_code_that_names_it(shop, dialect, query, code):
    query = query.replace(LAKE, str(shop.root))
    with pytest.raises(SqlError) as refused:
        run_sql(shop, query, site_id=SITE, dialect=dialect, timeout_ms=5_000)
    assert refused.value.code == code, (refused.value.code, refused.value.message)
    assert refused.value.message


def test_refusals_name_what_was_refused_and_where(shop):
    with pytest.raises(SqlError) as refused:
        guard("SELECT name,\n  getenv('HOME') FROM events")
    assert refused.value.details == {
        "refused": "getenv",
        "kind": "function",
        "position": {"line": 2, "column": 3},
    }
    assert "getenv" in refused.value.message
    with pytest.raises(SqlError) as refused:
        guard("SELECT * FROM events JOIN secrets USING (visitor_id)")
    assert refused.value.details == {
        "refused": "secrets",
        "kind": "table",
        "position": {"line": 1, "column": 27},
    }
    # From another dialect the position is still the caller's text, and the DuckDB SQL is shown.
    with pytest.raises(SqlError) as refused:
        guard("SELECT  current_setting('x') FROM events", dialect="postgres")
    assert refused.value.details["position"] == {"line": 1, "column": 9}
    assert refused.value.details["duckdbSql"] == "SELECT CURRENT_SETTING('x') FROM events"


def test_refusals_name_functions_and_parameters_as_the_caller_wrote_them():
    # sqlglot named T-SQL's OPENJSON after its class (open_j_s_o_n), ClickHouse's currentDatabase by its
    # generic name, a parameter as generic SQL writes it (Snowflake's $1 as :1), and ROWS FROM as table ''.
    cases = [
        ("tsql", "SELECT * FROM OPENJSON('[1]')", "SQL_TABLE_FUNCTION_NOT_ALLOWED",
         {"refused": "openjson", "kind": "table_function"}, "Table function 'openjson' is not allowed;"),
        # No position rather than that of the argument `metadata`.
        ("tsql", "SELECT OPENJSON(metadata) FROM events", "SQL_FUNCTION_NOT_ALLOWED",
         {"refused": "openjson", "kind": "function"}, "Function 'openjson' is not allowed;"),
        ("clickhouse", "SELECT 1,\n currentDatabase()", "SQL_FUNCTION_NOT_ALLOWED",
         {"refused": "currentDatabase", "kind": "function", "position": {"line": 2, "column": 2}},
         "Function 'currentDatabase' is not allowed;"),
        ("duckdb", "SELECT getEnv('HOME')", "SQL_FUNCTION_NOT_ALLOWED",
         {"refused": "getEnv", "kind": "function", "position": {"line": 1, "column": 8}},
         "Function 'getEnv' is not allowed;"),
        ("snowflake", "SELECT $1 FROM events", "SQL_PARAMETER_UNNAMED", {"refused": "$1", "kind": "parameter"},
         "Use named parameters ($name in DuckDB, :name or @name in other dialects), not $1"),
        ("duckdb", "SELECT $1", "SQL_PARAMETER_UNNAMED", {"refused": "$1", "kind": "parameter"},
         "Use named parameters ($name in DuckDB, :name or @name in other dialects), not $1"),
        ("postgres", "SELECT * FROM events WHERE name = %s", "SQL_PARAMETER_UNNAMED",
         {"refused": "%s", "kind": "parameter"},
         "Use named parameters ($name in DuckDB, :name or @name in other dialects), not %s"),
        ("postgres", "SELECT * FROM ROWS FROM (generate_series(1, 2), generate_series(1, 3))", "SQL_UNSUPPORTED",
         {"unsupported": "ROWS FROM (GENERATE_SERIES(1, 2), GENERATE_SERIES(1, 3))"},
         "ROWS FROM (...) has no DuckDB equivalent; call the table function in FROM itself "
         "(FROM generate_series(1, 3)), or join one per function"),
    ]  # fmt: skip
    for dialect, query, code, details, message in cases:
        with pytest.raises(SqlError) as refused:
            guard(query, dialect=dialect)
        refused.value.details.pop("duckdbSql", None)
        assert (refused.value.code, refused.value.details) == (code, details), query
        assert refused.value.message.startswith(message), refused.value.message


def test_a_refused_statement_is_named_by_the_keyword_it_starts_with():
    # sqlglot reads statements it does not know as something else: CHECKPOINT as a column, DEALLOCATE x
    # as an alias, TRUNCATE as "TruncateTable".
    cases = {
        "CHECKPOINT": ("CHECKPOINT", {"line": 1, "column": 1}),
        "DEALLOCATE prepared": ("DEALLOCATE", {"line": 1, "column": 1}),
        "-- tidy up\n  truncate events": ("TRUNCATE", {"line": 2, "column": 3}),
        "UNPIVOT events ON name INTO NAME k VALUE v": ("UNPIVOT", {"line": 1, "column": 1}),
        # ...and some it cannot read at all: these were syntax errors.
        "EXPORT DATABASE 'x'": ("EXPORT", {"line": 1, "column": 1}),
        "\n import database '/tmp/x'": ("IMPORT", {"line": 2, "column": 2}),
        "FORCE INSTALL httpfs": ("FORCE", {"line": 1, "column": 1}),
    }
    for query, (keyword, position) in cases.items():
        with pytest.raises(SqlError) as refused:
            guard(query)
        assert refused.value.code == "SQL_STATEMENT_NOT_ALLOWED"
        assert refused.value.details == {"refused": keyword, "kind": "statement", "position": position}
        assert refused.value.message.startswith(f"{keyword} statements are not allowed;")


def test_bare_names_duckdb_calls_functions_for_count_as_those_functions(shop):
    with pytest.raises(SqlError) as refused:
        guard("SELECT name,\n  current_role FROM events")
    assert refused.value.code == "SQL_FUNCTION_NOT_ALLOWED"
    assert refused.value.details == {
        "refused": "current_role",
        "kind": "function",
        "position": {"line": 2, "column": 3},
    }
    assert 't."current_role"' in refused.value.message
    # The allowed ones run; qualified, or as a comprehension's or a lambda's variable, the name is no call.
    query = (
        "SELECT \"current_date\" = current_date AS today, [user FOR user IN ['a']] AS listed, "
        'list_transform([1], lambda user: user + 1) AS mapped, t."user" FROM (SELECT \'u\' AS "user") AS t'
    )
    assert rows(shop, query) == [(True, ["a"], [2], "u")]


def test_other_sites_rows_are_not_visible_whatever_the_query_says(shop):
    assert rows(shop, "SELECT count(*) FROM events") == [(8,)]
    assert rows(shop, "SELECT count(*) FROM orders") == [(3,)]
    assert rows(shop, "SELECT count(*) FROM events WHERE visitor_id = 'zed'") == [(0,)]
    assert rows(shop, "SELECT count(*) FROM order_items WHERE product_item_code = 'SECRET'") == [(0,)]
    assert rows(shop, "SELECT count(*) FROM products WHERE product_item_code = 'SECRET'") == [(0,)]
    assert rows(shop, "SELECT count(*) FROM consents WHERE visitor_id = 'zed'") == [(0,)]
    # The views carry no site column to filter on: naming another site's id answers nothing of it.
    with pytest.raises(SqlError) as invalid:
        run_sql(shop, f"SELECT * FROM events WHERE site_id = '{OTHER_SITE}'", site_id=SITE)
    assert invalid.value.code == "SQL_INVALID"
    # And the other site sees only its own.
    other = run_sql(shop, "SELECT count(*) AS n, sum(total) AS t FROM orders", site_id=OTHER_SITE).table
    assert other.to_pylist() == [{"n": 1, "t": Decimal("999.000000")}]


def test_a_cross_join_that_runs_too_long_is_interrupted(shop):
    started = datetime.now(UTC)
    with pytest.raises(SqlError) as stopped:
        run_sql(shop, "SELECT count(*) FROM range(1000000000) AS a, range(1000000) AS b", site_id=SITE,
                timeout_ms=300)  # fmt: skip
    assert stopped.value.code == "SQL_TIMEOUT"
    assert stopped.value.details == {"timeoutMs": 300}
    assert (datetime.now(UTC) - started).total_seconds() < 10


def test_a_query_over_its_memory_limit_fails_cleanly(shop):
    sandbox = Sandbox(memory_limit="64MB", threads=1)
    with pytest.raises(SqlError) as refused:
        run_sql(shop, "SELECT count(DISTINCT s) FROM (SELECT range::VARCHAR || repeat('x', 200) AS s "
                      "FROM range(5000000))", site_id=SITE, sandbox=sandbox, timeout_ms=60_000)  # fmt: skip
    assert refused.value.code == "SQL_MEMORY_LIMIT"


def test_a_list_built_past_the_process_memory_ceiling_stops_its_worker_not_the_caller(shop):
    # DuckDB's memory limit does not cover the list range() builds, nor does it look for interrupts
    # meanwhile: in the server's own process this query grew to 23 GB and was killed with the server.
    sandbox = Sandbox(max_process_bytes=700 * 2**20)
    started = datetime.now(UTC)
    with pytest.raises(SqlError) as stopped:
        run_sql(shop, "SELECT len(range(2000000000)) AS n", site_id=SITE, sandbox=sandbox, timeout_ms=60_000)
    assert (stopped.value.code, stopped.value.details) == ("SQL_MEMORY_LIMIT", {"memoryLimit": "1GB"})
    assert (datetime.now(UTC) - started).total_seconds() < 30
    # A new worker takes the next query.
    assert run_sql(shop, "SELECT 42 AS n", site_id=SITE, sandbox=sandbox).table.to_pylist() == [{"n": 42}]


def test_a_function_that_never_looks_for_interrupts_is_stopped_at_its_time_limit(shop):
    started = datetime.now(UTC)
    with pytest.raises(SqlError) as stopped:
        run_sql(shop, "SELECT levenshtein(repeat('a', 100000), repeat('b', 100000)) AS d", site_id=SITE,
                timeout_ms=300)  # fmt: skip
    assert (stopped.value.code, stopped.value.details) == ("SQL_TIMEOUT", {"timeoutMs": 300})
    assert (datetime.now(UTC) - started).total_seconds() < 5


def test_an_answer_over_its_size_cap_is_refused(shop):
    sandbox = Sandbox(max_result_bytes=1024 * 1024)
    with pytest.raises(SqlError) as refused:
        run_sql(shop, "SELECT repeat('x', 2000000) AS big", site_id=SITE, sandbox=sandbox)
    assert (refused.value.code, refused.value.details) == ("SQL_RESULT_TOO_LARGE", {"maxBytes": 1024 * 1024})


def test_the_sandbox_cannot_reach_files_settings_or_extensions_even_without_the_guard(shop):
    conn = open_sandbox(shop, site_id=SITE, sandbox=Sandbox())
    try:
        other_files = [str(p.resolve()) for p in shop.files(shop_table("events"), site_id=OTHER_SITE)]
        own_files = [str(p.resolve()) for p in shop.files(shop_table("events"), site_id=SITE)]
        assert other_files and own_files
        for sql in (f"SELECT * FROM read_parquet('{other_files[0]}')", "SELECT * FROM read_text('/etc/passwd')",
                    f"SELECT * FROM glob('{shop.root}/*')", "COPY (SELECT 1) TO '/tmp/aisle-leak.csv'",
                    "INSTALL httpfs", "LOAD httpfs", "ATTACH '/tmp/aisle-leak.db' AS leak"):  # fmt: skip
            with pytest.raises(duckdb.PermissionException):
                conn.execute(sql).fetchall()
        for sql in ("SET enable_external_access = true", "SET memory_limit = '100GB'", "SET threads = 64",
                    "RESET lock_configuration", "SET allowed_paths = ['/']"):  # fmt: skip
            with pytest.raises(duckdb.InvalidInputException, match="locked"):
                conn.execute(sql)
        # What the views read is only this site's rows.
        assert conn.execute("SELECT count(*) FROM _lake_events").fetchone() == (8,)
        names = {
            r[0] for r in conn.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()
        }
        assert set(VIEWS) <= names
    finally:
        conn.close()


def shop_table(name: str):
    from warehouse.lake import TABLES

    return TABLES[name]


def test_views_are_defined_on_an_empty_lake(tmp_path):
    from warehouse.lake import Lake

    lake = Lake(tmp_path / "lake")
    for view in VIEWS:
        assert run_sql(lake, f"SELECT count(*) AS n FROM {view}", site_id=SITE).table.to_pylist() == [
            {"n": 0}
        ]


# --- the views ----------------------------------------------------------------------------------------


def test_events_and_orders_views(shop):
    assert rows(shop, "SELECT date, count(*) FROM events GROUP BY date ORDER BY date") == [
        (date(2024, 3, 1), 6), (date(2024, 3, 2), 2),
    ]  # fmt: skip
    assert rows(shop, "SELECT order_id, currency, total, is_refund, refund_of, item_count FROM orders ORDER BY 1") == [
        ("o1", "EUR", Decimal("30.500000"), False, None, 3),
        ("o2", "USD", Decimal("12.000000"), False, None, 1),
        ("o3", "EUR", Decimal("-10.000000"), True, "o1", 1),
    ]  # fmt: skip


def test_order_items_view_has_one_row_per_line(shop):
    assert rows(shop, "SELECT order_id, position, product_item_code, name, category_path, quantity, price, "
                      "line_total FROM order_items ORDER BY order_id, position") == [
        ("o1", 1, "P1", "Shoe", "shoes", 2, Decimal("10.250000"), Decimal("20.500000")),
        ("o1", 2, "P3", "Sock", None, 1, Decimal("10.000000"), Decimal("10.000000")),
        ("o2", 1, "P2", "Hat", None, 1, Decimal("12.000000"), Decimal("12.000000")),
        ("o3", 1, "P3", "Sock", None, -1, Decimal("10.000000"), Decimal("-10.000000")),
    ]  # fmt: skip


def test_people_view_counts_a_visitor_as_the_user_it_was_linked_to(shop):
    assert rows(shop, "SELECT visitor_id, user_id, person_id, linked_at, first_seen_at FROM people ORDER BY 1") == [
        ("ann", "u-ann", "u-ann", datetime(2024, 3, 2, 9, tzinfo=UTC), datetime(2024, 3, 1, 10, tzinfo=UTC)),
        ("bob", None, "bob", None, datetime(2024, 3, 1, 11, tzinfo=UTC)),
        ("cy", None, "cy", None, datetime(2024, 3, 2, 12, tzinfo=UTC)),
    ]  # fmt: skip


def test_people_view_reads_links_as_the_analytics_do(lake):
    """A blank userId names no user, and a visitor linked to two users at one instant is the smaller's,
    as the people of every analytics route (warehouse/sql/people_views.sql)."""
    ingest, _ = lake
    load(ingest, SITE, [
        event("page_view", "dee", "s-dee", "2024-03-01T10:00:00Z", userId=" "),
        event("page_view", "eve", "s-eve", "2024-03-01T10:00:00Z", userId="u-b"),
        event("page_view", "eve", "s-eve", "2024-03-01T10:00:00Z", userId="u-a"),
    ], [])  # fmt: skip
    ingest.flush()
    assert rows(ingest.lake, "SELECT visitor_id, user_id, person_id FROM people ORDER BY 1") == [
        ("dee", None, "dee"),
        ("eve", "u-a", "u-a"),
    ]


def test_sessions_view(shop):
    assert rows(shop, "SELECT session_id, person_id, event_count, page_views, has_purchase, duration_seconds, "
                      "entry_url, exit_url, referrer FROM sessions ORDER BY 1") == [
        ("s-ann-1", "u-ann", 4, 1, True, 300.0, "https://shop.example/", "https://shop.example/thanks",
         "https://search.example/"),
        ("s-ann-2", "u-ann", 1, 1, False, 0.0, "https://shop.example/", "https://shop.example/", None),
        ("s-bob", "bob", 2, 1, False, 60.0, "https://shop.example/", "https://shop.example/", None),
        ("s-cy", "cy", 1, 1, False, 0.0, "https://shop.example/sale", "https://shop.example/sale", None),
    ]  # fmt: skip


def test_consents_view_has_each_record_with_its_unstated_categories_null(shop):
    assert rows(shop, "SELECT consent_id, visitor_id, session_id, source, consent_necessary, consent_analytics, "
                      "consent_marketing, consent_preferences, ts FROM consents ORDER BY ts") == [
        ("c-ann", "ann", "s-ann-1", "banner", True, True, False, None, datetime(2024, 3, 1, 9, 59, tzinfo=UTC)),
        ("c-cy", "cy", None, "api", True, False, False, False, datetime(2024, 3, 2, 12, 0, tzinfo=UTC)),
    ]  # fmt: skip


def test_products_view(shop):
    assert rows(shop, "SELECT product_item_code, name, category_path, first_seen_at, last_seen_at FROM products "
                      "ORDER BY 1") == [
        ("P1", "Shoe", "shoes", datetime(2024, 3, 1, 10, 1, tzinfo=UTC), datetime(2024, 3, 1, 10, 5, tzinfo=UTC)),
        ("P2", "Hat", None, datetime(2024, 3, 1, 11, 1, tzinfo=UTC), datetime(2024, 3, 2, 11, 30, tzinfo=UTC)),
        ("P3", "Sock", None, datetime(2024, 3, 1, 10, 5, tzinfo=UTC), datetime(2024, 3, 3, 8, tzinfo=UTC)),
    ]  # fmt: skip


# --- transpiled from other dialects -------------------------------------------------------------------


def test_postgres(shop):
    sql = """
        SELECT ts::date AS day, count(*) AS events, count(DISTINCT visitor_id) AS visitors,
               count(*) FILTER (WHERE name = :event_name) AS named
        FROM events
        WHERE ts >= '2024-03-01'::timestamptz AND ts < '2024-03-03'::timestamptz
        GROUP BY 1
        ORDER BY 1
    """
    assert rows(shop, sql, dialect="postgres", parameters={"event_name": "page_view"}) == [
        (date(2024, 3, 1), 6, 2, 2), (date(2024, 3, 2), 2, 2, 2),
    ]  # fmt: skip


def test_bigquery(shop):
    sql = """
        SELECT FORMAT_TIMESTAMP('%Y-%m-%d', ts) AS day, COUNTIF(name = 'page_view') AS page_views,
               COUNT(*) AS events
        FROM events
        WHERE visitor_id != @excluded
        GROUP BY day
        ORDER BY day
    """
    assert rows(shop, sql, dialect="bigquery", parameters={"excluded": "cy"}) == [
        ("2024-03-01", 2, 6), ("2024-03-02", 1, 1),
    ]  # fmt: skip


def test_snowflake(shop):
    sql = """
        SELECT currency, SUM(total) AS revenue, COUNT_IF(is_refund) AS refunds,
               IFF(SUM(total) > 20, 'big', 'small') AS size
        FROM orders
        GROUP BY currency
        ORDER BY currency
    """
    assert rows(shop, sql, dialect="snowflake") == [
        ("EUR", Decimal("20.500000"), 1, "big"), ("USD", Decimal("12.000000"), 0, "small"),
    ]  # fmt: skip


def test_spark(shop):
    sql = """
        SELECT visitor_id, size(collect_set(name)) AS kinds, count(1) AS events
        FROM events
        GROUP BY visitor_id
        ORDER BY visitor_id
    """
    assert rows(shop, sql, dialect="spark") == [("ann", 4, 5), ("bob", 2, 2), ("cy", 1, 1)]


def test_mysql(shop):
    sql = """
        SELECT product_item_code, SUM(quantity) AS units, ROUND(SUM(line_total), 2) AS amount,
               IF(SUM(quantity) > 1, 'many', 'one') AS how_many
        FROM order_items
        WHERE NOT is_refund
        GROUP BY product_item_code
        ORDER BY product_item_code
    """
    assert rows(shop, sql, dialect="mysql") == [
        ("P1", 2, Decimal("20.50"), "many"), ("P2", 1, Decimal("12.00"), "one"), ("P3", 1, Decimal("10.00"), "one"),
    ]  # fmt: skip


def test_constructs_duckdb_has_no_form_of_are_unsupported_not_syntax_errors(shop):
    # These parse in their dialect; sqlglot then writes DuckDB it cannot read back (or none at all), which
    # answered a syntax error pointing into text the caller never wrote (or crashed, for FINAL).
    recognize = (
        "SELECT * FROM events MATCH_RECOGNIZE (PARTITION BY visitor_id ORDER BY ts MEASURES FIRST(ts) AS t "
        "PATTERN (a) DEFINE a AS true)"
    )
    cases = [
        ("snowflake", "SELECT f.value FROM events, LATERAL FLATTEN(input => [1, 2]) f", "FLATTEN(input => [1, 2])"),
        ("snowflake", "SELECT * FROM TABLE(FLATTEN(input => [1, 2]))", "TABLE(UNNEST(input => [1, 2]))"),
        ("trino", recognize, "MATCH_RECOGNIZE (PARTITION BY visitor_id ORDER BY ts MEAS..."),
        ("clickhouse", "SELECT name FROM events ARRAY JOIN [1, 2] AS x", "ARRAY JOIN [1, 2] AS x"),
        ("clickhouse", "SELECT name FROM events FINAL", "events FINAL"),
    ]  # fmt: skip
    for dialect, query, unsupported in cases:
        with pytest.raises(SqlError) as refused:
            guard(query, dialect=dialect)
        assert (refused.value.code, refused.value.details["unsupported"]) == ("SQL_UNSUPPORTED", unsupported)
    assert refused.value.message == (
        "This query cannot be translated from clickhouse to DuckDB: 'events FINAL' has no DuckDB equivalent"
    )
    # DuckDB SQL that only DuckDB's own parser refuses is found when it runs.
    with pytest.raises(SqlError) as refused:
        rows(shop, "SELECT count(*) FROM events FOR SYSTEM_TIME AS OF '2024-03-01'", dialect="bigquery")
    assert (refused.value.code, refused.value.message) == (
        "SQL_UNSUPPORTED",
        "This query cannot be translated from bigquery to DuckDB: DuckDB cannot read what it becomes "
        '(Parser Error: syntax error at or near "FOR")',
    )


def test_pivot_runs_with_its_values_listed_and_is_unsupported_without_them(shop):
    assert rows(shop, "SELECT * FROM (PIVOT events ON name IN ('page_view', 'purchase') USING count(*) "
                      "GROUP BY date) ORDER BY date") == [
        (date(2024, 3, 1), 2, 1), (date(2024, 3, 2), 2, 0),
    ]  # fmt: skip
    assert rows(shop, "SELECT * FROM (SELECT visitor_id, name FROM events) PIVOT (count(*) FOR name IN "
                      "('purchase')) ORDER BY visitor_id") == [("ann", 1), ("bob", 0), ("cy", 0)]  # fmt: skip
    # Without the list DuckDB ran statements of its own to find the values, and the run was refused as
    # SQL_STATEMENT_NOT_ALLOWED ("Only one read-only SELECT statement may run") though the docs allow it.
    with pytest.raises(SqlError) as refused:
        rows(shop, "SELECT *\nFROM (PIVOT events ON name USING count(*) GROUP BY date)")
    assert (refused.value.code, refused.value.message, refused.value.details) == (
        "SQL_UNSUPPORTED",
        "PIVOT needs an IN (...) list of the values of name to turn into columns (ON name IN ('a', 'b')); "
        "without one DuckDB runs statements of its own to find them, which is not allowed here",
        {"unsupported": "PIVOT ON name", "position": {"line": 2, "column": 23}},
    )
    cases = [
        ("duckdb", "WITH p AS (PIVOT events ON date, name USING count(*)) SELECT * FROM p", "PIVOT ON date"),
        ("duckdb", "SELECT * FROM (PIVOT events ON name IN (SELECT 'x') USING count(*))", "PIVOT ON name"),
        ("snowflake", "SELECT * FROM events PIVOT (count(*) FOR name IN (ANY))", "PIVOT FOR name"),
        ("snowflake", "SELECT * FROM events PIVOT (count(*) FOR name IN (SELECT name FROM events))",
         "PIVOT FOR name"),
    ]  # fmt: skip
    for dialect, query, unsupported in cases:
        with pytest.raises(SqlError) as refused:
            guard(query, dialect=dialect)
        assert (refused.value.code, refused.value.details["unsupported"]) == ("SQL_UNSUPPORTED", unsupported)


def test_duckdb_with_ctes_and_a_join_of_views(shop):
    sql = """
        WITH buyers AS (SELECT DISTINCT visitor_id FROM orders WHERE NOT is_refund)
        SELECT p.person_id, count(*) AS sessions, sum(s.event_count) AS events
        FROM sessions AS s JOIN people AS p USING (visitor_id)
        WHERE s.visitor_id IN (SELECT visitor_id FROM buyers)
        GROUP BY ALL
        ORDER BY 1
    """
    assert rows(shop, sql) == [("bob", 1, 2), ("u-ann", 2, 5)]


# --- limits and parameters ----------------------------------------------------------------------------


def test_rows_beyond_the_limit_are_cut_and_flagged(shop):
    result = run_sql(shop, "SELECT name FROM events ORDER BY ts", site_id=SITE, limit=3)
    assert (result.table.num_rows, result.truncated) == (3, True)
    assert result.table.column("name").to_pylist() == ["page_view", "product_view", "add_to_cart"]
    result = run_sql(shop, "SELECT name FROM events", site_id=SITE, limit=8)
    assert (result.table.num_rows, result.truncated) == (8, False)
    assert result.columns == [("name", "VARCHAR")]


def test_parameters_are_bound_not_formatted(shop):
    hostile = "x' OR '1'='1"
    assert rows(shop, "SELECT count(*) FROM events WHERE visitor_id = $v", parameters={"v": hostile}) == [
        (0,)
    ]
    assert rows(shop, "SELECT count(*) FROM events WHERE visitor_id = $v", parameters={"v": "bob"}) == [(2,)]
    assert rows(shop, "SELECT count(*) FROM events WHERE list_contains($vs, visitor_id)",
                parameters={"vs": ["bob", "cy"]}) == [(3,)]  # fmt: skip
    with pytest.raises(SqlError) as missing:
        run_sql(shop, "SELECT $a, $b", site_id=SITE, parameters={"a": 1})
    assert (missing.value.code, missing.value.details) == ("SQL_PARAMETER_MISSING", {"missing": ["b"]})
    with pytest.raises(SqlError) as unknown:
        run_sql(shop, "SELECT 1", site_id=SITE, parameters={"a": 1})
    assert unknown.value.code == "SQL_PARAMETER_UNKNOWN"


def test_parameters_need_no_spaces_around_them(shop):
    # `$t$...$t$` is a string only when its tag is a name closed by `$`: `$a=$b` is two parameters.
    assert rows(shop, "SELECT count(*) FROM events WHERE visitor_id=$v", parameters={"v": "bob"}) == [(2,)]
    assert rows(shop, "SELECT $a=$b AS same, $a+$b AS total, [$a,$b] AS both, '$a=$b' AS text, $t$x=$y$t$ AS quoted",
                parameters={"a": 1, "b": 2}) == [(False, 3, [1, 2], "$a=$b", "x=$y")]  # fmt: skip
    assert guard("SELECT $a=$b, $$c$d$$").parameters == ("a", "b")


def test_errors_in_the_users_sql_carry_the_message_and_position(shop):
    with pytest.raises(SqlError) as syntax:
        run_sql(shop, "SELECT name,\nFROM events WHERE", site_id=SITE)
    assert syntax.value.code == "SQL_SYNTAX_ERROR"
    assert syntax.value.details["position"]["line"] == 2
    with pytest.raises(SqlError) as unknown:
        run_sql(shop, "SELECT name,\n       nmae FROM events", site_id=SITE)
    assert unknown.value.code == "SQL_INVALID"
    assert 'Referenced column "nmae" not found' in unknown.value.message
    assert unknown.value.details["position"] == {"line": 2, "column": 8}
    with pytest.raises(SqlError) as bad_cast:
        run_sql(shop, "SELECT name::INTEGER FROM events", site_id=SITE)
    assert bad_cast.value.code == "SQL_EXECUTION_ERROR"
    with pytest.raises(SqlError) as dialect:
        run_sql(shop, "SELECT 1", site_id=SITE, dialect="klingon")
    assert dialect.value.code == "SQL_DIALECT_UNKNOWN"


def test_syntax_errors_say_in_words_what_and_where():
    # sqlglot's own descriptions named its internals: "Expected table name but got <Token token_type: ...>",
    # "Required keyword: 'this' missing for <class 'sqlglot.expressions.query.Where'>".
    cases = {
        "SELECT * FROMM events": ("Syntax error: unexpected 'events' at line 1, column 16", {"line": 1, "column": 16}),
        "SELECT count(*\n  FROM events": (
            "Syntax error: unexpected 'FROM' at line 2, column 3; expected ')'", {"line": 2, "column": 3},
        ),
        "SELECT * FROM events JOIN": (
            "Syntax error near 'JOIN' at line 1, column 22, where the query ends; expected table name",
            {"line": 1, "column": 22},
        ),
        "SELECT * FROM events WHERE": (
            "Syntax error near 'WHERE' at line 1, column 22, where the query ends", {"line": 1, "column": 22},
        ),
        "SELECT 'a\nb' AS t WHERE\n  1 AND AND 2": (
            "Syntax error: unexpected 'AND' at line 3, column 9", {"line": 3, "column": 9},
        ),
        "SELECT name,\n  'abc FROM events": (
            "Syntax error: the text opened at line 2, column 3 is never closed; add the closing '",
            {"line": 2, "column": 3},
        ),
    }  # fmt: skip
    for query, (message, position) in cases.items():
        with pytest.raises(SqlError) as syntax:
            guard(query)
        assert (syntax.value.code, syntax.value.message) == ("SQL_SYNTAX_ERROR", message)
        assert syntax.value.details["position"] == position


def test_errors_advise_what_a_query_can_do_not_statements_the_sandbox_refuses(shop):
    # DuckDB advised "SET error_on_division_by_zero=false" and the like, which the guard refuses.
    cases = {
        "SELECT 7 // 0": (
            "SQL_EXECUTION_ERROR",
            "Invalid Input Error: Division by zero in expression (7 // 0). Divide by NULLIF(divisor, 0) to get "
            "NULL instead of an error.",
        ),
        "SELECT (SELECT visitor_id FROM events)": (
            "SQL_EXECUTION_ERROR",
            "Invalid Input Error: More than one row returned by a subquery used as an expression - scalar "
            "subqueries can only return a single row. Make the subquery return one row (aggregate it, or add "
            "LIMIT 1), or use IN or a join instead.",
        ),
        "SELECT name FROM events ORDER BY 'name'": (
            "SQL_INVALID",
            "Binder Error: ORDER BY non-integer literal has no effect. Order by a column, an expression or a "
            "column number instead.",
        ),
    }
    for query, expected in cases.items():
        with pytest.raises(SqlError) as failed:
            rows(shop, query)
        assert (failed.value.code, failed.value.message) == expected
    assert rows(shop, "SELECT 7 // NULLIF(0, 0) AS quotient") == [(None,)]


def test_an_expression_deeper_than_duckdb_allows_is_too_complex_not_a_syntax_error(shop):
    # sqlglot reads a long chain of + flat; DuckDB nests it one level per operator and stops at 1000, in its
    # parser (answered SQL_SYNTAX_ERROR) or its binder (SQL_INVALID), though nothing in the SQL is wrong.
    message = (
        "An expression of the query nests too deeply: DuckDB allows 1000 levels, and each operator of a chain "
        "such as a + b + c or a || b || c is one; write it with fewer levels (list_sum([a, b, c]), "
        "concat(a, b, c)) or in steps with CTEs"
    )
    for terms in (1000, 1100):  # past the binder's limit, then the parser's
        with pytest.raises(SqlError) as refused:
            rows(shop, "SELECT " + " + ".join(["1"] * terms) + " AS n")
        assert (refused.value.code, refused.value.message) == ("SQL_TOO_COMPLEX", message)
        assert refused.value.details["maxDepth"] == 1000
    assert rows(shop, "SELECT list_sum([" + ", ".join(["1"] * 1100) + "]) AS n") == [(1100,)]


def test_execute_runs_a_guarded_query(shop):
    query = guard("SELECT count(*) AS n FROM people WHERE person_id LIKE :p", dialect="snowflake")
    assert query.parameters == ("p",)
    assert query.views == frozenset({"people"})
    assert execute(shop, query, site_id=SITE, parameters={"p": "u-%"}).table.to_pylist() == [{"n": 1}]


# --- docs/sql.md stays true ---------------------------------------------------------------------------

DOCS = Path(__file__).resolve().parents[2] / "docs" / "sql.md"


def documented_columns() -> dict[str, list[tuple[str, str]]]:
    """``### view`` sections of docs/sql.md: their tables' (column, type) rows."""
    views: dict[str, list[tuple[str, str]]] = {}
    current = None
    for line in DOCS.read_text().splitlines():
        if line.startswith("### "):
            current = line[4:].strip()
            views[current] = []
        elif line.startswith("## "):
            current = None
        elif current and line.startswith("| `"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            views[current].append((cells[0].strip("`"), cells[1]))
    return views


def test_docs_list_every_column_of_every_view_with_its_type(tmp_path):
    from warehouse.lake import Lake

    conn = open_sandbox(Lake(tmp_path / "lake"), site_id=SITE, sandbox=Sandbox())
    try:
        documented = documented_columns()
        assert list(documented) == list(VIEWS)
        for view in VIEWS:
            actual = [(r[0], r[1]) for r in conn.execute(f"DESCRIBE {view}").fetchall()]
            assert [name for name, _ in documented[view]] == [name for name, _ in actual], view
            for (name, doc_type), (_, real_type) in zip(documented[view], actual, strict=True):
                if not doc_type.startswith("STRUCT"):
                    assert doc_type == real_type, (view, name)
    finally:
        conn.close()


def test_docs_list_exactly_the_allowed_functions():
    from queries.adhoc.policy import ALLOWED_FUNCTIONS

    text = DOCS.read_text()
    listed = text.split("<!-- functions:start -->", 1)[1].split("<!-- functions:end -->", 1)[0]
    assert {f.strip() for f in listed.replace("\n", " ").split(",") if f.strip()} == ALLOWED_FUNCTIONS


def test_every_example_in_the_docs_runs(shop):
    blocks = re.findall(r"```sql\n(.*?)```", DOCS.read_text(), flags=re.DOTALL)
    assert len(blocks) >= 8
    for block in blocks:
        dialect = re.match(r"-- dialect: (\w+)", block)
        result = run_sql(shop, block, site_id=SITE, dialect=dialect.group(1) if dialect else None)
        # The shop's data is from March 2024: only "the last 30 days" finds nothing in it.
        assert result.table.num_rows >= 1 or "current_date" in block, block


def test_formats_keep_repeated_names_nulls_and_nested_values(shop):
    from queries.adhoc.formats import csv_chunks, json_body, parquet_chunks

    result = run_sql(shop, "SELECT 1 AS a, 2 AS a, NULL AS n, [1, 2] AS l, {'k': 1.50} AS s", site_id=SITE)
    assert result.columns == [("a", "INTEGER"), ("a", "INTEGER"), ("n", "NULL"), ("l", "INTEGER[]"),
                              ("s", "STRUCT(k DECIMAL(3,2))")]  # fmt: skip
    assert json.loads(json_body(result))["rows"] == [[1, 2, None, [1, 2], {"k": "1.50"}]]
    assert b"".join(csv_chunks(result)).decode().splitlines() == [
        '"a","a","n","l","s"',
        '1,2,,"[1,2]","{""k"":""1.50""}"',
    ]
    table = pq.read_table(io.BytesIO(b"".join(parquet_chunks(result))))
    assert table.column_names == ["a", "a_2", "n", "l", "s"]
    assert table.to_pylist() == [{"a": 1, "a_2": 2, "n": None, "l": [1, 2], "s": {"k": Decimal("1.50")}}]


def test_map_literals_run_and_come_as_key_value_pairs(shop):
    from queries.adhoc.formats import json_body

    result = run_sql(shop, "SELECT MAP {'a': 1, 'b': 2} AS m, (MAP {'a': 1})['a'] AS v", site_id=SITE)
    assert result.columns == [("m", "MAP(VARCHAR, INTEGER)"), ("v", "INTEGER")]
    assert json.loads(json_body(result))["rows"] == [[[["a", 1], ["b", 2]], 1]]


def test_values_no_writer_carries_as_they_are_come_as_duckdb_text_in_every_format(shop):
    from queries.adhoc.formats import csv_chunks, json_body, parquet_chunks

    # BIGNUM and BIT reached Arrow as DuckDB's internal bytes (a broken CSV or Parquet download), a
    # UNION as a sparse union no writer takes, a TIMETZ without its offset.
    result = run_sql(shop, "SELECT '1234567890123456789012345678901234567890'::BIGNUM AS v, "
                           "'x'::UNION(a INT, b VARCHAR) AS u, '10:00:00+05'::TIMETZ AS t, '101'::BIT AS b, "
                           "2 AS v", site_id=SITE)  # fmt: skip
    assert result.columns == [("v", "BIGNUM"), ("u", "UNION(a INTEGER, b VARCHAR)"),
                              ("t", "TIME WITH TIME ZONE"), ("b", "BIT"), ("v", "INTEGER")]  # fmt: skip
    texts = ["1234567890123456789012345678901234567890", "x", "10:00:00+05", "101"]
    assert json.loads(json_body(result))["rows"] == [[*texts, 2]]
    assert b"".join(csv_chunks(result)).decode().splitlines()[1] == ",".join(
        [*(f'"{t}"' for t in texts), "2"]
    )
    table = pq.read_table(io.BytesIO(b"".join(parquet_chunks(result))))
    assert table.to_pylist() == [dict(zip(["v", "u", "t", "b", "v_2"], [*texts, 2], strict=True))]


def test_an_integer_wider_than_38_digits_is_an_error_not_a_wrapped_number(shop):
    small = run_sql(shop, "SELECT 12::UHUGEINT AS n, sum(x) AS s FROM range(4) AS t(x)", site_id=SITE)
    assert small.table.to_pylist() == [{"n": Decimal(12), "s": Decimal(6)}]
    with pytest.raises(SqlError) as refused:
        run_sql(shop, "SELECT 340282366920938463463374607431768211455::UHUGEINT AS n", site_id=SITE)
    assert refused.value.code == "SQL_EXECUTION_ERROR" and "DECIMAL(38,0)" in refused.value.message


def test_json_gives_a_column_of_integers_javascript_cannot_hold_exactly_as_strings(shop):
    from queries.adhoc.formats import csv_chunks, json_body

    # JSON.parse rounds a number past 2^53 - 1 without a word (9007199254740993 reads as ...992): such
    # values were numbers, and only a HUGEINT past 2^63 a string.
    result = run_sql(shop, """SELECT * FROM (VALUES
        (9007199254740991::BIGINT, 9007199254740992::BIGINT, [1]::BIGINT[], {'n': 1::BIGINT, 'i': 1::INTEGER},
         1::HUGEINT, 18446744073709551615::UBIGINT, 3::HUGEINT, MAP {1::BIGINT: 'a'}),
        (-9007199254740991::BIGINT, NULL::BIGINT, [9007199254740993]::BIGINT[],
         {'n': 9007199254740993::BIGINT, 'i': 2::INTEGER}, -9007199254740992::HUGEINT, 1::UBIGINT, NULL::HUGEINT,
         MAP {9007199254740993::BIGINT: 'b'})
    ) AS t(safe, past, list, struct, huge, unsigned, sum, map)""", site_id=SITE)  # fmt: skip
    assert json.loads(json_body(result))["rows"] == [
        [9007199254740991, "9007199254740992", ["1"], {"n": "1", "i": 1}, "1", "18446744073709551615", 3,
         [["1", "a"]]],
        [-9007199254740991, None, ["9007199254740993"], {"n": "9007199254740993", "i": 2}, "-9007199254740992",
         "1", None, [["9007199254740993", "b"]]],
    ]  # fmt: skip
    # CSV (and Parquet) carry integers exactly as they are.
    assert b"".join(csv_chunks(result)).decode().splitlines()[1:] == [
        '9007199254740991,9007199254740992,"[1]","{""n"":1,""i"":1}",1,18446744073709551615,3,"[[1,""a""]]"',
        '-9007199254740991,,"[9007199254740993]","{""n"":9007199254740993,""i"":2}",-9007199254740992,1,,'
        '"[[9007199254740993,""b""]]"',
    ]


def test_dates_and_times_python_cannot_hold_come_as_text(shop):
    from queries.adhoc.formats import csv_chunks, json_body, text_table

    result = run_sql(shop, "SELECT 'infinity'::TIMESTAMP AS i, '-infinity'::DATE AS d, "
                           "'5877642-06-25'::DATE AS far, '24:00:00'::TIME AS midnight, "
                           "TIMESTAMPTZ '2024-03-01 10:00:00+00' AS ts", site_id=SITE)  # fmt: skip
    expected = ["infinity", "-infinity", "5877642-06-25", "24:00:00", "2024-03-01T10:00:00Z"]
    assert json.loads(json_body(result))["rows"] == [expected]
    assert b"".join(csv_chunks(result)).decode().splitlines()[1] == ",".join(
        [f'"{v}"' for v in expected[:4]] + ["2024-03-01 10:00:00.000000Z"]
    )
    assert "5877642-06-25" in text_table(result)
