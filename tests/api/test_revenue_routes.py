"""Revenue, attribution and identity routes over HTTP, on one hand-built shop with EUR, USD and JPY.

The shop (UTC), March 2024, lookback 30 days, time-decay half-life 7 days:
- ann (identified as u-ann): campaign C1 impression 13 Feb (31 days before her order: outside the
  window), C1 impression 1 Mar, widget W1 click 8 Mar, recommendation R1 product impression 14 Mar,
  order o1 EUR 100.00 on 15 Mar, a campaign C2 impression after it (16 Mar), a refund of 20.00 EUR on
  20 Mar.
- bob: R1 product click 10 Mar 00:00, order o2 USD 50.00 at 12:00 also reported by a purchase event.
- cy: W1 widget impression 12 Mar, R1 click 13 Mar (entityType sent as "Recommendation"), order o3
  JPY 1200 on 14 Mar.
- dan: C1 impression 20 Mar 00:00, a purchase event without an order at 01:00.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories import Session, make_user

pytestmark = pytest.mark.shared_app

MARCH = {"startDate": "2024-03-01", "endDate": "2024-03-31"}


def touch(name: str, visitor: str, at: str, kind: str, entity_id: str, **extra: Any) -> dict:
    event = {"name": name, "visitorId": visitor, "sessionId": f"s-{visitor}", "timestamp": at,
             "entityType": kind, "entityId": entity_id, **extra}  # fmt: skip
    if name.startswith("product_"):
        event["metadata"] = {"productItemCode": "P1"}
    return event


def order(visitor: str, order_id: str, at: str, currency: str, total: str, **extra: Any) -> dict:
    return {"orderId": order_id, "visitorId": visitor, "sessionId": f"s-{visitor}", "timestamp": at,
            "currency": currency, "total": total,
            "items": [{"productItemCode": "P1", "quantity": 1, "price": total.lstrip("-")}], **extra}  # fmt: skip


def load_shop(app, owner: Session, site: dict) -> None:
    events = [
        touch("impression", "ann", "2024-02-13T00:00:00Z", "campaign", "C1", userId="u-ann"),
        touch("impression", "ann", "2024-03-01T00:00:00Z", "campaign", "C1"),
        touch("click", "ann", "2024-03-08T00:00:00Z", "widget", "W1"),
        touch("product_impression", "ann", "2024-03-14T00:00:00Z", "recommendation", "R1"),
        touch("impression", "ann", "2024-03-16T00:00:00Z", "campaign", "C2"),
        touch("product_click", "bob", "2024-03-10T00:00:00Z", "recommendation", "R1"),
        {"name": "purchase", "visitorId": "bob", "sessionId": "s-bob", "timestamp": "2024-03-10T12:00:00Z",
         "eventId": "buy-bob", "metadata": {"orderId": "o2"}},
        touch("widget_impression", "cy", "2024-03-12T00:00:00Z", "widget", "W1"),
        touch("click", "cy", "2024-03-13T00:00:00Z", "Recommendation", "R1"),
        touch("impression", "dan", "2024-03-20T00:00:00Z", "campaign", "C1"),
        {"name": "purchase", "visitorId": "dan", "sessionId": "s-dan", "timestamp": "2024-03-20T01:00:00Z",
         "eventId": "buy-dan"},
    ]  # fmt: skip
    response = owner.post("/analytics/track/batch", json={"siteId": site["id"], "events": events})
    assert response.status_code == 200, response.text
    assert response.json()["rejected"] == []
    for body in (
        order("ann", "o1", "2024-03-15T00:00:00Z", "EUR", "100.00"),
        order("ann", "r1", "2024-03-20T00:00:00Z", "EUR", "-20.00", isRefund=True, refundOf="o1"),
        order("bob", "o2", "2024-03-10T12:00:00Z", "USD", "50.00"),
        order("cy", "o3", "2024-03-14T00:00:00Z", "JPY", "1200"),
    ):
        response = owner.post("/analytics/track/order", json={"siteId": site["id"], **body})
        assert response.status_code == 201, response.text
    app.state.ingest.flush()


@pytest.fixture
def shop(app, owner: Session) -> dict:
    site = owner.make_site(timezone="UTC")
    load_shop(app, owner, site)
    return site


def amounts_have_currencies(node: Any) -> bool:
    """Every object holding an amount also names its own currency (no merged totals anywhere)."""
    if isinstance(node, dict):
        money_keys = {"revenue", "amount", "refunded", "netRevenue", "avgOrderValue", "revenuePerPerson"}
        if money_keys & node.keys() and "currency" not in node:
            return False
        return all(amounts_have_currencies(v) for v in node.values())
    if isinstance(node, list):
        return all(amounts_have_currencies(v) for v in node)
    return True


# --- revenue overview --------------------------------------------------------------------------------


def test_revenue_overview_keeps_eur_usd_and_jpy_apart(owner, shop):
    response = owner.get("/analytics/revenue/overview", params={"siteId": shop["id"], **MARCH})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["revenueByCurrency"] == [
        {"currency": "EUR", "revenue": "100.00", "orders": 1, "avgOrderValue": "100.00", "refunds": 1,
         "refunded": "20.00", "netRevenue": "80.00"},
        {"currency": "JPY", "revenue": "1200", "orders": 1, "avgOrderValue": "1200", "refunds": 0,
         "refunded": "0", "netRevenue": "1200"},
        {"currency": "USD", "revenue": "50.00", "orders": 1, "avgOrderValue": "50.00", "refunds": 0,
         "refunded": "0.00", "netRevenue": "50.00"},
    ]  # fmt: skip
    assert (body["orders"], body["refunds"], body["mixedCurrency"]) == (3, 1, True)
    assert body["totalRevenue"] == {"amount": None, "currency": None, "mixed": True}
    assert body["totalNetRevenue"] == {"amount": None, "currency": None, "mixed": True}
    assert len(body["daily"]) == 31
    assert body["daily"][13] == {
        "date": "2024-03-14",
        "revenueByCurrency": [
            {"currency": "EUR", "revenue": "0.00", "orders": 0},
            {"currency": "JPY", "revenue": "1200", "orders": 1},
            {"currency": "USD", "revenue": "0.00", "orders": 0},
        ],
    }
    assert amounts_have_currencies(body)


def test_revenue_overview_of_one_currency_has_a_total_and_days_in_the_site_time_zone(app, owner):
    site = owner.make_site(timezone="Asia/Tokyo", currency="JPY")
    for order_id, at, total in [("a", "2024-03-31T14:30:00Z", "1000"), ("b", "2024-03-31T15:30:00Z", "501")]:
        body = {"siteId": site["id"], **order("ann", order_id, at, "JPY", total)}
        assert owner.post("/analytics/track/order", json=body).status_code == 201
    app.state.ingest.flush()
    # 15:30 UTC on 31 March is 1 April in Tokyo.
    march = owner.get("/analytics/revenue/overview", params={"siteId": site["id"], **MARCH}).json()
    assert march["totalRevenue"] == {"amount": "1000", "currency": "JPY", "mixed": False}
    april = owner.get(
        "/analytics/revenue/overview",
        params={"siteId": site["id"], "startDate": "2024-04-01", "endDate": "2024-04-01"},
    ).json()
    assert april["revenueByCurrency"][0]["revenue"] == "501"
    both = owner.get(
        "/analytics/revenue/overview",
        params={"siteId": site["id"], "startDate": "2024-03-31", "endDate": "2024-04-01"},
    ).json()
    # 1501 / 2 = 750.5: JPY has no minor unit, rounded half to even.
    assert both["revenueByCurrency"][0]["avgOrderValue"] == "750"
    empty = owner.get(
        "/analytics/revenue/overview",
        params={"siteId": site["id"], "startDate": "2024-01-01", "endDate": "2024-01-02"},
    ).json()
    assert (empty["revenueByCurrency"], empty["totalRevenue"]) == (
        [], {"amount": "0", "currency": "JPY", "mixed": False}
    )  # fmt: skip
    assert [d["revenueByCurrency"] for d in empty["daily"]] == [[], []]


# --- attribution of revenue to campaigns, widgets, recommendations ------------------------------------

# ann's order (EUR 100): C1 (14 days before), W1 (7 days), R1 (1 day). Time decay weights 2^-2, 2^-1,
# 2^(-1/7) normalised: 0.25 / 1.655724 = 0.150991, 0.5 / 1.655724 = 0.301983, 0.905724 / 1.655724 =
# 0.547026. dan's purchase (no order) has C1 alone: a whole conversion in every model.


def models_of(body: dict) -> dict[str, tuple]:
    return {m["model"]: (m["conversions"], m["revenueByCurrency"], m["totalRevenue"]) for m in body["models"]}


def test_campaign_revenue_by_every_model(owner, shop):
    response = owner.get("/analytics/revenue/campaigns/C1", params={"siteId": shop["id"], **MARCH})
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["entityType"], body["entityId"], body["lookbackDays"], body["halfLifeDays"]) == (
        "campaign", "C1", 30, 7.0
    )  # fmt: skip
    assert (body["impressions"], body["clicks"], body["ctr"], body["people"]) == (2, 0, 0.0, 2)
    assert body["assistedConversions"] == 2

    def eur(revenue: str, orders: float) -> tuple:
        return [{"currency": "EUR", "revenue": revenue, "orders": orders}], {
            "amount": revenue, "currency": "EUR", "mixed": False
        }  # fmt: skip

    assert models_of(body) == {
        "first_touch": (2.0, *eur("100.00", 1.0)),
        "last_touch": (1.0, *eur("0.00", 0.0)),
        "linear": (1.333333, *eur("33.33", 0.333333)),
        "time_decay": (1.150991, *eur("15.10", 0.150991)),
        "position_based": (1.4, *eur("40.00", 0.4)),
    }


def test_a_longer_lookback_reaches_the_february_impression(owner, shop):
    body = owner.get(
        "/analytics/revenue/campaigns/C1", params={"siteId": shop["id"], "lookbackDays": 60, **MARCH}
    ).json()
    models = models_of(body)
    # ann's order now has four touchpoints, two of them C1 (the first one among them).
    assert models["linear"][1] == [{"currency": "EUR", "revenue": "50.00", "orders": 0.5}]
    assert models["position_based"][1] == [{"currency": "EUR", "revenue": "50.00", "orders": 0.5}]
    assert models["first_touch"][1] == [{"currency": "EUR", "revenue": "100.00", "orders": 1.0}]


def test_widget_revenue_splits_across_currencies(owner, shop):
    body = owner.get("/analytics/revenue/widgets/W1", params={"siteId": shop["id"], **MARCH}).json()
    assert (body["impressions"], body["clicks"], body["ctr"], body["people"]) == (1, 1, 1.0, 2)
    models = models_of(body)
    # cy's JPY 1200: W1 impression 2 days before, R1 click 1 day before. Time decay gives W1
    # 2^(-2/7) / (2^(-2/7) + 2^(-1/7)) = 1 / (1 + 2^(1/7)) = 0.475265, so 570.318 -> JPY 570.
    assert models["first_touch"] == (
        1.0,
        [
            {"currency": "EUR", "revenue": "0.00", "orders": 0.0},
            {"currency": "JPY", "revenue": "1200", "orders": 1.0},
        ],
        {"amount": None, "currency": None, "mixed": True},
    )
    assert models["position_based"][1] == [
        {"currency": "EUR", "revenue": "20.00", "orders": 0.2},
        {"currency": "JPY", "revenue": "600", "orders": 0.5},
    ]
    assert models["time_decay"][1] == [
        {"currency": "EUR", "revenue": "30.20", "orders": 0.301983},
        {"currency": "JPY", "revenue": "570", "orders": 0.475265},
    ]


def test_recommendation_revenue_and_an_unknown_id(owner, shop):
    body = owner.get("/analytics/revenue/recommendations/R1", params={"siteId": shop["id"], **MARCH}).json()
    models = models_of(body)
    assert models["last_touch"][1] == [
        {"currency": "EUR", "revenue": "100.00", "orders": 1.0},
        {"currency": "JPY", "revenue": "1200", "orders": 1.0},
        {"currency": "USD", "revenue": "50.00", "orders": 1.0},
    ]
    assert models["linear"][1][0] == {"currency": "EUR", "revenue": "33.33", "orders": 0.333333}
    unknown = owner.get(
        "/analytics/revenue/recommendations/nope", params={"siteId": shop["id"], **MARCH}
    ).json()
    assert (unknown["impressions"], unknown["assistedConversions"]) == (0, 0)
    assert all(m["conversions"] == 0 and m["revenueByCurrency"] == [] for m in unknown["models"])
    # a card with nothing to total is zero in the site's currency, as on the revenue overview
    assert {str(m["totalRevenue"]) for m in unknown["models"]} == {
        str({"amount": "0.00", "currency": "EUR", "mixed": False})
    }


def test_a_purchase_event_is_the_sale_it_names_of_any_date_and_a_refund_is_no_sale(app, owner):
    # eve sees C1 on 10 Mar and sends a purchase event naming her order "late" on 31 Mar; the shop
    # records that sale on 3 Apr (payment cleared). fay clicks C2 on 20 Mar and sends a purchase event
    # on 21 Mar naming "r-fay", which is a refund, not a sale: a purchase without money.
    site = owner.make_site(timezone="UTC")
    events = [
        touch("impression", "eve", "2024-03-10T00:00:00Z", "campaign", "C1"),
        {"name": "purchase", "visitorId": "eve", "sessionId": "s-eve", "timestamp": "2024-03-31T12:00:00Z",
         "eventId": "buy-eve", "metadata": {"orderId": "late"}},
        touch("click", "fay", "2024-03-20T00:00:00Z", "campaign", "C2"),
        {"name": "purchase", "visitorId": "fay", "sessionId": "s-fay", "timestamp": "2024-03-21T00:00:00Z",
         "eventId": "buy-fay", "metadata": {"orderId": "r-fay"}},
    ]  # fmt: skip
    response = owner.post("/analytics/track/batch", json={"siteId": site["id"], "events": events})
    assert response.json()["rejected"] == []
    for body in (
        order("eve", "late", "2024-04-03T00:00:00Z", "EUR", "40.00"),
        order("fay", "r-fay", "2024-03-05T00:00:00Z", "EUR", "-10.00", isRefund=True),
    ):
        assert owner.post("/analytics/track/order", json={"siteId": site["id"], **body}).status_code == 201
    app.state.ingest.flush()

    def campaign(entity_id: str, dates: dict) -> dict:
        params = {"siteId": site["id"], **dates}
        return owner.get(f"/analytics/revenue/campaigns/{entity_id}", params=params).json()

    # March: eve's purchase event is her April sale, no conversion of March (it counted as one without
    # money, and again in April); fay's names no sale, so it is a conversion (it counted as none).
    c1, c2 = campaign("C1", MARCH), campaign("C2", MARCH)
    assert (c1["assistedConversions"], {m["conversions"] for m in c1["models"]}) == (0, {0})
    assert (c2["assistedConversions"], {m["conversions"] for m in c2["models"]}) == (1, {1.0})
    assert all(m["revenueByCurrency"] == [] for m in c2["models"])
    april = campaign("C1", {"startDate": "2024-04-01", "endDate": "2024-04-30"})
    assert april["assistedConversions"] == 1
    assert {str(models) for models in models_of(april).values()} == {
        str((1.0, [{"currency": "EUR", "revenue": "40.00", "orders": 1.0}],
             {"amount": "40.00", "currency": "EUR", "mixed": False}))
    }  # fmt: skip


def test_recommendations_breakdown(owner, shop):
    response = owner.get(
        "/analytics/recommendations/breakdown",
        params={"siteId": shop["id"], "model": "position_based", **MARCH},
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["model"], body["total"], body["impressions"], body["clicks"], body["ctr"]) == (
        "position_based", 1, 1, 2, 2.0
    )  # fmt: skip
    (row,) = body["recommendations"]
    assert row == {
        "recommendationId": "R1", "impressions": 1, "clicks": 2, "ctr": 2.0, "people": 3, "assistedConversions": 3,
        "attributedConversions": 1.9,
        "revenueByCurrency": [
            {"currency": "EUR", "revenue": "40.00", "orders": 0.4},
            {"currency": "JPY", "revenue": "600", "orders": 0.5},
            {"currency": "USD", "revenue": "50.00", "orders": 1.0},
        ],
        "totalRevenue": {"amount": None, "currency": None, "mixed": True},
    }  # fmt: skip
    assert body["revenueByCurrency"] == row["revenueByCurrency"]
    assert amounts_have_currencies(body)


# --- identity ----------------------------------------------------------------------------------------


def test_identity_conversion_metrics(owner, shop):
    response = owner.get("/analytics/identity/conversion-metrics", params={"siteId": shop["id"], **MARCH})
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["totalPeople"], body["identifiedShare"], body["conversionRateRatio"]) == (4, 0.25, 1.0)
    assert body["identified"] == {
        "people": 1, "converters": 1, "conversionRate": 1.0, "orders": 1,
        "revenueByCurrency": [{"currency": "EUR", "revenue": "100.00", "orders": 1, "buyers": 1,
                               "avgOrderValue": "100.00", "revenuePerPerson": "100.00"}],
        "totalRevenue": {"amount": "100.00", "currency": "EUR", "mixed": False},
    }  # fmt: skip
    anonymous = body["anonymous"]
    assert (anonymous["people"], anonymous["converters"], anonymous["orders"]) == (3, 3, 2)
    assert anonymous["revenueByCurrency"] == [
        {"currency": "JPY", "revenue": "1200", "orders": 1, "buyers": 1, "avgOrderValue": "1200",
         "revenuePerPerson": "400"},
        {"currency": "USD", "revenue": "50.00", "orders": 1, "buyers": 1, "avgOrderValue": "50.00",
         "revenuePerPerson": "16.67"},
    ]  # fmt: skip
    assert anonymous["totalRevenue"] == {"amount": None, "currency": None, "mixed": True}
    # Before the 10th only ann is seen, and she bought on the 15th.
    early = owner.get(
        "/analytics/identity/conversion-metrics",
        params={"siteId": shop["id"], "startDate": "2024-03-01", "endDate": "2024-03-09"},
    ).json()
    assert (early["identified"]["people"], early["identified"]["converters"]) == (1, 0)
    assert early["anonymous"]["people"] == 0 and early["conversionRateRatio"] is None


# --- one conversion ----------------------------------------------------------------------------------


def test_event_attribution_of_an_order(owner, shop):
    response = owner.get("/analytics/events/o1/attribution")
    assert response.status_code == 200, response.text
    body = response.json()
    assert "totalTouches" not in body
    assert (body["conversionEventAt"], body["totalTouchpoints"], body["totalInteractions"]) == (
        "2024-03-15T00:00:00Z", 3, 1
    )  # fmt: skip
    assert (body["conversionType"], body["personId"], body["windowStart"]) == (
        "order", "u-ann", "2024-02-14T00:00:00Z"
    )  # fmt: skip
    assert body["order"] == {"orderId": "o1", "currency": "EUR", "total": "100.00"}
    assert [(t["entityType"], t["entityId"], t["kind"], t["credits"]) for t in body["touchpoints"]] == [
        ("campaign", "C1", "impression", {"first_touch": 1.0, "last_touch": 0.0, "linear": 0.333333,
                                          "time_decay": 0.150991, "position_based": 0.4}),
        ("widget", "W1", "click", {"first_touch": 0.0, "last_touch": 0.0, "linear": 0.333333,
                                   "time_decay": 0.301983, "position_based": 0.2}),
        ("recommendation", "R1", "impression", {"first_touch": 0.0, "last_touch": 1.0, "linear": 0.333333,
                                                "time_decay": 0.547026, "position_based": 0.4}),
    ]  # fmt: skip
    by_model = {
        m["model"]: {e["entityId"]: (e["credit"], e["revenue"]) for e in m["entities"]}
        for m in body["models"]
    }
    assert by_model["time_decay"] == {
        "R1": (0.547026, "54.70"),
        "W1": (0.301983, "30.20"),
        "C1": (0.150991, "15.10"),
    }
    assert by_model["position_based"] == {"C1": (0.4, "40.00"), "R1": (0.4, "40.00"), "W1": (0.2, "20.00")}


def test_event_attribution_of_a_purchase_event_and_of_one_without_money(owner, shop):
    bob = owner.get("/analytics/events/buy-bob/attribution", params={"siteId": shop["id"]}).json()
    assert (bob["conversionType"], bob["conversionName"], bob["totalTouchpoints"], bob["totalInteractions"]) == (
        "event", "purchase", 1, 1
    )  # fmt: skip
    assert bob["order"] == {"orderId": "o2", "currency": "USD", "total": "50.00"}
    assert all(m["entities"] == [{"entityType": "recommendation", "entityId": "R1", "touchpoints": 1,
                                  "credit": 1.0, "revenue": "50.00"}] for m in bob["models"])  # fmt: skip
    dan = owner.get("/analytics/events/buy-dan/attribution", params={"lookbackDays": 1}).json()
    assert (dan["order"], dan["totalTouchpoints"], dan["models"][0]["entities"][0]["revenue"]) == (
        None,
        1,
        None,
    )
    # cy's two touchpoints: 50/50 by position, JPY shares without decimals.
    cy = owner.get("/analytics/events/o3/attribution").json()
    position = next(m for m in cy["models"] if m["model"] == "position_based")["entities"]
    assert {(e["entityId"], e["credit"], e["revenue"]) for e in position} == {
        ("W1", 0.5, "600"),
        ("R1", 0.5, "600"),
    }


# --- access and validation ---------------------------------------------------------------------------


def test_unknown_and_foreign_event_ids_answer_404_and_foreign_sites_403(app, owner, outsider, shop):
    response = owner.get("/analytics/events/no-such-event/attribution")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "EVENT_NOT_FOUND"
    assert owner.get("/analytics/events/r1/attribution").status_code == 404  # a refund is no conversion
    other = outsider.make_site(timezone="UTC")
    load_shop(app, outsider, other)
    assert outsider.get("/analytics/events/o1/attribution").json()["personId"] == "u-ann"
    # The same ids on two of the owner's sites are ambiguous without a siteId.
    second = owner.make_site(name="B", domain="b.example.com", timezone="UTC")
    load_shop(app, owner, second)
    ambiguous = owner.get("/analytics/events/o1/attribution")
    assert (ambiguous.status_code, ambiguous.json()["error"]["code"]) == (400, "EVENT_ID_AMBIGUOUS")
    assert owner.get("/analytics/events/o1/attribution", params={"siteId": second["id"]}).status_code == 200
    for path in (
        "/analytics/revenue/overview", "/analytics/revenue/campaigns/C1", "/analytics/revenue/widgets/W1",
        "/analytics/revenue/recommendations/R1", "/analytics/recommendations/breakdown",
        "/analytics/identity/conversion-metrics", "/analytics/events/o1/attribution",
    ):  # fmt: skip
        response = outsider.get(path, params={"siteId": shop["id"]})
        assert response.status_code == 403, path
        assert response.json()["error"]["code"] == "SITE_ACCESS_DENIED"


def test_routes_need_analytics_view(client, store, owner, shop):
    viewer = Session(client, make_user(store, role="viewer", organization_id=owner.user["organization_id"]))
    for path in ("/analytics/revenue/overview", "/analytics/revenue/campaigns/C1",
                 "/analytics/recommendations/breakdown", "/analytics/identity/conversion-metrics",
                 "/analytics/events/o1/attribution"):  # fmt: skip
        assert viewer.get(path, params={"siteId": shop["id"]}).status_code == 403
        assert client.get(path, params={"siteId": shop["id"]}).status_code == 401


BAD_PARAMETERS = [
    ("/analytics/revenue/overview", {"siteId": None}, "VALIDATION_FAILED"),
    ("/analytics/revenue/overview", {"days": 7, "startDate": "2024-03-01"}, "RANGE_PARAMETERS_CONFLICT"),
    ("/analytics/revenue/overview", {"days": 0}, "VALIDATION_FAILED"),
    ("/analytics/revenue/overview", {"days": 366}, "VALIDATION_FAILED"),
    (
        "/analytics/revenue/overview",
        {"startDate": "2024-03-02", "endDate": "2024-03-01"},
        "DATE_RANGE_INVALID",
    ),
    ("/analytics/revenue/overview", {"startDate": "March"}, "VALIDATION_FAILED"),
    # A day per row: 1970 to 2200 would be an answer of 84,000 days.
    (
        "/analytics/revenue/overview",
        {"startDate": "1970-01-01", "endDate": "2200-01-01"},
        "DATE_RANGE_TOO_LONG",
    ),
    ("/analytics/revenue/campaigns/C1", {"lookbackDays": 0}, "VALIDATION_FAILED"),
    ("/analytics/revenue/widgets/W1", {"lookbackDays": "thirty"}, "VALIDATION_FAILED"),
    ("/analytics/recommendations/breakdown", {"model": "u_shaped"}, "VALIDATION_FAILED"),
    ("/analytics/recommendations/breakdown", {"limit": 0}, "VALIDATION_FAILED"),
    ("/analytics/identity/conversion-metrics", {"endDate": "2024-13-01"}, "VALIDATION_FAILED"),
    ("/analytics/events/o1/attribution", {"lookbackDays": 400}, "VALIDATION_FAILED"),
]


def test_bad_parameters_answer_400_in_the_envelope(owner):
    site = owner.make_site(timezone="UTC")
    for path, params, code in BAD_PARAMETERS:
        sent = {k: v for k, v in {"siteId": site["id"], **params}.items() if v is not None}
        response = owner.get(path, params=sent)
        assert response.status_code == 400, (path, params, response.text)
        error = response.json()["error"]
        assert (set(error), error["code"]) == ({"code", "message", "details"}, code), (path, params)


def test_a_missing_site_id_is_reported_once(owner):
    # Both the site's and the range's dependencies read siteId.
    details = owner.get("/analytics/revenue/overview").json()["error"]["details"]
    assert details == {"fields": [{"field": "query.siteId", "message": "Field required", "type": "missing"}]}


def test_openapi_descriptions_state_the_rules(owner):
    spec = owner.client.get("/openapi.json").json()["paths"]
    campaign = spec["/api/v1/analytics/revenue/campaigns/{entityId}"]["get"]["description"]
    for rule in ("half-life 7 days", "40% first", "lookbackDays", "never summed across currencies"):
        assert rule in campaign
    assert "totalInteractions" in spec["/api/v1/analytics/events/{eventId}/attribution"]["get"]["description"]
