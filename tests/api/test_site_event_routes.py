"""/analytics/sites/:siteId and its metrics, events, types, time series and data-layer events."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.factories import Session


@pytest.fixture
def site(app, owner: Session) -> dict:
    site = owner.make_site(timezone="UTC")
    base = datetime.now(UTC).replace(hour=10, minute=0, second=0, microsecond=0) - timedelta(days=1)

    def at(minutes: int) -> str:
        return (base + timedelta(minutes=minutes)).isoformat()

    events = [
        {"name": "page_view", "visitorId": "v1", "sessionId": "s1", "eventId": "a", "timestamp": at(0)},
        {"name": "scroll", "visitorId": "v1", "sessionId": "s1", "eventId": "b", "timestamp": at(4)},
        {"name": "page_view", "visitorId": "v2", "sessionId": "s2", "eventId": "c", "timestamp": at(70),
         "metadata": {"source": "dataLayer", "dataLayerEvent": "gtm.dom"}},
    ]  # fmt: skip
    assert (
        owner.post("/analytics/track/batch", json={"siteId": site["id"], "events": events}).json()["accepted"]
        == 3
    )
    app.state.ingest.flush()
    return {**site, "day": base.date().isoformat()}


def test_metrics_include_session_shape(owner, site):
    body = owner.get(f"/analytics/sites/{site['id']}/metrics", params={"days": 3}).json()
    assert body["events"] == 3
    assert body["sessions"] == 2
    assert body["bounceRate"] == 0.5
    assert body["avgSessionDurationSeconds"] == 120.0
    assert body["avgEventsPerSession"] == 1.5
    assert owner.get(f"/analytics/sites/{site['id']}", params={"days": 3}).json()["totals"]["people"] == 2


def test_events_are_paged_newest_first(owner, site):
    url = f"/analytics/sites/{site['id']}/events"
    first = owner.get(url, params={"limit": 2}).json()
    assert first["total"] == 3
    assert [e["eventId"] for e in first["events"]] == ["c", "b"]
    assert [e["eventId"] for e in owner.get(url, params={"limit": 2, "offset": 2}).json()["events"]] == ["a"]
    only = owner.get(url, params={"name": "scroll"}).json()
    assert (only["total"], only["events"][0]["name"]) == (1, "scroll")
    assert owner.get(url, params={"name": "teleport"}).json()["error"]["code"] == "UNKNOWN_EVENT_NAME"
    assert owner.get(url, params={"limit": 501}).status_code == 400


def test_event_types(owner, site):
    body = owner.get(f"/analytics/sites/{site['id']}/events/types").json()
    assert body["eventTypes"] == [
        {"name": "page_view", "family": "page", "count": 2, "people": 2},
        {"name": "scroll", "family": "page", "count": 1, "people": 1},
    ]


def test_hourly_timeseries_has_every_bucket(owner, site):
    body = owner.get(f"/analytics/sites/{site['id']}/events/timeseries",
                     params={"startDate": site["day"], "endDate": site["day"], "interval": "hour"}).json()  # fmt: skip
    assert len(body["series"]) == 24
    busy = {point["bucket"][11:13]: point["events"] for point in body["series"] if point["events"]}
    assert busy == {"10": 2, "11": 1}
    daily = owner.get(f"/analytics/sites/{site['id']}/events/timeseries",
                      params={"startDate": site["day"], "endDate": site["day"]}).json()  # fmt: skip
    assert daily["series"] == [{"bucket": f"{site['day']}T00:00:00", "events": 3, "people": 2}]


def test_a_series_covers_at_most_ten_years(owner, site):
    path = f"/analytics/sites/{site['id']}/events/timeseries"
    ten_years = owner.get(
        path, params={"startDate": "2020-01-01", "endDate": "2029-12-31", "interval": "week"}
    )
    assert ten_years.status_code == 200
    longer = owner.get(path, params={"startDate": "1970-01-01", "endDate": "2200-01-01", "interval": "week"})
    assert (longer.status_code, longer.json()["error"]["code"]) == (400, "DATE_RANGE_TOO_LONG")


def test_datalayer_events_are_the_ones_marked_as_such(owner, site):
    body = owner.get(f"/analytics/sites/{site['id']}/datalayer/events").json()
    assert [e["eventId"] for e in body["events"]] == ["c"]
    assert body["events"][0]["metadata"]["dataLayerEvent"] == "gtm.dom"


def test_site_event_routes_refuse_other_organisations(outsider, site):
    for path in ("", "/metrics", "/events", "/events/types", "/events/timeseries", "/datalayer/events"):
        assert outsider.get(f"/analytics/sites/{site['id']}{path}").status_code == 403
