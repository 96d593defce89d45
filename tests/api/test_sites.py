"""Sites routes over HTTP: lifecycle, feeds summary and stats, tracking configuration, the admin
update, domain verification (against loopback DNS and HTTP peers), mobile API keys, and access rules."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from aisle.settings import Settings
from api.app import create_app
from api.sites import keys
from api.sites.keys import KEY_PREFIX
from tests.factories import Session, make_user, make_verified_site
from tests.servers import in_process_client
from tests.verification_peers import WELL_KNOWN_PATH, DnsServer, WellKnownServer
from warehouse.config_store.tables import site_api_keys

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
SITE_FIELDS = {
    "id", "organizationId", "name", "domain", "siteKey", "currency", "timezone", "isVerified",
    "verifiedAt", "verification", "createdAt", "updatedAt",
}  # fmt: skip
KEY_FIELDS = {"id", "siteId", "name", "scopes", "prefix", "status", "lastUsedAt", "revokedAt", "createdAt"}
NO_SUCH_SITE = "11111111-1111-1111-1111-111111111111"

DEFAULT_TRACKING_CONFIG: dict[str, Any] = {
    "batchingEnabled": False,
    "batchSize": 50,
    "flushInterval": 30,
    "offlinePersistence": True,
    "sendBeaconOnUnload": True,
    "maxRetries": 3,
    "maxQueueSize": 100,
    "maxStorageEvents": 50,
    "debugMode": False,
    "dataLayerConfig": {
        "enabled": True,
        "variableName": "aisleLayer",
        "pageDetection": "auto",
        "autoPageTracking": True,
        "cartAbandonmentTimeout": 30,
        "pageTypePatterns": {},
        "debugMode": False,
        "cookieConsent": {
            "enabled": False,
            "variableName": "aisleConsent",
            "waitForConsent": False,
            "defaultConsent": False,
            "timeoutMs": None,
            "granular": None,
            "requiredCategories": None,
            "consentChangeCallback": None,
            "storageKey": None,
        },
        "trackingModules": {
            "page": {"enabled": True},
            "product": {"enabled": True},
            "basket": {"enabled": True},
            "checkout": {"enabled": True},
            "user": {"enabled": True},
            "search": {"enabled": True},
        },
        "bufferSize": 10,
        "flushInterval": 1000,
        "reverseEventMapping": None,
        "externalDataLayerName": "dataLayer",
    },
}


# --- fixtures: one app for the module, pointed at loopback verification peers --------------------
# Every test brings its own organisation (`owner`, `outsider`) and its own domains, so nothing one
# test changes reaches another. All logins come from one address, hence the raised login limit.


@pytest.fixture(scope="module")
def dns_peer() -> Iterator[DnsServer]:
    with DnsServer() as peer:
        yield peer


@pytest.fixture(scope="module")
def http_peer() -> Iterator[WellKnownServer]:
    with WellKnownServer() as peer:
        yield peer


@pytest.fixture(scope="module")
def settings(tmp_path_factory, dns_peer: DnsServer, http_peer: WellKnownServer) -> Settings:
    return Settings(
        data_dir=tmp_path_factory.mktemp("sites") / "data",
        jwt_secret="test-signing-key-" + "x" * 32,
        login_max_attempts_per_address=10_000,
        verification_dns_server=dns_peer.address,
        verification_http_base=http_peer.base_url,
        verification_timeout_seconds=3,
    )


@pytest.fixture(scope="module")
def app(settings):
    return create_app(settings)


@pytest.fixture(scope="module")
def store(app):
    return app.state.store


@pytest.fixture(scope="module")
def client(app) -> Iterator[httpx.Client]:
    with in_process_client(app) as http:
        yield http


@pytest.fixture(scope="module")
def admin(client, store) -> Session:
    return Session(client, make_user(store, is_platform_admin=True))


@pytest.fixture
def viewer(client, store, owner) -> Session:
    return Session(client, make_user(store, role="viewer", organization_id=owner.user["organization_id"]))


# --- helpers --------------------------------------------------------------------------------------


def error_of(response: httpx.Response) -> tuple[int, str]:
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message", "details"}, body
    return response.status_code, body["error"]["code"]


def failed_fields(response: httpx.Response) -> list[str]:
    return [d["field"] for d in response.json()["error"]["details"]["fields"]]


def failed_messages(response: httpx.Response) -> str:
    return " | ".join(d["message"] for d in response.json()["error"]["details"]["fields"])


def get_site(session: Session, site_id: str) -> dict[str, Any]:
    response = session.get(f"/sites/{site_id}")
    assert response.status_code == 200, response.text
    return response.json()


def make_key(session: Session, site_id: str, *scopes: str, name: str = "ios app") -> dict[str, Any]:
    response = session.post(f"/sites/{site_id}/public-api-keys", json={"name": name, "scopes": list(scopes)})
    assert response.status_code == 201, response.text
    return response.json()


def list_keys(session: Session, site_id: str) -> list[dict[str, Any]]:
    response = session.get(f"/sites/{site_id}/public-api-keys")
    assert response.status_code == 200, response.text
    return response.json()


def tracking_config(session: Session, site_id: str) -> dict[str, Any]:
    response = session.get(f"/sites/{site_id}/tracking-config")
    assert response.status_code == 200, response.text
    return response.json()


def with_changes(base: dict[str, Any], **paths: Any) -> dict[str, Any]:
    """A deep copy of ``base`` with ``a__b__c=value`` set at base["a"]["b"]["c"]."""
    out = copy.deepcopy(base)
    for path, value in paths.items():
        *parents, leaf = path.split("__")
        node = out
        for part in parents:
            node = node[part]
        node[leaf] = value
    return out


# --- create -----------------------------------------------------------------------------------------


def test_create_answers_201_with_the_site_and_its_defaults(owner):
    response = owner.post("/sites", json={"name": "Corner Shop", "domain": "corner.example.com"})

    assert response.status_code == 201, response.text
    site = response.json()
    assert set(site) == SITE_FIELDS
    assert UUID.match(site["id"])
    assert re.fullmatch(r"sk_[0-9a-f]{24}", site["siteKey"])
    assert site["organizationId"] == owner.user["organization_id"]
    assert site["name"] == "Corner Shop"
    assert site["domain"] == "corner.example.com"
    assert site["currency"] == "EUR"
    assert site["timezone"] == "UTC"
    assert site["isVerified"] is False
    assert site["verifiedAt"] is None
    assert TIMESTAMP.match(site["createdAt"]) and TIMESTAMP.match(site["updatedAt"])
    token = site["verification"]["token"]
    assert re.fullmatch(r"[0-9a-f]{32}", token)
    assert site["verification"] == {
        "token": token,
        "dnsRecordName": "_aisle-verification.corner.example.com",
        "dnsRecordValue": f"aisle-verification={token}",
        "httpUrl": "https://corner.example.com/.well-known/aisle-verification.txt",
    }
    assert get_site(owner, site["id"]) == site


def test_each_site_gets_its_own_id_key_and_token(owner):
    first = owner.make_site(domain="one.example.com")
    second = owner.make_site(domain="two.example.com")
    assert first["id"] != second["id"]
    assert first["siteKey"] != second["siteKey"]
    assert first["verification"]["token"] != second["verification"]["token"]


@pytest.mark.parametrize(
    ("sent", "stored"), [("gbp", "GBP"), ("GBP", "GBP"), (" usd ", "USD"), ("chf", "CHF")]
)
def test_create_stores_the_currency_uppercase(owner, sent, stored):
    site = owner.make_site(currency=sent)
    assert site["currency"] == stored
    assert get_site(owner, site["id"])["currency"] == stored


@pytest.mark.parametrize("currency", ["ABC", "EURO", "", "EU", "usd1"])
def test_create_refuses_a_currency_outside_iso_4217(owner, currency):
    response = owner.post("/sites", json={"name": "Shop", "domain": "shop.example.com", "currency": currency})

    assert error_of(response) == (400, "VALIDATION_FAILED")
    assert failed_fields(response) == ["body.currency"]
    assert "ISO-4217" in failed_messages(response)
    assert owner.get("/sites").json() == []


def test_the_schema_promises_three_uppercase_letters_for_a_sites_currency(client):
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    for model in ("SiteOut", "SiteStats"):
        assert schemas[model]["properties"]["currency"]["pattern"] == "^[A-Z]{3}$", model


@pytest.mark.parametrize(
    ("sent", "stored"),
    [
        ("https://Shop.Example.com/path", "shop.example.com"),
        ("shop.example.com", "shop.example.com"),
        ("SHOP.EXAMPLE.COM.", "shop.example.com"),
        ("Shop.Example.com:443", "shop.example.com"),
        ("http://shop.example.com:8080/a/b?c=d#e", "shop.example.com"),
        ("  www.shop.example.co.uk  ", "www.shop.example.co.uk"),
        ("https://bücher.example/", "xn--bcher-kva.example"),
    ],
)
def test_create_normalises_the_domain_to_a_bare_host(owner, sent, stored):
    site = owner.make_site(domain=sent)
    assert site["domain"] == stored
    assert site["verification"]["dnsRecordName"] == f"_aisle-verification.{stored}"


@pytest.mark.parametrize(
    "domain", ["not a domain", "", "shop", "-shop.example.com", "shop..example.com", "shop_1.example.com"]
)
def test_create_refuses_what_is_not_a_domain(owner, domain):
    response = owner.post("/sites", json={"name": "Shop", "domain": domain})

    assert error_of(response) == (400, "VALIDATION_FAILED")
    assert failed_fields(response) == ["body.domain"]
    assert owner.get("/sites").json() == []


def test_create_accepts_an_iana_timezone(owner):
    site = owner.make_site(timezone="Europe/Berlin")
    assert site["timezone"] == "Europe/Berlin"


@pytest.mark.parametrize("timezone", ["Mars/Olympus_Mons", "CET+99", "", "Europe/", "localtime"])
def test_create_refuses_an_unknown_timezone(owner, timezone):
    response = owner.post("/sites", json={"name": "Shop", "domain": "shop.example.com", "timezone": timezone})

    assert error_of(response) == (400, "VALIDATION_FAILED")
    assert failed_fields(response) == ["body.timezone"]
    assert "IANA" in failed_messages(response)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "Shop", "domain": "shop.example.com", "isVerified": True}, "body.isVerified"),
        ({"name": "Shop", "domain": "shop.example.com", "siteKey": "sk_mine"}, "body.siteKey"),
        ({"name": "Shop", "domain": "shop.example.com", "colour": "red"}, "body.colour"),
        ({"domain": "shop.example.com"}, "body.name"),
        ({"name": "Shop"}, "body.domain"),
        ({"name": "", "domain": "shop.example.com"}, "body.name"),
    ],
)
def test_create_refuses_unknown_and_missing_fields(owner, body, field):
    response = owner.post("/sites", json=body)

    assert error_of(response) == (400, "VALIDATION_FAILED")
    assert failed_fields(response) == [field]
    assert owner.get("/sites").json() == []


def test_create_refuses_a_body_that_is_not_json(owner):
    response = owner.post("/sites", content=b"{name: Shop", headers={"Content-Type": "application/json"})
    assert error_of(response) == (400, "MALFORMED_JSON")


# --- list, get --------------------------------------------------------------------------------------


def test_list_shows_only_the_callers_organisation(owner, outsider):
    assert owner.get("/sites").json() == []
    first = owner.make_site(name="First", domain="first.example.com")
    second = owner.make_site(name="Second", domain="second.example.com")
    theirs = outsider.make_site(name="Theirs", domain="theirs.example.com")

    listed = owner.get("/sites")
    assert listed.status_code == 200
    assert listed.json() == [first, second]
    assert outsider.get("/sites").json() == [theirs]


def test_get_answers_403_for_unknown_and_foreign_sites_alike(owner, outsider):
    theirs = outsider.make_site(name="Secret Shop", domain="secret.example.com")
    for site_id in (NO_SUCH_SITE, theirs["id"], theirs["id"].upper()):
        response = owner.get(f"/sites/{site_id}")
        assert error_of(response) == (403, "SITE_ACCESS_DENIED"), site_id
        assert "Secret Shop" not in response.text and theirs["siteKey"] not in response.text
    assert error_of(owner.get("/sites/not-a-uuid")) == (400, "INVALID_SITE_ID")


# --- update -----------------------------------------------------------------------------------------


def test_update_is_partial(owner):
    site = owner.make_site(name="Shop", domain="shop.example.com", currency="GBP", timezone="Europe/London")

    renamed = owner.put(f"/sites/{site['id']}", json={"name": "Renamed Shop"})
    assert renamed.status_code == 200, renamed.text
    unchanged = {k: v for k, v in site.items() if k not in ("name", "updatedAt")}
    assert {k: v for k, v in renamed.json().items() if k not in ("name", "updatedAt")} == unchanged
    assert renamed.json()["name"] == "Renamed Shop"
    assert renamed.json()["updatedAt"] >= site["updatedAt"]

    moved = owner.put(f"/sites/{site['id']}", json={"currency": "usd", "timezone": "America/New_York"})
    assert moved.status_code == 200, moved.text
    body = moved.json()
    assert (body["name"], body["domain"], body["currency"], body["timezone"]) == (
        "Renamed Shop", "shop.example.com", "USD", "America/New_York",
    )  # fmt: skip
    assert get_site(owner, site["id"]) == body

    nothing = owner.put(f"/sites/{site['id']}", json={})
    assert nothing.status_code == 200
    assert {k: v for k, v in nothing.json().items() if k != "updatedAt"} == {
        k: v for k, v in body.items() if k != "updatedAt"
    }


def test_changing_the_domain_clears_verification(owner, store):
    site = make_verified_site(owner, store, domain="old.example.com")
    assert get_site(owner, site["id"])["isVerified"] is True

    response = owner.put(f"/sites/{site['id']}", json={"domain": "https://New.Example.org/shop"})

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["domain"] == "new.example.org"
    assert body["isVerified"] is False
    assert body["verifiedAt"] is None
    assert body["verification"] == {
        "token": site["verification"]["token"],
        "dnsRecordName": "_aisle-verification.new.example.org",
        "dnsRecordValue": f"aisle-verification={site['verification']['token']}",
        "httpUrl": "https://new.example.org/.well-known/aisle-verification.txt",
    }
    assert get_site(owner, site["id"])["isVerified"] is False


def test_sending_the_same_domain_keeps_verification(owner, store):
    site = make_verified_site(owner, store, domain="same.example.com")

    response = owner.put(f"/sites/{site['id']}", json={"domain": "https://SAME.example.com/", "name": "Same"})

    assert response.status_code == 200, response.text
    assert (response.json()["domain"], response.json()["isVerified"]) == ("same.example.com", True)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"currency": "EURO"}, "body.currency"),
        ({"currency": "ABC"}, "body.currency"),
        ({"timezone": "Nowhere/Special"}, "body.timezone"),
        ({"domain": "not a domain"}, "body.domain"),
        ({"name": ""}, "body.name"),
        ({"isVerified": True}, "body.isVerified"),
        ({"siteKey": "sk_0000"}, "body.siteKey"),
        ({"organizationId": NO_SUCH_SITE}, "body.organizationId"),
    ],
)
def test_update_refuses_bad_values_and_unknown_fields_and_changes_nothing(owner, body, field):
    site = owner.make_site(name="Shop", domain="keep.example.com", currency="GBP")

    response = owner.put(f"/sites/{site['id']}", json={"name": "Should Not Stick", **body})

    assert error_of(response) == (400, "VALIDATION_FAILED")
    assert failed_fields(response) == [field]
    assert get_site(owner, site["id"]) == site


# --- delete -----------------------------------------------------------------------------------------


def test_delete_then_get_answers_403(owner, store):
    site = owner.make_site(domain="gone.example.com")
    kept = owner.make_site(domain="kept.example.com")
    secret = make_key(owner, site["id"], "mobile_read")["key"]

    response = owner.delete(f"/sites/{site['id']}")

    assert response.status_code == 200, response.text
    assert response.json() == {"success": True}
    assert error_of(owner.get(f"/sites/{site['id']}")) == (403, "SITE_ACCESS_DENIED")
    assert error_of(owner.delete(f"/sites/{site['id']}")) == (403, "SITE_ACCESS_DENIED")
    assert error_of(owner.get(f"/sites/{site['id']}/public-api-keys")) == (403, "SITE_ACCESS_DENIED")
    assert owner.get("/sites").json() == [kept]
    # Its keys went with it.
    assert keys.authenticate(store, site_id=site["id"], presented=secret) is None
    with store.connect() as conn:
        assert conn.execute(select(site_api_keys).where(site_api_keys.c.site_id == site["id"])).all() == []


# --- feeds summary, stats -----------------------------------------------------------------------------


def test_feeds_summary_lists_each_site_and_what_blocks_it(owner, outsider, store):
    live = make_verified_site(owner, store, name="Live", domain="live.example.com", currency="GBP")
    pending = owner.make_site(name="Pending", domain="pending.example.com")
    outsider.make_site(name="Theirs", domain="theirs.example.com")

    response = owner.get("/sites/feeds-summary")

    assert response.status_code == 200, response.text
    assert response.json() == {
        "totalSites": 2,
        "verifiedSites": 1,
        "sites": [
            {
                "siteId": live["id"],
                "name": "Live",
                "domain": "live.example.com",
                "siteKey": live["siteKey"],
                "currency": "GBP",
                "isVerified": True,
                "acceptsEvents": True,
                "blockers": [],
            },
            {
                "siteId": pending["id"],
                "name": "Pending",
                "domain": "pending.example.com",
                "siteKey": pending["siteKey"],
                "currency": "EUR",
                "isVerified": False,
                "acceptsEvents": False,
                "blockers": ["DOMAIN_NOT_VERIFIED"],
            },
        ],
    }


def test_feeds_summary_of_an_organisation_without_sites(owner):
    response = owner.get("/sites/feeds-summary")
    assert response.status_code == 200
    assert response.json() == {"totalSites": 0, "verifiedSites": 0, "sites": []}


def test_stats_of_a_new_site(owner):
    site = owner.make_site(domain="stats.example.com", currency="GBP", timezone="Europe/Berlin")

    response = owner.get(f"/sites/{site['id']}/stats")

    assert response.status_code == 200, response.text
    assert response.json() == {
        "siteId": site["id"],
        "isVerified": False,
        "currency": "GBP",
        "timezone": "Europe/Berlin",
        "apiKeys": {"active": 0, "revoked": 0},
        "tracking": {
            "dataLayerEnabled": True,
            "modulesEnabled": ["basket", "checkout", "page", "product", "search", "user"],
        },
        "createdAt": site["createdAt"],
    }


def test_stats_follow_keys_tracking_and_verification(owner, admin):
    site = owner.make_site(domain="busy.example.com")
    make_key(owner, site["id"], "mobile_read")
    revoked = make_key(owner, site["id"], "mobile_write")
    assert owner.post(f"/sites/{site['id']}/public-api-keys/{revoked['id']}/revoke").status_code == 200
    patch = {"dataLayerConfig": {"enabled": False, "trackingModules": {"search": {"enabled": False}}}}
    assert owner.put(f"/sites/{site['id']}/tracking-config", json=patch).status_code == 200
    assert admin.put(f"/admin/sites/{site['id']}", json={"isVerified": True}).status_code == 200

    stats = owner.get(f"/sites/{site['id']}/stats").json()

    assert stats["isVerified"] is True
    assert stats["apiKeys"] == {"active": 1, "revoked": 1}
    assert stats["tracking"] == {
        "dataLayerEnabled": False,
        "modulesEnabled": ["basket", "checkout", "page", "product", "user"],
    }


def test_stats_of_a_foreign_site_answer_403(owner, outsider):
    site = outsider.make_site(domain="other-stats.example.com")
    assert error_of(owner.get(f"/sites/{site['id']}/stats")) == (403, "SITE_ACCESS_DENIED")


# --- tracking configuration ---------------------------------------------------------------------------


def test_tracking_config_defaults_follow_the_spec_tables(owner):
    site = owner.make_site(domain="tracker.example.com")
    assert tracking_config(owner, site["id"]) == DEFAULT_TRACKING_CONFIG


def test_tracking_config_update_is_a_deep_merge(owner):
    site = owner.make_site(domain="merge.example.com")
    url = f"/sites/{site['id']}/tracking-config"

    first = owner.put(
        url,
        json={
            "batchingEnabled": True,
            "batchSize": 20,
            "dataLayerConfig": {
                "bufferSize": 25,
                "trackingModules": {"search": {"enabled": False}},
                "cookieConsent": {
                    "enabled": True,
                    "granularEnabled": True,
                    "requiredCategories": ["necessary", "analytics"],
                },
            },
        },
    )

    assert first.status_code == 200, first.text
    expected = with_changes(
        DEFAULT_TRACKING_CONFIG,
        batchingEnabled=True,
        batchSize=20,
        dataLayerConfig__bufferSize=25,
        dataLayerConfig__trackingModules__search={"enabled": False},
        dataLayerConfig__cookieConsent__enabled=True,
        dataLayerConfig__cookieConsent__granular=True,
        dataLayerConfig__cookieConsent__requiredCategories=["necessary", "analytics"],
    )
    assert first.json() == expected
    assert tracking_config(owner, site["id"]) == expected

    second = owner.put(url, json={"dataLayerConfig": {"cookieConsent": {"waitForConsent": True}}})

    assert second.status_code == 200, second.text
    expected = with_changes(expected, dataLayerConfig__cookieConsent__waitForConsent=True)
    assert second.json() == expected
    assert tracking_config(owner, site["id"]) == expected
    assert "granularEnabled" not in second.text


def test_maps_in_the_tracking_config_are_replaced_not_merged(owner):
    site = owner.make_site(domain="maps.example.com")
    url = f"/sites/{site['id']}/tracking-config"
    patterns = {"product": r"^/p/[\w-]+$", "cart": "^/cart"}
    mapping = {"AddToCart": "add_to_cart", "Purchase": "purchase"}
    first = owner.put(
        url, json={"dataLayerConfig": {"pageTypePatterns": patterns, "reverseEventMapping": mapping}}
    )
    assert first.status_code == 200, first.text
    assert first.json()["dataLayerConfig"]["pageTypePatterns"] == patterns
    assert first.json()["dataLayerConfig"]["reverseEventMapping"] == mapping

    second = owner.put(
        url,
        json={
            "dataLayerConfig": {
                "pageTypePatterns": {"product": "^/item/"},
                "reverseEventMapping": {"buy": "purchase"},
            }
        },
    )

    assert second.status_code == 200, second.text
    layer = tracking_config(owner, site["id"])["dataLayerConfig"]
    assert layer["pageTypePatterns"] == {"product": "^/item/"}
    assert layer["reverseEventMapping"] == {"buy": "purchase"}


def test_a_tracking_config_read_can_be_written_back_unchanged(owner):
    site = owner.make_site(domain="roundtrip.example.com")
    url = f"/sites/{site['id']}/tracking-config"
    assert (
        owner.put(url, json={"dataLayerConfig": {"cookieConsent": {"granularEnabled": False}}}).status_code
        == 200
    )
    read = tracking_config(owner, site["id"])
    assert read["dataLayerConfig"]["cookieConsent"]["granular"] is False

    response = owner.put(url, json=read)

    assert response.status_code == 200, response.text
    assert response.json() == read


def test_the_read_name_granular_is_also_accepted_on_write(owner):
    site = owner.make_site(domain="granular.example.com")
    url = f"/sites/{site['id']}/tracking-config"

    response = owner.put(url, json={"dataLayerConfig": {"cookieConsent": {"granular": True}}})

    assert response.status_code == 200, response.text
    assert tracking_config(owner, site["id"])["dataLayerConfig"]["cookieConsent"]["granular"] is True
    switched_off = owner.put(url, json={"dataLayerConfig": {"cookieConsent": {"granularEnabled": False}}})
    assert switched_off.json()["dataLayerConfig"]["cookieConsent"]["granular"] is False


def test_the_schema_lists_the_write_name_granular_enabled_beside_granular(client):
    consent = client.get("/openapi.json").json()["components"]["schemas"]["CookieConsent"]
    names = list(consent["properties"])

    assert consent["additionalProperties"] is False
    assert names.index("granularEnabled") == names.index("granular") + 1
    assert consent["properties"]["granularEnabled"] == {
        "anyOf": [{"type": "boolean"}, {"type": "null"}],
        "title": "Granularenabled",
        "description": "The write name of `granular` (as the spec's payload sends it); answers name it "
        "`granular`. Sent with `granular` too, the two must agree.",
    }


@pytest.mark.parametrize(
    ("consent", "message"),
    [
        ({"granular": True, "granularEnabled": False}, "granularEnabled and granular name one flag"),
        (
            {"granular_enabled": True, "granularEnabled": False},
            "granularEnabled and granular_enabled name one flag",
        ),
        ({"granular": False, "granular_enabled": True}, "granular and granular_enabled name one flag"),
        ({"granular": True, "granularEnabled": 1}, "granularEnabled and granular name one flag"),
    ],
)
def test_spellings_of_granular_sent_together_must_agree(owner, consent, message):
    site = owner.make_site(domain="spellings.example.com")
    url = f"/sites/{site['id']}/tracking-config"
    assert owner.put(url, json={"dataLayerConfig": {"cookieConsent": {"granular": True}}}).status_code == 200
    before = tracking_config(owner, site["id"])

    response = owner.put(url, json={"batchSize": 7, "dataLayerConfig": {"cookieConsent": consent}})

    assert error_of(response) == (400, "VALIDATION_FAILED")
    assert response.json()["error"]["details"]["fields"] == [
        {
            "field": "body.dataLayerConfig.cookieConsent.granularEnabled",
            "message": f"{message} and were sent different values; send one of them",
            "type": "granular_spellings_disagree",
        }
    ]
    assert tracking_config(owner, site["id"]) == before


def test_spellings_of_granular_sent_together_with_one_value_write_it(owner):
    site = owner.make_site(domain="agree.example.com")
    url = f"/sites/{site['id']}/tracking-config"
    consent = {"granular": True, "granularEnabled": True, "granular_enabled": True}

    response = owner.put(url, json={"dataLayerConfig": {"cookieConsent": consent}})

    assert response.status_code == 200, response.text
    assert response.json()["dataLayerConfig"]["cookieConsent"]["granular"] is True
    assert "granularEnabled" not in response.text


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"batchSize": 0}, "body.batchSize"),
        ({"batchSize": "fifty"}, "body.batchSize"),
        ({"flushInterval": -1}, "body.flushInterval"),
        ({"unknownKey": 1}, "body.unknownKey"),
        ({"dataLayerConfig": {"bufferSize": 0}}, "body.dataLayerConfig.bufferSize"),
        ({"dataLayerConfig": {"flushInterval": 5}}, "body.dataLayerConfig.flushInterval"),
        ({"dataLayerConfig": {"pageDetection": "magic"}}, "body.dataLayerConfig.pageDetection"),
        ({"dataLayerConfig": {"variableName": "my layer"}}, "body.dataLayerConfig.variableName"),
        ({"dataLayerConfig": {"surprise": True}}, "body.dataLayerConfig.surprise"),
        (
            {"dataLayerConfig": {"reverseEventMapping": {"AddToCart": "addToCart"}}},
            "body.dataLayerConfig.reverseEventMapping",
        ),
        (
            {"dataLayerConfig": {"pageTypePatterns": {"product": "(["}}},
            "body.dataLayerConfig.pageTypePatterns",
        ),
        (
            {"dataLayerConfig": {"cookieConsent": {"requiredCategories": ["necessary", "statistics"]}}},
            "body.dataLayerConfig.cookieConsent.requiredCategories.1",
        ),
        (
            {"dataLayerConfig": {"trackingModules": {"video": {"enabled": True}}}},
            "body.dataLayerConfig.trackingModules.video",
        ),
        ({"dataLayerConfig": "off"}, "body.dataLayerConfig"),
        # Strict types: a flag or a size in another type is a mistake, not something to coerce.
        ({"batchingEnabled": "yes"}, "body.batchingEnabled"),
        ({"debugMode": 1}, "body.debugMode"),
        ({"batchSize": "50"}, "body.batchSize"),
        ({"maxRetries": 2.0}, "body.maxRetries"),
        (
            {"dataLayerConfig": {"cookieConsent": {"enabled": "true"}}},
            "body.dataLayerConfig.cookieConsent.enabled",
        ),
    ],
)
def test_invalid_tracking_config_answers_400_and_keeps_the_stored_config(owner, patch, field):
    site = owner.make_site(domain="strict.example.com")
    url = f"/sites/{site['id']}/tracking-config"
    assert owner.put(url, json={"batchSize": 5, "dataLayerConfig": {"bufferSize": 3}}).status_code == 200
    before = tracking_config(owner, site["id"])

    response = owner.put(url, json={"maxRetries": 9, **patch})

    assert error_of(response) == (400, "VALIDATION_FAILED")
    assert failed_fields(response) == [field]
    assert tracking_config(owner, site["id"]) == before
    assert (before["batchSize"], before["maxRetries"], before["dataLayerConfig"]["bufferSize"]) == (5, 3, 3)


def test_a_value_no_member_of_a_union_takes_is_named_by_its_body_path(owner):
    site = owner.make_site(domain="union.example.com")
    url = f"/sites/{site['id']}/tracking-config"
    consent = "body.dataLayerConfig.cookieConsent.defaultConsent"

    response = owner.put(
        url, json={"dataLayerConfig": {"cookieConsent": {"defaultConsent": {"analytics": "yes"}}}}
    )

    assert error_of(response) == (400, "VALIDATION_FAILED")
    assert response.json()["error"]["details"]["fields"] == [
        {"field": consent, "message": "Input should be a valid boolean", "type": "bool_type"},
        {"field": consent, "message": "Input should be a valid string", "type": "string_type"},
        {"field": f"{consent}.analytics", "message": "Input should be a valid boolean", "type": "bool_type"},
    ]
    assert tracking_config(owner, site["id"]) == DEFAULT_TRACKING_CONFIG


def test_tracking_config_body_must_be_an_object(owner):
    site = owner.make_site(domain="array.example.com")
    response = owner.put(f"/sites/{site['id']}/tracking-config", json=[{"batchSize": 5}])
    assert error_of(response) == (400, "VALIDATION_FAILED")
    assert tracking_config(owner, site["id"]) == DEFAULT_TRACKING_CONFIG


def test_the_failure_messages_name_the_reason(owner):
    site = owner.make_site(domain="reasons.example.com")
    url = f"/sites/{site['id']}/tracking-config"

    mapping = owner.put(url, json={"dataLayerConfig": {"reverseEventMapping": {"AddToCart": "addToCart"}}})
    pattern = owner.put(url, json={"dataLayerConfig": {"pageTypePatterns": {"product": "(["}}})

    assert "reverseEventMapping.AddToCart maps to 'addToCart', not a canonical event name" in failed_messages(
        mapping
    )
    assert "pageTypePatterns.product is not a valid regular expression" in failed_messages(pattern)


# --- admin site update ----------------------------------------------------------------------------------


def test_platform_admin_sets_verification_and_currency(owner, admin):
    site = owner.make_site(domain="admin.example.com")
    url = f"/admin/sites/{site['id']}"

    verified = admin.put(url, json={"isVerified": True, "currency": "chf"})

    assert verified.status_code == 200, verified.text
    body = verified.json()
    assert (body["id"], body["isVerified"], body["currency"]) == (site["id"], True, "CHF")
    assert TIMESTAMP.match(body["verifiedAt"])
    assert get_site(owner, site["id"]) == body

    unverified = admin.put(url, json={"isVerified": False})

    assert unverified.status_code == 200, unverified.text
    assert (unverified.json()["isVerified"], unverified.json()["verifiedAt"]) == (False, None)
    assert unverified.json()["currency"] == "CHF"


def test_admin_may_move_a_domain_and_keep_it_verified(owner, admin, store):
    site = make_verified_site(owner, store, domain="before.example.com")
    url = f"/admin/sites/{site['id']}"

    kept = admin.put(url, json={"domain": "after.example.com", "isVerified": True})
    assert (kept.json()["domain"], kept.json()["isVerified"]) == ("after.example.com", True)

    cleared = admin.put(url, json={"domain": "later.example.com"})
    assert (cleared.json()["domain"], cleared.json()["isVerified"]) == ("later.example.com", False)


def test_admin_update_of_an_unknown_site_answers_404(admin):
    response = admin.put(f"/admin/sites/{NO_SUCH_SITE}", json={"isVerified": True})
    assert error_of(response) == (404, "SITE_NOT_FOUND")


def test_admin_update_needs_a_platform_admin(owner):
    site = owner.make_site(domain="notadmin.example.com")

    for path in (f"/admin/sites/{site['id']}", f"/admin/sites/{NO_SUCH_SITE}"):
        response = owner.put(path, json={"isVerified": True})
        assert error_of(response) == (403, "PLATFORM_ADMIN_REQUIRED"), path

    assert get_site(owner, site["id"]) == site


def test_admin_update_without_a_token_answers_401(client, owner):
    site = owner.make_site(domain="anon-admin.example.com")
    response = client.put(f"/admin/sites/{site['id']}", json={"isVerified": True})
    assert error_of(response) == (401, "AUTH_REQUIRED")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"currency": "EURO"}, "body.currency"),
        ({"isVerified": "maybe"}, "body.isVerified"),
        ({"subscription": "active"}, "body.subscription"),
    ],
)
def test_admin_update_validates_its_body(owner, admin, body, field):
    site = owner.make_site(domain="admin-bad.example.com")
    response = admin.put(f"/admin/sites/{site['id']}", json=body)
    assert error_of(response) == (400, "VALIDATION_FAILED")
    assert failed_fields(response) == [field]
    assert get_site(owner, site["id"]) == site


# --- domain verification ------------------------------------------------------------------------------


def verify(session: Session, site_id: str) -> httpx.Response:
    return session.post(f"/sites/{site_id}/verify-domain")


def test_a_dns_txt_record_verifies_the_domain(owner, dns_peer):
    site = owner.make_site(domain="dns.example.com")
    token = site["verification"]["token"]
    dns_peer.publish("_aisle-verification.dns.example.com", "v=spf1 -all", f"aisle-verification={token}")

    response = verify(owner, site["id"])

    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["verified"], body["method"]) == (True, "dns")
    assert body["checks"] == [
        {"method": "dns", "ok": True, "detail": "TXT record found on _aisle-verification.dns.example.com"}
    ]
    assert body["site"]["isVerified"] is True
    assert TIMESTAMP.match(body["site"]["verifiedAt"])
    assert get_site(owner, site["id"]) == body["site"]
    assert ("_aisle-verification.dns.example.com", "TXT") in dns_peer.queries


def test_the_txt_record_may_sit_on_the_domain_itself(owner, dns_peer):
    site = owner.make_site(domain="apex.example.com")
    dns_peer.publish("apex.example.com", f"aisle-verification={site['verification']['token']}")

    body = verify(owner, site["id"]).json()

    assert (body["verified"], body["method"]) == (True, "dns")
    assert body["checks"] == [{"method": "dns", "ok": True, "detail": "TXT record found on apex.example.com"}]


def test_the_well_known_file_verifies_the_domain(owner, http_peer):
    site = owner.make_site(domain="http.example.com")
    http_peer.serve("http.example.com", site["verification"]["token"] + "\n")

    response = verify(owner, site["id"])

    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["verified"], body["method"]) == (True, "http")
    url = http_peer.base_url + WELL_KNOWN_PATH
    assert body["checks"] == [
        {
            "method": "dns",
            "ok": False,
            "detail": "_aisle-verification.http.example.com: NXDOMAIN; http.example.com: NXDOMAIN",
        },
        {"method": "http", "ok": True, "detail": f"{url} holds the token"},
    ]
    assert get_site(owner, site["id"])["isVerified"] is True
    assert ("http.example.com", WELL_KNOWN_PATH) in http_peer.requests


def test_the_well_known_file_may_hold_the_txt_value(owner, http_peer):
    site = owner.make_site(domain="http-value.example.com")
    http_peer.serve("http-value.example.com", site["verification"]["dnsRecordValue"])

    body = verify(owner, site["id"]).json()

    assert (body["verified"], body["method"]) == (True, "http")


def test_without_proof_the_answer_is_200_and_not_verified(owner, http_peer):
    site = owner.make_site(domain="nothing.example.com")

    response = verify(owner, site["id"])

    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["verified"], body["method"]) == (False, None)
    assert body["checks"] == [
        {
            "method": "dns",
            "ok": False,
            "detail": "_aisle-verification.nothing.example.com: NXDOMAIN; nothing.example.com: NXDOMAIN",
        },
        {"method": "http", "ok": False, "detail": f"{http_peer.base_url}{WELL_KNOWN_PATH} answered 404"},
    ]
    assert body["site"] == site
    assert get_site(owner, site["id"])["isVerified"] is False


def test_a_wrong_token_does_not_verify(owner, outsider, dns_peer, http_peer):
    site = owner.make_site(domain="wrong.example.com")
    other = outsider.make_site(domain="elsewhere.example.com")
    token = site["verification"]["token"]
    # Someone else's token, in both places.
    dns_peer.publish(
        "_aisle-verification.wrong.example.com", f"aisle-verification={other['verification']['token']}"
    )
    dns_peer.publish("wrong.example.com", "aisle-verification=")
    http_peer.serve("wrong.example.com", other["verification"]["token"])

    body = verify(owner, site["id"]).json()

    assert (body["verified"], body["method"]) == (False, None)
    assert body["checks"] == [
        {
            "method": "dns",
            "ok": False,
            "detail": f"_aisle-verification.wrong.example.com: no TXT record 'aisle-verification={token}'; "
            f"wrong.example.com: no TXT record 'aisle-verification={token}'",
        },
        {
            "method": "http",
            "ok": False,
            "detail": f"{http_peer.base_url}{WELL_KNOWN_PATH} does not hold the token",
        },
    ]
    assert get_site(owner, site["id"])["isVerified"] is False


def test_a_record_for_the_old_domain_does_not_verify_the_new_one(owner, dns_peer):
    site = owner.make_site(domain="first-home.example.com")
    token = site["verification"]["token"]
    dns_peer.publish("_aisle-verification.first-home.example.com", f"aisle-verification={token}")
    assert verify(owner, site["id"]).json()["verified"] is True

    moved = owner.put(f"/sites/{site['id']}", json={"domain": "second-home.example.com"})
    assert moved.json()["isVerified"] is False

    body = verify(owner, site["id"]).json()
    assert (body["verified"], body["site"]["isVerified"]) == (False, False)


def test_verifying_a_verified_site_answers_at_once(owner, store, dns_peer):
    site = make_verified_site(owner, store, domain="done.example.com")

    response = verify(owner, site["id"])

    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["verified"], body["method"]) == (True, None)
    assert body["checks"] == [{"method": None, "ok": True, "detail": "already verified"}]
    assert not [q for q in dns_peer.queries if q[0].endswith("done.example.com")]


def test_verify_domain_of_a_foreign_site_answers_403_and_asks_no_one(owner, outsider, dns_peer):
    theirs = outsider.make_site(domain="foreign-verify.example.com")
    dns_peer.publish("_aisle-verification.foreign-verify.example.com", "aisle-verification=whatever")

    assert error_of(verify(owner, theirs["id"])) == (403, "SITE_ACCESS_DENIED")
    assert error_of(verify(owner, NO_SUCH_SITE)) == (403, "SITE_ACCESS_DENIED")
    assert not [q for q in dns_peer.queries if q[0].endswith("foreign-verify.example.com")]


# --- public API keys ----------------------------------------------------------------------------------


def test_create_key_shows_the_secret_once(owner, store):
    site = owner.make_site(domain="keys.example.com")

    response = owner.post(
        f"/sites/{site['id']}/public-api-keys",
        json={"name": "iOS app", "scopes": ["mobile_write", "mobile_read", "mobile_read"]},
    )

    assert response.status_code == 201, response.text
    created = response.json()
    assert set(created) == KEY_FIELDS | {"key"}
    assert UUID.match(created["id"])
    assert (created["siteId"], created["name"], created["status"]) == (site["id"], "iOS app", "active")
    assert created["scopes"] == ["mobile_read", "mobile_write"]
    assert (created["lastUsedAt"], created["revokedAt"]) == (None, None)
    assert re.fullmatch(r"[0-9a-f]{12}", created["prefix"])
    assert created["key"].startswith(f"aisle_pk_{created['prefix']}_")
    assert len(created["key"]) > len("aisle_pk_") + 12 + 1 + 24

    listed = list_keys(owner, site["id"])
    assert listed == [{k: v for k, v in created.items() if k != "key"}]
    assert created["key"] not in owner.get(f"/sites/{site['id']}/public-api-keys").text

    found = keys.authenticate(store, site_id=site["id"], presented=created["key"])
    assert found is not None and found["id"] == created["id"]
    assert TIMESTAMP.match(list_keys(owner, site["id"])[0]["lastUsedAt"])


def test_the_store_holds_no_plaintext_secret(owner, store, settings):
    site = owner.make_site(domain="hashed.example.com")
    secret = make_key(owner, site["id"], "mobile_read")["key"]
    # The random part after "aisle_pk_<12 hex>_" (it may itself hold "_", so no split on it: a short
    # tail could turn up in the database's binary files by chance).
    tail = secret.removeprefix(KEY_PREFIX)[13:]
    assert len(tail) == 32

    with store.connect() as conn:
        rows = [
            dict(r._mapping)
            for r in conn.execute(select(site_api_keys).where(site_api_keys.c.site_id == site["id"]))
        ]
    assert len(rows) == 1
    assert rows[0]["key_hash"] != secret
    assert re.fullmatch(r"[0-9a-f]{64}", rows[0]["key_hash"])
    assert not [v for v in rows[0].values() if tail in str(v)]
    # Nor anywhere in the database files (WAL included).
    database = Path(store.url.database)
    for path in database.parent.glob(database.name + "*"):
        assert tail.encode() not in path.read_bytes(), path


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "app", "scopes": []}, "body.scopes"),
        ({"name": "app", "scopes": ["newsletter_subscribe"]}, "body.scopes.0"),
        ({"name": "app", "scopes": ["mobile_read", "admin"]}, "body.scopes.1"),
        ({"name": "app", "scopes": "mobile_read"}, "body.scopes"),
        ({"name": "app"}, "body.scopes"),
        ({"scopes": ["mobile_read"]}, "body.name"),
        ({"name": "", "scopes": ["mobile_read"]}, "body.name"),
        ({"name": "app", "scopes": ["mobile_read"], "expiresAt": "2030-01-01"}, "body.expiresAt"),
    ],
)
def test_create_key_validates_name_and_scopes(owner, body, field):
    site = owner.make_site(domain="badkeys.example.com")

    response = owner.post(f"/sites/{site['id']}/public-api-keys", json=body)

    assert error_of(response) == (400, "VALIDATION_FAILED")
    assert failed_fields(response) == [field]
    assert list_keys(owner, site["id"]) == []


def test_rotate_issues_a_new_secret_and_retires_the_old(owner, store):
    site = owner.make_site(domain="rotate.example.com")
    created = make_key(owner, site["id"], "mobile_read", "mobile_write")

    response = owner.post(f"/sites/{site['id']}/public-api-keys/{created['id']}/rotate")

    assert response.status_code == 200, response.text
    rotated = response.json()
    assert set(rotated) == KEY_FIELDS | {"key"}
    assert (rotated["id"], rotated["status"], rotated["scopes"]) == (
        created["id"], "active", ["mobile_read", "mobile_write"],
    )  # fmt: skip
    assert rotated["key"] != created["key"] and rotated["prefix"] != created["prefix"]
    assert rotated["key"].startswith(f"aisle_pk_{rotated['prefix']}_")
    assert keys.authenticate(store, site_id=site["id"], presented=created["key"]) is None
    assert keys.authenticate(store, site_id=site["id"], presented=rotated["key"])["id"] == created["id"]
    assert [k["prefix"] for k in list_keys(owner, site["id"])] == [rotated["prefix"]]


def test_the_schema_documents_the_key_routes_refusals(client):
    paths = client.get("/openapi.json").json()["paths"]
    key = "/api/v1/sites/{siteId}/public-api-keys/{keyId}"
    assert {"404", "409"} <= set(paths[f"{key}/rotate"]["post"]["responses"])
    assert "404" in paths[f"{key}/revoke"]["post"]["responses"]


def test_revoke_is_for_good(owner, store):
    site = owner.make_site(domain="revoke.example.com")
    created = make_key(owner, site["id"], "mobile_read")
    kept = make_key(owner, site["id"], "mobile_write", name="android app")
    url = f"/sites/{site['id']}/public-api-keys/{created['id']}"

    response = owner.post(f"{url}/revoke")

    assert response.status_code == 200, response.text
    revoked = response.json()
    assert set(revoked) == KEY_FIELDS
    assert (revoked["id"], revoked["status"]) == (created["id"], "revoked")
    assert TIMESTAMP.match(revoked["revokedAt"])
    assert keys.authenticate(store, site_id=site["id"], presented=created["key"]) is None
    assert [(k["id"], k["status"]) for k in list_keys(owner, site["id"])] == [
        (created["id"], "revoked"), (kept["id"], "active"),
    ]  # fmt: skip

    again = owner.post(f"{url}/revoke")
    assert again.status_code == 200
    assert again.json() == revoked

    rotate = owner.post(f"{url}/rotate")
    assert error_of(rotate) == (409, "API_KEY_REVOKED")
    assert keys.authenticate(store, site_id=site["id"], presented=created["key"]) is None
    assert keys.authenticate(store, site_id=site["id"], presented=kept["key"])["id"] == kept["id"]


def test_a_key_belongs_to_its_site(owner, outsider, store):
    site = owner.make_site(domain="site-a.example.com")
    sibling = owner.make_site(domain="site-b.example.com")
    foreign = outsider.make_site(domain="site-c.example.com")
    sibling_key = make_key(owner, sibling["id"], "mobile_read")
    foreign_key = make_key(outsider, foreign["id"], "mobile_read")

    for key_id in (sibling_key["id"], foreign_key["id"], NO_SUCH_SITE):
        for action in ("rotate", "revoke"):
            response = owner.post(f"/sites/{site['id']}/public-api-keys/{key_id}/{action}")
            assert error_of(response) == (404, "API_KEY_NOT_FOUND"), (key_id, action)

    assert list_keys(owner, site["id"]) == []
    assert keys.authenticate(store, site_id=site["id"], presented=sibling_key["key"]) is None
    assert (
        keys.authenticate(store, site_id=sibling["id"], presented=sibling_key["key"])["id"]
        == sibling_key["id"]
    )
    assert (
        keys.authenticate(store, site_id=foreign["id"], presented=foreign_key["key"])["id"]
        == foreign_key["id"]
    )


def test_authenticate_refuses_anything_but_the_exact_secret(owner, store):
    site = owner.make_site(domain="exact.example.com")
    secret = make_key(owner, site["id"], "mobile_read")["key"]
    tampered = secret[:-1] + ("A" if secret[-1] != "A" else "B")

    for presented in (tampered, secret + "x", secret.removeprefix("aisle_pk_"), "", "aisle_pk_", "garbage"):
        assert keys.authenticate(store, site_id=site["id"], presented=presented) is None, presented
    assert keys.authenticate(store, site_id=site["id"], presented=secret) is not None


# --- access: other organisations, anonymous callers, viewers -------------------------------------------


def site_routes(site_id: str, key_id: str) -> list[tuple[str, str, dict[str, Any] | None]]:
    """Every route on one site, each with a body that would succeed for its owner."""
    keys_url = f"/sites/{site_id}/public-api-keys"
    return [
        ("GET", f"/sites/{site_id}", None),
        ("PUT", f"/sites/{site_id}", {"name": "Hijacked"}),
        ("GET", f"/sites/{site_id}/stats", None),
        ("POST", f"/sites/{site_id}/verify-domain", None),
        ("GET", f"/sites/{site_id}/tracking-config", None),
        ("PUT", f"/sites/{site_id}/tracking-config", {"batchSize": 1}),
        ("GET", keys_url, None),
        ("POST", keys_url, {"name": "stolen", "scopes": ["mobile_write"]}),
        ("POST", f"{keys_url}/{key_id}/rotate", None),
        ("POST", f"{keys_url}/{key_id}/revoke", None),
        ("DELETE", f"/sites/{site_id}", None),
    ]


@pytest.fixture
def owned(owner, store) -> tuple[dict[str, Any], dict[str, Any]]:
    """A verified site of `owner` and one active key on it."""
    site = make_verified_site(owner, store, name="Private Shop", domain="private.example.com")
    return get_site(owner, site["id"]), make_key(owner, site["id"], "mobile_read")


def assert_untouched(owner: Session, store, site: dict[str, Any], key: dict[str, Any]) -> None:
    assert get_site(owner, site["id"]) == site
    assert tracking_config(owner, site["id"]) == DEFAULT_TRACKING_CONFIG
    assert [(k["id"], k["status"]) for k in list_keys(owner, site["id"])] == [(key["id"], "active")]
    assert keys.authenticate(store, site_id=site["id"], presented=key["key"])["id"] == key["id"]


def test_another_organisation_gets_403_on_every_site_route(owner, outsider, store, owned):
    site, key = owned
    for method, path, body in site_routes(site["id"], key["id"]):
        response = outsider.request(method, path, json=body)
        assert error_of(response) == (403, "SITE_ACCESS_DENIED"), (method, path)
        assert "Private Shop" not in response.text and site["siteKey"] not in response.text
    assert_untouched(owner, store, site, key)


def test_without_a_token_every_sites_route_answers_401(client, owner, store, owned):
    site, key = owned
    routes = site_routes(site["id"], key["id"]) + [
        ("GET", "/sites", None),
        ("POST", "/sites", {"name": "Shop", "domain": "anon.example.com"}),
        ("GET", "/sites/feeds-summary", None),
        ("PUT", f"/admin/sites/{site['id']}", {"isVerified": False}),
    ]
    attempts = [
        ({}, "AUTH_REQUIRED"),
        ({"Authorization": "Basic dXNlcjpwYXNz"}, "AUTH_REQUIRED"),
        ({"Authorization": "Bearer not-a-token"}, "TOKEN_INVALID"),
        ({"Authorization": f"Bearer {owner.tokens['refreshToken']}"}, "TOKEN_INVALID"),
    ]
    for headers, code in attempts:
        for method, path, body in routes:
            response = client.request(method, path, json=body, headers=headers)
            assert error_of(response) == (401, code), (headers, method, path, response.text)
    assert_untouched(owner, store, site, key)
    assert [s["id"] for s in owner.get("/sites").json()] == [site["id"]]


def test_a_viewer_reads_but_cannot_write(owner, viewer, store, owned):
    site, key = owned
    writes = []
    for method, path, body in site_routes(site["id"], key["id"]):
        response = viewer.request(method, path, json=body)
        if method == "GET":
            assert response.status_code == 200, (method, path, response.text)
        else:
            writes.append(path)
            assert error_of(response) == (403, "PERMISSION_DENIED"), (method, path)
    assert len(writes) == 7

    assert [s["id"] for s in viewer.get("/sites").json()] == [site["id"]]
    assert viewer.get("/sites/feeds-summary").json()["totalSites"] == 1
    created = viewer.post("/sites", json={"name": "Viewer Shop", "domain": "viewer.example.com"})
    assert error_of(created) == (403, "PERMISSION_DENIED")
    assert error_of(viewer.put(f"/admin/sites/{site['id']}", json={"isVerified": False})) == (
        403, "PLATFORM_ADMIN_REQUIRED",
    )  # fmt: skip
    assert_untouched(owner, store, site, key)
    assert [s["id"] for s in owner.get("/sites").json()] == [site["id"]]


def test_a_viewer_sees_the_same_site_as_the_owner(owner, viewer, owned):
    site, _ = owned
    assert viewer.get(f"/sites/{site['id']}").json() == site
    assert viewer.get(f"/sites/{site['id']}/tracking-config").json() == DEFAULT_TRACKING_CONFIG
    assert "key" not in viewer.get(f"/sites/{site['id']}/public-api-keys").json()[0]
