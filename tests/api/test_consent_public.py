"""The public consent route over HTTP: stored once, partial states, validation as 400 envelopes,
the public guard, and durability (a 201 survives `kill -9` of the server)."""

from __future__ import annotations

import os
import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import httpx
import pytest

from aisle.settings import Settings
from ingest.service import Ingest
from tests.factories import make_verified_site
from tests.ingest.test_kill9 import start_server
from tests.kill9_support import prepare_site
from tests.servers import free_port

ORIGIN = {"Origin": "https://shop.example.com"}


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    # No batch worker process: the consent route never hands its body to one.
    return Settings(
        data_dir=tmp_path / "data",
        jwt_secret="test-signing-key-" + "x" * 32,
        visitor_batches_per_minute=1000,
        event_batch_workers=0,
    )


@pytest.fixture
def shop(owner, store) -> dict:
    return make_verified_site(owner, store)


def post(client: httpx.Client, site: dict, body, **kwargs) -> httpx.Response:
    headers = {**ORIGIN, **kwargs.pop("headers", {})}
    return client.post(f"/public/sites/{site['siteKey']}/consent", json=body, headers=headers, **kwargs)


def stored(app) -> list[tuple]:
    app.state.ingest.flush()
    cursor = app.state.engine.cursor()
    try:
        return cursor.sql(
            "SELECT consent_id, visitor_id, session_id, user_id, source, consent_necessary, consent_analytics, "
            "consent_marketing, consent_preferences, channel, strftime(ts, '%Y-%m-%dT%H:%M:%S') "
            "FROM consents ORDER BY ts, consent_id"
        ).fetchall()
    finally:
        cursor.close()


def test_a_decision_is_stored_once_with_unstated_categories_null(app, client, shop):
    at = (datetime.now(UTC) - timedelta(hours=1)).replace(microsecond=0)
    body = {"consentId": "c-1", "visitorId": "v-1", "sessionId": "s-1", "userId": "u-1", "source": "banner",
            "timestamp": at.isoformat(), "categories": {"necessary": True, "analytics": True, "marketing": False}}  # fmt: skip
    response = post(client, shop, body)
    assert response.status_code == 201, response.text
    assert response.json() == {"accepted": True, "consentId": "c-1", "duplicate": False}
    assert response.headers["X-RateLimit-Limit"] == "1000"
    assert stored(app) == [
        ("c-1", "v-1", "s-1", "u-1", "banner", True, True, False, None, "web", at.strftime("%Y-%m-%dT%H:%M:%S"))
    ]  # fmt: skip
    again = post(client, shop, {**body, "categories": {"analytics": False}})
    assert again.status_code == 200, again.text
    assert again.json() == {"accepted": True, "consentId": "c-1", "duplicate": True}
    # Without an id, each decision is its own record; `source` defaults to `api`.
    assert post(client, shop, {"visitorId": "v-2", "categories": {"preferences": True}}).status_code == 201
    rows = stored(app)
    assert [r[0] for r in rows][0] == "c-1" and len(rows) == 2
    assert rows[1][1:9] == ("v-2", None, None, "api", None, None, None, True)


BAD_RECORDS = [
        ({"visitorId": "v", "categories": {"analytics": True, "tracking": True}}, "UNKNOWN_CONSENT_CATEGORY",
         "'tracking'"),
        ({"visitorId": "v", "categories": {}}, "CONSENT_CATEGORIES_EMPTY", "at least one"),
        ({"visitorId": "v", "categories": {"analytics": None}}, "CONSENT_CATEGORIES_EMPTY", "at least one"),
        ({"visitorId": "v", "categories": {"analytics": "yes"}}, "INVALID_CONSENT", "categories.analytics"),
        ({"visitorId": "v", "categories": {"analytics": 1}}, "INVALID_CONSENT", "categories.analytics"),
        ({"visitorId": "v", "categories": [True]}, "INVALID_CONSENT", "categories"),
        ({"categories": {"analytics": True}}, "INVALID_CONSENT", "visitorId"),
        ({"visitorId": "", "categories": {"analytics": True}}, "INVALID_CONSENT", "visitorId"),
        ({"visitorId": "v\ufffd", "categories": {"analytics": True}}, "INVALID_CONSENT", "visitorId"),
        ({"visitorId": "v", "userId": "u\ufffd", "categories": {"analytics": True}}, "INVALID_CONSENT", "userId"),
        ({"visitorId": "v", "categories": {"analytics": True}, "source": "popup"}, "INVALID_CONSENT", "source"),
        ({"visitorId": "v", "categories": {"analytics": True}, "consent": {}}, "INVALID_CONSENT", "consent"),
        ({"visitorId": "v", "categories": {"analytics": True}, "timestamp": "yesterday"}, "TIMESTAMP_INVALID",
         "timestamp"),
        ({"visitorId": "v", "categories": {"analytics": True}, "timestamp": "2020-01-01T00:00:00Z"},
         "TIMESTAMP_TOO_OLD", "7 days"),
        (["v"], "CONSENT_NOT_OBJECT", "object"),
        # A bare date read as midnight would move the decision by hours.
        ({"visitorId": "v", "categories": {"analytics": True}, "sentAt": "2026-11-24"},
         "TIMESTAMP_INVALID", "date and time"),
]  # fmt: skip


def test_bad_records_answer_400_in_the_envelope_and_store_nothing(app, client, shop):
    for body, code, hint in BAD_RECORDS:
        response = post(client, shop, body)
        assert response.status_code == 400, (body, response.text)
        error = response.json()["error"]
        assert (error["code"], hint in error["message"]) == (code, True), (body, error)
        assert set(error) == {"code", "message", "details"}
    assert stored(app) == []


def test_malformed_json_and_wrong_content_type_are_400(client, shop):
    url = f"/public/sites/{shop['siteKey']}/consent"
    broken = client.post(url, content=b"{", headers={**ORIGIN, "Content-Type": "application/json"})
    assert (broken.status_code, broken.json()["error"]["code"]) == (400, "MALFORMED_JSON")
    form = client.post(url, data={"visitorId": "v"}, headers=ORIGIN)
    assert (form.status_code, form.json()["error"]["code"]) == (400, "UNSUPPORTED_CONTENT_TYPE")
    # navigator.sendBeacon posts text/plain: accepted.
    beacon = client.post(
        url, content=b'{"visitorId":"v","categories":{"analytics":true}}',
        headers={**ORIGIN, "Content-Type": "text/plain;charset=UTF-8"},
    )  # fmt: skip
    assert beacon.status_code == 201, beacon.text


def test_the_public_guard_applies(client, shop, owner):
    body = {"visitorId": "v", "categories": {"analytics": True}}
    foreign = post(client, shop, body, headers={"Origin": "https://evil.example.org"})
    assert (foreign.status_code, foreign.json()["error"]["code"]) == (403, "ORIGIN_VALIDATION_FAILED")
    unverified = owner.make_site(domain="other.example.com")
    response = client.post(
        f"/public/sites/{unverified['siteKey']}/consent",
        json=body,
        headers={"Origin": "https://other.example.com"},
    )
    assert (response.status_code, response.json()["error"]["message"]) == (403, "Site not verified")
    no_origin = client.post(f"/public/sites/{shop['siteKey']}/consent", json=body)
    assert (no_origin.status_code, no_origin.json()["error"]["code"]) == (401, "API_KEY_REQUIRED")


def test_the_visitor_throttle_answers_429(app, client, shop):
    app.state.settings.visitor_batches_per_minute = 2
    body = {"visitorId": "v-throttled", "categories": {"analytics": True}}
    assert [post(client, shop, body).status_code for _ in range(2)] == [201, 201]
    third = post(client, shop, body)
    assert third.status_code == 429 and "Retry-After" in third.headers


@pytest.mark.slow
def test_an_acknowledged_consent_survives_kill_9(tmp_path, monkeypatch):
    data_dir = tmp_path / "data"
    site_key = prepare_site(data_dir)
    port = free_port()
    # No flush before the kill: the records are only in the durable log, which the 201 waited for.
    monkeypatch.setenv("AISLE_FLUSH_INTERVAL_SECONDS", "3600")
    server = start_server(data_dir, port)
    url = f"http://127.0.0.1:{port}/api/v1/public/sites/{site_key}/consent"
    try:
        for number in range(3):
            body = {
                "consentId": f"k-{number}",
                "visitorId": "v",
                "categories": {"marketing": number % 2 == 0},
            }
            assert httpx.post(url, json=body, headers=ORIGIN, timeout=10).status_code == 201
    finally:
        os.kill(server.pid, signal.SIGKILL)
        server.wait()
    assert not list((data_dir / "lake" / "consents").glob("*/*/*.parquet"))
    # What the dead server's log holds reaches the lake when the next process starts.
    ingest = Ingest(data_dir=data_dir, flush_interval_seconds=3600)
    ingest.start()
    ingest.stop()
    glob = str(data_dir / "lake" / "consents" / "*" / "*" / "*.parquet")
    rows = duckdb.sql(
        f"SELECT consent_id, consent_marketing FROM read_parquet('{glob}') ORDER BY consent_id"
    ).fetchall()
    assert rows == [("k-0", True), ("k-1", False), ("k-2", True)]
