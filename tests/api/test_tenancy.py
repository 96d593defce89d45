"""Tenancy: a second organisation gets 403 on every site-scoped private route of the first."""

from __future__ import annotations

import re

import pytest

from tests.factories import Session, make_user

pytestmark = pytest.mark.shared_app

SITE_PARAMS = ("{id}", "{siteId}")


def site_scoped_routes(app) -> list[tuple[str, str]]:
    """Every private route with a site in its path, read from the app's own OpenAPI schema."""
    routes = []
    for path, operations in app.openapi()["paths"].items():
        if path.startswith(("/api/v1/admin/", "/api/v1/public/")):
            continue
        if any(p in path for p in SITE_PARAMS):
            routes.extend((method.upper(), path) for method in sorted(operations))
    return routes


def fill(path: str, site_id: str) -> str:
    path = path.removeprefix("/api/v1")
    for param in SITE_PARAMS:
        path = path.replace(param, site_id)
    return re.sub(r"\{[^}]+\}", "00000000-0000-0000-0000-000000000000", path)


def test_the_walk_covers_the_site_routes(app):
    routes = site_scoped_routes(app)
    assert ("GET", "/api/v1/sites/{id}") in routes
    assert ("POST", "/api/v1/sites/{siteId}/public-api-keys/{keyId}/revoke") in routes
    assert len(routes) >= 11


def test_every_site_scoped_route_answers_403_to_another_organisation(app, owner, outsider, store):
    site = owner.make_site(name="Private Shop", domain="private.example.com")
    for method, template in site_scoped_routes(app):
        response = outsider.request(method, fill(template, site["id"]), json={})
        assert response.status_code == 403, f"{method} {template}: {response.status_code} {response.text}"
        error = response.json()["error"]
        assert error["code"] == "SITE_ACCESS_DENIED", f"{method} {template}"
        assert site["siteKey"] not in response.text and "Private Shop" not in response.text

    # Nothing was changed by the attempts.
    again = owner.get(f"/sites/{site['id']}")
    assert again.status_code == 200
    assert again.json()["name"] == "Private Shop"


def test_unknown_site_ids_answer_403_not_404(app, owner):
    for method, template in site_scoped_routes(app):
        response = owner.request(method, fill(template, "11111111-1111-1111-1111-111111111111"), json={})
        assert response.status_code == 403, f"{method} {template}"


def routes_naming_a_site(app) -> list[tuple[str, str]]:
    """Site-scoped routes whose path parameter is the site itself (not a definition's or query's id)."""
    return [
        (method, template)
        for method, template in site_scoped_routes(app)
        if "{siteId}" in template or template.startswith("/api/v1/sites/{id}")
    ]


def test_a_site_id_that_is_not_a_uuid_is_a_bad_request_on_every_site_route(app, owner):
    assert len(routes_naming_a_site(app)) >= 40
    for method, template in routes_naming_a_site(app):
        response = owner.request(method, fill(template, "my-shop"), json={})
        assert response.status_code == 400, f"{method} {template}: {response.status_code}"
        assert response.json()["error"]["code"] == "INVALID_SITE_ID", f"{method} {template}"


def test_a_site_id_in_capitals_names_the_same_site(app, owner):
    site = owner.make_site(name="Shouting Shop")
    shouted = site["id"].upper()
    assert owner.get(f"/sites/{shouted}").json()["id"] == site["id"]
    for method, template in routes_naming_a_site(app):
        if method != "GET":
            continue
        quiet = owner.get(fill(template, site["id"]))
        loud = owner.get(fill(template, shouted))
        assert loud.status_code == quiet.status_code != 403, f"{template}: {loud.status_code} {loud.text}"


def test_site_routes_without_a_token_answer_401(app, client, owner):
    site = owner.make_site()
    for method, template in site_scoped_routes(app):
        response = client.request(method, fill(template, site["id"]), json={})
        assert response.status_code == 401, f"{method} {template}"


def test_members_of_the_same_organisation_share_its_sites(client, store, owner):
    site = owner.make_site()
    colleague = Session(
        client, make_user(store, role="analyst", organization_id=owner.user["organization_id"])
    )
    assert colleague.get(f"/sites/{site['id']}").status_code == 200
    assert [s["id"] for s in colleague.get("/sites").json()] == [site["id"]]
