"""Consent analytics over HTTP on tiny hand-built data: exact numbers for stats, categories, trends,
impact, export, simulate and compare; validation (400) and access (401/403)."""

from __future__ import annotations

import asyncio
import csv
import io
from datetime import UTC, datetime

import pytest

from api.analytics.consent import service as consent_service
from ingest.validation import Context
from tests.factories import Session, make_user

pytestmark = pytest.mark.shared_app

RANGE = {"startDate": "2024-02-01", "endDate": "2024-02-03"}
ALL = {"necessary": True, "analytics": True, "marketing": True, "preferences": True}


def event(visitor: str, at: str, consent: dict | None = None, **extra) -> dict:
    body = {"name": "page_view", "visitorId": visitor, "sessionId": f"s-{visitor}", "timestamp": at,
            "eventId": f"{visitor}-{at}", **extra}  # fmt: skip
    if consent is not None:
        body["consent"] = consent
    return body


def record(app, site: dict, consent_id: str, visitor: str, at: str, categories: dict, **extra) -> None:
    """A consent record as the public route stores it, with a historical timestamp (the public route
    accepts 7 days back only)."""
    ctx = Context(site_id=site["id"], site_currency="EUR", received_at=datetime.now(UTC), channel="web",
                  historical=True)  # fmt: skip
    raw = {"consentId": consent_id, "visitorId": visitor, "timestamp": at, "categories": categories, **extra}
    asyncio.run(app.state.ingest.accept_consent(raw, ctx))


def load(app, owner: Session, site: dict, events: list[dict], orders: list[dict] = ()) -> None:
    response = owner.post("/analytics/track/batch", json={"siteId": site["id"], "events": events})
    assert response.status_code == 200 and response.json()["rejected"] == [], response.text
    for order in orders:
        response = owner.post("/analytics/track/order", json={"siteId": site["id"], **order})
        assert response.status_code == 201, response.text
    app.state.ingest.flush()


def order(order_id: str, visitor: str, at: str, currency: str, total: str, **extra) -> dict:
    return {"orderId": order_id, "visitorId": visitor, "sessionId": f"s-{visitor}", "timestamp": at,
            "currency": currency, "total": total, "items": [{"productItemCode": "P", "quantity": 1, "price": total}],
            **extra}  # fmt: skip


def shop_with_consent(app, owner: Session) -> dict:
    """ann: an event granting analytics and marketing, a banner refusing marketing at the same µs (the
    record wins), an EUR order, then a banner accepting all. bob: rejects all optional categories,
    buys in JPY, then an event grants analytics. cat (user u-cat on two devices): an event refusing
    analytics, a record granting preferences. dan: no consent at all, a USD order and its refund.
    eve: a record after the range."""
    site = owner.make_site(name="Main", timezone="UTC")
    record(app, site, "r-ann-1", "a1", "2024-02-01T10:00:00Z", {"marketing": False}, source="banner")
    record(app, site, "r-ann-2", "a1", "2024-02-02T09:00:00Z", ALL, source="banner")
    record(app, site, "r-bob", "b1", "2024-02-01T12:00:00Z",
           {"necessary": True, "analytics": False, "marketing": False, "preferences": False}, source="banner")  # fmt: skip
    record(
        app,
        site,
        "r-cat",
        "c2",
        "2024-02-03T15:00:00.5Z",
        {"preferences": True},
        userId="u-cat",
        source="sdk",
    )
    record(app, site, "r-eve", "e1", "2024-02-05T10:00:00Z", {"analytics": True})
    events = [
        event("a1", "2024-02-01T10:00:00Z", {"analytics": True, "marketing": True}),
        event("b1", "2024-02-01T12:01:00Z"),
        event("b1", "2024-02-02T08:00:00Z", {"analytics": True}),
        event("c1", "2024-02-03T15:00:00Z", {"analytics": False}, userId="u-cat"),
        event("d1", "2024-02-02T10:00:00Z"),
    ]
    orders = [
        order("o1", "a1", "2024-02-01T10:05:00Z", "EUR", "30.50"),
        order("o2", "b1", "2024-02-01T12:30:00Z", "JPY", "1200"),
        order("o3", "d1", "2024-02-02T10:01:00Z", "USD", "10"),
        order("o3-r", "d1", "2024-02-02T11:00:00Z", "USD", "-10", isRefund=True, refundOf="o3"),
    ]
    load(app, owner, site, events, orders)
    return site


def figures(categories: list[dict]) -> dict[str, tuple]:
    return {c["category"]: (c["granted"], c["denied"], c["optInRate"]) for c in categories}


def test_stats_count_each_person_once_with_their_latest_state(app, owner):
    site = shop_with_consent(app, owner)
    response = owner.get(f"/analytics/consent/{site['id']}/stats", params=RANGE)
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["people"], body["consentRecords"], body["eventsWithConsent"]) == (3, 4, 3)
    assert body["categories"] == [
        {"category": "necessary", "granted": 2, "denied": 0, "decided": 2, "unstated": 1, "optInRate": 1.0},
        {"category": "analytics", "granted": 2, "denied": 1, "decided": 3, "unstated": 0, "optInRate": 0.666667},
        {"category": "marketing", "granted": 1, "denied": 1, "decided": 2, "unstated": 1, "optInRate": 0.5},
        {"category": "preferences", "granted": 2, "denied": 1, "decided": 3, "unstated": 0, "optInRate": 0.666667},
    ]  # fmt: skip
    assert body["choices"] == {"decided": 2, "acceptAll": 1, "rejectAll": 0, "custom": 1, "acceptAllRate": 0.5,
                               "rejectAllRate": 0.0, "customRate": 0.5}  # fmt: skip
    # Only 1 February: ann's same-instant record refused marketing; bob refused everything optional.
    day = owner.get(
        f"/analytics/consent/{site['id']}/stats", params={"startDate": "2024-02-01", "endDate": "2024-02-01"}
    ).json()
    assert figures(day["categories"]) == {"necessary": (1, 0, 1.0), "analytics": (1, 1, 0.5),
                                          "marketing": (0, 2, 0.0), "preferences": (0, 1, 0.0)}  # fmt: skip
    # Only bob stated all three optional categories that day (ann never stated preferences): he refused them.
    assert (day["choices"]["decided"], day["choices"]["rejectAll"], day["choices"]["rejectAllRate"]) == (
        1,
        1,
        1.0,
    )


def test_categories_add_changes_of_mind(app, owner):
    site = shop_with_consent(app, owner)
    body = owner.get(f"/analytics/consent/{site['id']}/categories", params=RANGE).json()
    assert body["people"] == 3
    assert [(c["category"], c["required"], c["grants"], c["revocations"], c["peopleChanged"], c["optInRate"])
            for c in body["categories"]] == [
        ("necessary", True, 0, 0, 0, 1.0), ("analytics", False, 1, 0, 1, 0.666667),
        ("marketing", False, 1, 1, 1, 0.5), ("preferences", False, 0, 0, 0, 0.666667),
    ]  # fmt: skip
    assert all(c["description"] for c in body["categories"])


def test_trends_per_day_week_and_month(app, owner):
    site = shop_with_consent(app, owner)
    url = f"/analytics/consent/{site['id']}/trends"
    days = owner.get(url, params={**RANGE, "interval": "day"}).json()
    assert days["interval"] == "day"
    assert [(p["periodStart"], p["people"], p["consentRecords"], figures(p["categories"])) for p in days["periods"]] == [
        ("2024-02-01", 2, 2, {"necessary": (1, 0, 1.0), "analytics": (1, 1, 0.5), "marketing": (0, 2, 0.0),
                              "preferences": (0, 1, 0.0)}),
        ("2024-02-02", 2, 1, {"necessary": (1, 0, 1.0), "analytics": (2, 0, 1.0), "marketing": (1, 0, 1.0),
                              "preferences": (1, 0, 1.0)}),
        ("2024-02-03", 1, 1, {"necessary": (0, 0, 0.0), "analytics": (0, 1, 0.0), "marketing": (0, 0, 0.0),
                              "preferences": (1, 0, 1.0)}),
    ]  # fmt: skip
    # 1-3 February 2024 lie in the ISO week from Monday 29 January, and in February.
    for interval, first in (("week", "2024-01-29"), ("month", "2024-02-01")):
        [period] = owner.get(url, params={**RANGE, "interval": interval}).json()["periods"]
        assert (period["periodStart"], period["people"], period["consentRecords"]) == (first, 3, 4)
        assert figures(period["categories"]) == {"necessary": (2, 0, 1.0), "analytics": (2, 1, 0.666667),
                                                 "marketing": (1, 1, 0.5), "preferences": (2, 1, 0.666667)}  # fmt: skip
    # Empty days are there, with zeros; the default interval is day.
    later = owner.get(url, params={"startDate": "2024-02-04", "endDate": "2024-02-06"}).json()["periods"]
    assert [(p["periodStart"], p["people"], p["consentRecords"]) for p in later] == [
        ("2024-02-04", 0, 0), ("2024-02-05", 1, 1), ("2024-02-06", 0, 0)]  # fmt: skip


def test_impact_splits_everyone_active_by_their_latest_state(app, owner):
    site = shop_with_consent(app, owner)
    url = f"/analytics/consent/{site['id']}/impact"
    body = owner.get(url, params={**RANGE, "consentCategory": "analytics"}).json()
    assert body["consentCategory"] == "analytics"
    granted, denied, unstated = body["groups"]
    assert granted == {
        "group": "granted", "people": 2, "events": 3, "eventsPerPerson": 1.5, "conversions": 2, "conversionRate": 1.0,
        "orders": 2,
        "revenueByCurrency": [{"currency": "EUR", "revenue": "30.50", "orders": 1, "avgOrderValue": "30.50"},
                              {"currency": "JPY", "revenue": "1200", "orders": 1, "avgOrderValue": "1200"}],
        "revenue": {"amount": None, "currency": None, "mixed": True},
    }  # fmt: skip
    assert denied == {"group": "denied", "people": 1, "events": 1, "eventsPerPerson": 1.0, "conversions": 0,
                      "conversionRate": 0.0, "orders": 0, "revenueByCurrency": [],
                      "revenue": {"amount": "0.00", "currency": "EUR", "mixed": False}}  # fmt: skip
    # dan's refund is not a sale.
    assert unstated == {"group": "unstated", "people": 1, "events": 1, "eventsPerPerson": 1.0, "conversions": 1,
                        "conversionRate": 1.0, "orders": 1,
                        "revenueByCurrency": [{"currency": "USD", "revenue": "10.00", "orders": 1, "avgOrderValue": "10.00"}],
                        "revenue": {"amount": "10.00", "currency": "USD", "mixed": False}}  # fmt: skip
    marketing = owner.get(url, params={**RANGE, "consentCategory": "marketing"}).json()["groups"]
    assert [(g["group"], g["people"], g["events"], g["conversions"], g["revenue"]) for g in marketing] == [
        ("granted", 1, 1, 1, {"amount": "30.50", "currency": "EUR", "mixed": False}),
        ("denied", 1, 2, 1, {"amount": "1200", "currency": "JPY", "mixed": False}),
        ("unstated", 2, 2, 1, {"amount": "10.00", "currency": "USD", "mixed": False}),
    ]  # fmt: skip


def test_impact_a_refund_is_no_activity(app, owner):
    """gil grants analytics and views a page; rae bought in January and the shop refunds it on 2 February:
    rae did nothing in the range, so rae is in no group (she was an unstated person who never converted)."""
    site = owner.make_site(name="Refunds", timezone="UTC")
    record(app, site, "r-gil", "g1", "2024-02-01T09:00:00Z", {"analytics": True})
    orders = [
        order("o-jan", "r1", "2024-01-20T10:00:00Z", "EUR", "20"),
        order("o-jan-r", "r1", "2024-02-02T10:00:00Z", "EUR", "-20", isRefund=True, refundOf="o-jan"),
    ]
    load(app, owner, site, [event("g1", "2024-02-01T09:01:00Z")], orders)
    groups = owner.get(
        f"/analytics/consent/{site['id']}/impact", params={**RANGE, "consentCategory": "analytics"}
    ).json()["groups"]
    assert [(g["group"], g["people"], g["events"], g["conversions"], g["orders"]) for g in groups] == [
        ("granted", 1, 1, 0, 0), ("denied", 0, 0, 0, 0), ("unstated", 0, 0, 0, 0)]  # fmt: skip


def test_impact_a_purchase_event_naming_a_sale_is_that_sale(app, owner):
    """kim (analytics granted) buys; lou (refused) opens kim's forwarded thank-you page, a purchase event
    naming kim's order: that sale is kim's, lou did not convert. ned's purchase event names no order (a
    shop sending no orders): ned converted."""
    site = owner.make_site(name="Forwarded", timezone="UTC")
    record(app, site, "r-kim", "k1", "2024-02-01T09:00:00Z", {"analytics": True})
    record(app, site, "r-lou", "l1", "2024-02-01T09:00:00Z", {"analytics": False})
    events = [
        event("k1", "2024-02-01T10:00:00Z", name="purchase", metadata={"orderId": "o-kim"}),
        event("l1", "2024-02-02T08:00:00Z", name="purchase", metadata={"orderId": "o-kim"}),
        event("n1", "2024-02-02T09:00:00Z", name="purchase"),
    ]
    load(app, owner, site, events, [order("o-kim", "k1", "2024-02-01T10:00:00Z", "EUR", "25")])
    groups = owner.get(
        f"/analytics/consent/{site['id']}/impact", params={**RANGE, "consentCategory": "analytics"}
    ).json()["groups"]
    assert [(g["group"], g["people"], g["events"], g["conversions"], g["conversionRate"], g["orders"])
            for g in groups] == [
        ("granted", 1, 1, 1, 1.0, 1), ("denied", 1, 1, 0, 0.0, 0), ("unstated", 1, 1, 1, 1.0, 0)]  # fmt: skip


def test_export_streams_the_consent_log_as_csv_and_json(app, owner):
    site = shop_with_consent(app, owner)
    url = f"/analytics/consent/{site['id']}/export"
    response = owner.get(url, params=RANGE)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/csv")
    assert response.text.startswith(
        "kind,id,timestamp,personId,visitorId,sessionId,userId,source,channel,necessary,analytics,marketing,"
        "preferences\r\n"
    )
    rows = list(csv.DictReader(io.StringIO(response.text)))
    assert [(r["kind"], r["id"], r["personId"]) for r in rows] == [
        ("event", "a1-2024-02-01T10:00:00Z", "a1"), ("record", "r-ann-1", "a1"), ("record", "r-bob", "b1"),
        ("event", "b1-2024-02-02T08:00:00Z", "b1"), ("record", "r-ann-2", "a1"),
        ("event", "c1-2024-02-03T15:00:00Z", "u-cat"), ("record", "r-cat", "u-cat"),
    ]  # fmt: skip
    assert rows[1] == {"kind": "record", "id": "r-ann-1", "timestamp": "2024-02-01T10:00:00Z", "personId": "a1",
                       "visitorId": "a1", "sessionId": "", "userId": "", "source": "banner", "channel": "web",
                       "necessary": "", "analytics": "", "marketing": "false", "preferences": ""}  # fmt: skip
    assert rows[-1]["timestamp"] == "2024-02-03T15:00:00.500000Z" and rows[-1]["userId"] == "u-cat"
    assert rows[0]["source"] == "page_view" and rows[0]["channel"] == "server"

    records = owner.get(url, params={**RANGE, "format": "json", "kind": "record", "limit": 2}).json()
    assert [r["id"] for r in records] == ["r-ann-1", "r-bob"]
    assert records[1] == {"kind": "record", "id": "r-bob", "timestamp": "2024-02-01T12:00:00Z", "personId": "b1",
                          "visitorId": "b1", "sessionId": None, "userId": None, "source": "banner", "channel": "web",
                          "necessary": True, "analytics": False, "marketing": False, "preferences": False}  # fmt: skip
    assert (
        owner.get(url, params={"startDate": "2024-03-01", "endDate": "2024-03-01", "format": "json"}).json()
        == []
    )


def simulation_shop(app, owner: Session) -> dict:
    """p1 grants analytics on an event; p2 refused it in January (before the range); p3 decides 30 s
    after its first event; p4 never decides; p5's grant comes 2 minutes after its first event."""
    site = owner.make_site(name="Sim", timezone="UTC")
    record(app, site, "r-p2", "p2", "2024-01-15T09:00:00Z", {"analytics": False})
    record(app, site, "r-p3", "p3", "2024-02-01T12:00:30Z", {"analytics": True, "marketing": False})
    events = [
        event("p1", "2024-02-01T10:00:00Z", {"analytics": True}),
        event("p1", "2024-02-01T10:05:00Z"),
        event("p2", "2024-02-01T11:00:00Z"),
        event("p3", "2024-02-01T12:00:00Z"),
        event("p3", "2024-02-01T12:00:40Z"),
        event("p4", "2024-02-01T13:00:00Z"),
        event("p5", "2024-02-01T14:00:00Z"),
        event("p5", "2024-02-01T14:02:00Z", {"analytics": True}),
    ]
    load(app, owner, site, events)
    return site


def outcome(body: dict) -> tuple:
    return (body["totalEvents"], body["sent"], body["delayed"], body["dropped"], body["droppedRefused"],
            body["droppedUndecided"])  # fmt: skip


def test_simulate_replays_past_events_through_a_consent_gate(app, owner):
    site = simulation_shop(app, owner)
    url = f"/analytics/consent/{site['id']}/simulate"
    day = "?startDate=2024-02-01&endDate=2024-02-01"
    body = owner.post(
        url + day, json={"granularEnabled": True, "requiredCategories": ["analytics"], "timeoutMs": 60000}
    ).json()
    # Sent: p1 twice (its own event grants), p3 at 12:00:40, p5 at 14:02. Delayed: p3 at 12:00 (30 s).
    # Dropped: p2 (refused in January), p4 (never decided), p5 at 14:00 (its grant came after 2 min).
    assert body == {
        "siteId": site["id"], "startDate": "2024-02-01", "endDate": "2024-02-01",
        "settings": {"granularEnabled": True, "requiredCategories": ["analytics"], "timeoutMs": 60000},
        "totalEvents": 8, "people": 5, "sent": 4, "delayed": 1, "dropped": 3, "droppedRefused": 1,
        "droppedUndecided": 2, "sentShare": 0.5, "delayedShare": 0.125, "droppedShare": 0.375,
        "avgDelayMs": 30000.0, "maxDelayMs": 30000.0,
    }  # fmt: skip
    longer = owner.post(url + day, json={"requiredCategories": ["analytics"], "timeoutMs": 180000}).json()
    assert outcome(longer) == (8, 4, 2, 2, 1, 1)
    assert (longer["avgDelayMs"], longer["maxDelayMs"]) == (75000.0, 120000.0)
    # The wait ends at the timeout: exactly 30 s still delays, 29.999 s drops.
    assert outcome(owner.post(url + day, json={"requiredCategories": ["analytics"], "timeoutMs": 30000}).json()) == (
        8, 4, 1, 3, 1, 2)  # fmt: skip
    assert outcome(owner.post(url + day, json={"requiredCategories": ["analytics"], "timeoutMs": 29999}).json()) == (
        8, 4, 0, 4, 1, 3)  # fmt: skip
    # Marketing too: only p3 ever stated it (refused), p1 and p5 never did.
    both = owner.post(
        url + day, json={"requiredCategories": ["analytics", "marketing"], "timeoutMs": 60000}
    ).json()
    assert outcome(both) == (8, 0, 0, 8, 3, 5)
    # One switch for everything: all four needed, so nobody passes. No timeout given (the site has none
    # set, so 0): p3's first event ends its wait before p3's refusal of marketing, undecided.
    single = owner.post(
        url + day, json={"granularEnabled": False, "requiredCategories": ["analytics"]}
    ).json()
    assert single["settings"] == {"granularEnabled": False, "timeoutMs": 0,
                                  "requiredCategories": ["necessary", "analytics", "marketing", "preferences"]}  # fmt: skip
    assert outcome(single) == (8, 0, 0, 8, 2, 6)
    # Nothing required: everything is sent.
    assert outcome(owner.post(url + day, json={"requiredCategories": []}).json()) == (8, 8, 0, 0, 0, 0)


def test_simulate_defaults_come_from_the_sites_cookie_consent_settings(app, owner):
    site = simulation_shop(app, owner)
    url = f"/analytics/consent/{site['id']}/simulate?startDate=2024-02-01&endDate=2024-02-01"
    # No settings: granular, analytics required, no waiting (p3 at 12:00 is dropped, undecided then).
    plain = owner.post(url).json()
    assert plain["settings"] == {"granularEnabled": True, "requiredCategories": ["analytics"], "timeoutMs": 0}
    assert outcome(plain) == (8, 4, 0, 4, 1, 3)
    response = owner.put(f"/sites/{site['id']}/tracking-config", json={"dataLayerConfig": {"cookieConsent": {
        "enabled": True, "timeoutMs": 60000, "granularEnabled": True, "requiredCategories": ["analytics"]}}})  # fmt: skip
    assert response.status_code == 200, response.text
    configured = owner.post(url, json={}).json()
    assert configured["settings"]["timeoutMs"] == 60000
    assert outcome(configured) == (8, 4, 1, 3, 1, 2)


def test_compare_sites_of_the_organisation(app, owner, outsider):
    main = shop_with_consent(app, owner)
    sim = simulation_shop(app, owner)
    every = owner.get("/analytics/consent/compare", params=RANGE)
    assert every.status_code == 200, every.text
    rows = every.json()["sites"]
    assert [(r["siteId"], r["siteName"], r["people"], r["consentRecords"]) for r in rows] == [
        (main["id"], "Main", 3, 4), (sim["id"], "Sim", 3, 1)]  # fmt: skip
    # Sim in range: p1 and p5 granted analytics on events, p3 in a record (p2's refusal is from January).
    assert figures(rows[1]["categories"])["analytics"] == (3, 0, 1.0)
    assert (
        rows[0]["categories"]
        == owner.get(f"/analytics/consent/{main['id']}/stats", params=RANGE).json()["categories"]
    )
    one = owner.get("/analytics/consent/compare", params={**RANGE, "siteIds": f" {sim['id']} ,"}).json()[
        "sites"
    ]
    assert [r["siteId"] for r in one] == [sim["id"]]
    twice = owner.get(
        "/analytics/consent/compare", params={**RANGE, "siteIds": f"{sim['id']},{sim['id'].upper()}"}
    )
    assert [r["siteId"] for r in twice.json()["sites"]] == [sim["id"]]

    foreign = outsider.make_site()
    response = owner.get("/analytics/consent/compare", params={"siteIds": f"{main['id']},{foreign['id']}"})
    assert (response.status_code, response.json()["error"]["code"]) == (403, "SITE_ACCESS_DENIED")
    not_an_id = owner.get("/analytics/consent/compare", params={"siteIds": "no-such-site"})
    assert (not_an_id.status_code, not_an_id.json()["error"]["code"]) == (400, "INVALID_SITE_ID")
    empty = owner.get("/analytics/consent/compare", params={"siteIds": " , "})
    assert (empty.status_code, empty.json()["error"]["code"]) == (400, "SITE_IDS_EMPTY")
    # The outsider's organisation has only its own site, with no consent.
    assert [(r["siteId"], r["people"]) for r in outsider.get("/analytics/consent/compare").json()["sites"]] == [
        (foreign["id"], 0)]  # fmt: skip


def test_compare_without_site_ids_names_them_past_the_limit(owner, monkeypatch):
    monkeypatch.setattr(consent_service, "MAX_COMPARED_SITES", 2)
    first, second = owner.make_site(name="A"), owner.make_site(name="B")
    both = owner.get("/analytics/consent/compare")
    assert [r["siteId"] for r in both.json()["sites"]] == [first["id"], second["id"]]
    owner.make_site(name="C")
    # A large organisation's every site, one report each, timed out: past the limit it names them.
    response = owner.get("/analytics/consent/compare")
    assert (response.status_code, response.json()["error"]["code"]) == (400, "TOO_MANY_SITES")
    assert "3 sites" in response.json()["error"]["message"]


def test_bad_parameters_answer_400_in_the_envelope(owner):
    site = owner.make_site(timezone="UTC")
    base = f"/analytics/consent/{site['id']}"
    cases = [
        ("GET", "/trends", {"interval": "hour"}, None, "VALIDATION_FAILED"),
        ("GET", "/trends", {"interval": "day", "startDate": "2020-01-01", "endDate": "2024-01-01"}, None,
         "TOO_MANY_PERIODS"),
        ("GET", "/impact", {}, None, "VALIDATION_FAILED"),
        ("GET", "/impact", {"consentCategory": "ads"}, None, "VALIDATION_FAILED"),
        ("GET", "/stats", {"startDate": "2024-02-02", "endDate": "2024-02-01"}, None, "DATE_RANGE_INVALID"),
        ("GET", "/stats", {"startDate": "yesterday"}, None, "VALIDATION_FAILED"),
        ("GET", "/export", {"format": "xml"}, None, "VALIDATION_FAILED"),
        ("GET", "/export", {"kind": "orders"}, None, "VALIDATION_FAILED"),
        ("GET", "/export", {"limit": 0}, None, "VALIDATION_FAILED"),
        ("POST", "/simulate", {}, {"requiredCategories": ["analytics", "ads"]}, "UNKNOWN_CONSENT_CATEGORY"),
        ("POST", "/simulate", {}, {"timeoutMs": -1}, "VALIDATION_FAILED"),
        ("POST", "/simulate", {}, {"timeoutMs": 600001}, "VALIDATION_FAILED"),
        ("POST", "/simulate", {}, {"requiredCategory": ["analytics"]}, "VALIDATION_FAILED"),
        ("POST", "/simulate", {}, {"requiredCategories": "analytics"}, "VALIDATION_FAILED"),
    ]  # fmt: skip
    for method, path, params, body, code in cases:
        response = owner.request(method, base + path, params=params, json=body)
        assert response.status_code == 400, (path, params, body, response.text)
        assert response.json()["error"]["code"] == code, (path, params, body, response.json())
    unknown = owner.post(base + "/simulate", json={"requiredCategories": ["ads"]}).json()["error"]
    assert "'ads'" in unknown["message"] and unknown["details"] == {"requiredCategories": ["ads"]}


def test_consent_routes_need_analytics_view_and_the_sites_organisation(client, store, owner, outsider):
    site = owner.make_site()
    viewer = Session(client, make_user(store, role="viewer", organization_id=owner.user["organization_id"]))
    paths = [f"/analytics/consent/{site['id']}/{p}" for p in ("stats", "trends", "categories", "export")]
    paths += [
        f"/analytics/consent/{site['id']}/impact?consentCategory=analytics",
        "/analytics/consent/compare",
    ]
    for path in paths:
        assert owner.get(path).status_code == 200, path
        assert viewer.get(path).status_code == 403, path
        assert client.get(path).status_code == 401, path
        if "compare" not in path:
            denied = outsider.get(path)
            assert (denied.status_code, denied.json()["error"]["code"]) == (403, "SITE_ACCESS_DENIED"), path
    simulate = f"/analytics/consent/{site['id']}/simulate"
    assert owner.post(simulate).status_code == 200
    assert viewer.post(simulate).status_code == 403
    assert outsider.post(simulate).status_code == 403
