"""The application shell: error envelope, OpenAPI, health, metrics, request logs."""

from __future__ import annotations

import gc
import json
import re
import socket
import time
from datetime import date

import httpx
import pytest
from hypothesis import given
from hypothesis import settings as settings_of
from hypothesis import strategies as st
from pydantic import Field, ValidationError

from aisle.gc_tuning import GC_YOUNG_THRESHOLD
from aisle.settings import Settings
from api.analytics.funnels.schemas import MAX_STEPS
from api.app import create_app
from api.auth.schemas import LoginBody
from api.schemas import EARLIEST_REPORT_DATE, LATEST_REPORT_DATE, NOT_BLANK_PATTERN, StrictCamelModel
from api.sites.schemas import HOST_NAME, normalise_domain
from ingest.consent import CATEGORIES as CONSENT_CATEGORIES
from ingest.currency import ISO4217_CODES
from ingest.event_names import CANONICAL_EVENT_NAMES
from queries.adhoc.policy import DIALECTS, MAX_JSON_ROWS
from tests.factories import make_verified_site
from tests.servers import in_process_client
from warehouse.config_store.store import MIGRATIONS_DIR

pytestmark = pytest.mark.shared_app

MIB = 1024 * 1024


def test_unknown_route_is_404_in_the_envelope(client):
    response = client.get("/no/such/route")
    assert response.status_code == 404
    assert response.json() == {"error": {"code": "NOT_FOUND", "message": "No such route", "details": None}}


def test_wrong_method_is_405_in_the_envelope(client):
    response = client.delete("/health")
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "METHOD_NOT_ALLOWED"
    assert response.headers["allow"] == "GET, HEAD"


def test_a_405_allows_every_method_of_the_path_not_only_the_first_routes(owner):
    site = owner.make_site(domain="allow.example.com")
    for method, path, allow in (("PATCH", f"/sites/{site['id']}", "GET, HEAD, PUT, DELETE"),
                                ("PATCH", "/sites", "GET, HEAD, POST"),
                                ("DELETE", f"/sites/{site['id']}/tracking-config", "GET, HEAD, PUT")):  # fmt: skip
        answer = owner.request(method, path)
        assert (answer.status_code, answer.headers["allow"]) == (405, allow), path


def test_head_answers_as_get_would_without_the_body(client, owner):
    for path, session in (("/openapi.json", client), ("/auth/me", owner)):
        got, head = session.get(path), session.request("HEAD", path)
        assert (head.status_code, head.content) == (200, b""), path
        assert head.headers["content-type"] == got.headers["content-type"]
        assert head.headers["content-length"] == str(len(got.content))
    refused = client.head("/auth/me")
    assert (refused.status_code, refused.content) == (401, b"")
    assert refused.headers["www-authenticate"] == "Bearer"
    not_a_read = client.head("/auth/login")
    assert (not_a_read.status_code, not_a_read.headers["allow"]) == (405, "POST")


def test_validation_failure_is_400_with_field_details(client):
    response = client.post("/auth/login", json={"email": "x@example.com"})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_FAILED"
    assert error["details"] == {
        "fields": [{"field": "body.password", "message": "Field required", "type": "missing"}]
    }


def test_openapi_and_docs_are_served_under_the_prefix(client):
    spec = client.get("/openapi.json")
    assert spec.status_code == 200
    paths = spec.json()["paths"]
    for path in ("/api/v1/auth/login", "/api/v1/sites/{id}/tracking-config", "/api/v1/admin/sites/{id}",
                 "/api/v1/public/sites/{siteKey}/tracking-config"):  # fmt: skip
        assert path in paths
    docs = client.get("/docs")
    assert docs.status_code == 200
    assert "swagger" in docs.text.lower()


ASSET_TYPES = {".js": "text/javascript", ".css": "text/css", ".png": "image/png", ".json": "application/json"}


def test_the_docs_page_loads_nothing_from_outside_the_app(client):
    page = client.get("/docs")
    assert (page.status_code, page.headers["content-type"]) == (200, "text/html; charset=utf-8")
    # Swagger UI's script, style and icon come from the app (blank offline when from a CDN), and no
    # validator badge is fetched from validator.swagger.io.
    assert not re.search(r"https?://|//[a-z]", page.text, re.IGNORECASE), page.text
    assert '"validatorUrl": null' in page.text
    referenced = re.findall(r'(?:src|href)="([^"]+)"', page.text) + re.findall(r"url: '([^']+)'", page.text)
    assert len(referenced) == 4, referenced
    for url in referenced:
        assert url.startswith("/api/v1/"), url
        asset = client.get(str(page.url.join(url)))
        expected = ASSET_TYPES[url[url.rindex(".") :]]
        assert (asset.status_code, asset.headers["content-type"].split(";")[0]) == (200, expected), url
        assert len(asset.content) > 1000, url
    redirect = client.get("/docs/oauth2-redirect")
    assert redirect.status_code == 200 and "oauth2" in redirect.text


def test_a_refused_event_name_is_answered_with_the_names_allowed(owner):
    site = owner.make_site(domain="names.example.com")
    names = sorted(CANONICAL_EVENT_NAMES)
    funnel = owner.get(f"/analytics/funnels/{site['id']}", params={"steps": "page_view,checkout_start"})
    events = owner.get(f"/analytics/sites/{site['id']}/events", params={"name": "checkout_start"})
    for answer in (funnel, events):
        assert answer.status_code == 400, answer.text
        error = answer.json()["error"]
        assert (error["code"], error["details"]["allowed"]) == ("UNKNOWN_EVENT_NAME", names)
        assert "checkout_start" in error["message"] and f"allowed: {', '.join(names)}" in error["message"]
    assert funnel.json()["error"]["details"]["steps"] == ["checkout_start"]


def test_a_value_refused_from_a_closed_set_names_the_values_allowed(owner):
    site = owner.make_site(domain="formats.example.com")
    response = owner.get(
        f"/analytics/funnels/{site['id']}/steps/page_view/export",
        params={"steps": "page_view,add_to_cart", "format": "xml"},
    )
    assert response.status_code == 400
    assert response.json()["error"]["details"]["fields"] == [
        {
            "field": "query.format",
            "message": "Input should be 'csv' or 'json'",
            "type": "literal_error",
            "allowed": ["csv", "json"],
        }
    ]


def test_openapi_documents_the_error_envelope(client):
    spec = client.get("/openapi.json").json()
    login_responses = spec["paths"]["/api/v1/auth/login"]["post"]["responses"]
    schema = login_responses["400"]["content"]["application/json"]["schema"]
    assert schema["properties"]["error"]["required"] == ["code", "message", "details"]
    # `details` has one documented shape: null, or an object of named facts (a failed validation's
    # problems under `fields`).
    details = schema["properties"]["error"]["properties"]["details"]
    assert details["type"] == ["object", "null"]
    assert details["properties"]["fields"]["items"]["required"] == ["field", "message", "type"]
    assert "allowed" in details["properties"]["fields"]["items"]["properties"]


def test_openapi_names_the_bearer_token_of_exactly_the_operations_that_ask_for_one(client):
    spec = client.get("/openapi.json").json()
    assert spec["components"]["securitySchemes"]["bearerAuth"] == {
        "type": "http", "scheme": "bearer", "bearerFormat": "JWT",
        "description": "An access token from POST /auth/login (or /auth/refresh), as 'Authorization: Bearer <token>'.",
    }  # fmt: skip
    private = 0
    for path, operations in spec["paths"].items():
        url = re.sub(r"\{[^}]+\}", "00000000-0000-4000-8000-000000000000", path.removeprefix("/api/v1"))
        for method, operation in operations.items():
            answer = client.request(method.upper(), url)
            asks = answer.status_code == 401 and answer.json()["error"]["code"] == "AUTH_REQUIRED"
            assert ({"bearerAuth": []} in operation.get("security", [])) == asks, (method, path, answer.text)
            private += asks
    assert private > 60
    assert spec["paths"]["/api/v1/auth/me"]["get"]["security"] == [{"bearerAuth": []}]
    assert "security" not in spec["paths"]["/api/v1/auth/login"]["post"]


def test_openapi_answers_are_the_route_models_not_a_namesake_body_model(client):
    """The consent categories report was documented as the consent route's body part of the same class
    name (ConsentCategories), whose schema the raw-read bodies had written over it."""
    spec = client.get("/openapi.json").json()
    answer = spec["paths"]["/api/v1/analytics/consent/{siteId}/categories"]["get"]["responses"]["200"]
    name = answer["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    assert {"siteId", "people", "categories"} <= set(spec["components"]["schemas"][name]["properties"])


def test_openapi_documents_the_site_api_key_of_the_public_routes(client):
    spec = client.get("/openapi.json").json()
    assert spec["components"]["securitySchemes"]["siteApiKey"]["name"] == "x-aisle-api-key"
    assert spec["components"]["securitySchemes"]["siteApiKey"]["in"] == "header"
    public = {(path, method): operation for path, operations in spec["paths"].items()
              for method, operation in operations.items() if path.startswith("/api/v1/public/")}  # fmt: skip
    assert ("/api/v1/public/sites/{siteKey}/events/batch", "post") in public
    assert ("/api/v1/public/sites/{siteKey}/tracking-config", "get") in public
    for key, operation in public.items():
        assert operation["security"] == [{}, {"siteApiKey": []}], key


def test_openapi_documents_413_and_415_for_json_bodies_and_429_where_attempts_are_counted(client):
    spec = client.get("/openapi.json").json()
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            content = operation.get("requestBody", {}).get("content", {})
            if content:
                assert "413" in operation["responses"], (method, path)
            assert ("415" in operation["responses"]) == (set(content) == {"application/json"}), (method, path)
    paths = spec["paths"]
    assert "415" in paths["/api/v1/sites/{id}/tracking-config"]["put"]["responses"]
    assert "415" not in paths["/api/v1/public/sites/{siteKey}/orders"]["post"]["responses"]
    counted = ["/auth/login", "/auth/login/verify-mfa", "/auth/mfa/verify", "/auth/mfa/enable", "/auth/mfa/disable",
               "/auth/mfa/backup-codes/regenerate", "/auth/resend-verification", "/public/sites/{siteKey}/events/batch",
               "/public/sites/{siteKey}/orders", "/public/sites/{siteKey}/consent"]  # fmt: skip
    for path in counted:
        assert "429" in paths[f"/api/v1{path}"]["post"]["responses"], path
    assert "429" in paths["/api/v1/public/sites/{siteKey}/tracking-config"]["get"]["responses"]


def test_openapi_documents_unknown_site_keys_and_conflicts_where_they_are_answered(client):
    spec = client.get("/openapi.json").json()
    paths = spec["paths"]
    unknown_key = {path: "404" in operation["responses"] and operation["responses"]["404"]["description"]
                   for path, operations in paths.items() if path.startswith("/api/v1/public/sites/{siteKey}/")
                   for operation in operations.values()}  # fmt: skip
    assert len(unknown_key) > 5
    assert set(unknown_key.values()) == {"Unknown site key (SITE_NOT_FOUND)."}, unknown_key
    for path in ("/public/sites/no-such-key/tracking-config", "/public/sites/no-such-key/consent"):
        answer = client.request("GET" if path.endswith("config") else "POST", path, json={})
        assert (answer.status_code, answer.json()["error"]["code"]) == (404, "SITE_NOT_FOUND"), path
    conflicts = {path: paths[f"/api/v1{path}"]["post"]["responses"].get("409", {}).get("description")
                 for path in ("/auth/register", "/auth/mfa/setup", "/auth/mfa/enable")}  # fmt: skip
    assert conflicts == {
        "/auth/register": "An account with this e-mail already exists (EMAIL_TAKEN).",
        "/auth/mfa/setup": "MFA is already enabled; disable it first (MFA_ALREADY_ENABLED).",
        "/auth/mfa/enable": "MFA is already enabled; disable it first (MFA_ALREADY_ENABLED).",
    }
    site_api_key = spec["components"]["securitySchemes"]["siteApiKey"]["description"]
    assert site_api_key.startswith("A site API key (POST /sites/{siteId}/public-api-keys), ")
    assert "post" in paths["/api/v1/sites/{siteId}/public-api-keys"]


def test_health_reports_each_check(client):
    body = client.get("/health").json()
    assert body["status"] == "ok"
    assert set(body["checks"]) == {"configStore", "dataDir", "eventsFlusher"}
    assert body["checks"]["eventsFlusher"]["detail"].endswith(", respawns: 0")
    newest = max(path.name.split("_", 1)[0] for path in (MIGRATIONS_DIR / "versions").glob("0*.py"))
    assert body["checks"]["configStore"]["detail"] == f"schema {newest}"


def test_health_is_503_when_the_data_dir_is_gone(tmp_path):
    import shutil

    # An app of its own, not the module's: its data dir goes.
    settings = Settings(data_dir=tmp_path / "data", jwt_secret="x" * 32, event_batch_workers=0)
    with in_process_client(create_app(settings)) as client:
        shutil.rmtree(settings.data_dir)
        response = client.get("/health")
    assert response.status_code == 503
    assert response.json()["checks"]["dataDir"]["ok"] is False


def test_prometheus_metrics_count_requests_by_route_template(server, client):
    client.get("/health")
    client.get("/no/such/route")
    text = httpx.get(f"{server.url}/metrics").text
    assert 'aisle_http_requests_total{method="GET",route="/api/v1/health",status="200"} 1.0' in text
    assert 'route="unmatched",status="404"' in text
    assert "aisle_http_request_duration_seconds_bucket" in text


def test_requests_are_logged_as_json_lines(client, capfd):
    client.get("/health", headers={"x-request-id": "req-123"})
    # The line is written once the response is on its way, so the client can be first: wait for it.
    lines: list[dict] = []
    deadline = time.monotonic() + 5
    while not any(e.get("request_id") == "req-123" for e in lines) and time.monotonic() < deadline:
        lines += [json.loads(line) for line in capfd.readouterr().err.splitlines() if line.startswith("{")]
        time.sleep(0.01)
    [entry] = [e for e in lines if e.get("request_id") == "req-123"]
    assert entry["event"] == "request"
    assert entry["status"] == 200
    assert entry["route"] == "/api/v1/health"
    assert entry["method"] == "GET"


def test_openapi_documents_validation_as_400_never_422(client):
    spec = client.get("/openapi.json").json()
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            assert "422" not in operation["responses"], f"{method} {path}"
    funnel = spec["paths"]["/api/v1/analytics/funnels/{siteId}"]["get"]["responses"]["400"]
    assert funnel["content"]["application/json"]["schema"]["properties"]["error"]["required"] == [
        "code", "message", "details"
    ]  # fmt: skip


def test_every_request_gets_its_own_id_when_none_is_sent(client):
    ids = [client.get("/health").headers["x-request-id"] for _ in range(3)]
    assert len(set(ids)) == 3
    assert all(len(i) == 32 for i in ids)


def test_the_collector_leaves_the_start_up_heap_alone_and_collects_young_objects_rarely(client):
    """A full collection no longer walks what start-up built, and the youngest generation is not
    collected every few requests (bench/RESULTS.md: a quarter of the events route's CPU time)."""
    assert client.get("/health").status_code == 200
    assert gc.get_freeze_count() > 100_000
    assert gc.get_threshold()[0] == GC_YOUNG_THRESHOLD


# --- the request body limit ------------------------------------------------------------------------


def answer_to(server, head: str, body: bytes = b"") -> tuple[int, dict]:
    """The status and JSON body the server answers after only ``head`` and ``body`` were sent: the
    rest of the body the head announces never is, so an answer at all means the body was judged
    before it was read whole."""
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(head.encode() + body)
        received = b""

        def more() -> bytes:
            data = sock.recv(65536)
            assert data, f"the connection closed after {received!r}"
            return data

        while b"\r\n\r\n" not in received:
            received += more()
        head_in, _, received = received.partition(b"\r\n\r\n")
        length = int(re.search(rb"(?i)\r\ncontent-length: *(\d+)", head_in)[1])
        while len(received) < length:
            received += more()
    return int(head_in.split()[1]), json.loads(received)


def register_head(**headers: str) -> str:
    lines = [
        "POST /api/v1/auth/register HTTP/1.1", "Host: aisle", "Content-Type: application/json",
        *(f"{name.replace('_', '-')}: {value}" for name, value in headers.items()),
    ]  # fmt: skip
    return "\r\n".join(lines) + "\r\n\r\n"


TOO_LARGE = {
    "error": {
        "code": "BODY_TOO_LARGE",
        "message": f"Request bodies are limited to {MIB} bytes",
        "details": None,
    }
}


def test_a_body_declared_larger_than_the_limit_is_refused_before_it_is_read(server):
    status, body = answer_to(server, register_head(Content_Length=str(100 * MIB)))
    assert (status, body) == (413, TOO_LARGE)


def test_a_chunked_body_is_refused_as_soon_as_it_passes_the_limit(server):
    chunk = b"x" * (64 * 1024)
    framed = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(MIB // len(chunk) + 1))
    status, body = answer_to(server, register_head(Transfer_Encoding="chunked"), framed)
    assert (status, body) == (413, TOO_LARGE)


def padded_json(document: dict, size: int) -> bytes:
    """``document`` as JSON, padded with spaces (still the same JSON) to exactly ``size`` bytes."""
    text = json.dumps(document).encode()
    return text + b" " * (size - len(text))


def test_a_body_of_exactly_the_limit_is_read_and_one_byte_more_is_not(client):
    register = {"email": "big@example.com", "password": "long enough", "name": "n" * 201}
    headers = {"Content-Type": "application/json"}

    at_limit = client.post("/auth/register", content=padded_json(register, MIB), headers=headers)
    over = client.post("/auth/register", content=padded_json(register, MIB + 1), headers=headers)

    assert at_limit.status_code == 400
    assert [d["field"] for d in at_limit.json()["error"]["details"]["fields"]] == ["body.name"]
    assert (over.status_code, over.json()) == (413, TOO_LARGE)


def test_the_limit_is_a_setting(tmp_path):
    settings = Settings(
        data_dir=tmp_path / "data", jwt_secret="test-signing-key-" + "x" * 32, event_batch_workers=0,
        max_request_body_bytes=200,
    )  # fmt: skip
    with in_process_client(create_app(settings)) as http:
        login = {"email": "nobody@example.com", "password": "wrong"}
        headers = {"Content-Type": "application/json"}
        fits = http.post("/auth/login", content=padded_json(login, 200), headers=headers)
        over = http.post("/auth/login", content=padded_json(login, 201), headers=headers)
    assert (fits.status_code, fits.json()["error"]["code"]) == (401, "INVALID_CREDENTIALS")
    assert over.status_code == 413
    assert over.json()["error"] == {
        "code": "BODY_TOO_LARGE", "message": "Request bodies are limited to 200 bytes", "details": None
    }  # fmt: skip


def test_ingestion_and_product_feeds_keep_their_own_larger_limits(client, owner, store):
    shop = make_verified_site(owner, store, domain="big.example.com")
    web = {"Origin": "https://big.example.com", "Content-Type": "application/json"}
    size = MIB + MIB // 2

    identify = client.post(
        f"/public/sites/{shop['siteKey']}/identify",
        content=padded_json({"visitorId": "v-1", "userId": "u-1"}, size), headers=web,
    )  # fmt: skip
    consent = client.post(
        f"/public/sites/{shop['siteKey']}/consent",
        content=padded_json({"visitorId": "v-1", "categories": {"analytics": True}}, size), headers=web,
    )  # fmt: skip
    tracked = owner.post(
        "/analytics/track/batch",
        content=padded_json({"siteId": shop["id"], "events": [{"name": "page_view", "eventId": "e-1",
                             "visitorId": "v-1", "sessionId": "s-1"}]}, size),
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    feed = owner.post(
        f"/analytics/product/{shop['id']}/feed",
        content=b'[{"productItemCode": "p-1", "name": "Mug", "price": "9.50"}]' + b" " * size,
        headers={"Content-Type": "application/json"},
    )

    assert (identify.status_code, identify.json()) == (200, {"success": True, "merged": True})
    assert (consent.status_code, consent.json()["duplicate"]) == (201, False)
    assert (tracked.status_code, tracked.json()) == (200, {"accepted": 1, "rejected": [], "duplicates": 0})
    assert (feed.status_code, feed.json()["accepted"]) == (200, 1)
    site = owner.post(
        "/sites", content=padded_json({"name": "Big", "domain": "bigger.example.com"}, size),
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    assert (site.status_code, site.json()) == (413, TOO_LARGE)


# --- content types of JSON bodies ------------------------------------------------------------------


def unsupported(media: str) -> dict:
    return {
        "error": {
            "code": "UNSUPPORTED_MEDIA_TYPE",
            "message": "This route reads a JSON body: send it with Content-Type: application/json, "
            f"not '{media}'",
            "details": None,
        }
    }


def test_a_json_body_route_answers_415_to_a_body_of_another_content_type(client, owner):
    login = b'{"email": "nobody@example.com", "password": "wrong"}'
    for media in ("application/xml", "text/plain", "text/plain; charset=utf-8"):
        response = client.post("/auth/login", content=login, headers={"Content-Type": media})
        assert (response.status_code, response.json()) == (415, unsupported(media.split(";")[0])), media
    form = client.post("/auth/register", data={"email": "form@example.com", "password": "long enough"})
    assert (form.status_code, form.json()) == (415, unsupported("application/x-www-form-urlencoded"))

    site = owner.make_site(name="Typed", domain="typed.example.com")
    renamed = owner.put(
        f"/sites/{site['id']}", content=b'{"name": "Renamed"}', headers={"Content-Type": "text/plain"}
    )
    assert (renamed.status_code, renamed.json()) == (415, unsupported("text/plain"))
    assert owner.get(f"/sites/{site['id']}").json()["name"] == "Typed"


def test_json_in_any_spelling_and_bodyless_requests_are_read_as_before(client, owner):
    login = b'{"email": "nobody@example.com", "password": "wrong"}'
    for media in ("application/json", "Application/JSON; charset=UTF-8", "application/merge-patch+json"):
        response = client.post("/auth/login", content=login, headers={"Content-Type": media})
        assert (response.status_code, response.json()["error"]["code"]) == (401, "INVALID_CREDENTIALS"), media
    empty = client.post("/auth/login", content=b"", headers={"Content-Type": "text/plain"})
    assert empty.status_code == 400
    assert empty.json()["error"]["details"] == {
        "fields": [{"field": "body", "message": "Field required", "type": "missing"}]
    }
    assert client.post("/auth/logout", content=b"", headers={"Content-Type": "text/plain"}).status_code == 400


def test_a_json_body_without_a_content_type_is_415_and_nan_is_not_json(client, owner):
    login = b'{"email": "nobody@example.com", "password": "wrong"}'
    untyped = client.post("/auth/login", content=login)
    assert "content-type" not in untyped.request.headers
    assert (untyped.status_code, untyped.json()["error"]) == (415, {
        "code": "UNSUPPORTED_MEDIA_TYPE", "details": None,
        "message": "This route reads a JSON body: send it with Content-Type: application/json (none was sent)",
    })  # fmt: skip
    site = owner.make_site(domain="nan.example.com")
    for word in ("NaN", "Infinity", "-Infinity"):
        answer = owner.put(
            f"/sites/{site['id']}/tracking-config", content=b'{"batchSize": %s}' % word.encode(),
            headers={"Content-Type": "application/json"},
        )  # fmt: skip
        assert (answer.status_code, answer.json()["error"]["code"]) == (400, "MALFORMED_JSON"), word
    quoted = owner.put(f"/sites/{site['id']}", json={"name": "NaN Infinity"})
    assert (quoted.status_code, quoted.json()["name"]) == (200, "NaN Infinity")


def test_ingestion_keeps_reading_text_plain_and_refusing_forms_its_own_way(client, owner, store):
    shop = make_verified_site(owner, store, domain="beacon.example.com")
    url = f"/public/sites/{shop['siteKey']}/identify"
    origin = {"Origin": "https://beacon.example.com"}

    beacon = client.post(
        url,
        content=b'{"visitorId": "v-1", "userId": "u-1"}',
        headers={**origin, "Content-Type": "text/plain"},
    )
    form = client.post(url, data={"visitorId": "v-1", "userId": "u-1"}, headers=origin)

    assert (beacon.status_code, beacon.json()) == (200, {"success": True, "merged": True})
    assert (form.status_code, form.json()["error"]["code"]) == (400, "UNSUPPORTED_CONTENT_TYPE")


# --- the schema states what the routes check -------------------------------------------------------
# A client built from the schema must never send what the schema allows and a route refuses. Rules the
# routes check with codes of their own (FUNNEL_NEEDS_TWO_STEPS, DATE_OUT_OF_RANGE, ...) stay in the
# routes; the schema states them from the same constants.


def _parameter(spec: dict, path: str, name: str, method: str = "get") -> dict:
    [parameter] = [p for p in spec["paths"][f"/api/v1{path}"][method]["parameters"] if p["name"] == name]
    return parameter["schema"]


def _string_branch(schema: dict) -> dict:
    return next((b for b in schema.get("anyOf", [schema]) if b.get("type") == "string"), schema)


def test_openapi_states_the_count_and_names_of_funnel_steps(app):
    spec = app.openapi()
    schemas = spec["components"]["schemas"]
    names = sorted(CANONICAL_EVENT_NAMES)
    for model in ("FunnelDefinitionCreate", "FunnelDefinitionUpdate"):
        steps = schemas[model]["properties"]["steps"]
        assert (steps["type"], steps["minItems"], steps["maxItems"]) == ("array", 2, MAX_STEPS), model
        assert steps["items"] == {"type": "string", "enum": names}, model
    for path in ("/analytics/funnels/{siteId}", "/analytics/funnels/{siteId}/export",
                 "/analytics/funnels/{siteId}/steps/{eventName}/export"):  # fmt: skip
        pattern = _parameter(spec, path, "steps")["pattern"]
        assert re.search(pattern, "page_view,add_to_cart,page_view"), path
        assert re.search(pattern, ",".join(["page_view"] * MAX_STEPS)), path
        for refused in ("", "page_view", "page_view,teleport", "page_view,,purchase", "page_view,purchase,",
                        ",".join(["page_view"] * (MAX_STEPS + 1))):  # fmt: skip
            assert not re.search(pattern, refused), (path, refused)
    assert (
        _parameter(spec, "/analytics/funnels/{siteId}/steps/{eventName}/export", "eventName")["enum"] == names
    )


def test_openapi_states_the_dialects_row_limits_and_time_limit_of_sql_bodies(app, settings):
    schemas = app.openapi()["components"]["schemas"]
    for model in ("SqlQueryIn", "SavedQueryRun"):
        [integer] = [
            b for b in schemas[model]["properties"]["timeoutMs"]["anyOf"] if b.get("type") == "integer"
        ]
        assert (integer["minimum"], integer["maximum"]) == (100, settings.sql_max_timeout_ms), model
        # limit past 100,000 only for csv or parquet; a body without `format` is json
        assert schemas[model]["if"] == {"properties": {"format": {"const": "json"}}}, model
        assert schemas[model]["then"] == {"properties": {"limit": {"maximum": MAX_JSON_ROWS}}}, model
    for model in ("SqlQueryIn", "SavedQueryCreate", "SavedQueryUpdate"):
        assert schemas[model]["properties"]["dialect"]["enum"] == list(DIALECTS), model
        assert schemas[model]["properties"]["query"]["maxLength"] == 100_000, model
    assert schemas["SqlQueryIn"]["properties"]["siteId"] == {
        "type": "string", "format": "uuid", "title": "Siteid",
        "description": "The site whose views the query reads; it must be your organisation's.",
    }  # fmt: skip


def test_openapi_partial_updates_offer_no_null_where_null_is_refused(app):
    schemas = app.openapi()["components"]["schemas"]
    refused = {"FunnelDefinitionUpdate": ("name", "steps", "windowSeconds", "order"),
               "SavedQueryUpdate": ("name", "query", "dialect", "parameters")}  # fmt: skip
    for model, fields in refused.items():
        for field in fields:
            spec = schemas[model]["properties"][field]
            assert "anyOf" not in spec and "default" not in spec, (model, field, spec)
        # description: null clears it, so null stays offered there
        assert {"type": "null"} in schemas[model]["properties"]["description"]["anyOf"], model
    # the bounds of the fields survive the union with the undocumented null
    window = schemas["FunnelDefinitionUpdate"]["properties"]["windowSeconds"]
    assert (window["type"], window["minimum"], window["maximum"]) == ("integer", 1, 365 * 24 * 3600)
    assert schemas["SavedQueryUpdate"]["properties"]["parameters"]["maxItems"] == 50
    assert schemas["SavedQueryUpdate"]["properties"]["name"]["maxLength"] == 200


def test_openapi_report_dates_state_the_years_reports_read(app):
    spec = app.openapi()
    schemas = [_string_branch(_parameter(spec, "/analytics/cohort/{siteId}", "startDate")),
               _string_branch(_parameter(spec, "/analytics/funnels/{siteId}", "endDate")),
               _string_branch(_parameter(spec, "/analytics/correlations/{siteId}", "startDate"))]  # fmt: skip
    assert [s["format"] for s in schemas] == ["date", "date", "date-time"]
    for schema in schemas:
        for day in (EARLIEST_REPORT_DATE, LATEST_REPORT_DATE, date(2026, 1, 31)):
            assert re.search(schema["pattern"], day.isoformat()), day
        for day in ("1969-12-31", "9001-01-01", "0001-01-01", "9999-12-31"):
            assert not re.search(schema["pattern"], day), day


def test_openapi_lists_the_event_names_currencies_categories_and_site_ids_routes_accept(app):
    spec = app.openapi()
    schemas = spec["components"]["schemas"]
    names = sorted(CANONICAL_EVENT_NAMES)
    assert _parameter(spec, "/analytics/cohort/{siteId}", "returnEvent")["enum"] == names
    assert _parameter(spec, "/analytics/sites/{siteId}/events", "name")["enum"] == names
    assert _parameter(spec, "/analytics/sites/{siteId}/events/timeseries", "name")["enum"] == names
    assert _parameter(spec, "/analytics/product/{siteId}/top", "currency")["enum"] == sorted(ISO4217_CODES)
    category = _parameter(spec, "/analytics/category/{siteId}/overview", "categoryPath")["pattern"]
    assert [bool(re.search(category, p)) for p in ("Home > Kitchen", "x", "", " > ", ">>\t")] == [
        True, True, False, False, False
    ]  # fmt: skip
    for path in (
        "/analytics/overview",
        "/analytics/search/top-queries",
        "/analytics/events/{eventId}/attribution",
        "/analytics/revenue/overview",
        "/analytics/funnels/{siteId}",
        "/sites/{siteId}/public-api-keys",
    ):
        assert _parameter(spec, path, "siteId")["format"] == "uuid", path
    assert _parameter(spec, "/sites/{id}", "id")["format"] == "uuid"
    for model in ("TrackOrderIn", "TrackEventBatch", "FunnelDefinitionCreate", "SavedQueryCreate"):
        assert schemas[model]["properties"]["siteId"]["format"] == "uuid", model
    item_product_id = schemas["OrderItemIn"]["properties"]["productId"]
    assert item_product_id["format"] == "uuid" and item_product_id["anyOf"][0]["type"] == "string"
    site_ids = _parameter(spec, "/analytics/consent/compare", "siteIds")["pattern"]
    one = "7837fdd1-0e4c-4997-8c8e-6f31b9df9d89"
    assert re.search(site_ids, one) and re.search(site_ids, ",".join([one] * 50))
    assert not any(re.search(site_ids, s) for s in ("", "my-shop", f"{one},", ",".join([one] * 51)))
    feed = spec["paths"]["/api/v1/analytics/product/{siteId}/feed"]["post"]["requestBody"]["content"]
    for kind in ("text/csv", "application/x-ndjson"):
        assert not re.search(feed[kind]["schema"]["pattern"], " \r\n\t"), kind
    simulate = schemas["SimulateIn"]["properties"]["requiredCategories"]["anyOf"][0]

    assert simulate["items"] == {"type": "string", "enum": list(CONSENT_CATEGORIES)}
    decision = schemas["ConsentDecision"]["anyOf"]
    assert decision == [{"required": [c], "properties": {c: {"type": "boolean"}}} for c in CONSENT_CATEGORIES]


def test_openapi_site_fields_state_the_domains_currencies_and_zones_sites_take(app):
    schemas = app.openapi()["components"]["schemas"]
    create, update = schemas["SiteCreate"]["properties"], schemas["SiteUpdate"]["properties"]
    assert create["currency"]["enum"] == sorted(ISO4217_CODES)
    assert _string_branch(update["currency"])["enum"] == sorted(ISO4217_CODES)
    zones = create["timezone"]["enum"]
    assert "Europe/Berlin" in zones and "UTC" in zones and "localtime" not in zones
    assert _string_branch(update["timezone"])["enum"] == zones
    domain = create["domain"]
    assert _string_branch(update["domain"])["pattern"] == domain["pattern"]
    assert domain["maxLength"] == 253
    assert [bool(re.search(domain["pattern"], d)) for d in ("shop.example.com", "localhost", "0", "a..b", "-a.com")] == [
        True, True, False, False, False
    ]  # fmt: skip


class _Named(StrictCamelModel):
    name: str = Field(min_length=1)


@given(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=12) | st.from_regex(r"\s*\S?\s*", fullmatch=True)
)
@settings_of(max_examples=300, derandomize=True, deadline=None)
def test_the_not_blank_pattern_is_what_stripping_leaves_non_empty(text):
    pattern = _Named.model_json_schema()["properties"]["name"]["pattern"]
    try:
        _Named(name=text)
        accepted = True
    except ValidationError:
        accepted = False
    assert bool(re.search(pattern, text)) == accepted, repr(text)


@given(st.from_regex(HOST_NAME["pattern"], fullmatch=True).filter(lambda d: len(d) <= HOST_NAME["maxLength"]))
@settings_of(max_examples=300, derandomize=True, deadline=None)
def test_every_domain_the_schema_allows_is_one_sites_take(domain):
    assert normalise_domain(domain) == domain.lower()


def test_openapi_e_mail_addresses_leave_out_the_domains_the_validator_refuses(app):
    schemas = app.openapi()["components"]["schemas"]
    for model in ("RegisterBody", "LoginBody", "ResendVerificationBody"):
        email = schemas[model]["properties"]["email"]
        assert email["format"] == "email", model
        allowed = [
            bool(re.search(email["pattern"], e))
            for e in ("ada@shop.example.com", "ada@x.TEST", "ada@b.local")
        ]
        assert allowed == [True, False, False], model
    for address in ("ada@x.TEST", "ada@b.local"):
        with pytest.raises(ValidationError):
            LoginBody(email=address, password="x")
    names = schemas["SiteCreate"]["properties"]["name"]
    assert names["pattern"] == NOT_BLANK_PATTERN and not re.search(names["pattern"], " \t\u3000")
