"""The cohort routes over HTTP: required filters, cache meta, export, rebuild, removed routes."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime

import pytest

from jobs.compaction import JOB_ID
from tests.factories import Session, make_user
from warehouse import visitor_activity

pytestmark = pytest.mark.shared_app

FILTERS = {"cohortType": "first_visit", "intervalType": "week", "startDate": "2024-01-01",
           "endDate": "2024-01-14", "periodCount": 2}  # fmt: skip


def site_with_journeys(app, owner: Session) -> dict:
    site = owner.make_site(timezone="UTC")
    events = [
        {"name": "page_view", "visitorId": visitor, "sessionId": "s", "timestamp": f"{day}T10:00:00Z"}
        for visitor, day in [
            ("ann", "2024-01-01"),
            ("ann", "2024-01-09"),
            ("bob", "2024-01-03"),
            ("cat", "2024-01-10"),
        ]
    ]
    response = owner.post("/analytics/track/batch", json={"siteId": site["id"], "events": events})
    assert response.json()["accepted"] == 4
    app.state.ingest.flush()
    return site


def test_report_is_cached_per_filter_set(app, owner):
    site = site_with_journeys(app, owner)
    url = f"/analytics/cohort/{site['id']}"
    first = owner.get(url, params=FILTERS)
    assert first.status_code == 200, first.text
    body = first.json()
    assert body["meta"]["cacheStatus"] == "miss"
    assert body["meta"]["filters"]["periodCount"] == 2
    assert [r["cohort"] for r in body["retention"]["rows"]] == ["2024-01-01", "2024-01-08"]
    assert [c["retainedUsers"] for c in body["retention"]["rows"][0]["periods"]] == [2, 1, 0]
    assert set(body) == {"meta", "summary", "retention", "churn", "comparison", "diagnostics"}
    second = owner.get(url, params=FILTERS).json()
    assert second["meta"]["cacheStatus"] == "hit"
    assert second["retention"] == body["retention"]
    other = owner.get(url, params={**FILTERS, "periodCount": 3}).json()
    assert other["meta"]["cacheStatus"] == "miss"


def test_a_cached_report_is_not_served_once_the_site_s_data_changed(app, owner):
    site = site_with_journeys(app, owner)
    url = f"/analytics/cohort/{site['id']}"
    assert owner.get(url, params=FILTERS).json()["summary"]["totalUsers"] == 3
    assert owner.get(url, params=FILTERS).json()["meta"]["cacheStatus"] == "hit"
    late = {"name": "page_view", "visitorId": "dan", "sessionId": "s", "timestamp": "2024-01-04T10:00:00Z"}
    assert (
        owner.post("/analytics/track/batch", json={"siteId": site["id"], "events": [late]}).json()["accepted"]
        == 1
    )
    app.state.ingest.flush()
    fresh = owner.get(url, params=FILTERS).json()
    assert (fresh["meta"]["cacheStatus"], fresh["summary"]["totalUsers"]) == ("miss", 4)
    assert owner.get(url, params=FILTERS).json()["meta"]["cacheStatus"] == "hit"


def test_every_filter_is_required_and_period_count_is_bounded(owner):
    site = owner.make_site()
    url = f"/analytics/cohort/{site['id']}"
    for missing in FILTERS:
        params = {k: v for k, v in FILTERS.items() if k != missing}
        response = owner.get(url, params=params)
        assert response.status_code == 400, missing
        assert response.json()["error"]["code"] == "VALIDATION_FAILED"
    for count in (0, 25):
        assert owner.get(url, params={**FILTERS, "periodCount": count}).status_code == 400
    assert owner.get(url, params={**FILTERS, "cohortType": "first_login"}).status_code == 400
    assert (
        owner.get(url, params={**FILTERS, "returnEvent": "teleport"}).json()["error"]["code"]
        == "UNKNOWN_EVENT_NAME"
    )


def test_ranges_are_bounded_before_any_query_runs(owner):
    site = owner.make_site()
    for path in ("", "/export"):
        url = f"/analytics/cohort/{site['id']}{path}"
        far_end = owner.get(url, params={**FILTERS, "endDate": "9999-12-31", "format": "csv"})
        assert (far_end.status_code, far_end.json()["error"]["code"]) == (400, "DATE_OUT_OF_RANGE")
        # A cohort a day from year 1 ran for hours, past any client's timeout.
        from_year_one = owner.get(
            url, params={**FILTERS, "intervalType": "day", "startDate": "0001-01-01", "format": "csv"}
        )
        assert (from_year_one.status_code, from_year_one.json()["error"]["code"]) == (
            400,
            "DATE_OUT_OF_RANGE",
        )
        ten_years = owner.get(url, params={**FILTERS, "startDate": "2014-01-01", "endDate": "2024-01-14"})
        assert (ten_years.status_code, ten_years.json()["error"]["code"]) == (400, "DATE_RANGE_TOO_LONG")
    assert (
        owner.get(
            f"/analytics/cohort/{site['id']}", params={**FILTERS, "startDate": "2015-01-15"}
        ).status_code
        == 200
    )


def test_export_csv_and_json_carry_the_report_numbers(app, owner):
    site = site_with_journeys(app, owner)
    url = f"/analytics/cohort/{site['id']}/export"
    response = owner.get(url, params={**FILTERS, "format": "csv"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(response.text)))
    assert rows == [
        ["cohort", "size", "P0_users", "P1_users", "P2_users", "P0_rate", "P1_rate", "P2_rate"],
        ["2024-01-01", "2", "2", "1", "0", "1.0", "0.5", "0.0"],
        ["2024-01-08", "1", "1", "0", "0", "1.0", "0.0", "0.0"],
    ]
    assert "\r\n" in response.text
    as_json = owner.get(url, params={**FILTERS, "format": "json"}).json()
    assert [r["size"] for r in as_json] == [2, 1]
    assert owner.get(url, params=FILTERS).status_code == 400  # format is required


def test_rebuild_clears_the_sites_cache_and_warms_the_given_key(app, owner):
    site = site_with_journeys(app, owner)
    url = f"/analytics/cohort/{site['id']}"
    owner.get(url, params=FILTERS)
    owner.get(url, params={**FILTERS, "periodCount": 3})
    rebuilt = owner.post(f"{url}/cache/rebuild", params=FILTERS)
    assert rebuilt.status_code == 200
    assert rebuilt.json()["cleared"] == 2
    assert owner.get(url, params=FILTERS).json()["meta"]["cacheStatus"] == "hit"
    assert owner.get(url, params={**FILTERS, "periodCount": 3}).json()["meta"]["cacheStatus"] == "miss"


def test_removed_cohort_routes_answer_404(owner):
    site = owner.make_site()
    for method, path in [
        ("GET", "comparison"),
        ("GET", "churn"),
        ("POST", "cache/refresh"),
        ("POST", "cache/invalidate"),
    ]:
        response = owner.request(method, f"/analytics/cohort/{site['id']}/{path}", params=FILTERS)
        assert response.status_code == 404, path


def test_cohorts_need_analytics_view(client, store, owner, outsider):
    site = owner.make_site()
    url = f"/analytics/cohort/{site['id']}"
    assert outsider.get(url, params=FILTERS).status_code == 403
    viewer = Session(client, make_user(store, role="viewer", organization_id=owner.user["organization_id"]))
    assert viewer.get(url, params=FILTERS).json()["error"]["code"] == "PERMISSION_DENIED"


def test_the_scheduled_job_rolls_up_ended_months_in_the_sites_time_zone_and_the_report_uses_them(app, owner):
    site = owner.make_site(timezone="Asia/Tokyo")
    # 20:00 UTC on Jan 31 is February 1 in Tokyo: two local months, both long over.
    events = [
        {"name": "page_view", "visitorId": visitor, "sessionId": "s", "timestamp": at}
        for visitor, at in [("ann", "2024-01-10T10:00:00Z"), ("ann", "2024-01-31T20:00:00Z"),
                            ("bob", "2024-01-20T10:00:00Z")]
    ]  # fmt: skip
    assert (
        owner.post("/analytics/track/batch", json={"siteId": site["id"], "events": events}).status_code == 200
    )
    app.state.ingest.flush()
    filters = {**FILTERS, "intervalType": "month", "endDate": "2024-01-31", "periodCount": 1}
    from_events = owner.get(f"/analytics/cohort/{site['id']}", params=filters).json()

    job = app.state.scheduler.get_job(JOB_ID)
    job.func(*job.args)

    months = visitor_activity.current(
        app.state.ingest.lake, site["id"], "Asia/Tokyo", until=datetime.now(UTC)
    )
    assert [m.month.isoformat() for m in months] == ["2024-01-01", "2024-02-01"]
    owner.post(f"/analytics/cohort/{site['id']}/cache/rebuild", json={})
    from_rollups = owner.get(f"/analytics/cohort/{site['id']}", params={**filters, "periodCount": 2}).json()
    rows = from_rollups["retention"]["rows"]
    assert [(r["cohort"], [c["retainedUsers"] for c in r["periods"]]) for r in rows] == [
        ("2024-01-01", [2, 1, 0])
    ]
    assert from_events["retention"]["rows"][0]["periods"][:2] == rows[0]["periods"][:2]


def test_reports_cached_by_an_older_release_miss(app, owner, monkeypatch):
    from api.analytics.cohorts import service as cohorts

    site = site_with_journeys(app, owner)
    url = f"/analytics/cohort/{site['id']}"
    assert owner.get(url, params=FILTERS).json()["meta"]["cacheStatus"] == "miss"
    assert owner.get(url, params=FILTERS).json()["meta"]["cacheStatus"] == "hit"
    monkeypatch.setattr(cohorts, "REPORT_VERSION", cohorts.REPORT_VERSION + 1)
    assert owner.get(url, params=FILTERS).json()["meta"]["cacheStatus"] == "miss"
