"""The journey and event-sequence routes over HTTP: reports, validation, tenancy, 404, exports."""

from __future__ import annotations

import csv
import io

import pytest

from tests.factories import Session, make_user

pytestmark = pytest.mark.shared_app

DAY = {"startDate": "2024-02-01", "endDate": "2024-02-01"}


def event(name: str, visitor: str, journey: str, clock: str, **extra) -> dict:
    return {"name": name, "visitorId": visitor, "sessionId": f"s-{visitor}", "journeyId": journey,
            "timestamp": f"2024-02-01T{clock}Z", **extra}  # fmt: skip


def site_with_journeys(app, owner: Session) -> dict:
    """ann buys order o-1 (also reported by a purchase event) in j-ann; bob browses in j-bob."""
    site = owner.make_site(timezone="UTC")
    events = [
        event("page_view", "ann", "j-ann", "10:00:00", url="https://shop.example.com/"),
        event("product_view", "ann", "j-ann", "10:01:00", url="https://shop.example.com/p/1",
              metadata={"productItemCode": "P1"}, entityType="product", entityId="P1"),
        event("add_to_cart", "ann", "j-ann", "10:02:00", metadata={"productItemCode": "P1"}),
        event("checkout_begin", "ann", "j-ann", "10:03:00", url="https://shop.example.com/checkout"),
        event("purchase", "ann", "j-ann", "10:04:00", url="https://shop.example.com/thanks",
              metadata={"orderId": "o-1"}),
        event("page_view", "bob", "j-bob", "11:00:00", url="https://shop.example.com/, \"sale\""),
    ]  # fmt: skip
    response = owner.post("/analytics/track/batch", json={"siteId": site["id"], "events": events})
    assert response.status_code == 200, response.text
    assert response.json()["rejected"] == []
    order = {"siteId": site["id"], "orderId": "o-1", "visitorId": "ann", "sessionId": "s-ann",
             "journeyId": "j-ann", "timestamp": "2024-02-01T10:04:00Z", "currency": "USD", "total": "42.50",
             "items": [{"productItemCode": "P1", "quantity": 1, "price": "42.50"}]}  # fmt: skip
    response = owner.post("/analytics/track/order", json=order)
    assert response.status_code == 201, response.text
    app.state.ingest.flush()
    return site


def test_list_stats_and_funnel(app, owner):
    site = site_with_journeys(app, owner)
    base = f"/analytics/journeys/{site['id']}"
    response = owner.get(base, params=DAY)
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["total"], body["limit"], body["offset"]) == (2, 50, 0)
    assert body["journeys"][1] == {
        "journeyId": "j-ann", "personId": "ann", "visitorId": "ann", "startedAt": "2024-02-01T10:00:00Z",
        "endedAt": "2024-02-01T10:04:00Z", "durationSeconds": 240.0, "eventCount": 5, "converted": True,
        "entryUrl": "https://shop.example.com/", "exitUrl": "https://shop.example.com/thanks",
        "revenue": [{"currency": "USD", "amount": "42.50"}],
    }  # fmt: skip
    assert body["journeys"][0]["journeyId"] == "j-bob" and not body["journeys"][0]["converted"]
    only = owner.get(base, params={**DAY, "converted": "true", "limit": 1}).json()
    assert (only["total"], [j["journeyId"] for j in only["journeys"]]) == (1, ["j-ann"])

    stats = owner.get(f"{base}/stats", params=DAY).json()
    assert stats == {
        "totalJourneys": 2, "convertedJourneys": 1, "conversionRate": 0.5, "avgEventsPerJourney": 3.0,
        "avgDurationSeconds": 120.0, "medianDurationSeconds": 120.0, "uniquePeople": 2,
        "revenueByCurrency": [{"currency": "USD", "revenue": "42.50", "orders": 1}], "mixedCurrency": False,
    }  # fmt: skip

    funnel = owner.get(f"{base}/funnel", params=DAY).json()
    assert funnel["totalJourneys"] == 2
    assert [(s["eventName"], s["count"], s["rate"]) for s in funnel["stages"]] == [
        ("page_view", 2, 1.0), ("product_view", 1, 0.5), ("add_to_cart", 1, 0.5),
        ("checkout_begin", 1, 0.5), ("purchase", 1, 0.5),
    ]  # fmt: skip
    # Another day: nothing started then.
    assert owner.get(base, params={"startDate": "2024-02-02", "endDate": "2024-02-02"}).json()["total"] == 0


def test_one_journey_with_its_timeline(app, owner):
    site = site_with_journeys(app, owner)
    response = owner.get(f"/analytics/journeys/{site['id']}/j-ann")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["eventCount"] == 5 and body["converted"]
    assert [e["name"] for e in body["events"]] == [
        "page_view", "product_view", "add_to_cart", "checkout_begin", "purchase"
    ]  # fmt: skip
    assert body["events"][1] == {
        "eventId": body["events"][1]["eventId"], "name": "product_view", "timestamp": "2024-02-01T10:01:00Z",
        "url": "https://shop.example.com/p/1", "entityType": "product", "entityId": "P1",
        "productItemCode": "P1", "categoryPath": None, "metadata": {"productItemCode": "P1"},
    }  # fmt: skip
    assert body["orders"] == [
        {"orderId": "o-1", "timestamp": "2024-02-01T10:04:00Z", "currency": "USD", "total": "42.50",
         "itemCount": 1}
    ]  # fmt: skip
    missing = owner.get(f"/analytics/journeys/{site['id']}/no-such-journey")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "JOURNEY_NOT_FOUND"


def test_event_sequences_insights_and_raw(app, owner):
    site = site_with_journeys(app, owner)
    base = f"/analytics/event-sequences/{site['id']}"
    insights = owner.get(f"{base}/insights", params={**DAY, "limit": 2}).json()
    assert insights["totalJourneys"] == 2
    assert [(p["sequence"], p["count"], p["share"]) for p in insights["pairs"]] == [
        (["add_to_cart", "checkout_begin"], 1, 0.5), (["checkout_begin", "purchase"], 1, 0.5)
    ]  # fmt: skip
    assert len(insights["triples"]) == 2
    assert {n["eventName"]: n["nextEventName"] for n in insights["nextEvents"]} == {
        "add_to_cart": "checkout_begin", "checkout_begin": "purchase", "page_view": "product_view",
        "product_view": "add_to_cart",
    }  # fmt: skip
    raw = owner.get(f"{base}/raw", params={**DAY, "limit": 1, "offset": 1}).json()
    assert raw == {
        "total": 2, "limit": 1, "offset": 1,
        "journeys": [{"journeyId": "j-ann",
                      "sequence": ["page_view", "product_view", "add_to_cart", "checkout_begin", "purchase"]}],
    }  # fmt: skip


def test_export_csv_and_json_carry_the_list_numbers(app, owner):
    site = site_with_journeys(app, owner)
    url = f"/analytics/journeys/{site['id']}/export"
    response = owner.get(url, params={**DAY, "format": "csv"})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/csv")
    assert "attachment" in response.headers["content-disposition"]
    assert "\r\n" in response.text
    rows = list(csv.reader(io.StringIO(response.text)))
    assert rows == [
        ["journeyId", "personId", "visitorId", "startedAt", "endedAt", "durationSeconds", "eventCount",
         "converted", "entryUrl", "exitUrl", "revenue"],
        ["j-bob", "bob", "bob", "2024-02-01T11:00:00Z", "2024-02-01T11:00:00Z", "0.0", "1", "false",
         'https://shop.example.com/, "sale"', 'https://shop.example.com/, "sale"', ""],
        ["j-ann", "ann", "ann", "2024-02-01T10:00:00Z", "2024-02-01T10:04:00Z", "240.0", "5", "true",
         "https://shop.example.com/", "https://shop.example.com/thanks", "USD 42.50"],
    ]  # fmt: skip
    as_json = owner.get(url, params={**DAY, "format": "json"})
    assert as_json.headers["content-type"].startswith("application/json")
    listed = owner.get(f"/analytics/journeys/{site['id']}", params=DAY).json()["journeys"]
    assert as_json.json() == listed
    assert [j["journeyId"] for j in owner.get(url, params={**DAY, "format": "json", "limit": 1}).json()] == [
        "j-bob"
    ]
    empty = owner.get(url, params={"startDate": "2020-01-01", "endDate": "2020-01-01", "format": "json"})
    assert empty.json() == []


def test_validation_errors_answer_400(owner):
    site = owner.make_site()
    base = f"/analytics/journeys/{site['id']}"
    cases = [
        (base, {"limit": 0}, "VALIDATION_FAILED"),
        (base, {"limit": 501}, "VALIDATION_FAILED"),
        (base, {"offset": -1}, "VALIDATION_FAILED"),
        (base, {"converted": "maybe"}, "VALIDATION_FAILED"),
        (base, {"startDate": "yesterday"}, "VALIDATION_FAILED"),
        (base, {"startDate": "2024-02-02", "endDate": "2024-02-01"}, "DATE_RANGE_INVALID"),
        (f"{base}/stats", {"startDate": "2024-02-02", "endDate": "2024-02-01"}, "DATE_RANGE_INVALID"),
        (f"{base}/funnel", {"endDate": "02/01/2024"}, "VALIDATION_FAILED"),
        (f"{base}/export", {"format": "xml"}, "VALIDATION_FAILED"),
        (f"{base}/export", {"limit": 100_001}, "VALIDATION_FAILED"),
        (f"/analytics/event-sequences/{site['id']}/insights", {"limit": 0}, "VALIDATION_FAILED"),
        (f"/analytics/event-sequences/{site['id']}/raw", {"offset": -5}, "VALIDATION_FAILED"),
    ]
    for url, params, code in cases:
        response = owner.get(url, params=params)
        assert response.status_code == 400, (url, params, response.text)
        assert response.json()["error"]["code"] == code, (url, params)


def test_an_empty_site_answers_zeros_with_the_default_range(owner):
    site = owner.make_site()
    assert owner.get(f"/analytics/journeys/{site['id']}").json() == {
        "total": 0, "limit": 50, "offset": 0, "journeys": []
    }  # fmt: skip
    assert owner.get(f"/analytics/journeys/{site['id']}/stats").json()["totalJourneys"] == 0


def test_journeys_need_a_token_analytics_view_and_the_sites_organisation(client, store, owner, outsider):
    site = owner.make_site()
    urls = [
        f"/analytics/journeys/{site['id']}", f"/analytics/journeys/{site['id']}/stats",
        f"/analytics/journeys/{site['id']}/funnel", f"/analytics/journeys/{site['id']}/export",
        f"/analytics/journeys/{site['id']}/j-1", f"/analytics/event-sequences/{site['id']}/insights",
        f"/analytics/event-sequences/{site['id']}/raw",
    ]  # fmt: skip
    viewer = Session(client, make_user(store, role="viewer", organization_id=owner.user["organization_id"]))
    for url in urls:
        assert client.get(url).status_code == 401, url
        foreign = outsider.get(url)
        assert foreign.status_code == 403, url
        assert foreign.json()["error"]["code"] == "SITE_ACCESS_DENIED"
        assert viewer.get(url).json()["error"]["code"] == "PERMISSION_DENIED", url
    # The site check comes first: another organisation never learns whether a journey exists.
    assert outsider.get(f"/analytics/journeys/{site['id']}/no-such-journey").status_code == 403
