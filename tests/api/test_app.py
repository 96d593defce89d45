"""The application shell: error envelope, OpenAPI, health, metrics, request logs."""

from __future__ import annotations

import gc
import json
import time

import httpx

from aisle.gc_tuning import GC_YOUNG_THRESHOLD
from warehouse.catalog.store import MIGRATIONS_DIR


def test_unknown_route_is_404_in_the_envelope(client):
    response = client.get("/no/such/route")
    assert response.status_code == 404
    assert response.json() == {"error": {"code": "NOT_FOUND", "message": "No such route", "details": None}}


def test_wrong_method_is_405_in_the_envelope(client):
    response = client.delete("/health")
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "METHOD_NOT_ALLOWED"


def test_validation_failure_is_400_with_field_details(client):
    response = client.post("/auth/login", json={"email": "x@example.com"})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_FAILED"
    assert error["details"] == [{"field": "body.password", "message": "Field required", "type": "missing"}]


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


def test_openapi_documents_the_error_envelope(client):
    spec = client.get("/openapi.json").json()
    login_responses = spec["paths"]["/api/v1/auth/login"]["post"]["responses"]
    schema = login_responses["400"]["content"]["application/json"]["schema"]
    assert schema["properties"]["error"]["required"] == ["code", "message", "details"]


def test_health_reports_each_check(client):
    body = client.get("/health").json()
    assert body["status"] == "ok"
    assert set(body["checks"]) == {"configStore", "dataDir", "eventsFlusher"}
    assert body["checks"]["eventsFlusher"]["detail"].endswith(", respawns: 0")
    newest = max(path.name.split("_", 1)[0] for path in (MIGRATIONS_DIR / "versions").glob("0*.py"))
    assert body["checks"]["configStore"]["detail"] == f"schema {newest}"


def test_health_is_503_when_the_data_dir_is_gone(client, settings):
    import shutil

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
