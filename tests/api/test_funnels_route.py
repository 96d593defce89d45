"""GET /analytics/funnels/:siteId over HTTP: permission, tenancy, validation, and the report."""

from __future__ import annotations

import pytest

from tests.factories import Session, make_user

pytestmark = pytest.mark.shared_app


def track(owner: Session, site_id: str, events: list[dict]) -> None:
    response = owner.post("/analytics/track/batch", json={"siteId": site_id, "events": events})
    assert response.status_code == 200, response.text
    assert response.json()["rejected"] == []


def test_the_funnel_report_over_http(app, owner):
    site = owner.make_site(timezone="UTC")
    track(owner, site["id"], [
        {"name": "page_view", "visitorId": "v1", "sessionId": "s", "timestamp": "2024-02-01T10:00:00Z"},
        {"name": "add_to_cart", "visitorId": "v1", "sessionId": "s", "timestamp": "2024-02-01T10:00:45Z",
         "metadata": {"productItemCode": "P1"}},
        {"name": "page_view", "visitorId": "v2", "sessionId": "s", "timestamp": "2024-02-01T11:00:00Z"},
    ])  # fmt: skip
    app.state.ingest.flush()
    response = owner.get(
        f"/analytics/funnels/{site['id']}",
        params={"steps": "page_view,add_to_cart", "startDate": "2024-02-01", "endDate": "2024-02-01"},
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["totalEntered"] == 2
    assert [(s["eventName"], s["count"], s["conversionRate"]) for s in body["steps"]] == [
        ("page_view", 2, 1.0), ("add_to_cart", 1, 0.5)
    ]  # fmt: skip
    assert body["steps"][1]["avgTimeToConvertSeconds"] == 45.0
    assert body["overallConversionRate"] == 0.5


def test_funnel_validation_errors(owner):
    site = owner.make_site()
    url = f"/analytics/funnels/{site['id']}"
    cases = [
        ({"steps": "page_view"}, "FUNNEL_NEEDS_TWO_STEPS"),
        ({"steps": "page_view,teleport"}, "UNKNOWN_EVENT_NAME"),
        ({"steps": "product_view,,purchase"}, "FUNNEL_STEP_EMPTY"),
        ({"steps": "product_view,purchase,"}, "FUNNEL_STEP_EMPTY"),
        (
            {"steps": "page_view,scroll", "startDate": "2024-02-02", "endDate": "2024-02-01"},
            "DATE_RANGE_INVALID",
        ),
        ({"steps": "page_view,scroll", "windowSeconds": 0}, "VALIDATION_FAILED"),
        ({"steps": "page_view,scroll", "order": "sideways"}, "VALIDATION_FAILED"),
        ({}, "VALIDATION_FAILED"),
    ]
    for params, code in cases:
        response = owner.get(url, params=params)
        assert response.status_code == 400, (params, response.text)
        assert response.json()["error"]["code"] == code


def test_funnels_need_analytics_view_and_the_sites_organisation(client, store, owner, outsider):
    site = owner.make_site()
    url = f"/analytics/funnels/{site['id']}"
    params = {"steps": "page_view,scroll"}
    assert outsider.get(url, params=params).json()["error"]["code"] == "SITE_ACCESS_DENIED"
    viewer = Session(client, make_user(store, role="viewer", organization_id=owner.user["organization_id"]))
    response = viewer.get(url, params=params)
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "PERMISSION_DENIED"
    analyst = Session(client, make_user(store, role="analyst", organization_id=owner.user["organization_id"]))
    assert analyst.get(url, params=params).status_code == 200
    assert client.get(url, params=params).status_code == 401
