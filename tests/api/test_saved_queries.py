"""Saved queries over HTTP: create, list, get, update, delete and run with typed parameters; validation,
permission (`analytics:sql` to change, `analytics:view` to read and run) and tenancy."""

from __future__ import annotations

import csv
import io

import pytest

from tests.api.test_sql_route import assert_error, site_with_data
from tests.factories import Session, make_user

pytestmark = pytest.mark.shared_app

BASE = "/analytics/sql/saved"
UNKNOWN_ID = "11111111-1111-1111-1111-111111111111"
VIEWS_SINCE = "SELECT visitor_id, count(*) AS events FROM events WHERE ts >= $since AND name = $name GROUP BY 1 ORDER BY 1"
PARAMETERS = [
    {"name": "since", "type": "timestamp", "description": "From when"},
    {"name": "name", "type": "string", "required": False, "default": "page_view"},
]


def create(session: Session, site_id: str, **fields) -> dict:
    body = {
        "siteId": site_id,
        "name": "Views since",
        "query": VIEWS_SINCE,
        "parameters": PARAMETERS,
        **fields,
    }
    response = session.post(BASE, json=body)
    assert response.status_code == 201, response.text
    return response.json()


def test_create_answers_201_with_the_stored_query(owner):
    site = owner.make_site()
    created = create(owner, site["id"], description="Who came back")
    assert {k: v for k, v in created.items() if k not in ("id", "createdAt", "updatedAt")} == {
        "siteId": site["id"], "name": "Views since", "description": "Who came back", "query": VIEWS_SINCE,
        "dialect": "duckdb", "createdBy": owner.user["id"],
        "parameters": [
            {"name": "since", "type": "timestamp", "required": True, "default": None, "nullable": False,
             "description": "From when"},
            {"name": "name", "type": "string", "required": False, "default": "page_view", "nullable": False,
             "description": None},
        ],
    }  # fmt: skip
    assert owner.get(f"{BASE}/{created['id']}").json() == created


def test_list_by_site_is_by_name_and_per_site(owner):
    site, other = owner.make_site(), owner.make_site(name="Other")
    second = create(owner, site["id"], name="b")
    first = create(owner, site["id"], name="a")
    create(owner, other["id"], name="elsewhere")
    assert owner.get(f"{BASE}/site/{site['id']}").json() == [first, second]
    assert [q["name"] for q in owner.get(f"{BASE}/site/{other['id']}").json()] == ["elsewhere"]


def test_create_validation(owner):
    site = owner.make_site()
    good = {"siteId": site["id"], "name": "Q", "query": "SELECT count(*) FROM events WHERE name = :n",
            "dialect": "postgres", "parameters": [{"name": "n"}]}  # fmt: skip
    cases = [
        ({"query": "DELETE FROM events"}, "SQL_STATEMENT_NOT_ALLOWED"),
        ({"query": "SELECT * FROM read_csv('/etc/passwd')"}, "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
        ({"query": "SELECT count(*) FROM events WHERE"}, "SQL_SYNTAX_ERROR"),
        ({"parameters": []}, "SQL_PARAMETER_UNDECLARED"),
        ({"parameters": [{"name": "n"}, {"name": "m"}]}, "SQL_PARAMETER_UNUSED"),
        ({"parameters": [{"name": "n"}, {"name": "n"}]}, "SQL_PARAMETER_DUPLICATE"),
        ({"parameters": [{"name": "n", "type": "date", "required": False, "default": "March"}]}, "SQL_PARAMETER_INVALID"),
        ({"parameters": [{"name": "n", "type": "money"}]}, "VALIDATION_FAILED"),
        ({"parameters": [{"name": "1n"}]}, "VALIDATION_FAILED"),
        ({"dialect": "cobol"}, "SQL_DIALECT_UNKNOWN"),
        ({"name": ""}, "VALIDATION_FAILED"),
        ({"colour": "red"}, "VALIDATION_FAILED"),
    ]  # fmt: skip
    for change, code in cases:
        assert_error(owner.post(BASE, json={**good, **change}), 400, code)
    assert owner.get(f"{BASE}/site/{site['id']}").json() == []
    assert owner.post(BASE, json=good).status_code == 201
    assert_error(owner.post(BASE, json=good), 409, "SAVED_QUERY_NAME_TAKEN")


def test_update_changes_only_what_is_sent_and_checks_the_query_again(owner):
    site = owner.make_site()
    created = create(owner, site["id"], description="Old")
    response = owner.put(f"{BASE}/{created['id']}", json={"name": "Renamed", "description": None})
    assert response.status_code == 200, response.text
    updated = response.json()
    assert (updated["name"], updated["description"], updated["query"]) == ("Renamed", None, VIEWS_SINCE)
    assert updated["parameters"] == created["parameters"]
    assert updated["updatedAt"] >= created["updatedAt"]
    # A new query must still match the kept parameters.
    assert_error(
        owner.put(f"{BASE}/{created['id']}", json={"query": "SELECT 1"}), 400, "SQL_PARAMETER_UNUSED"
    )
    assert_error(owner.put(f"{BASE}/{created['id']}", json={"query": "ATTACH 'x' AS y"}), 400,
                 "SQL_STATEMENT_NOT_ALLOWED")  # fmt: skip
    changed = owner.put(
        f"{BASE}/{created['id']}", json={"query": "SELECT count(*) AS n FROM orders", "parameters": []}
    )
    assert changed.status_code == 200, changed.text
    assert (changed.json()["query"], changed.json()["parameters"]) == ("SELECT count(*) AS n FROM orders", [])
    assert_error(owner.put(f"{BASE}/{created['id']}", json={"name": None}), 400, "VALIDATION_FAILED")
    assert_error(owner.put(f"{BASE}/{created['id']}", json={"siteId": site["id"]}), 400, "VALIDATION_FAILED")
    create(owner, site["id"], name="Taken")
    assert_error(owner.put(f"{BASE}/{created['id']}", json={"name": "Taken"}), 409, "SAVED_QUERY_NAME_TAKEN")


def test_delete(owner):
    site = owner.make_site()
    created = create(owner, site["id"])
    response = owner.delete(f"{BASE}/{created['id']}")
    assert (response.status_code, response.json()) == (200, {"success": True})
    assert_error(owner.get(f"{BASE}/{created['id']}"), 403, "SITE_ACCESS_DENIED")
    assert owner.get(f"{BASE}/site/{site['id']}").json() == []


def test_run_binds_typed_parameters_and_fills_defaults(app, owner):
    site = site_with_data(app, owner)
    saved = create(owner, site["id"])
    run = f"{BASE}/{saved['id']}/run"
    response = owner.post(run, json={"parameters": {"since": "2024-03-01T11:00:00Z"}})
    assert response.status_code == 200, response.text
    assert response.json()["rows"] == [["bob", 1], ["cy", 1]]
    body = owner.post(
        run, json={"parameters": {"since": "2024-03-01T00:00:00+01:00", "name": "product_view"}}
    ).json()
    assert body["rows"] == [["ann", 1]]
    # A hostile value is a value: bound, never formatted into the SQL.
    body = owner.post(
        run, json={"parameters": {"since": "2024-01-01T00:00:00Z", "name": "x' OR '1'='1"}}
    ).json()
    assert body["rows"] == []
    download = owner.post(
        run, json={"parameters": {"since": "2024-03-01T00:00:00Z"}, "format": "csv", "limit": 1}
    )
    assert download.headers["x-aisle-truncated"] == "true"
    assert list(csv.reader(io.StringIO(download.text))) == [["visitor_id", "events"], ["ann", "1"]]


def test_run_parameter_errors(app, owner):
    site = site_with_data(app, owner)
    run = f"{BASE}/{create(owner, site['id'])['id']}/run"
    cases = [
        ({}, "SQL_PARAMETER_MISSING"),
        ({"since": "yesterday"}, "SQL_PARAMETER_INVALID"),
        ({"since": "2024-03-01T00:00:00"}, "SQL_PARAMETER_INVALID"),  # no offset
        ({"since": "2024-03-01T00:00:00Z", "name": 7}, "SQL_PARAMETER_INVALID"),
        ({"since": "2024-03-01T00:00:00Z", "extra": 1}, "SQL_PARAMETER_UNKNOWN"),
    ]
    for parameters, code in cases:
        error = assert_error(owner.post(run, json={"parameters": parameters}), 400, code)
        assert error["message"]
    assert_error(owner.post(run, json={"parameters": {"since": "2024-03-01T00:00:00Z"}, "limit": 200_000}), 400,
                 "SQL_LIMIT_TOO_LARGE")  # fmt: skip


def test_null_is_sql_null_for_a_nullable_parameter_and_refused_for_others_never_the_default(app, owner):
    site = site_with_data(app, owner)
    # An explicit null bound SQL NULL in place of the default, for any parameter, even a required one:
    # `name = NULL` found nothing, silently.
    run = f"{BASE}/{create(owner, site['id'])['id']}/run"
    cases = [
        ({"since": "2024-03-01T00:00:00Z", "name": None}, "name",
         "Parameter 'name' cannot be null (it is not declared nullable); leave it out to use its default"),
        ({"since": None}, "since", "Parameter 'since' cannot be null (it is not declared nullable); give a value"),
    ]  # fmt: skip
    for parameters, name, message in cases:
        error = assert_error(owner.post(run, json={"parameters": parameters}), 400, "SQL_PARAMETER_INVALID")
        assert (error["message"], error["details"]) == (message, {"parameter": name})
    query = "SELECT $who IS NULL AS everyone, count(*) AS events FROM events WHERE $who IS NULL OR visitor_id = $who"
    saved = create(owner, site["id"], name="Who", query=query,
                   parameters=[{"name": "who", "required": False, "default": "ann", "nullable": True}])  # fmt: skip
    assert saved["parameters"][0]["nullable"] is True
    run = f"{BASE}/{saved['id']}/run"
    assert owner.post(run, json={}).json()["rows"] == [[False, 2]]
    assert owner.post(run, json={"parameters": {"who": None}}).json()["rows"] == [[True, 4]]
    assert owner.post(run, json={"parameters": {"who": "bob"}}).json()["rows"] == [[False, 1]]


def test_each_parameter_type(app, owner):
    site = site_with_data(app, owner)
    query = ("SELECT $s AS s, $i + 1 AS i, $n * 2 AS n, NOT $b AS b, $d + 1 AS d, $t AS t, "
             "list_contains($l, 'bob') AS l")  # fmt: skip
    kinds = ["string", "integer", "number", "boolean", "date", "timestamp", "string_list"]
    saved = create(owner, site["id"], name="Types", query=query,
                   parameters=[{"name": n, "type": k} for n, k in zip("sinbdtl", kinds, strict=True)])  # fmt: skip
    values = {"s": "x", "i": 41, "n": 1.25, "b": False, "d": "2024-02-28", "t": "2024-03-01T12:00:00+02:00",
              "l": ["ann", "bob"]}  # fmt: skip
    body = owner.post(f"{BASE}/{saved['id']}/run", json={"parameters": values}).json()
    assert body["rows"] == [["x", 42, 2.5, True, "2024-02-29", "2024-03-01T10:00:00Z", True]]


def test_read_and_run_need_analytics_view_change_needs_analytics_sql(app, client, store, owner, outsider):
    site = site_with_data(app, owner)
    saved = create(owner, site["id"])
    run = {"parameters": {"since": "2024-03-01T00:00:00Z"}}
    analyst = Session(client, make_user(store, role="analyst", organization_id=owner.user["organization_id"]))
    assert analyst.get(f"{BASE}/{saved['id']}").json() == saved
    assert analyst.get(f"{BASE}/site/{site['id']}").json() == [saved]
    assert analyst.post(f"{BASE}/{saved['id']}/run", json=run).json()["rows"] == [
        ["ann", 1],
        ["bob", 1],
        ["cy", 1],
    ]
    for response in (
        analyst.post(BASE, json={"siteId": site["id"], "name": "Mine", "query": "SELECT 1"}),
        analyst.put(f"{BASE}/{saved['id']}", json={"name": "Mine"}),
        analyst.delete(f"{BASE}/{saved['id']}"),
    ):
        assert_error(response, 403, "PERMISSION_DENIED")
    viewer = Session(client, make_user(store, role="viewer", organization_id=owner.user["organization_id"]))
    assert_error(viewer.post(f"{BASE}/{saved['id']}/run", json=run), 403, "PERMISSION_DENIED")
    for response in (
        outsider.get(f"{BASE}/{saved['id']}"),
        outsider.post(f"{BASE}/{saved['id']}/run", json=run),
        outsider.put(f"{BASE}/{saved['id']}", json={"name": "Theirs"}),
        outsider.delete(f"{BASE}/{saved['id']}"),
        outsider.get(f"{BASE}/site/{site['id']}"),
        outsider.post(BASE, json={"siteId": site["id"], "name": "Theirs", "query": "SELECT 1"}),
        owner.get(f"{BASE}/{UNKNOWN_ID}"),
    ):
        assert_error(response, 403, "SITE_ACCESS_DENIED")
    assert_error(client.get(f"{BASE}/{saved['id']}"), 401, "AUTH_REQUIRED")
    assert owner.get(f"{BASE}/{saved['id']}").json()["name"] == "Views since"
