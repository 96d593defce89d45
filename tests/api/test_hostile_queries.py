"""No query string makes an analytics route fail: every GET route under /analytics, read from the
app's own OpenAPI schema, answers 2xx or a 4xx in the error envelope, never a 5xx, whatever its
documented query parameters hold. The site has events and orders, so the routes that get past
validation run their queries on real data."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from tests.factories import Session, make_verified_site

pytestmark = pytest.mark.shared_app

HOSTILE = (
    "",
    "x",
    "-1",
    "0",
    "1e309",
    "99999999999999999999999",
    "2026-13-45",
    "0001-01-01",
    "9999-12-31T23:59:59+14:00",
    "'; DROP TABLE events; --",
    "a" * 3000,
    "\u00e9\u00e8,\u2603,",
)
PRODUCT_ID = "6f0c2b1e-0000-4000-8000-00000000beef"


def analytics_gets(app) -> list[tuple[str, list[str]]]:
    routes = []
    for path, operations in app.openapi()["paths"].items():
        if path.startswith("/api/v1/analytics/") and "get" in operations:
            names = [p["name"] for p in operations["get"].get("parameters", []) if p["in"] == "query"]
            routes.append((path, names))
    return routes


def fill(template: str, site_id: str) -> str:
    path = template.removeprefix("/api/v1")
    path = path.replace("{siteId}", site_id).replace("{id}", site_id).replace("{productId}", PRODUCT_ID)
    return re.sub(r"\{[^}]+\}", "x", path)


def assert_handled(response, where: str) -> None:
    assert response.status_code < 500, f"{where}: {response.status_code} {response.text[:300]}"
    if response.status_code >= 400:
        assert set(response.json()["error"]) == {"code", "message", "details"}, where


@pytest.fixture
def shop(app, owner: Session) -> dict:
    site = owner.make_site()
    now = datetime.now(UTC)

    def at(hours: int) -> str:
        return (now - timedelta(hours=hours)).isoformat()

    events = [
        {"name": "page_view", "visitorId": "v1", "sessionId": "s1", "timestamp": at(5), "eventId": "e1"},
        {"name": "product_view", "visitorId": "v1", "sessionId": "s1", "timestamp": at(4), "eventId": "e2",
         "metadata": {"productItemCode": "SKU-1", "categoryPath": "Home > Kitchen", "dwellTimeSeconds": 12}},
        {"name": "add_to_cart", "visitorId": "v1", "sessionId": "s1", "timestamp": at(3), "eventId": "e3",
         "metadata": {"productItemCode": "SKU-1"}, "consent": {"analytics": True, "marketing": False}},
        {"name": "search_query", "visitorId": "v2", "sessionId": "s2", "timestamp": at(3), "eventId": "e4",
         "metadata": {"query": "mug"}},
        {"name": "impression", "visitorId": "v1", "sessionId": "s1", "timestamp": at(6), "eventId": "e5",
         "entityType": "campaign", "entityId": "C1"},
        {"name": "user_signup", "visitorId": "v1", "sessionId": "s1", "timestamp": at(2), "eventId": "e6",
         "userId": "u1"},
    ]  # fmt: skip
    response = owner.post("/analytics/track/batch", json={"siteId": site["id"], "events": events})
    assert response.status_code == 200, response.text
    order = {"siteId": site["id"], "orderId": "o1", "visitorId": "v1", "sessionId": "s1", "timestamp": at(1),
             "currency": "JPY", "total": "1200", "items": [{"productItemCode": "SKU-1", "quantity": 1, "price": "1200"}]}  # fmt: skip
    assert owner.post("/analytics/track/order", json=order).status_code == 201
    app.state.ingest.flush()
    return site


def test_the_walk_covers_the_analytics_routes(app):
    paths = {path for path, _ in analytics_gets(app)}
    assert "/api/v1/analytics/cohort/{siteId}" in paths
    assert "/api/v1/analytics/product/{siteId}/associations" in paths
    assert "/api/v1/analytics/revenue/overview" in paths
    assert len(paths) >= 60


@pytest.mark.slow
def test_no_query_string_makes_an_analytics_route_fail(app, owner, shop):
    for template, names in analytics_gets(app):
        path = fill(template, shop["id"])
        for value in HOSTILE:
            # every parameter hostile at once, then each alone beside a valid site (so validation of
            # the others does not stop the request before the code that reads it)
            assert_handled(owner.get(path, params=dict.fromkeys(names, value)), f"{template} all={value!r}")
            for name in names:
                params = {name: value}
                if name != "siteId" and "siteId" in names:
                    params["siteId"] = shop["id"]
                assert_handled(owner.get(path, params=params), f"{template} {name}={value!r}")


HOSTILE_BODIES = (
    b"",
    b"{",
    b"null",
    b"[]",
    b'"x"',
    b"{}",
    b'{"siteId": 1, "steps": "x", "name": [], "sql": 5, "requiredCategories": "all", "timeoutMs": 1e309}',
    b'{"granularEnabled": "yes", "requiredCategories": [1, null], "timeoutMs": -1}',
    b'{"a": ' * 600 + b"1" + b"}" * 600,
    b"\xff\xfe",
)


def test_no_body_makes_an_analytics_write_route_fail(app, owner, shop):
    writes = [
        (method, path)
        for path, operations in app.openapi()["paths"].items()
        if path.startswith("/api/v1/analytics/")
        for method in operations
        if method in ("post", "put")
    ]
    assert len(writes) >= 5
    for method, template in writes:
        path = fill(template, shop["id"])
        for body in HOSTILE_BODIES:
            response = owner.request(
                method.upper(), path, content=body, headers={"content-type": "application/json"}
            )
            assert_handled(response, f"{method} {template} body={body[:40]!r}")


PUBLIC_BODIES = (
    *HOSTILE_BODIES,
    b'{"events": [null, 1, "x", {}]}',
    b'{"events": [{"name": "page_view", "visitorId": "v", "sessionId": "s", "timestamp": "99999-01-01"}]}',
    b'{"events": [{"name": "page_view", "visitorId": "v", "sessionId": "s", "value": "1e400"}]}',
    b'{"events": [{"name": "page_view", "visitorId": "v", "sessionId": "s", "timestamp": "2026-01-01T00:00:00Z"}],'
    b' "sentAt": "0001-01-01T00:00:00Z"}',
    b'{"orderId": "o", "visitorId": "v", "sessionId": "s", "total": "NaN", "items": [{"productItemCode": "a",'
    b' "quantity": 1e20, "price": "1"}]}',
    b'{"metrics": [{"name": "LCP", "value": "x"}, {"name": "LCP", "value": 1e309}]}',
    b'{"visitorId": "v", "categories": {"analytics": "yes"}}',
)


def test_no_body_makes_a_public_write_route_fail(app, owner, store):
    """The storefront's routes, read from the schema: hostile bodies as JSON and as sendBeacon text."""
    site = make_verified_site(owner, store, domain="shop.example.com")
    writes = [
        path
        for path, operations in app.openapi()["paths"].items()
        if path.startswith("/api/v1/public/sites/{siteKey}/") and "post" in operations
    ]
    assert {"/api/v1/public/sites/{siteKey}/events/batch", "/api/v1/public/sites/{siteKey}/consent"} <= set(
        writes
    )
    statuses: set[int] = set()
    for template in writes:
        path = template.removeprefix("/api/v1").replace("{siteKey}", site["siteKey"])
        for body in PUBLIC_BODIES:
            for content_type in ("application/json", "text/plain"):
                response = owner.client.post(
                    path,
                    content=body,
                    headers={"content-type": content_type, "Origin": "https://shop.example.com"},
                )
                assert_handled(response, f"POST {template} {content_type} body={body[:40]!r}")
                statuses.add(response.status_code)
    # the bodies reached the routes' own checks (not only the guard or the throttle)
    assert 400 in statuses and not statuses & {401, 403}, statuses
