"""Ingestion over real HTTP with the durable log in Redis: API processes share the data directory,
a re-send to any of them is stored once, and a Redis that stops answering is a 503, never a 500."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from aisle.settings import Settings
from api.app import create_app
from ingest.log import LogWriteFailed
from ingest.service import Ingest
from ingest.stream_log import StreamLog
from ingest.validation import Context
from tests.factories import Session, make_user, make_verified_site
from tests.servers import LiveServer, RedisServer

pytestmark = pytest.mark.redis

ORIGIN = {"Origin": "https://shop.example.com"}
SIGNING_KEY = "test-signing-key-" + "x" * 32


ORDER = {"orderId": "o-1", "visitorId": "v-1", "sessionId": "s-1", "total": "5.00",
         "items": [{"productItemCode": "P1", "quantity": 1, "price": "5.00"}]}  # fmt: skip


def redis_settings(data_dir: Path, url: str) -> Settings:
    return Settings(
        data_dir=data_dir, jwt_secret=SIGNING_KEY, event_batch_workers=0, redis_url=url, durable_log="redis",
        visitor_batches_per_minute=100_000, orders_per_visitor_per_minute=100_000,
    )  # fmt: skip


@pytest.fixture
def settings(tmp_path: Path, redis_log_url: str) -> Settings:
    return redis_settings(tmp_path / "data", redis_log_url)


@pytest.fixture
def shop(client: httpx.Client, store) -> dict[str, Any]:
    return make_verified_site(Session(client, make_user(store)), store)


def post_events(base_url: str, site: dict, events: list[dict]) -> httpx.Response:
    return httpx.post(f"{base_url}/api/v1/public/sites/{site['siteKey']}/events/batch",
                      json={"events": events}, headers=ORIGIN, timeout=30)  # fmt: skip


def page_view(event_id: str) -> dict:
    return {"name": "page_view", "eventId": event_id, "visitorId": "v-1", "sessionId": "s-1"}


def lake_ids(app, table: str = "events") -> list[str]:
    key = {"events": "event_id", "orders": "order_id"}[table]
    rows = app.state.engine.cursor().execute(f"SELECT {key} FROM {table} ORDER BY 1").fetchall()
    return [row[0] for row in rows]


def test_events_and_orders_reach_the_lake_through_redis(app, server, shop):
    assert post_events(server.url, shop, [page_view("e-1"), page_view("e-2")]).json()["accepted"] == 2
    url = f"{server.url}/api/v1/public/sites/{shop['siteKey']}/orders"
    assert httpx.post(url, json=ORDER, headers=ORIGIN).status_code == 201
    assert httpx.post(url, json=ORDER, headers=ORIGIN).status_code == 409
    assert lake_ids(app) == []  # an API process on a Redis log does not flush by itself
    app.state.ingest.flush()  # the flush hook works in any process
    assert lake_ids(app) == ["e-1", "e-2"]
    assert lake_ids(app, "orders") == ["o-1"]


def test_batches_without_a_valid_event_are_answered_by_index(server, shop):
    for events in ([], [{"name": "bogus", "visitorId": "v", "sessionId": "s"}], ["not an event"]):
        response = post_events(server.url, shop, events)
        assert response.status_code == 200, response.text
        assert response.json()["accepted"] == 0
        assert len(response.json()["rejected"]) == len(events)


def test_an_imported_order_sent_again_is_a_409_and_stored_once(app, server, shop, settings):
    """`aisle import` on a Redis log stores through the streams and flushes; a storefront re-sending
    one of its orders must hear 409."""
    importer = Ingest(data_dir=settings.data_dir, stream_url=settings.stream_url, flush_in_background=False)
    try:
        importer.accept_orders_sync(
            [{**ORDER, "orderId": "imported-1"}],
            Context(
                site_id=shop["id"],
                site_currency="EUR",
                received_at=datetime.now(UTC),
                channel="server",
                historical=True,
            ),
        )
        importer.flush()
    finally:
        importer.stop()
    url = f"{server.url}/api/v1/public/sites/{shop['siteKey']}/orders"
    response = httpx.post(url, json={**ORDER, "orderId": "imported-1"}, headers=ORIGIN)
    assert response.status_code == 409, response.text
    assert response.json()["error"]["code"] == "DUPLICATE_ORDER"
    app.state.ingest.flush()
    assert lake_ids(app, "orders") == ["imported-1"]


def test_an_append_redis_refuses_is_a_503_to_retry_and_claims_nothing(server, shop, monkeypatch):
    def refused(self, items):
        raise LogWriteFailed("Redis did not take the append")

    monkeypatch.setattr(StreamLog, "_write", refused)
    response = post_events(server.url, shop, [page_view("e-1")])
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "STORAGE_UNAVAILABLE"
    assert response.headers["Retry-After"] == "1"
    monkeypatch.undo()
    assert post_events(server.url, shop, [page_view("e-1")]).json()["duplicates"] == 0


def test_a_re_sent_batch_is_stored_once_whichever_server_takes_it(app, server, shop, settings):
    other = create_app(settings)  # a second API process on the same data directory and Redis
    with LiveServer(other) as other_server:
        first = post_events(server.url, shop, [page_view("e-1"), page_view("e-2")]).json()
        again = post_events(
            other_server.url, shop, [page_view("e-1"), page_view("e-2"), page_view("e-3")]
        ).json()
        assert (first["duplicates"], again["duplicates"]) == (0, 2)
        other.state.ingest.flush()
    assert lake_ids(app) == ["e-1", "e-2", "e-3"]


def test_a_redis_killed_after_the_answer_loses_nothing_and_while_down_answers_503(tmp_path):
    redis_server = RedisServer(durable=True)
    try:
        app = create_app(redis_settings(tmp_path / "data", redis_server.url))
        with LiveServer(app) as server, httpx.Client(base_url=f"{server.url}/api/v1", timeout=30) as client:
            shop = make_verified_site(Session(client, make_user(app.state.store)), app.state.store)
            assert post_events(server.url, shop, [page_view("e-1"), page_view("e-2")]).status_code == 200
            redis_server.kill()  # kill -9, right after the answer
            refused = post_events(server.url, shop, [page_view("e-3")])
            assert refused.status_code == 503, refused.text
            assert refused.json()["error"]["code"] == "SHARED_STATE_UNAVAILABLE"
            assert refused.headers["Retry-After"] == "1"
            redis_server.start()
            assert post_events(server.url, shop, [page_view("e-3")]).json()["duplicates"] == 0
            app.state.ingest.flush()
            assert lake_ids(app) == ["e-1", "e-2", "e-3"]
    finally:
        redis_server.stop()


def test_health_tells_what_waits_for_the_lake(app, client, server, shop, redis_log_url):
    assert client.get("/health").json()["checks"]["durableLog"] == {
        "ok": True,
        "detail": "0 entries wait for the lake",
    }
    post_events(server.url, shop, [page_view("e-1")])
    post_events(server.url, shop, [page_view("e-2")])
    detail = client.get("/health").json()["checks"]["durableLog"]["detail"]
    assert re.fullmatch(r"2 entries wait for the lake, the oldest for \d+\.\d s", detail), detail
    # An entry a minute old: nobody is flushing.
    old_id = f"{int(time.time() * 1000) - 61_000}-0"
    redis.Redis.from_url(redis_log_url).xadd("aisle:log:orders", {"d": b"{}"}, id=old_id)
    assert (
        client.get("/health").json()["checks"]["durableLog"]["detail"].endswith("(is `aisle flush` running?)")
    )
    app.state.ingest.flush()
    assert client.get("/health").json()["checks"]["durableLog"]["detail"] == "0 entries wait for the lake"
