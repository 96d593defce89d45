"""/analytics/sites/:siteId and its metrics, events, types, time series and data-layer events."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.factories import Session

pytestmark = pytest.mark.shared_app


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
    busy = {point["bucket"]: point["events"] for point in body["series"] if point["events"]}
    assert busy == {f"{site['day']}T10:00:00+00:00": 2, f"{site['day']}T11:00:00+00:00": 1}
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


def test_hourly_buckets_follow_summer_time(app, owner):
    london = owner.make_site(timezone="Europe/London")
    events = [  # the first of each pair at 01:30 local summer time, the second at 01:30 winter time
        {"name": "page_view", "visitorId": "v1", "sessionId": "s1", "eventId": "a", "timestamp": "2026-10-25T00:30:00Z"},
        {"name": "page_view", "visitorId": "v2", "sessionId": "s2", "eventId": "b", "timestamp": "2026-10-25T01:30:00Z"},
        {"name": "page_view", "visitorId": "v1", "sessionId": "s3", "eventId": "c", "timestamp": "2026-03-29T00:30:00Z"},
        {"name": "page_view", "visitorId": "v1", "sessionId": "s3", "eventId": "d", "timestamp": "2026-03-29T01:30:00Z"},
    ]  # fmt: skip
    assert (
        owner.post("/analytics/track/batch", json={"siteId": london["id"], "events": events}).status_code
        == 200
    )
    app.state.ingest.flush()
    path = f"/analytics/sites/{london['id']}/events/timeseries"

    autumn = owner.get(path, params={"startDate": "2026-10-25", "endDate": "2026-10-25", "interval": "hour"})
    series = autumn.json()["series"]
    assert len(series) == 25
    assert series[:4] == [
        {"bucket": "2026-10-25T00:00:00+01:00", "events": 0, "people": 0},
        {"bucket": "2026-10-25T01:00:00+01:00", "events": 1, "people": 1},
        {"bucket": "2026-10-25T01:00:00+00:00", "events": 1, "people": 1},
        {"bucket": "2026-10-25T02:00:00+00:00", "events": 0, "people": 0},
    ]
    assert series[-1]["bucket"] == "2026-10-25T23:00:00+00:00"

    spring = owner.get(path, params={"startDate": "2026-03-29", "endDate": "2026-03-29", "interval": "hour"})
    series = spring.json()["series"]
    assert len(series) == 23
    assert series[:3] == [
        {"bucket": "2026-03-29T00:00:00+00:00", "events": 1, "people": 1},
        {"bucket": "2026-03-29T02:00:00+01:00", "events": 1, "people": 1},
        {"bucket": "2026-03-29T03:00:00+01:00", "events": 0, "people": 0},
    ]

    daily = owner.get(path, params={"startDate": "2026-10-25", "endDate": "2026-10-25"}).json()["series"]
    assert daily == [{"bucket": "2026-10-25T00:00:00", "events": 2, "people": 2}]


def test_hourly_buckets_keep_half_hour_offsets(app, owner):
    kolkata = owner.make_site(timezone="Asia/Kolkata")
    event = {"name": "page_view", "visitorId": "v1", "sessionId": "s1", "eventId": "a", "timestamp": "2026-01-05T04:45:00Z"}  # fmt: skip
    owner.post("/analytics/track/batch", json={"siteId": kolkata["id"], "events": [event]})
    app.state.ingest.flush()
    series = owner.get(f"/analytics/sites/{kolkata['id']}/events/timeseries",
                       params={"startDate": "2026-01-05", "endDate": "2026-01-05", "interval": "hour"}).json()["series"]  # fmt: skip
    assert len(series) == 24
    assert [p["bucket"] for p in series if p["events"]] == ["2026-01-05T10:00:00+05:30"]
