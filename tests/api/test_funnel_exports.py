"""The funnel exports over HTTP: the report's steps as rows, the people at one step; streamed CSV and
JSON with the report's numbers; validation, permission and tenancy."""

from __future__ import annotations

import csv
import io

import pytest

from tests.factories import Session, make_user

pytestmark = pytest.mark.shared_app

STEPS = "page_view,product_view,add_to_cart"
DAY = {"startDate": "2024-03-05", "endDate": "2024-03-05"}
# A visitor id with a comma and quotes: CSV must quote it (RFC 4180).
ODD = 'v,"odd"'


def event(name: str, visitor: str, at: str, **extra) -> dict:
    body = {"name": name, "visitorId": visitor, "sessionId": "s", "timestamp": f"2024-03-05T{at}Z", **extra}
    if name in ("product_view", "add_to_cart"):
        body["metadata"] = {"productItemCode": "P1"}
    return body


def site_with_journeys(app, owner: Session) -> dict:
    site = owner.make_site(timezone="UTC")
    events = [
        # Ann uses two devices, both identified as the user "ann": one person.
        event("page_view", "ann-phone", "10:00:00", userId="ann"),
        event("product_view", "ann-laptop", "10:00:30", userId="ann"),
        event("add_to_cart", "ann-laptop", "10:01:30"),
        event("page_view", "bob", "11:00:00"),
        event("scroll", "bob", "11:01:00"),
        event("product_view", "bob", "11:02:00"),
        event("page_view", ODD, "12:00:00"),
        event("product_view", "dan", "12:00:00"),  # never entered: no page_view
    ]
    response = owner.post("/analytics/track/batch", json={"siteId": site["id"], "events": events})
    assert response.status_code == 200, response.text
    assert response.json()["rejected"] == []
    app.state.ingest.flush()
    return site


REPORT_ROWS = [
    {"eventName": "page_view", "count": 3, "conversionRate": 1.0, "dropOff": 0,
     "avgTimeToConvertSeconds": None, "medianTimeToConvertSeconds": None},
    {"eventName": "product_view", "count": 2, "conversionRate": 0.666667, "dropOff": 1,
     "avgTimeToConvertSeconds": 75.0, "medianTimeToConvertSeconds": 75.0},
    {"eventName": "add_to_cart", "count": 1, "conversionRate": 0.333333, "dropOff": 1,
     "avgTimeToConvertSeconds": 60.0, "medianTimeToConvertSeconds": 60.0},
]  # fmt: skip
HEADER = [
    "eventName", "count", "conversionRate", "dropOff", "avgTimeToConvertSeconds", "medianTimeToConvertSeconds",
]  # fmt: skip


def parse_csv(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


# --- the report export ---------------------------------------------------------------------------


def test_the_report_export_as_json_has_the_reports_steps(app, owner):
    site = site_with_journeys(app, owner)
    params = {"steps": STEPS, **DAY}
    report = owner.get(f"/analytics/funnels/{site['id']}", params=params).json()
    assert report["steps"] == REPORT_ROWS

    response = owner.get(f"/analytics/funnels/{site['id']}/export", params={**params, "format": "json"})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    assert "content-length" not in response.headers  # streamed, chunk by chunk
    disposition = response.headers["content-disposition"]
    assert disposition == f'attachment; filename="funnel-{site["id"]}-2024-03-05-2024-03-05.json"'
    assert response.json() == REPORT_ROWS


def test_the_report_export_as_csv_has_a_header_and_the_same_numbers(app, owner):
    site = site_with_journeys(app, owner)
    response = owner.get(
        f"/analytics/funnels/{site['id']}/export", params={"steps": STEPS, **DAY, "format": "csv"}
    )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/csv")
    assert response.text.endswith("\r\n")
    assert parse_csv(response.text) == [
        HEADER,
        ["page_view", "3", "1.0", "0", "", ""],
        ["product_view", "2", "0.666667", "1", "75.0", "75.0"],
        ["add_to_cart", "1", "0.333333", "1", "60.0", "60.0"],
    ]


def test_the_report_export_takes_the_funnel_filters(app, owner):
    site = site_with_journeys(app, owner)
    url = f"/analytics/funnels/{site['id']}/export"
    # A 60 s window: Ann's cart (90 s after entry) and Bob's product view (120 s) fall outside it.
    narrow = owner.get(url, params={"steps": STEPS, **DAY, "windowSeconds": 60, "format": "json"}).json()
    assert [r["count"] for r in narrow] == [3, 1, 0]
    # Strict order: Bob scrolled between his page_view and his product_view.
    strict = owner.get(url, params={"steps": STEPS, **DAY, "order": "strict", "format": "json"}).json()
    assert [r["count"] for r in strict] == [3, 1, 1]
    empty = owner.get(
        url, params={"steps": STEPS, "startDate": "2024-03-06", "endDate": "2024-03-06", "format": "csv"}
    )
    assert parse_csv(empty.text) == [
        HEADER,
        ["page_view", "0", "0.0", "0", "", ""],
        ["product_view", "0", "0.0", "0", "", ""],
        ["add_to_cart", "0", "0.0", "0", "", ""],
    ]


# --- the per-step people export ------------------------------------------------------------------


def test_the_people_at_a_step_as_csv_with_rfc4180_quoting(app, owner):
    site = site_with_journeys(app, owner)
    url = f"/analytics/funnels/{site['id']}/steps/page_view/export"
    response = owner.get(url, params={"steps": STEPS, **DAY, "format": "csv"})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/csv")
    assert "content-length" not in response.headers
    assert '"v,""odd"""' in response.text
    assert parse_csv(response.text) == [
        ["personId", "reachedAt"],
        ["ann", "2024-03-05T10:00:00Z"],
        ["bob", "2024-03-05T11:00:00Z"],
        [ODD, "2024-03-05T12:00:00Z"],
    ]


def test_the_people_at_a_later_step_match_the_reports_count(app, owner):
    site = site_with_journeys(app, owner)
    base = f"/analytics/funnels/{site['id']}/steps"
    params = {"steps": STEPS, **DAY, "format": "json"}
    viewed = owner.get(f"{base}/product_view/export", params=params)
    assert viewed.status_code == 200, viewed.text
    assert viewed.headers["content-type"] == "application/json"
    assert viewed.json() == [
        {"personId": "ann", "reachedAt": "2024-03-05T10:00:30Z"},
        {"personId": "bob", "reachedAt": "2024-03-05T11:02:00Z"},
    ]
    carted = owner.get(f"{base}/add_to_cart/export", params=params).json()
    assert carted == [{"personId": "ann", "reachedAt": "2024-03-05T10:01:30Z"}]
    assert owner.get(f"{base}/add_to_cart/export", params={**params, "windowSeconds": 60}).json() == []
    nobody = owner.get(
        f"{base}/page_view/export", params={**params, "startDate": "2024-03-06", "endDate": "2024-03-06"}
    )
    assert nobody.status_code == 200
    assert nobody.json() == []


def test_a_repeated_step_name_exports_its_first_occurrence(app, owner):
    site = site_with_journeys(app, owner)
    response = owner.get(
        f"/analytics/funnels/{site['id']}/steps/page_view/export",
        params={"steps": "page_view,product_view,page_view", **DAY, "format": "json"},
    )
    assert [row["personId"] for row in response.json()] == ["ann", "bob", ODD]


def test_step_index_chooses_a_repeated_steps_later_occurrence(app, owner):
    site = owner.make_site(timezone="UTC")
    events = [
        event("page_view", "ann", "10:00:00"),
        event("product_view", "ann", "10:01:00"),
        event("page_view", "ann", "10:02:00"),
        event("page_view", "bob", "11:00:00"),
        event("product_view", "bob", "11:01:00"),
        event("page_view", "cat", "12:00:00"),
    ]
    response = owner.post("/analytics/track/batch", json={"siteId": site["id"], "events": events})
    assert response.status_code == 200, response.text
    app.state.ingest.flush()
    params = {"steps": "page_view,product_view,page_view", **DAY, "format": "json"}
    report = owner.get(f"/analytics/funnels/{site['id']}", params=params).json()
    assert [s["count"] for s in report["steps"]] == [3, 2, 1]

    url = f"/analytics/funnels/{site['id']}/steps/page_view/export"
    again = owner.get(url, params={**params, "stepIndex": 2})
    assert again.status_code == 200, again.text
    assert again.json() == [{"personId": "ann", "reachedAt": "2024-03-05T10:02:00Z"}]
    assert 'filename="funnel-page_view-2-' in again.headers["content-disposition"]
    first = [
        {"personId": "ann", "reachedAt": "2024-03-05T10:00:00Z"},
        {"personId": "bob", "reachedAt": "2024-03-05T11:00:00Z"},
        {"personId": "cat", "reachedAt": "2024-03-05T12:00:00Z"},
    ]
    assert owner.get(url, params={**params, "stepIndex": 0}).json() == first
    assert owner.get(url, params=params).json() == first
    assert (
        'filename="funnel-page_view-' + site["id"]
        in owner.get(url, params=params).headers["content-disposition"]
    )


def test_a_step_index_of_another_event_answers_400(owner):
    site = owner.make_site()
    url = f"/analytics/funnels/{site['id']}/steps/page_view/export"
    params = {"steps": "page_view,product_view,page_view", "format": "json"}
    for index in (1, 3, 20):
        response = owner.get(url, params={**params, "stepIndex": index})
        assert response.status_code == 400, (index, response.text)
        error = response.json()["error"]
        assert error["code"] == "STEP_INDEX_NOT_EVENT"
        assert error["details"] == {"stepIndexes": [0, 2]}
    for bad in (-1, "two"):
        response = owner.get(url, params={**params, "stepIndex": bad})
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "VALIDATION_FAILED"
    # The name is checked first: a step that is not in the funnel says so, whatever the index.
    response = owner.get(
        f"/analytics/funnels/{site['id']}/steps/purchase/export", params={**params, "stepIndex": 0}
    )
    assert response.json()["error"]["code"] == "STEP_NOT_IN_FUNNEL"


def test_step_index_is_documented_as_an_optional_query_parameter(app):
    operation = app.openapi()["paths"]["/api/v1/analytics/funnels/{siteId}/steps/{eventName}/export"]["get"]
    [parameter] = [p for p in operation["parameters"] if p["name"] == "stepIndex"]
    assert parameter["in"] == "query"
    assert parameter["required"] is False
    assert "STEP_INDEX_NOT_EVENT" in parameter["description"]


# --- failures --------------------------------------------------------------------------------------


def test_a_step_outside_the_funnel_answers_400(owner):
    site = owner.make_site()
    response = owner.get(
        f"/analytics/funnels/{site['id']}/steps/purchase/export",
        params={"steps": "page_view,add_to_cart", "format": "csv"},
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "STEP_NOT_IN_FUNNEL"
    assert error["details"] == {"steps": ["page_view", "add_to_cart"]}


def test_export_validation_errors(owner):
    site = owner.make_site()
    cases = [
        ({"steps": "page_view", "format": "csv"}, "FUNNEL_NEEDS_TWO_STEPS"),
        ({"steps": "page_view,teleport", "format": "csv"}, "UNKNOWN_EVENT_NAME"),
        ({"steps": STEPS, "format": "xml"}, "VALIDATION_FAILED"),
        ({"steps": STEPS}, "VALIDATION_FAILED"),
        ({"format": "json"}, "VALIDATION_FAILED"),
        ({"steps": STEPS, "format": "json", "windowSeconds": 365 * 24 * 3600 + 1}, "VALIDATION_FAILED"),
        ({"steps": STEPS, "format": "json", "order": "sideways"}, "VALIDATION_FAILED"),
        ({"steps": STEPS, "format": "json", "startDate": "2024-03-06", "endDate": "2024-03-05"}, "DATE_RANGE_INVALID"),
    ]  # fmt: skip
    for path in ("export", "steps/page_view/export"):
        for params, code in cases:
            response = owner.get(f"/analytics/funnels/{site['id']}/{path}", params=params)
            assert response.status_code == 400, (path, params, response.text)
            assert response.json()["error"]["code"] == code, (path, params)


def test_exports_need_analytics_view_and_the_sites_organisation(app, client, store, owner, outsider):
    site = site_with_journeys(app, owner)
    params = {"steps": STEPS, **DAY, "format": "csv"}
    viewer = Session(client, make_user(store, role="viewer", organization_id=owner.user["organization_id"]))
    analyst = Session(client, make_user(store, role="analyst", organization_id=owner.user["organization_id"]))
    for path in ("export", "steps/page_view/export"):
        url = f"/analytics/funnels/{site['id']}/{path}"
        denied = outsider.get(url, params=params)
        assert denied.status_code == 403
        assert denied.json()["error"]["code"] == "SITE_ACCESS_DENIED"
        assert "ann" not in denied.text
        assert viewer.get(url, params=params).json()["error"]["code"] == "PERMISSION_DENIED"
        assert client.get(url, params=params).status_code == 401
        assert analyst.get(url, params=params).status_code == 200
