"""POST /analytics/sql over HTTP: json, csv and parquet answers, limits and truncation, refusals and
errors as 400 (never 500), the time limit as 408, permission `analytics:sql` and tenancy."""

from __future__ import annotations

import csv
import io

import pyarrow.parquet as pq
import pytest

from api.analytics.sql.schemas import VIEWS
from tests.factories import Session, make_user

pytestmark = pytest.mark.shared_app

SQL = "/analytics/sql"
UNKNOWN_ID = "11111111-1111-1111-1111-111111111111"


def event(name: str, visitor: str, clock: str, **extra) -> dict:
    return {"name": name, "visitorId": visitor, "sessionId": f"s-{visitor}", "timestamp": f"2024-03-01T{clock}Z",
            **extra}  # fmt: skip


def site_with_data(app, session: Session, *, visitors: tuple[str, ...] = ("ann", "bob", "cy")) -> dict:
    """Each visitor views a page; ann also views a product and buys order o-1 (EUR 42.50, two lines)."""
    site = session.make_site(timezone="UTC")
    events = [
        event("page_view", v, f"1{i}:00:00", url="https://shop.example.com/") for i, v in enumerate(visitors)
    ]
    events.append(event("product_view", visitors[0], "10:01:00", metadata={"productItemCode": "P1"}))
    response = session.post("/analytics/track/batch", json={"siteId": site["id"], "events": events})
    assert response.status_code == 200 and response.json()["rejected"] == [], response.text
    order = {"siteId": site["id"], "orderId": "o-1", "visitorId": visitors[0], "sessionId": f"s-{visitors[0]}",
             "timestamp": "2024-03-01T10:05:00Z", "currency": "EUR", "total": "42.50",
             "items": [{"productItemCode": "P1", "quantity": 1, "price": "30.00", "name": "Shoe"},
                       {"productItemCode": "P2", "quantity": 2, "price": "6.25", "name": "Sock"}]}  # fmt: skip
    response = session.post("/analytics/track/order", json=order)
    assert response.status_code == 201, response.text
    app.state.ingest.flush()
    return site


def assert_error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    body = response.json()["error"]
    assert body["code"] == code, response.text
    return body


def test_json_answer_has_typed_columns_rows_and_no_truncation(app, owner):
    site = site_with_data(app, owner)
    query = "SELECT name, count(*) AS n, count(DISTINCT visitor_id) AS people FROM events GROUP BY name ORDER BY name"
    response = owner.post(SQL, json={"siteId": site["id"], "query": query})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["columns"] == [
        {"name": "name", "type": "VARCHAR"}, {"name": "n", "type": "BIGINT"}, {"name": "people", "type": "BIGINT"},
    ]  # fmt: skip
    assert body["rows"] == [["page_view", 3, 3], ["product_view", 1, 1]]
    assert (body["rowCount"], body["truncated"]) == (2, False)
    assert body["elapsedMs"] > 0


def test_money_times_and_lists_are_exact_on_the_wire(app, owner):
    site = site_with_data(app, owner)
    query = "SELECT order_id, total, ts, items[1].name AS first_item, [i.quantity FOR i IN items] AS quantities FROM orders"
    body = owner.post(SQL, json={"siteId": site["id"], "query": query}).json()
    assert [c["type"] for c in body["columns"]] == [
        "VARCHAR", "DECIMAL(24,6)", "TIMESTAMP WITH TIME ZONE", "VARCHAR", "BIGINT[]",
    ]  # fmt: skip
    assert body["rows"] == [["o-1", "42.500000", "2024-03-01T10:05:00Z", "Shoe", [1, 2]]]


def test_integers_javascript_cannot_hold_exactly_make_their_column_strings(app, owner):
    site = owner.make_site()
    query = "SELECT x AS small, x + 9007199254740991 AS big FROM (VALUES (1::BIGINT), (2::BIGINT)) AS t(x) ORDER BY x"
    response = owner.post(SQL, json={"siteId": site["id"], "query": query})
    assert response.status_code == 200, response.text
    assert '"rows":[[1,"9007199254740992"],[2,"9007199254740993"]]' in response.text


def test_views_of_the_site(app, owner):
    site = site_with_data(app, owner)
    queries = {
        "SELECT count(*) FROM order_items": [[2]],
        "SELECT sum(line_total) FROM order_items": [["42.500000"]],
        "SELECT product_item_code, name FROM products ORDER BY 1": [["P1", "Shoe"], ["P2", "Sock"]],
        "SELECT count(*), sum(event_count) FROM sessions": [[3, 4]],
        "SELECT count(*) FROM people": [[3]],
    }
    for query, expected in queries.items():
        response = owner.post(SQL, json={"siteId": site["id"], "query": query})
        assert response.status_code == 200, (query, response.text)
        assert response.json()["rows"] == expected, query


def test_limit_cuts_rows_and_says_so(app, owner):
    site = site_with_data(app, owner)
    body = owner.post(SQL, json={"siteId": site["id"], "query": "SELECT visitor_id FROM events ORDER BY ts",
                                 "limit": 2}).json()  # fmt: skip
    assert (body["rows"], body["rowCount"], body["truncated"]) == ([["ann"], ["ann"]], 2, True)


def test_csv_download_is_streamed_with_the_truncation_header(app, owner):
    site = site_with_data(app, owner)
    query = "SELECT visitor_id, name, value FROM events ORDER BY ts"
    response = owner.post(SQL, json={"siteId": site["id"], "query": query, "format": "csv", "limit": 3})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "text/csv; charset=utf-8"
    assert response.headers["x-aisle-truncated"] == "true"
    assert response.headers["x-aisle-row-count"] == "3"
    assert response.headers["content-disposition"].startswith('attachment; filename="aisle-sql-')
    assert list(csv.reader(io.StringIO(response.text))) == [
        ["visitor_id", "name", "value"], ["ann", "page_view", ""], ["ann", "product_view", ""], ["bob", "page_view", ""],
    ]  # fmt: skip
    whole = owner.post(SQL, json={"siteId": site["id"], "query": query, "format": "csv"})
    assert whole.headers["x-aisle-truncated"] == "false"
    assert len(list(csv.reader(io.StringIO(whole.text)))) == 1 + 4


def test_parquet_download_reads_back(app, owner):
    site = site_with_data(app, owner)
    query = "SELECT order_id, total, items FROM orders"
    response = owner.post(SQL, json={"siteId": site["id"], "query": query, "format": "parquet"})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/vnd.apache.parquet"
    assert response.headers["x-aisle-truncated"] == "false"
    table = pq.read_table(io.BytesIO(response.content))
    assert table.column_names == ["order_id", "total", "items"]
    assert str(table.column("total").to_pylist()[0]) == "42.500000"
    assert [i["product_item_code"] for i in table.column("items").to_pylist()[0]] == ["P1", "P2"]


def test_other_dialects_are_transpiled(app, owner):
    site = site_with_data(app, owner)
    cases = [
        ("postgres", "SELECT count(*) FILTER (WHERE name = 'page_view') AS views FROM events WHERE ts >= :since::timestamptz"),
        ("bigquery", "SELECT COUNTIF(name = 'page_view') AS views FROM events WHERE ts >= TIMESTAMP(@since)"),
        ("snowflake", "SELECT COUNT_IF(name = 'page_view') AS views FROM events WHERE ts >= :since::TIMESTAMP_TZ"),
        ("mysql", "SELECT SUM(IF(name = 'page_view', 1, 0)) AS views FROM events WHERE ts >= CAST(@since AS DATETIME)"),
    ]  # fmt: skip
    for dialect, query in cases:
        response = owner.post(SQL, json={"siteId": site["id"], "query": query, "dialect": dialect,
                                         "parameters": {"since": "2024-03-01T11:00:00Z"}})  # fmt: skip
        assert response.status_code == 200, (dialect, response.text)
        assert response.json()["rows"] == [[2]], dialect


def test_refusals_are_400_and_name_what_was_refused(app, owner):
    site = site_with_data(app, owner)
    cases = [
        ("SELECT * FROM read_parquet('/etc/passwd')", "SQL_TABLE_FUNCTION_NOT_ALLOWED", "read_parquet"),
        ("SELECT getenv('HOME')", "SQL_FUNCTION_NOT_ALLOWED", "getenv"),
        ("SELECT * FROM duckdb_settings()", "SQL_TABLE_FUNCTION_NOT_ALLOWED", "duckdb_settings"),
        ("SELECT * FROM information_schema.tables", "SQL_TABLE_NOT_ALLOWED", "information_schema.tables"),
        ("ATTACH ':memory:' AS x", "SQL_STATEMENT_NOT_ALLOWED", "ATTACH"),
        ("DELETE FROM events", "SQL_STATEMENT_NOT_ALLOWED", "DELETE"),
        ("CHECKPOINT", "SQL_STATEMENT_NOT_ALLOWED", "CHECKPOINT"),
    ]
    for query, code, refused in cases:
        error = assert_error(owner.post(SQL, json={"siteId": site["id"], "query": query}), 400, code)
        assert error["details"]["refused"] == refused
        assert refused.split(".")[0].lower() in error["message"].lower()
    assert_error(owner.post(SQL, json={"siteId": site["id"], "query": "SELECT 1; SELECT 2"}), 400,
                 "SQL_MULTIPLE_STATEMENTS")  # fmt: skip


def test_errors_in_the_sql_are_400_with_message_and_position(app, owner):
    site = site_with_data(app, owner)
    error = assert_error(owner.post(SQL, json={"siteId": site["id"], "query": "SELECT name\nFROM events WHERE ("}),
                         400, "SQL_SYNTAX_ERROR")  # fmt: skip
    assert error["details"]["position"]["line"] == 2
    error = assert_error(owner.post(SQL, json={"siteId": site["id"], "query": "SELECT nam FROM events"}), 400,
                         "SQL_INVALID")  # fmt: skip
    assert 'Referenced column "nam" not found' in error["message"]
    assert error["details"]["position"] == {"line": 1, "column": 8}
    assert_error(owner.post(SQL, json={"siteId": site["id"], "query": "SELECT 'x'::INTEGER"}), 400,
                 "SQL_EXECUTION_ERROR")  # fmt: skip
    assert_error(owner.post(SQL, json={"siteId": site["id"], "query": "SELECT 1", "dialect": "cobol"}), 400,
                 "SQL_DIALECT_UNKNOWN")  # fmt: skip
    # sqlglot has no DuckDB form of ClickHouse's FINAL at all: once a 500.
    error = assert_error(owner.post(SQL, json={"siteId": site["id"], "query": "SELECT name FROM events FINAL",
                                               "dialect": "clickhouse"}), 400, "SQL_UNSUPPORTED")  # fmt: skip
    assert error["details"]["unsupported"] == "events FINAL"
    assert_error(
        owner.post(SQL, json={"siteId": site["id"], "query": "SELECT $x"}), 400, "SQL_PARAMETER_MISSING"
    )
    # Past DuckDB's expression depth: once a syntax error though the SQL is fine.
    deep = "SELECT " + " + ".join(["1"] * 1100)
    error = assert_error(owner.post(SQL, json={"siteId": site["id"], "query": deep}), 400, "SQL_TOO_COMPLEX")
    assert error["message"].startswith(
        "An expression of the query nests too deeply: DuckDB allows 1000 levels"
    )


def test_a_query_over_its_time_limit_answers_408(app, owner):
    site = site_with_data(app, owner)
    query = "SELECT count(*) FROM range(1000000000) AS a, range(1000000) AS b"
    error = assert_error(owner.post(SQL, json={"siteId": site["id"], "query": query, "timeoutMs": 200}), 408,
                         "SQL_TIMEOUT")  # fmt: skip
    assert error["details"] == {"timeoutMs": 200}
    # The server is fine afterwards.
    assert owner.post(SQL, json={"siteId": site["id"], "query": "SELECT 1 AS one"}).json()["rows"] == [[1]]


def test_body_validation(app, owner, settings):
    site = owner.make_site()
    good = {"siteId": site["id"], "query": "SELECT 1"}
    cases = [
        ({"limit": 100_001}, "SQL_LIMIT_TOO_LARGE"),
        ({"limit": 0}, "VALIDATION_FAILED"),
        ({"limit": 1_000_001, "format": "csv"}, "VALIDATION_FAILED"),
        ({"timeoutMs": settings.sql_max_timeout_ms + 1}, "SQL_TIMEOUT_TOO_LARGE"),
        ({"timeoutMs": 10}, "VALIDATION_FAILED"),
        ({"format": "xlsx"}, "VALIDATION_FAILED"),
        ({"query": ""}, "VALIDATION_FAILED"),
        ({"colour": "red"}, "VALIDATION_FAILED"),
        ({"parameters": {"a": {"nested": 1}}}, "VALIDATION_FAILED"),
    ]
    for change, code in cases:
        assert_error(owner.post(SQL, json={**good, **change}), 400, code)
    # A million rows are allowed as a download.
    response = owner.post(SQL, json={**good, "limit": 1_000_000, "format": "csv"})
    assert response.status_code == 200 and response.text.splitlines() == ['"1"', "1"]


def test_a_parameter_value_of_no_allowed_type_is_named_by_its_body_path(owner):
    site = owner.make_site()
    # `date` is also the name pydantic gives a union member: here it is the body's key, and stays.
    body = {"siteId": site["id"], "query": "SELECT $o AS y", "parameters": {"o": {"a": 1}, "date": [{}]}}

    error = assert_error(owner.post(SQL, json=body), 400, "VALIDATION_FAILED")

    assert [(d["field"], d["message"]) for d in error["details"]["fields"]] == [
        ("body.parameters.o", "Input should be a valid string"),
        ("body.parameters.o", "Input should be a valid integer"),
        ("body.parameters.o", "Input should be a valid number"),
        ("body.parameters.o", "Input should be a valid boolean"),
        ("body.parameters.o", "Input should be a valid list"),
        ("body.parameters.date", "Input should be a valid string"),
        ("body.parameters.date", "Input should be a valid integer"),
        ("body.parameters.date", "Input should be a valid number"),
        ("body.parameters.date", "Input should be a valid boolean"),
        ("body.parameters.date.0", "Input should be a valid string"),
        ("body.parameters.date.0", "Input should be a valid integer"),
        ("body.parameters.date.0", "Input should be a valid number"),
        ("body.parameters.date.0", "Input should be a valid boolean"),
    ]


def test_needs_analytics_sql_and_the_sites_organisation(app, client, store, owner, outsider):
    site = site_with_data(app, owner)
    body = {"siteId": site["id"], "query": "SELECT count(*) FROM events"}
    org = owner.user["organization_id"]
    admin = Session(client, make_user(store, role="admin", organization_id=org))
    assert admin.post(SQL, json=body).json()["rows"] == [[4]]
    for role in ("editor", "analyst", "viewer"):
        member = Session(client, make_user(store, role=role, organization_id=org))
        error = assert_error(member.post(SQL, json=body), 403, "PERMISSION_DENIED")
        assert "analytics:sql" in error["message"]
    assert_error(outsider.post(SQL, json=body), 403, "SITE_ACCESS_DENIED")
    assert_error(owner.post(SQL, json={**body, "siteId": UNKNOWN_ID}), 403, "SITE_ACCESS_DENIED")
    assert_error(client.post(SQL, json=body), 401, "AUTH_REQUIRED")


def test_a_tenant_sees_only_its_own_sites_rows(app, owner, outsider):
    mine = site_with_data(app, owner)
    theirs = site_with_data(app, outsider, visitors=("zed", "yan"))
    query = "SELECT list(DISTINCT visitor_id ORDER BY visitor_id) AS visitors, count(*) AS events FROM events"
    assert owner.post(SQL, json={"siteId": mine["id"], "query": query}).json()["rows"] == [
        [["ann", "bob", "cy"], 4]
    ]
    assert outsider.post(SQL, json={"siteId": theirs["id"], "query": query}).json()["rows"] == [
        [["yan", "zed"], 3]
    ]
    # A second site of the same organisation is also kept apart.
    other = owner.make_site(name="Second")
    assert owner.post(SQL, json={"siteId": other["id"], "query": query}).json()["rows"] == [[None, 0]]


def test_openapi_documents_the_routes_and_bodies(client):
    spec = client.get("/openapi.json").json()
    route = spec["paths"]["/api/v1/analytics/sql"]["post"]
    body_ref = route["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    properties = spec["components"]["schemas"][body_ref]["properties"]
    assert set(properties) == {"siteId", "query", "dialect", "format", "limit", "timeoutMs", "parameters"}
    assert {"200", "400", "401", "403", "408"} <= set(route["responses"])
    assert "text/csv" in route["responses"]["200"]["content"]
    assert "X-Aisle-Truncated" in route["responses"]["200"]["headers"]
    assert "`SQL_TOO_COMPLEX`" in route["description"]
    saved = spec["paths"]["/api/v1/analytics/sql/saved/{id}"]
    assert set(saved) == {"get", "put", "delete"}
    assert "/api/v1/analytics/sql/saved/{id}/run" in spec["paths"]
    assert "/api/v1/analytics/sql/saved/site/{siteId}" in spec["paths"]


def test_openapi_names_every_view_a_query_reads(client, owner):
    """The route's description names the views from the guard's list, all seven, and each of them answers
    a query."""
    spec = client.get("/openapi.json").json()
    description = spec["paths"]["/api/v1/analytics/sql"]["post"]["description"]
    named = description.split("(`siteId`): ", 1)[1].split(";", 1)[0].split(", ")
    assert named == list(VIEWS)
    assert {"events", "orders", "order_items", "products", "people", "sessions", "consents"} == set(named)
    site = owner.make_site(timezone="UTC")
    for view in named:
        answer = owner.post(SQL, json={"siteId": site["id"], "query": f"SELECT count(*) AS n FROM {view}"})
        assert answer.status_code == 200, (view, answer.text)
        assert answer.json()["rows"] == [[0]]
