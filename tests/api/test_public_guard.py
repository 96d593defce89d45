"""The public guard over real HTTP: site key, verified, origin (or the mobile key), subscription, controller."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from aisle.settings import Settings
from api.app import create_app
from tests.factories import Session, make_user, make_verified_site
from tests.servers import LiveServer

ORIGIN = {"Origin": "https://shop.example.com"}
WRONG_ORIGIN = {"Origin": "https://evil.example.net"}
PAST = "2020-01-01T00:00:00Z"
FUTURE = "2999-01-01T00:00:00Z"


def config(client: httpx.Client, site_key: str, headers: dict[str, str] | None = None) -> httpx.Response:
    return client.get(f"/public/sites/{site_key}/tracking-config", headers=headers or {})


def identify(client: httpx.Client, site_key: str, headers: dict[str, str]) -> httpx.Response:
    body = {"visitorId": "visitor-1", "userId": "user-1"}
    return client.post(f"/public/sites/{site_key}/identify", json=body, headers=headers)


def error(response: httpx.Response) -> tuple[int, str, str]:
    body = response.json()["error"]
    return response.status_code, body["code"], body["message"]


# One app for the module: every test brings its own organisation (the `owner` fixture) and sites, so
# nothing a test changes (subscription, keys) reaches another. Logins of all tests come from one address.
@pytest.fixture(scope="module")
def settings(tmp_path_factory) -> Settings:
    return Settings(
        data_dir=tmp_path_factory.mktemp("guard") / "data",
        jwt_secret="test-signing-key-" + "x" * 32,
        login_max_attempts_per_address=10_000,
    )


@pytest.fixture(scope="module")
def app(settings):
    return create_app(settings)


@pytest.fixture(scope="module")
def store(app):
    return app.state.store


@pytest.fixture(scope="module")
def server(app) -> Iterator[LiveServer]:
    with LiveServer(app) as live:
        yield live


@pytest.fixture(scope="module")
def client(server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"{server.url}/api/v1", timeout=30) as http:
        yield http


@pytest.fixture(scope="module")
def admin(client, store) -> Session:
    return Session(client, make_user(store, is_platform_admin=True))


@pytest.fixture(scope="module")
def shop(client, store) -> dict[str, Any]:
    """A verified site shared by the tests that only read (they change neither it nor its organisation)."""
    return make_verified_site(Session(client, make_user(store)), store)


@pytest.fixture
def site(owner, store) -> dict[str, Any]:
    return make_verified_site(owner, store)


@pytest.fixture
def unverified(owner) -> dict[str, Any]:
    site = owner.make_site(name="New Shop", domain="new.example.com")
    assert site["isVerified"] is False
    return site


def set_subscription(admin: Session, owner: Session, status: str, period_end: str | None = None) -> dict:
    org_id = owner.user["organization_id"]
    response = admin.put(
        f"/admin/organizations/{org_id}/subscription",
        json={"status": status, "currentPeriodEnd": period_end},
    )
    assert response.status_code == 200, response.text
    return response.json()


def make_key(owner: Session, site: dict[str, Any], *scopes: str) -> dict[str, Any]:
    response = owner.post(
        f"/sites/{site['id']}/public-api-keys", json={"name": "app", "scopes": list(scopes)}
    )
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["key"].startswith("aisle_pk_")
    return body


def api_key(key: str) -> dict[str, str]:
    return {"x-aisle-api-key": key}


# --- 1. site key -------------------------------------------------------------------------------------


def test_unknown_site_key_is_404(client, shop):
    response = config(client, "no-such-site-key", ORIGIN)
    assert error(response) == (404, "SITE_NOT_FOUND", "Unknown site key")


def test_a_matching_origin_reaches_the_controller_of_that_site(client, owner, site):
    changed = owner.put(f"/sites/{site['id']}/tracking-config", json={"batchSize": 7})
    assert changed.status_code == 200, changed.text
    response = config(client, site["siteKey"], ORIGIN)
    assert response.status_code == 200, response.text
    assert response.json()["batchSize"] == 7
    assert response.json()["flushInterval"] == 30


# --- 2. verified --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [{"Origin": "https://new.example.com"}, {"Origin": "https://evil.example.net"}, {}],
    ids=["right-origin", "wrong-origin", "originless-no-key"],
)
def test_an_unverified_site_is_refused_before_origin_and_key(client, unverified, headers):
    response = config(client, unverified["siteKey"], headers)
    assert error(response) == (403, "SITE_NOT_VERIFIED", "Site not verified")


def test_an_unverified_site_is_refused_even_with_a_valid_mobile_key(client, owner, unverified):
    key = make_key(owner, unverified, "mobile_read")["key"]
    response = config(client, unverified["siteKey"], api_key(key))
    assert error(response) == (403, "SITE_NOT_VERIFIED", "Site not verified")


def test_verification_is_checked_before_the_subscription(client, owner, admin, unverified):
    set_subscription(admin, owner, "canceled")
    response = config(client, unverified["siteKey"], {"Origin": "https://new.example.com"})
    assert error(response) == (403, "SITE_NOT_VERIFIED", "Site not verified")


# --- 3. origin or referer -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "https://shop.example.com"},
        {"Origin": "http://shop.example.com:8080"},
        {"Origin": "https://SHOP.Example.COM"},
        {"Origin": "https://www.shop.example.com"},
        {"Origin": "https://m.eu.shop.example.com"},
        {"Referer": "https://shop.example.com/products/42?ref=home"},
        {"Referer": "https://www.shop.example.com/"},
    ],
)
def test_origin_or_referer_of_the_site_domain_or_a_subdomain_passes(client, shop, headers):
    response = config(client, shop["siteKey"], headers)
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "https://evil.example.net"},
        {"Origin": "https://evilshop.example.com"},
        {"Origin": "https://shop.example.com.evil.net"},
        {"Origin": "https://example.com"},  # the parent domain is not the site
        {"Origin": "https://shop.example.co"},
        {"Origin": "https://shop.example.com@evil.net"},
        {"Origin": "null"},
        {"Origin": "shop.example.com"},  # no scheme: not an origin
        {"Origin": "http://[shop.example.com"},  # unparseable: refused, not a 500
        {"Referer": "https://shop.example.com]/cart"},
        {"Referer": "https://evil.net/?next=https://shop.example.com/"},
        {"Referer": "https://evilshop.example.com/cart"},
        # A mismatching Origin is not rescued by a matching Referer.
        {"Origin": "https://evil.example.net", "Referer": "https://shop.example.com/"},
    ],
)
def test_a_foreign_or_look_alike_origin_is_refused(client, shop, headers):
    response = config(client, shop["siteKey"], headers)
    assert error(response) == (403, "ORIGIN_VALIDATION_FAILED", "Origin validation failed")


def test_a_mobile_key_does_not_bypass_a_wrong_origin(client, owner, site):
    key = make_key(owner, site, "mobile_read", "mobile_write")["key"]
    response = config(client, site["siteKey"], {**WRONG_ORIGIN, **api_key(key)})
    assert error(response) == (403, "ORIGIN_VALIDATION_FAILED", "Origin validation failed")


def test_origin_is_checked_before_the_subscription(client, owner, admin, site):
    set_subscription(admin, owner, "past_due")
    response = config(client, site["siteKey"], WRONG_ORIGIN)
    assert error(response) == (403, "ORIGIN_VALIDATION_FAILED", "Origin validation failed")


def test_the_origin_follows_a_domain_change(client, owner, store):
    from warehouse.config_store import sites

    site = make_verified_site(owner, store, domain="old.example.com")
    assert config(client, site["siteKey"], {"Origin": "https://old.example.com"}).status_code == 200
    with store.begin() as conn:
        sites.update_fields(conn, site_id=site["id"], domain="new.example.org")
    response = config(client, site["siteKey"], {"Origin": "https://old.example.com"})
    assert error(response) == (403, "ORIGIN_VALIDATION_FAILED", "Origin validation failed")
    assert config(client, site["siteKey"], {"Origin": "https://new.example.org"}).status_code == 200


# --- 4. subscription -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "period_end"),
    [("past_due", None), ("canceled", None), ("unpaid", None), ("active", PAST), ("trialing", PAST)],
)
def test_an_invalid_subscription_is_refused(client, owner, admin, site, status, period_end):
    answer = set_subscription(admin, owner, status, period_end)
    assert answer["status"] == status
    assert answer["isValid"] is False
    response = config(client, site["siteKey"], ORIGIN)
    assert error(response) == (403, "SUBSCRIPTION_INVALID", "Subscription is not active")


@pytest.mark.parametrize(
    ("status", "period_end"), [("trialing", FUTURE), ("active", FUTURE), ("active", None)]
)
def test_a_valid_subscription_passes(client, owner, admin, site, status, period_end):
    set_subscription(admin, owner, "canceled")  # the change back must be seen at once
    assert config(client, site["siteKey"], ORIGIN).status_code == 403
    answer = set_subscription(admin, owner, status, period_end)
    assert answer["isValid"] is True
    assert config(client, site["siteKey"], ORIGIN).status_code == 200


def test_the_subscription_of_another_organisation_does_not_matter(client, owner, outsider, admin, site):
    set_subscription(admin, outsider, "canceled")
    assert config(client, site["siteKey"], ORIGIN).status_code == 200


def test_only_platform_admins_set_subscriptions(owner):
    org_id = owner.user["organization_id"]
    response = owner.put(f"/admin/organizations/{org_id}/subscription", json={"status": "active"})
    assert error(response)[:2] == (403, "PLATFORM_ADMIN_REQUIRED")


# --- originless mobile fallback ---------------------------------------------------------------------------


def test_originless_without_a_key_is_401(client, shop):
    response = config(client, shop["siteKey"])
    assert error(response) == (
        401,
        "API_KEY_REQUIRED",
        "Requests without Origin or Referer need a site API key in 'x-aisle-api-key'",
    )


def test_a_read_key_opens_get(client, owner, site):
    key = make_key(owner, site, "mobile_read")["key"]
    response = config(client, site["siteKey"], api_key(key))
    assert response.status_code == 200, response.text
    assert response.json()["batchSize"] == 50


def test_a_write_only_key_cannot_get(client, owner, site):
    key = make_key(owner, site, "mobile_write")["key"]
    response = config(client, site["siteKey"], api_key(key))
    assert error(response) == (403, "API_KEY_SCOPE_MISSING", "API key lacks the scope 'mobile_read'")


def test_post_needs_mobile_write(client, owner, site):
    read_only = make_key(owner, site, "mobile_read")["key"]
    writer = make_key(owner, site, "mobile_write")["key"]
    response = identify(client, site["siteKey"], api_key(read_only))
    assert error(response) == (403, "API_KEY_SCOPE_MISSING", "API key lacks the scope 'mobile_write'")
    response = identify(client, site["siteKey"], api_key(writer))
    assert response.status_code == 200, response.text
    assert response.json() == {"success": True, "merged": True}


def test_a_key_of_another_site_is_refused(client, owner, store, site):
    other = make_verified_site(owner, store, name="Other", domain="other.example.com")
    key = make_key(owner, other, "mobile_read", "mobile_write")["key"]
    assert config(client, other["siteKey"], api_key(key)).status_code == 200
    response = config(client, site["siteKey"], api_key(key))
    assert error(response) == (401, "API_KEY_INVALID", "API key is invalid or revoked")


@pytest.mark.parametrize(
    "presented",
    ["nonsense", "aisle_pk_", "aisle_pk_000000000000_secret", "Bearer aisle_pk_x"],
)
def test_a_malformed_or_unknown_key_is_refused(client, shop, presented):
    response = config(client, shop["siteKey"], api_key(presented))
    assert error(response)[:2] == (401, "API_KEY_INVALID")


def test_a_known_prefix_with_a_wrong_secret_is_refused(client, owner, site):
    key = make_key(owner, site, "mobile_read")["key"]
    response = config(client, site["siteKey"], api_key(key[:-4] + "AAAA"))
    assert error(response)[:2] == (401, "API_KEY_INVALID")


def test_a_revoked_key_is_refused(client, owner, site):
    record = make_key(owner, site, "mobile_read")
    assert config(client, site["siteKey"], api_key(record["key"])).status_code == 200
    revoked = owner.post(f"/sites/{site['id']}/public-api-keys/{record['id']}/revoke")
    assert revoked.status_code == 200, revoked.text
    assert revoked.json()["status"] == "revoked"
    response = config(client, site["siteKey"], api_key(record["key"]))
    assert error(response) == (401, "API_KEY_INVALID", "API key is invalid or revoked")


def test_rotation_retires_the_old_secret_at_once(client, owner, site):
    record = make_key(owner, site, "mobile_read")
    rotated = owner.post(f"/sites/{site['id']}/public-api-keys/{record['id']}/rotate")
    assert rotated.status_code == 200, rotated.text
    new_key = rotated.json()["key"]
    assert new_key != record["key"]
    response = config(client, site["siteKey"], api_key(record["key"]))
    assert error(response) == (401, "API_KEY_INVALID", "API key is invalid or revoked")
    assert config(client, site["siteKey"], api_key(new_key)).status_code == 200


def test_the_key_is_checked_before_the_subscription(client, owner, admin, site):
    set_subscription(admin, owner, "past_due")
    assert error(config(client, site["siteKey"]))[:2] == (401, "API_KEY_REQUIRED")
    key = make_key(owner, site, "mobile_read")["key"]
    response = config(client, site["siteKey"], api_key(key))
    assert error(response) == (403, "SUBSCRIPTION_INVALID", "Subscription is not active")


# --- cross-origin access (the shop's pages are another origin than Aisle) ------------------------------


@pytest.mark.parametrize("route", ["identify", "events/batch", "orders", "consent"])
def test_a_browser_preflight_of_a_public_post_is_allowed(client, shop, route):
    response = client.options(
        f"/public/sites/{shop['siteKey']}/{route}",
        headers={**ORIGIN, "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "content-type, x-aisle-client-platform"},
    )  # fmt: skip
    assert response.status_code == 200, response.text
    assert response.headers["access-control-allow-origin"] == "*"
    assert "POST" in response.headers["access-control-allow-methods"]
    allowed = response.headers["access-control-allow-headers"].lower()
    assert "content-type" in allowed and "x-aisle-client-platform" in allowed
    assert response.headers["access-control-max-age"] == "86400"


ALLOWED_HEADERS = ("accept, accept-language, content-encoding, content-language, content-type, x-aisle-api-key, "
                   "x-aisle-client-platform, x-aisle-client-version")  # fmt: skip


@pytest.mark.parametrize(
    ("asked", "message", "details"),
    [
        (
            {"Access-Control-Request-Method": "DELETE"},
            "Cross-origin requests may not use DELETE (they may use GET, POST, OPTIONS)",
            {"method": "DELETE", "allowedMethods": ["GET", "POST", "OPTIONS"]},
        ),
        (
            {
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "Content-Type, Authorization",
            },
            f"Cross-origin requests may not send authorization (they may send {ALLOWED_HEADERS})",
            {"headers": ["authorization"], "allowedHeaders": ALLOWED_HEADERS.split(", ")},
        ),
    ],
)
def test_a_refused_preflight_answers_in_the_envelope_with_its_cors_headers(
    client, shop, asked, message, details
):
    response = client.options(
        f"/public/sites/{shop['siteKey']}/events/batch", headers={"Origin": "https://x.example", **asked}
    )

    assert (response.status_code, response.headers["content-type"]) == (400, "application/json")
    assert response.json() == {
        "error": {"code": "CORS_PREFLIGHT_REFUSED", "message": message, "details": details}
    }
    assert {name: response.headers[name] for name in ("access-control-allow-origin", "access-control-allow-methods",
                                                      "access-control-allow-headers", "access-control-max-age")} == {
        "access-control-allow-origin": "*",
        "access-control-allow-methods": "GET, POST, OPTIONS",
        "access-control-allow-headers": "Accept, Accept-Language, Content-Encoding, Content-Language, Content-Type, "
                                        "x-aisle-api-key, x-aisle-client-platform, x-aisle-client-version",
        "access-control-max-age": "86400",
    }  # fmt: skip
    assert response.headers["vary"].startswith("Origin, Access-Control-Request-Method")


def test_public_answers_are_readable_from_the_shop_s_pages(client, shop):
    identified = identify(client, shop["siteKey"], ORIGIN)
    assert identified.status_code == 200, identified.text
    assert identified.headers["access-control-allow-origin"] == "*"
    assert "x-ratelimit-remaining" in identified.headers["access-control-expose-headers"].lower()
    # The events batch, served off the hot path, carries them too.
    batch = client.post(
        f"/public/sites/{shop['siteKey']}/events/batch",
        json={"events": [{"name": "page_view", "visitorId": "v", "sessionId": "s"}]},
        headers=ORIGIN,
    )
    assert batch.status_code == 200, batch.text
    assert batch.headers["access-control-allow-origin"] == "*"
    # Another origin may read why it was turned away.
    refused = config(client, shop["siteKey"], WRONG_ORIGIN)
    assert refused.status_code == 403 and refused.headers["access-control-allow-origin"] == "*"


def test_the_private_api_stays_same_origin(client, shop):
    response = client.options(
        f"/sites/{shop['id']}", headers={**ORIGIN, "Access-Control-Request-Method": "GET"}
    )
    assert "access-control-allow-origin" not in response.headers
