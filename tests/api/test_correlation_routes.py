"""The correlation route over HTTP: odds ratios by hand, the date range, 403 and 400."""

from __future__ import annotations

import pytest

from tests.factories import Session, make_user

pytestmark = pytest.mark.shared_app

RANGE = {"startDate": "2024-03-01T00:00:00Z", "endDate": "2024-03-02T00:00:00Z"}


def load(app, owner: Session) -> dict:
    """ann views Kitchen and buys (an order); bob views Kitchen and leaves; cy reads the home page and searches;
    dan views Kitchen and buys the next day, outside the range."""
    site = owner.make_site()

    def ev(name: str, visitor: str, clock: str, day: int = 1, **metadata) -> dict:
        return {"name": name, "visitorId": visitor, "sessionId": f"s-{visitor}", "metadata": metadata,
                "timestamp": f"2024-03-{day:02d}T{clock}Z"}  # fmt: skip

    events = [
        ev("page_view", "ann", "10:00:00"), ev("category_view", "ann", "10:01:00", categoryPath="Kitchen"),
        ev("page_view", "bob", "11:00:00"), ev("category_view", "bob", "11:01:00", categoryPath="Kitchen"),
        ev("page_view", "cy", "12:00:00"), ev("search_query", "cy", "12:01:00", query="mug"),
        ev("category_view", "dan", "13:00:00", categoryPath="Kitchen"),
    ]  # fmt: skip
    response = owner.post("/analytics/track/batch", json={"siteId": site["id"], "events": events})
    assert response.status_code == 200 and response.json()["rejected"] == [], response.text
    for order_id, visitor, moment in (
        ("o1", "ann", "2024-03-01T10:05:00Z"),
        ("o2", "dan", "2024-03-02T09:00:00Z"),
    ):
        order = {"siteId": site["id"], "orderId": order_id, "visitorId": visitor, "sessionId": f"s-{visitor}",
                 "timestamp": moment, "currency": "EUR", "total": "5",
                 "items": [{"productItemCode": "P", "quantity": 1, "price": "5"}]}  # fmt: skip
        assert owner.post("/analytics/track/order", json=order).status_code == 201
    app.state.ingest.flush()
    return site


def test_odds_ratios_over_the_range(app, owner):
    site = load(app, owner)
    response = owner.get(f"/analytics/correlations/{site['id']}", params=RANGE)
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["startDate"], body["endDate"]) == ("2024-03-01T00:00:00Z", "2024-03-02T00:00:00Z")
    # ann converted; bob, cy and dan (who bought only the next day) did not: a 1-in-4 split.
    assert body["totals"] == {"people": 4, "converted": 1, "notConverted": 3, "conversionRate": 0.25}
    assert body["skewed"] is False
    rows = [(r["event"], r["successCount"], r["failureCount"], r["oddsRatio"]) for r in body["positive"]]
    assert rows == [  # a = 1, b = 2, c = 0, d = 1: (1+1)(1+1) / ((2+1)(0+1))
        ("category_view", 1, 2, 1.333333), ("category_view::Kitchen", 1, 2, 1.333333), ("page_view", 1, 2, 1.333333),
    ]  # fmt: skip
    rows = [(r["event"], r["successCount"], r["failureCount"], r["oddsRatio"]) for r in body["negative"]]
    assert rows == [("search_query", 0, 1, 0.75)]  # (0+1)(2+1) / ((1+1)(1+1))

    # Including the next day, dan converted too: category_view is then all converters but bob.
    wider = owner.get(
        f"/analytics/correlations/{site['id']}", params={**RANGE, "endDate": "2024-03-03"}
    ).json()
    assert wider["totals"] == {"people": 4, "converted": 2, "notConverted": 2, "conversionRate": 0.5}
    assert wider["positive"][0] == {
        "event": "category_view",
        "eventName": "category_view",
        "categoryPath": None,
        "successCount": 2,
        "failureCount": 1,
        "oddsRatio": 3.0,
        "correlationType": "success",
    }  # (2+1)(1+1) / ((1+1)(0+1))
    assert (
        len(
            owner.get(f"/analytics/correlations/{site['id']}", params={**RANGE, "limit": 1}).json()[
                "positive"
            ]
        )
        == 1
    )


def test_access_and_bad_parameters(client, store, app, owner, outsider):
    site = owner.make_site()
    path = f"/analytics/correlations/{site['id']}"
    viewer = Session(client, make_user(store, role="viewer", organization_id=owner.user["organization_id"]))
    assert outsider.get(path).status_code == 403
    assert viewer.get(path).status_code == 403
    assert client.get(path).status_code == 401
    assert owner.get(path).status_code == 200  # the last 30 days by default
    for params in ({"limit": 0}, {"limit": 101}, {"startDate": "yesterday"}, {"endDate": "2024-13-01"},
                   {"startDate": "2024-03-02T00:00:00Z", "endDate": "2024-03-01T00:00:00Z"},
                   {"startDate": "2024-03-01", "endDate": "2024-03-01"}):  # fmt: skip
        response = owner.get(path, params=params)
        assert response.status_code == 400, (params, response.text)
        assert set(response.json()["error"]) == {"code", "message", "details"}
