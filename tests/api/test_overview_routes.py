"""Overview, dashboard summary, events breakdown and activity logs over HTTP."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.factories import Session, make_user

pytestmark = pytest.mark.shared_app


def iso(delta: timedelta) -> str:
    return (datetime.now(UTC) - delta).isoformat()


def load(app, owner: Session, site: dict, *, ago: timedelta = timedelta(hours=1), batch: str = "") -> None:
    events = [
        {"name": "page_view", "visitorId": "phone", "sessionId": "s1", "timestamp": iso(ago)},
        {"name": "identify", "visitorId": "phone", "sessionId": "s1", "userId": "ada", "timestamp": iso(ago)},
        {
            "name": "page_view",
            "visitorId": "laptop",
            "sessionId": "s2",
            "userId": "ada",
            "timestamp": iso(ago),
        },
        {"name": "page_view", "visitorId": "guest", "sessionId": "s3", "timestamp": iso(ago)},
    ]
    assert (
        owner.post("/analytics/track/batch", json={"siteId": site["id"], "events": events}).json()["accepted"]
        == 4
    )
    for order_id, currency, total in [("o1", "EUR", "10.50"), ("o2", "EUR", "4.50"), ("o3", "JPY", "1200")]:
        order = {"siteId": site["id"], "orderId": order_id + batch, "visitorId": "phone", "sessionId": "s1",
                 "currency": currency, "total": total, "timestamp": iso(ago),
                 "items": [{"productItemCode": "P", "quantity": 1, "price": total}]}  # fmt: skip
        assert owner.post("/analytics/track/order", json=order).status_code == 201
    app.state.ingest.flush()


def test_overview_counts_people_across_devices_and_keeps_currencies_apart(app, owner):
    site = owner.make_site()
    load(app, owner, site)
    body = owner.get("/analytics/overview", params={"days": 7, "siteId": site["id"]}).json()
    assert body["totals"] == {"events": 4, "people": 2, "sessions": 3, "pageViews": 3, "orders": 3}
    assert body["purchaseConversionRate"] == 0.5
    assert body["revenueByCurrency"] == [
        {"currency": "EUR", "revenue": "15.00", "orders": 2, "avgOrderValue": "7.50", "refunded": "0.00"},
        {"currency": "JPY", "revenue": "1200", "orders": 1, "avgOrderValue": "1200", "refunded": "0"},
    ]
    assert body["mixedCurrency"] is True
    assert body["topEvents"][0] == {"name": "page_view", "family": "page", "count": 3, "people": 2}


def test_organisation_scope_covers_every_site_and_only_its_own(app, owner, outsider):
    first, second = owner.make_site(name="A"), owner.make_site(name="B", domain="b.example.com")
    load(app, owner, first)
    load(app, owner, second)
    other = outsider.make_site()
    load(app, outsider, other)
    body = owner.get("/analytics/overview", params={"days": 7}).json()
    assert sorted(body["scope"]["siteIds"]) == sorted([first["id"], second["id"]])
    # The two sites got the same visitor and session ids: still two storefronts' people and sessions.
    assert body["totals"] == {"events": 8, "people": 4, "sessions": 6, "pageViews": 6, "orders": 6}
    assert body["topEvents"][0] == {"name": "page_view", "family": "page", "count": 6, "people": 4}
    assert owner.get("/analytics/overview", params={"siteId": other["id"]}).status_code == 403


def test_buyers_are_a_share_of_the_people_and_a_purchase_event_naming_an_order_is_that_order(app, owner):
    site = owner.make_site()
    when = iso(timedelta(hours=1))
    events = [
        {"name": "page_view", "visitorId": "ann", "sessionId": "sa", "timestamp": when},
        {"name": "page_view", "visitorId": "bob", "sessionId": "sb", "timestamp": when},
        # bob opens ann's forwarded thank-you page: her order, not a purchase of his.
        {"name": "purchase", "visitorId": "bob", "sessionId": "sb", "timestamp": when,
         "metadata": {"orderId": "o-ann"}},
    ]  # fmt: skip
    assert (
        owner.post("/analytics/track/batch", json={"siteId": site["id"], "events": events}).status_code == 200
    )
    for order_id, visitor in [("o-ann", "ann"), ("o-cy", "cy"), ("o-dee", "dee")]:  # cy and dee: orders only
        order = {"siteId": site["id"], "orderId": order_id, "visitorId": visitor, "sessionId": "s", "total": "5",
                 "timestamp": when, "items": [{"productItemCode": "P", "quantity": 1, "price": "5"}]}  # fmt: skip
        assert owner.post("/analytics/track/order", json=order).status_code == 201
    app.state.ingest.flush()
    body = owner.get("/analytics/overview", params={"days": 7, "siteId": site["id"]}).json()
    assert (body["totals"]["people"], body["totals"]["orders"]) == (4, 3)
    assert body["purchaseConversionRate"] == 0.75  # ann, cy, dee of ann, bob, cy, dee
    # The other routes that count buyers agree.
    day = {"startDate": (datetime.now(UTC) - timedelta(days=1)).date().isoformat(),
           "endDate": datetime.now(UTC).date().isoformat()}  # fmt: skip
    identity = owner.get(
        "/analytics/identity/conversion-metrics", params={"siteId": site["id"], **day}
    ).json()
    assert (identity["totalPeople"], identity["anonymous"]["converters"]) == (4, 3)
    correlations = owner.get(f"/analytics/correlations/{site['id']}").json()  # the last 30 days
    assert correlations["totals"] == {"people": 4, "converted": 3, "notConverted": 1, "conversionRate": 0.75}


def test_dashboard_summary_compares_with_the_period_before(app, owner):
    site = owner.make_site()
    load(app, owner, site)
    load(app, owner, site, ago=timedelta(days=10), batch="-earlier")
    load(app, owner, site, ago=timedelta(days=12), batch="-earliest")
    body = owner.get("/analytics/dashboard-summary", params={"days": 7, "siteId": site["id"]}).json()
    assert body["current"]["events"] == 4
    assert body["previous"]["events"] == 8
    assert body["change"]["events"] == -0.5
    assert body["previousRevenueByCurrency"][0] == {
        "currency": "EUR",
        "revenue": "30.00",
        "orders": 4,
        "avgOrderValue": "7.50",
        "refunded": "0.00",
    }
    assert len(body["trend"]) == 7
    assert sum(day["events"] for day in body["trend"]) == 4


def test_events_breakdown_by_name(app, owner):
    site = owner.make_site()
    load(app, owner, site, ago=timedelta(seconds=1))  # `days: 1` is today (UTC) only
    body = owner.get("/analytics/events/breakdown", params={"days": 1, "siteId": site["id"]}).json()
    assert body["events"] == [
        {"name": "page_view", "family": "page", "count": 3, "people": 2},
        {"name": "identify", "family": "identity", "count": 1, "people": 1},
    ]


def test_activity_logs_list_configuration_changes(owner):
    site = owner.make_site()
    owner.put(f"/sites/{site['id']}", json={"name": "Renamed"})
    logs = owner.get("/analytics/activity-logs", params={"siteId": site["id"]}).json()["logs"]
    assert [log["action"] for log in logs] == ["site.updated", "site.created"]
    assert owner.get("/analytics/activity-logs", params={"limit": 0}).status_code == 400


def test_overview_routes_need_analytics_view(client, store, owner):
    viewer = Session(client, make_user(store, role="viewer", organization_id=owner.user["organization_id"]))
    for path in ("/analytics/overview", "/analytics/dashboard-summary", "/analytics/events/breakdown",
                 "/analytics/activity-logs"):  # fmt: skip
        assert viewer.get(path).status_code == 403
        assert client.get(path).status_code == 401
    assert owner.get("/analytics/overview", params={"days": 0}).status_code == 400


def test_a_refund_counts_as_refunded_whichever_sign_the_shop_sends(app, owner):
    site = owner.make_site()
    for order_id, total, refund in [("o1", "30.00", False), ("r1", "-10.00", True), ("r2", "5.00", True)]:
        order = {"siteId": site["id"], "orderId": order_id, "visitorId": "v", "sessionId": "s", "currency": "EUR",
                 "total": total, "isRefund": refund, "timestamp": iso(timedelta(hours=1)),
                 "items": [{"productItemCode": "P", "quantity": 1, "price": "30.00"}]}  # fmt: skip
        assert owner.post("/analytics/track/order", json=order).status_code == 201
    app.state.ingest.flush()
    body = owner.get("/analytics/overview", params={"days": 7, "siteId": site["id"]}).json()
    assert body["revenueByCurrency"] == [
        {"currency": "EUR", "revenue": "30.00", "orders": 1, "avgOrderValue": "30.00", "refunded": "15.00"}
    ]
