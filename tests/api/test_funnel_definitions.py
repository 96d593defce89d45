"""Funnel definitions over HTTP: create, list, get, update, delete, duplicate, templates, analyze;
validation, permission and tenancy."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from api.analytics.funnels.service import parse_steps
from tests.factories import Session, make_user
from warehouse.config_store import funnel_definitions

pytestmark = pytest.mark.shared_app

BASE = "/analytics/funnels/definitions"
DEFAULT_WINDOW = 14 * 24 * 3600
UNKNOWN_ID = "11111111-1111-1111-1111-111111111111"


def create(session: Session, site_id: str, **fields) -> dict:
    body = {"siteId": site_id, "name": "Checkout", "steps": ["page_view", "add_to_cart"], **fields}
    response = session.post(BASE, json=body)
    assert response.status_code == 201, response.text
    return response.json()


def assert_error(response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code, response.text


# --- create, get, list -----------------------------------------------------------------------------


def test_create_answers_201_with_the_stored_definition_and_its_defaults(owner):
    site = owner.make_site()
    created = create(owner, site["id"], steps=[" page_view ", "add_to_cart", "page_view"])
    assert set(created) == {
        "id", "siteId", "name", "description", "steps", "windowSeconds", "order", "createdBy", "createdAt",
        "updatedAt",
    }  # fmt: skip
    assert {k: v for k, v in created.items() if k not in ("id", "createdAt", "updatedAt")} == {
        "siteId": site["id"],
        "name": "Checkout",
        "description": None,
        "steps": ["page_view", "add_to_cart", "page_view"],
        "windowSeconds": DEFAULT_WINDOW,
        "order": "sequential",
        "createdBy": owner.user["id"],
    }
    assert created["createdAt"] == created["updatedAt"]
    fetched = owner.get(f"{BASE}/{created['id']}")
    assert fetched.status_code == 200
    assert fetched.json() == created


def test_create_keeps_window_order_and_description(owner):
    site = owner.make_site()
    created = create(
        owner, site["id"], name="Year", description="Whole year", windowSeconds=365 * 24 * 3600, order="any"
    )
    assert (created["description"], created["windowSeconds"], created["order"]) == (
        "Whole year", 365 * 24 * 3600, "any"
    )  # fmt: skip
    assert create(owner, site["id"], windowSeconds=1, order="strict")["windowSeconds"] == 1


def test_list_by_site_answers_the_sites_definitions_oldest_first(owner):
    site, other = owner.make_site(), owner.make_site(name="Other")
    first = create(owner, site["id"], name="First")
    second = create(owner, site["id"], name="Second")
    create(owner, other["id"], name="Elsewhere")
    response = owner.get(f"{BASE}/site/{site['id']}")
    assert response.status_code == 200, response.text
    assert response.json() == [first, second]
    assert [d["name"] for d in owner.get(f"{BASE}/site/{other['id']}").json()] == ["Elsewhere"]
    assert owner.get(f"{BASE}/site/{owner.make_site()['id']}").json() == []


def test_create_validation_errors(owner):
    site = owner.make_site()
    good = {"siteId": site["id"], "name": "F", "steps": ["page_view", "add_to_cart"]}
    cases = [
        ({"steps": ["page_view"]}, "FUNNEL_NEEDS_TWO_STEPS"),
        ({"steps": ["page_view", "  "]}, "FUNNEL_STEP_EMPTY"),
        ({"steps": ["page_view", "teleport"]}, "UNKNOWN_EVENT_NAME"),
        ({"steps": ["page_view"] * 21}, "FUNNEL_TOO_MANY_STEPS"),
        ({"steps": "page_view,add_to_cart"}, "VALIDATION_FAILED"),
        ({"windowSeconds": 0}, "VALIDATION_FAILED"),
        ({"windowSeconds": 365 * 24 * 3600 + 1}, "VALIDATION_FAILED"),
        ({"order": "sideways"}, "VALIDATION_FAILED"),
        ({"name": ""}, "VALIDATION_FAILED"),
        ({"name": "x" * 201}, "VALIDATION_FAILED"),
        ({"colour": "red"}, "VALIDATION_FAILED"),
    ]
    for change, code in cases:
        assert_error(owner.post(BASE, json={**good, **change}), 400, code)
    for missing in good:
        assert_error(
            owner.post(BASE, json={k: v for k, v in good.items() if k != missing}), 400, "VALIDATION_FAILED"
        )
    assert owner.get(f"{BASE}/site/{site['id']}").json() == []


def test_create_needs_analytics_view_and_the_sites_organisation(client, store, owner, outsider):
    site = owner.make_site()
    body = {"siteId": site["id"], "name": "F", "steps": ["page_view", "add_to_cart"]}
    assert_error(outsider.post(BASE, json=body), 403, "SITE_ACCESS_DENIED")
    assert_error(owner.post(BASE, json={**body, "siteId": UNKNOWN_ID}), 403, "SITE_ACCESS_DENIED")
    viewer = Session(client, make_user(store, role="viewer", organization_id=owner.user["organization_id"]))
    assert_error(viewer.post(BASE, json=body), 403, "PERMISSION_DENIED")
    assert_error(client.post(BASE, json=body), 401, "AUTH_REQUIRED")
    analyst = Session(client, make_user(store, role="analyst", organization_id=owner.user["organization_id"]))
    assert analyst.post(BASE, json=body).json()["createdBy"] == analyst.user["id"]
    assert len(owner.get(f"{BASE}/site/{site['id']}").json()) == 1


# --- update, delete, duplicate ---------------------------------------------------------------------


def test_update_changes_only_the_fields_sent(owner):
    site = owner.make_site()
    created = create(owner, site["id"], description="Old")
    response = owner.put(f"{BASE}/{created['id']}", json={"name": "Renamed", "order": "strict"})
    assert response.status_code == 200, response.text
    updated = response.json()
    assert updated == {**created, "name": "Renamed", "order": "strict", "updatedAt": updated["updatedAt"]}
    assert updated["updatedAt"] >= created["updatedAt"]
    again = owner.put(
        f"{BASE}/{created['id']}",
        json={
            "steps": ["product_view", "add_to_cart", "purchase"],
            "windowSeconds": 3600,
            "description": None,
        },
    ).json()
    assert (again["steps"], again["windowSeconds"], again["description"], again["name"]) == (
        ["product_view", "add_to_cart", "purchase"], 3600, None, "Renamed"
    )  # fmt: skip
    assert owner.get(f"{BASE}/{created['id']}").json() == again
    assert owner.put(f"{BASE}/{created['id']}", json={}).json() == again


def test_update_validation_errors_change_nothing(owner):
    site = owner.make_site()
    created = create(owner, site["id"])
    url = f"{BASE}/{created['id']}"
    cases = [
        ({"steps": ["page_view"]}, "FUNNEL_NEEDS_TWO_STEPS"),
        ({"steps": ["page_view", "teleport"]}, "UNKNOWN_EVENT_NAME"),
        ({"name": None}, "VALIDATION_FAILED"),
        ({"steps": None}, "VALIDATION_FAILED"),
        ({"windowSeconds": 0}, "VALIDATION_FAILED"),
        ({"order": "sideways"}, "VALIDATION_FAILED"),
        ({"siteId": owner.make_site()["id"]}, "VALIDATION_FAILED"),
    ]
    for body, code in cases:
        assert_error(owner.put(url, json=body), 400, code)
    assert owner.get(url).json() == created


def test_delete_removes_the_definition(owner):
    site = owner.make_site()
    kept, removed = create(owner, site["id"], name="Kept"), create(owner, site["id"], name="Removed")
    response = owner.delete(f"{BASE}/{removed['id']}")
    assert response.status_code == 200, response.text
    assert response.json() == {"success": True}
    assert owner.get(f"{BASE}/site/{site['id']}").json() == [kept]
    # A deleted id is an unknown id: 403, like an id of another organisation.
    assert_error(owner.get(f"{BASE}/{removed['id']}"), 403, "SITE_ACCESS_DENIED")
    assert_error(owner.delete(f"{BASE}/{removed['id']}"), 403, "SITE_ACCESS_DENIED")


def test_deleting_the_site_deletes_its_definitions(owner, store):
    site = owner.make_site()
    created = create(owner, site["id"])
    assert owner.delete(f"/sites/{site['id']}").status_code == 200
    with store.connect() as conn:
        assert funnel_definitions.get(conn, definition_id=created["id"]) is None


def test_duplicate_copies_the_definition_under_a_new_name(client, store, owner):
    site = owner.make_site()
    created = create(owner, site["id"], name="Checkout", description="D", windowSeconds=600, order="any")
    analyst = Session(client, make_user(store, role="analyst", organization_id=owner.user["organization_id"]))
    response = analyst.post(f"{BASE}/{created['id']}/duplicate")
    assert response.status_code == 201, response.text
    copy = response.json()
    assert copy["id"] != created["id"]
    assert {k: copy[k] for k in ("siteId", "name", "description", "steps", "windowSeconds", "order", "createdBy")} == {
        "siteId": site["id"], "name": "Checkout (copy)", "description": "D", "steps": ["page_view", "add_to_cart"],
        "windowSeconds": 600, "order": "any", "createdBy": analyst.user["id"],
    }  # fmt: skip
    assert [d["name"] for d in owner.get(f"{BASE}/site/{site['id']}").json()] == [
        "Checkout",
        "Checkout (copy)",
    ]
    assert owner.post(f"{BASE}/{copy['id']}/duplicate").json()["name"] == "Checkout (copy) (copy)"


def test_a_duplicate_of_a_long_name_still_fits(owner):
    site = owner.make_site()
    created = create(owner, site["id"], name="n" * 200)
    copy = owner.post(f"{BASE}/{created['id']}/duplicate").json()
    assert copy["name"] == "n" * 193 + " (copy)"
    assert len(copy["name"]) == 200


# --- templates ---------------------------------------------------------------------------------------


def test_templates_are_funnels_over_canonical_event_names(owner):
    site = owner.make_site()
    response = owner.get(f"{BASE}/site/{site['id']}/templates")
    assert response.status_code == 200, response.text
    templates = response.json()
    by_name = {t["name"]: t for t in templates}
    assert by_name["Browse to purchase"]["steps"] == [
        "page_view", "product_view", "add_to_cart", "checkout_begin", "purchase"
    ]  # fmt: skip
    assert by_name["Search to cart"]["steps"] == [
        "search_query",
        "search_results",
        "product_view",
        "add_to_cart",
    ]
    assert by_name["Cart to checkout"]["steps"] == ["add_to_cart", "checkout_begin", "purchase"]
    assert len({t["key"] for t in templates}) == len(templates) == 6
    for template in templates:
        assert set(template) == {"key", "name", "description", "steps", "windowSeconds", "order"}
        assert parse_steps(template["steps"]) == tuple(template["steps"])
        # Every template can be saved as it is.
        body = {k: template[k] for k in ("name", "description", "steps", "windowSeconds", "order")}
        assert owner.post(BASE, json={"siteId": site["id"], **body}).status_code == 201


# --- analyze -------------------------------------------------------------------------------------------


def site_with_journeys(app, owner: Session) -> dict:
    site = owner.make_site(timezone="UTC")
    cart = {"metadata": {"productItemCode": "P1"}}
    events = [
        {"name": "page_view", "visitorId": "v1", "sessionId": "s", "timestamp": "2024-03-05T10:00:00Z"},
        {
            "name": "add_to_cart",
            "visitorId": "v1",
            "sessionId": "s",
            "timestamp": "2024-03-05T10:00:45Z",
            **cart,
        },
        {"name": "page_view", "visitorId": "v2", "sessionId": "s", "timestamp": "2024-03-05T11:00:00Z"},
        {
            "name": "add_to_cart",
            "visitorId": "v2",
            "sessionId": "s",
            "timestamp": "2024-03-05T11:00:20Z",
            **cart,
        },
        {"name": "page_view", "visitorId": "v3", "sessionId": "s", "timestamp": "2024-03-05T12:00:00Z"},
        {"name": "page_view", "visitorId": "v4", "sessionId": "s", "timestamp": "2024-03-06T09:00:00Z"},
    ]
    response = owner.post("/analytics/track/batch", json={"siteId": site["id"], "events": events})
    assert response.status_code == 200, response.text
    assert response.json()["rejected"] == []
    app.state.ingest.flush()
    return site


def test_analyze_runs_the_saved_funnel_with_its_window_and_order(app, owner):
    site = site_with_journeys(app, owner)
    created = create(owner, site["id"], windowSeconds=30)
    dates = {"startDate": "2024-03-05", "endDate": "2024-03-05"}
    response = owner.get(f"{BASE}/{created['id']}/analyze", params=dates)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["definition"] == created
    assert (body["startDate"], body["endDate"]) == ("2024-03-05", "2024-03-05")
    # v1's cart came 45 s after entry: outside the 30 s window.
    assert body["report"] == {
        "steps": [
            {"eventName": "page_view", "count": 3, "conversionRate": 1.0, "dropOff": 0,
             "avgTimeToConvertSeconds": None, "medianTimeToConvertSeconds": None},
            {"eventName": "add_to_cart", "count": 1, "conversionRate": 0.333333, "dropOff": 2,
             "avgTimeToConvertSeconds": 20.0, "medianTimeToConvertSeconds": 20.0},
        ],
        "totalEntered": 3,
        "overallConversionRate": 0.333333,
    }  # fmt: skip
    same = owner.get(
        f"/analytics/funnels/{site['id']}",
        params={"steps": "page_view,add_to_cart", "windowSeconds": 30, **dates},
    )
    assert body["report"] == same.json()
    two_days = owner.get(
        f"{BASE}/{created['id']}/analyze", params={"startDate": "2024-03-05", "endDate": "2024-03-06"}
    ).json()
    assert two_days["report"]["totalEntered"] == 4


def test_analyze_defaults_to_the_last_30_days(app, owner):
    site = owner.make_site(timezone="UTC")
    created = create(owner, site["id"])
    body = owner.get(f"{BASE}/{created['id']}/analyze").json()
    today = datetime.now(UTC).date()
    assert (body["startDate"], body["endDate"]) == (
        (today - timedelta(days=29)).isoformat(),
        today.isoformat(),
    )
    assert body["report"]["totalEntered"] == 0
    assert [s["count"] for s in body["report"]["steps"]] == [0, 0]


def test_analyze_validation_errors(owner):
    site = owner.make_site()
    url = f"{BASE}/{create(owner, site['id'])['id']}/analyze"
    assert_error(
        owner.get(url, params={"startDate": "2024-03-06", "endDate": "2024-03-05"}), 400, "DATE_RANGE_INVALID"
    )
    assert_error(owner.get(url, params={"startDate": "yesterday"}), 400, "VALIDATION_FAILED")


# --- access --------------------------------------------------------------------------------------------


def definition_routes(definition_id: str) -> list[tuple[str, str, dict | None]]:
    url = f"{BASE}/{definition_id}"
    return [
        ("GET", url, None),
        ("PUT", url, {"name": "Taken over"}),
        ("DELETE", url, None),
        ("POST", f"{url}/duplicate", None),
        ("GET", f"{url}/analyze", None),
    ]


def test_another_organisations_definition_answers_403_and_stays_untouched(owner, outsider):
    site = owner.make_site(name="Private Shop")
    created = create(owner, site["id"], name="Secret funnel")
    for method, url, body in definition_routes(created["id"]):
        response = outsider.request(method, url, json=body)
        assert_error(response, 403, "SITE_ACCESS_DENIED")
        assert "Secret funnel" not in response.text and "Private Shop" not in response.text
    for url in (f"{BASE}/site/{site['id']}", f"{BASE}/site/{site['id']}/templates"):
        assert_error(outsider.get(url), 403, "SITE_ACCESS_DENIED")
    assert owner.get(f"{BASE}/site/{site['id']}").json() == [created]


def test_unknown_definition_ids_answer_403_not_404(owner, outsider):
    site = owner.make_site()
    foreign = create(owner, site["id"])["id"]
    for method, url, body in definition_routes(UNKNOWN_ID):
        unknown = outsider.request(method, url, json=body)
        assert_error(unknown, 403, "SITE_ACCESS_DENIED")
        # Another organisation's id gets the very same answer: ids cannot be probed.
        theirs = outsider.request(method, url.replace(UNKNOWN_ID, foreign), json=body)
        assert theirs.json() == unknown.json()
    assert_error(owner.get(f"{BASE}/site/{UNKNOWN_ID}"), 403, "SITE_ACCESS_DENIED")


def test_definitions_need_analytics_view_and_a_token(client, store, owner):
    site = owner.make_site()
    created = create(owner, site["id"])
    viewer = Session(client, make_user(store, role="viewer", organization_id=owner.user["organization_id"]))
    routes = [*definition_routes(created["id"]), ("GET", f"{BASE}/site/{site['id']}", None),
              ("GET", f"{BASE}/site/{site['id']}/templates", None)]  # fmt: skip
    for method, url, body in routes:
        assert_error(viewer.request(method, url, json=body), 403, "PERMISSION_DENIED")
        assert_error(client.request(method, url, json=body), 401, "AUTH_REQUIRED")
    assert owner.get(f"{BASE}/{created['id']}").json() == created


def test_definition_paths_are_not_read_as_a_funnel_site_id(app, owner):
    # `/funnels/{siteId}` would match `/funnels/definitions`; the definitions router comes first
    # (the schema lists paths in the order the routes are registered, hence matched).
    paths = list(app.openapi()["paths"])
    assert paths.index("/api/v1/analytics/funnels/definitions/{id}") < paths.index(
        "/api/v1/analytics/funnels/{siteId}"
    )
    site = owner.make_site()
    create(owner, site["id"])
    assert isinstance(owner.get(f"{BASE}/site/{site['id']}").json(), list)
    # GET has no route here, so the funnel route reads `definitions` as a site id, which it is not.
    assert_error(owner.get(BASE), 400, "INVALID_SITE_ID")


def test_every_body_and_answer_is_documented_in_camel_case(app):
    spec = app.openapi()
    schemas = spec["components"]["schemas"]
    paths = spec["paths"]
    create_body = paths["/api/v1/analytics/funnels/definitions"]["post"]["requestBody"]["content"]
    assert create_body["application/json"]["schema"] == {
        "$ref": "#/components/schemas/FunnelDefinitionCreate"
    }
    assert set(schemas["FunnelDefinitionCreate"]["properties"]) == {
        "siteId", "name", "description", "steps", "windowSeconds", "order"
    }  # fmt: skip
    assert schemas["FunnelDefinitionCreate"]["required"] == ["siteId", "name", "steps"]
    assert set(schemas["FunnelDefinitionUpdate"]["properties"]) == {
        "name", "description", "steps", "windowSeconds", "order"
    }  # fmt: skip
    assert "createdBy" in schemas["FunnelDefinitionOut"]["properties"]
    assert set(schemas["FunnelDefinitionAnalysis"]["properties"]) == {
        "definition",
        "startDate",
        "endDate",
        "report",
    }
    answers = {
        ("post", "/api/v1/analytics/funnels/definitions", "201"): "FunnelDefinitionOut",
        ("get", "/api/v1/analytics/funnels/definitions/{id}", "200"): "FunnelDefinitionOut",
        ("put", "/api/v1/analytics/funnels/definitions/{id}", "200"): "FunnelDefinitionOut",
        ("post", "/api/v1/analytics/funnels/definitions/{id}/duplicate", "201"): "FunnelDefinitionOut",
        ("get", "/api/v1/analytics/funnels/definitions/{id}/analyze", "200"): "FunnelDefinitionAnalysis",
    }
    for (method, path, status), model in answers.items():
        operation = paths[path][method]
        assert operation["responses"][status]["content"]["application/json"]["schema"] == {
            "$ref": f"#/components/schemas/{model}"
        }
        assert "SITE_ACCESS_DENIED" in operation["description"]
    listed = paths["/api/v1/analytics/funnels/definitions/site/{siteId}/templates"]["get"]["responses"]["200"]
    assert listed["content"]["application/json"]["schema"]["items"] == {
        "$ref": "#/components/schemas/FunnelTemplate"
    }
