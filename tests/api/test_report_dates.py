"""Report days and instants are ISO 8601 on the wire: a bare number (a unix time sent by mistake) is
refused on every route that takes `startDate`/`endDate`, rather than read as seconds since 1970."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.shared_app

DATE_PARAMS = ("startDate", "endDate")


def routes_taking_dates(app) -> list[tuple[str, str]]:
    routes = []
    for path, operations in app.openapi()["paths"].items():
        for method, operation in operations.items():
            names = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
            routes.extend((method.upper(), path, name) for name in DATE_PARAMS if name in names)
    return routes


def fill(path: str, site_id: str, definition_id: str) -> str:
    path = path.removeprefix("/api/v1").replace("{siteId}", site_id)
    path = path.replace("/definitions/{id}", f"/definitions/{definition_id}")
    return re.sub(r"\{[^}]+\}", "page_view", path)


def errors_of(response, name: str) -> list[dict]:
    fields = (response.json()["error"].get("details") or {}).get("fields", [])
    return [d for d in fields if d["field"] == f"query.{name}"]


def test_every_route_with_report_dates_is_walked(app):
    assert len(routes_taking_dates(app)) >= 20


@pytest.mark.parametrize("number", ["1700006400", "0", "20260101", "1.7e9"])
def test_a_number_is_not_a_report_date(app, owner, number):
    site = owner.make_site()
    definition = owner.post("/analytics/funnels/definitions",
                            json={"siteId": site["id"], "name": "F", "steps": ["page_view", "purchase"]}).json()  # fmt: skip
    for method, template, name in routes_taking_dates(app):
        response = owner.request(method, fill(template, site["id"], definition["id"]), params={name: number})
        assert response.status_code == 400, f"{method} {template} {name}={number}: {response.text}"
        [error] = errors_of(response, name)
        assert "ISO 8601" in error["message"] and "not a number" in error["message"]


def test_an_iso_date_is_still_a_report_date(owner):
    site = owner.make_site()
    response = owner.get(f"/analytics/funnels/{site['id']}", params={"steps": "page_view,purchase",
                                                                    "startDate": "2026-01-05", "endDate": "2026-01-05"})  # fmt: skip
    assert response.status_code == 200, response.text
