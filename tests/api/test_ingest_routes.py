"""Ingestion over real HTTP: public events, orders, metrics, identify; private tracking; never a 5xx."""

from __future__ import annotations

import gzip
import logging
import os
import socket
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from aisle.settings import Settings
from api.app import create_app
from ingest.event_names import CANONICAL_EVENT_NAMES
from ingest.service import Ingest
from ingest.validation import Context
from tests.factories import make_verified_site
from tests.servers import LiveServer
from warehouse.lake import ORDERS

# Every canonical event name, as a refusal of another lists them.
ALLOWED = ", ".join(sorted(CANONICAL_EVENT_NAMES))
# Each test's app runs a batch worker process, as `aisle serve` does.
pytestmark = pytest.mark.slow

ORIGIN = {"Origin": "https://shop.example.com"}
SIGNING_KEY = "test-signing-key-" + "x" * 32
MIB = 1024 * 1024


@pytest.fixture
def limits() -> dict[str, int]:
    """Settings overrides; throttle tests parametrise this to shrink a limit."""
    return {}


@pytest.fixture
def settings(tmp_path: Path, limits: dict[str, int]) -> Settings:
    # Generous throttles unless a test shrinks them, so retries and fuzzing reach the handlers.
    roomy = {"visitor_batches_per_minute": 100_000, "orders_per_visitor_per_minute": 100_000}
    # Event batches go through a batch worker process, as `aisle serve` runs them (the other
    # modules' apps keep them in process, the path a worker falls back to).
    return Settings(
        data_dir=tmp_path / "data", jwt_secret=SIGNING_KEY, event_batch_workers=1, **{**roomy, **limits}
    )


@pytest.fixture
def shop(owner, store) -> dict[str, Any]:
    return make_verified_site(owner, store, currency="gbp")


def now_iso(delta: timedelta = timedelta(0)) -> str:
    return (datetime.now(UTC) + delta).isoformat()


def ev(event_id: str | None = None, **fields: Any) -> dict[str, Any]:
    body = {"name": "page_view", "visitorId": "v-1", "sessionId": "s-1", **fields}
    if event_id is not None:
        body["eventId"] = event_id
    return body


def post_events(client: httpx.Client, site: dict, events: list, headers: dict | None = None, **extra):
    return client.post(
        f"/public/sites/{site['siteKey']}/events/batch",
        json={"events": events, **extra},
        headers={**ORIGIN, **(headers or {})},
    )


def post_order(client: httpx.Client, site: dict, body: Any) -> httpx.Response:
    return client.post(f"/public/sites/{site['siteKey']}/orders", json=body, headers=ORIGIN)


def order(order_id: str = "o-1", **fields: Any) -> dict[str, Any]:
    return {
        "orderId": order_id,
        "visitorId": "v-1",
        "sessionId": "s-1",
        "total": "39.98",
        "items": [{"productItemCode": "SKU-1", "quantity": 2, "price": "19.99"}],
        **fields,
    }


def query(app, sql: str, params: list | None = None) -> list[tuple]:
    return app.state.engine.cursor().execute(sql, params or []).fetchall()


def error_code(response: httpx.Response) -> str:
    return response.json()["error"]["code"]


# --- public events -----------------------------------------------------------------------------------


def test_a_good_batch_is_stored_with_client_headers(client, app, shop):
    response = post_events(
        client,
        shop,
        [
            ev("e1", url="https://shop.example.com/"),
            ev("e2", name="product_view", metadata={"productItemCode": "SKU-1"}, value="19.99"),
            ev("e3", name="category_view", entityId="cat-1", currency="usd"),
        ],
        headers={"X-Aisle-Client-Platform": "web", "X-Aisle-Client-Version": "2.4.1"},
    )
    assert response.status_code == 200, response.text
    assert response.json() == {"accepted": 3, "rejected": [], "duplicates": 0}
    assert response.headers["X-RateLimit-Limit"] == "100000"
    assert response.headers["X-RateLimit-Remaining"] == "99999"
    app.state.ingest.flush()
    rows = query(
        app,
        "SELECT event_id, name, product_item_code, category_path, currency, value, channel, client_platform, "
        "client_version FROM events WHERE site_id = ? ORDER BY event_id",
        [shop["id"]],
    )
    assert rows == [
        ("e1", "page_view", None, None, "GBP", None, "web", "web", "2.4.1"),
        ("e2", "product_view", "SKU-1", None, "GBP", Decimal("19.990000"), "web", "web", "2.4.1"),
        ("e3", "category_view", None, "cat-1", "USD", None, "web", "web", "2.4.1"),
    ]


@pytest.mark.parametrize("header", ["X-Aisle-Client-Platform", "X-Aisle-Client-Version"])
def test_client_headers_are_bounded_like_event_fields(client, app, shop, header):
    response = post_events(client, shop, [ev("long-header")], headers={header: "x" * 65})
    assert (response.status_code, error_code(response)) == (400, "CLIENT_HEADER_TOO_LONG")
    assert post_events(client, shop, [ev("long-header")], headers={header: "x" * 64}).status_code == 200


def test_client_headers_sent_as_utf_8_keep_their_characters(client, app, shop):
    """Header bytes arrive decoded as Latin-1: "Kassensystem Café" was stored as "CafÃ©"."""
    platform = "Kassensystem Café".encode()
    response = post_events(client, shop, [ev("h-utf8")], headers={"X-Aisle-Client-Platform": platform})
    assert response.status_code == 200, response.text
    app.state.ingest.flush()
    assert query(app, "SELECT client_platform FROM events") == [("Kassensystem Café",)]


def test_an_amount_with_spaces_around_it_says_so(client, shop):
    response = post_events(client, shop, [ev("sp", value=" 12.50 ")])
    assert "without spaces" in response.json()["rejected"][0]["reason"], response.text


def test_a_bad_batch_reports_every_event_by_index(client, app, shop):
    response = post_events(
        client,
        shop,
        [
            ev(name="teleport"),
            ev(name="add_to_cart"),
            ev(currency="dollars"),
            ev(timestamp="last tuesday"),
            ev(timestamp=now_iso(-timedelta(days=8))),
            ev(timestamp=now_iso(timedelta(hours=1))),
            ev(metadata={"blob": "x" * 33_000}),
            ev(visitorId=""),
            "page_view",
            ev(value="0.0000001"),
            ev(name="identify"),
            {"visitorId": "v-1", "sessionId": "s-1"},
        ],
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["accepted"], body["duplicates"]) == (0, 0)
    assert [(r["index"], r["code"]) for r in body["rejected"]] == [
        (0, "UNKNOWN_EVENT_NAME"),
        (1, "MISSING_PRODUCT_CODE"),
        (2, "CURRENCY_NOT_ISO4217"),
        (3, "TIMESTAMP_INVALID"),
        (4, "TIMESTAMP_TOO_OLD"),
        (5, "TIMESTAMP_IN_FUTURE"),
        (6, "EVENT_TOO_LARGE"),
        (7, "INVALID_EVENT"),
        (8, "EVENT_NOT_OBJECT"),
        (9, "AMOUNT_TOO_PRECISE"),
        (10, "MISSING_USER_ID"),
        (11, "UNKNOWN_EVENT_NAME"),
    ]
    assert body["rejected"][0]["reason"] == f"'teleport' is not a canonical event name (allowed: {ALLOWED})"
    assert body["rejected"][1]["reason"] == "'add_to_cart' needs metadata.productItemCode"
    assert body["rejected"][10]["reason"] == "'identify' needs userId, the user the visitor is"
    assert body["rejected"][11]["reason"] == (
        f"each event needs a name, one of the canonical event names (allowed: {ALLOWED})"
    )
    assert all(r["reason"] for r in body["rejected"])
    app.state.ingest.flush()
    assert query(app, "SELECT count(*) FROM events")[0][0] == 0


def test_an_amount_beyond_any_decimal_is_rejected_by_index(client, app, shop):
    response = post_events(client, shop, [ev("big-1"), ev("big-2", value="1E+1000000")])
    assert response.status_code == 200, response.text
    assert response.json()["accepted"] == 1
    assert [(r["index"], r["code"]) for r in response.json()["rejected"]] == [(1, "AMOUNT_INVALID")]
    app.state.ingest.flush()
    assert query(app, "SELECT event_id FROM events") == [("big-1",)]


def test_money_past_a_doubles_digits_is_kept_exact_as_a_string_and_refused_as_a_json_number(
    client, app, shop
):
    url = f"/public/sites/{shop['siteKey']}/orders"
    headers = {**ORIGIN, "Content-Type": "application/json"}
    item = [{"productItemCode": "SKU-1", "quantity": 1, "price": "99999999999999.99"}]
    as_number = orjson.dumps(order("o-num", items=item)).replace(b'"39.98"', b"99999999999999.99")
    refused = client.post(url, content=as_number, headers=headers)
    assert (refused.status_code, error_code(refused)) == (400, "INVALID_ORDER"), refused.text
    assert "decimal string" in refused.json()["error"]["message"]
    kept = post_order(client, shop, order("o-text", total="99999999999999.99", items=item))
    assert kept.status_code == 201, kept.text
    app.state.ingest.flush()
    assert query(app, "SELECT order_id, total::VARCHAR FROM orders") == [("o-text", "99999999999999.990000")]


def test_an_integer_amount_past_a_doubles_digits_is_refused_as_a_json_number(client, app, shop):
    """9007199254740993 from a JavaScript client went out as ...992: an integer was stored as read."""
    events = [ev("d1", name="purchase", value=9007199254740993), ev("d2", name="purchase", value=10**16),
              ev("d3", name="purchase", value=999999999999999)]  # fmt: skip
    response = post_events(client, shop, events)
    assert response.json()["accepted"] == 2, response.text
    [rejected] = response.json()["rejected"]
    assert (rejected["index"], rejected["code"]) == (0, "INVALID_EVENT")
    assert "send it as a decimal string" in rejected["reason"]
    headers = {**ORIGIN, "Content-Type": "application/json"}
    as_number = orjson.dumps(order("o-int")).replace(b'"39.98"', b"12345678901234567")
    refused = client.post(f"/public/sites/{shop['siteKey']}/orders", content=as_number, headers=headers)
    assert (refused.status_code, error_code(refused)) == (400, "INVALID_ORDER"), refused.text
    app.state.ingest.flush()
    assert query(app, "SELECT event_id, value::VARCHAR FROM events ORDER BY 1") == [
        ("d2", "10000000000000000.000000"),
        ("d3", "999999999999999.000000"),
    ]


@pytest.mark.parametrize(
    "sent_at", [5, "5", 1732400000000, True, "soon", "2026-11-24", "2026-11-24T12:49Z", "12:49:00"]
)
def test_a_sent_at_that_is_not_a_clock_reading_refuses_the_batch(client, app, shop, sent_at):
    # A number would be read as epoch seconds and shift every event by decades; a bare date as
    # midnight, shifting a batch sent in the afternoon by hours.
    response = post_events(client, shop, [ev("clock-1", timestamp=now_iso())], sentAt=sent_at)
    assert response.status_code == 400, response.text
    assert "sentAt" in response.json()["error"]["message"] + str(response.json()["error"]["details"])
    app.state.ingest.flush()
    assert query(app, "SELECT count(*) FROM events WHERE event_id = 'clock-1'") == [(0,)]


def test_a_mixed_batch_keeps_the_valid_events(client, app, shop):
    response = post_events(
        client,
        shop,
        [ev("m1"), ev("m2", name="nope"), ev("m3"), ev("m3"), ev("m4", name="category_filter")],
    )
    assert response.status_code == 200, response.text
    assert response.json() == {
        "accepted": 4,
        "rejected": [
            {
                "index": 1,
                "code": "UNKNOWN_EVENT_NAME",
                "reason": f"'nope' is not a canonical event name (allowed: {ALLOWED})",
            }
        ],
        "duplicates": 1,
    }
    app.state.ingest.flush()
    assert query(app, "SELECT event_id, category_path FROM events ORDER BY event_id") == [
        ("m1", None),
        ("m3", None),
        ("m4", "unknown"),
    ]


def test_metrics_say_who_prepared_the_event_batches(server, client, shop):
    post_events(client, shop, [ev("m1")])
    post_events(client, shop, [ev("m2", name="page_vieww")])  # the worker leaves it to the server
    text = httpx.get(f"{server.url}/metrics").text
    assert "aisle_event_batch_workers_ready 1.0" in text
    assert 'aisle_event_batches_total{prepared_by="worker"} 1.0' in text
    assert 'aisle_event_batches_total{prepared_by="server"} 1.0' in text


@pytest.mark.parametrize("path", ["events/batch", "orders", "identify"])
def test_a_client_that_leaves_before_its_body_arrives_is_no_server_error(server, app, shop, path, capfd):
    """It was logged as an unhandled error with a traceback and counted as a 500."""
    host, port = server.url.removeprefix("http://").split(":")
    body = b'{"events": ['
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(
            f"POST /api/v1/public/sites/{shop['siteKey']}/{path} HTTP/1.1\r\nHost: x\r\n"
            f"Origin: {ORIGIN['Origin']}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body) + 100}\r\n\r\n".encode()
            + body
        )
        sock.shutdown(socket.SHUT_WR)
        sock.recv(100)  # the server closes it
    route = f'route="/api/v1/public/sites/{{siteKey}}/{path}"'
    deadline = time.monotonic() + 5
    while f'{route},status="499"' not in (text := httpx.get(f"{server.url}/metrics").text):
        assert time.monotonic() < deadline, [line for line in text.splitlines() if route in line]
        time.sleep(0.05)
    assert f'{route},status="500"' not in text
    assert "unhandled_error" not in capfd.readouterr().err


def test_a_retried_event_id_is_stored_once(client, app, shop):
    assert post_events(client, shop, [ev("r1"), ev("r2")]).json()["duplicates"] == 0
    assert app.state.batch_workers.prepared == 1  # the batch went through the worker process
    app.state.ingest.flush()
    retry = post_events(client, shop, [ev("r1"), ev("r2"), ev("r3")])
    assert retry.json() == {"accepted": 3, "rejected": [], "duplicates": 2}
    app.state.ingest.flush()
    assert query(app, "SELECT event_id, count(*) FROM events GROUP BY ALL ORDER BY ALL") == [
        ("r1", 1),
        ("r2", 1),
        ("r3", 1),
    ]


def test_events_with_a_blank_event_id_are_each_stored(client, app, shop):
    # A blank id is no id: were " " an id, every event of a client sending it would be a duplicate.
    first = post_events(client, shop, [ev(" ", visitorId="a"), ev(" ", visitorId="b")])
    second = post_events(client, shop, [ev(" ", visitorId="c"), ev("", visitorId="d")])
    assert [first.json()["duplicates"], second.json()["duplicates"]] == [0, 0]
    app.state.ingest.flush()
    assert query(app, "SELECT visitor_id FROM events ORDER BY 1") == [("a",), ("b",), ("c",), ("d",)]


def test_an_event_of_a_blank_visitor_is_reported_by_index_and_the_rest_stored(client, app, shop):
    response = post_events(
        client, shop, [ev("b1", visitorId="a"), ev("b2", visitorId="   "), ev("b3", sessionId=" ")]
    )
    assert response.status_code == 200, response.text
    assert response.json()["accepted"] == 1
    assert [(r["index"], r["code"]) for r in response.json()["rejected"]] == [
        (1, "INVALID_EVENT"),
        (2, "INVALID_EVENT"),
    ]
    app.state.ingest.flush()
    assert query(app, "SELECT event_id FROM events") == [("b1",)]


def test_sent_at_corrects_client_clock_skew(client, app, shop):
    # The client's clock runs two hours ahead; its event happened a minute before it sent the batch.
    ahead = timedelta(hours=2)
    response = post_events(
        client, shop, [ev("k1", timestamp=now_iso(ahead - timedelta(minutes=1)))], sentAt=now_iso(ahead)
    )
    assert response.json()["accepted"] == 1, response.text
    uncorrected = post_events(client, shop, [ev("k2", timestamp=now_iso(ahead - timedelta(minutes=1)))])
    assert uncorrected.json()["rejected"][0]["code"] == "TIMESTAMP_IN_FUTURE"
    app.state.ingest.flush()
    [(stored,)] = query(app, "SELECT ts FROM events WHERE event_id = 'k1'")
    expected = datetime.now(UTC) - timedelta(minutes=1)
    assert abs(stored - expected) < timedelta(seconds=10)


@pytest.mark.parametrize("path", ["events/batch", "metrics"])
def test_a_client_clock_reset_to_1970_is_corrected_like_any_other_skew(client, app, shop, path):
    """The device's clock reads five seconds after the epoch; its event happened three seconds in."""
    if path == "events/batch":
        response = post_events(client, shop, [ev("k-1970", timestamp="1970-01-01T00:00:03Z")],
                               sentAt="1970-01-01T00:00:05Z")  # fmt: skip
    else:
        metric = {"name": "LCP", "value": 1.5, "visitorId": "v", "timestamp": "1970-01-01T00:00:03Z"}
        response = client.post(f"/public/sites/{shop['siteKey']}/metrics", headers=ORIGIN,
                               json={"metrics": [metric], "sentAt": "1970-01-01T00:00:05Z"})  # fmt: skip
    assert response.status_code in (200, 202), response.text
    assert response.json()["accepted"] == 1, response.text
    app.state.ingest.flush()
    [(stored,)] = query(app, f"SELECT ts FROM {'events' if path == 'events/batch' else 'client_metrics'}")
    assert abs(stored - (datetime.now(UTC) - timedelta(seconds=2))) < timedelta(seconds=10)


def test_events_become_queryable_within_two_seconds_without_a_flush(client, app, shop):
    sent = time.monotonic()
    assert post_events(client, shop, [ev("q1")]).status_code == 200
    found = []
    while time.monotonic() - sent < 2.5 and not found:
        found = query(app, "SELECT event_id FROM events WHERE site_id = ?", [shop["id"]])
        time.sleep(0.05)
    assert found == [("q1",)]
    assert time.monotonic() - sent < 2.5


# --- bodies ------------------------------------------------------------------------------------------


def test_body_errors_use_stable_codes(client, shop):
    url = f"/public/sites/{shop['siteKey']}/events/batch"
    malformed = client.post(
        url, content=b'{"events": [', headers={**ORIGIN, "Content-Type": "application/json"}
    )
    assert (malformed.status_code, error_code(malformed)) == (400, "MALFORMED_JSON")
    assert set(malformed.json()["error"]) == {"code", "message", "details"}
    latin = client.post(url, content=b"\xff\xfe", headers={**ORIGIN, "Content-Type": "application/json"})
    assert (latin.status_code, latin.json()["error"]["message"]) == (
        400,
        "Body is not valid JSON: it is not UTF-8 text",
    )
    marked = client.post(
        url,
        content=b"\xef\xbb\xbf" + orjson.dumps({"events": [ev()]}),
        headers={**ORIGIN, "Content-Type": "text/plain"},
    )
    assert marked.status_code == 200 and marked.json()["accepted"] == 1  # a byte-order mark is not an error
    vendor = client.post(
        url,
        content=orjson.dumps({"events": [ev()]}),
        headers={**ORIGIN, "Content-Type": "application/vnd.shop+json"},
    )
    assert vendor.status_code == 200 and vendor.json()["accepted"] == 1  # any application/*+json is JSON
    form = client.post(url, data={"events": "[]"}, headers=ORIGIN)
    assert (form.status_code, error_code(form)) == (400, "UNSUPPORTED_CONTENT_TYPE")
    assert "text/plain" in form.json()["error"]["message"]
    untyped = client.post(url, content=b'{"events": []}', headers=ORIGIN)
    assert (untyped.status_code, error_code(untyped)) == (400, "UNSUPPORTED_CONTENT_TYPE")
    too_many = post_events(client, shop, [ev() for _ in range(501)])
    assert (too_many.status_code, error_code(too_many)) == (400, "VALIDATION_FAILED")
    assert post_events(client, shop, [ev() for _ in range(500)]).json()["accepted"] == 500
    not_an_object = client.post(url, json=[ev()], headers=ORIGIN)
    assert (not_an_object.status_code, error_code(not_an_object)) == (400, "VALIDATION_FAILED")


def test_text_plain_is_read_as_json_for_send_beacon(client, app, shop):
    response = client.post(
        f"/public/sites/{shop['siteKey']}/events/batch",
        content=b'{"events": [{"name": "page_view", "eventId": "b1", "visitorId": "v", "sessionId": "s"}]}',
        headers={**ORIGIN, "Content-Type": "text/plain;charset=UTF-8"},
    )
    assert response.json() == {"accepted": 1, "rejected": [], "duplicates": 0}


def test_bodies_over_two_mib_are_413(client, shop):
    url = f"/public/sites/{shop['siteKey']}/events/batch"
    big = b'{"events": [], "pad": "' + b"x" * (2 * MIB) + b'"}'
    declared = client.post(url, content=big, headers={**ORIGIN, "Content-Type": "application/json"})
    assert (declared.status_code, error_code(declared)) == (413, "BODY_TOO_LARGE")

    def chunks():  # no Content-Length: the limit holds while streaming
        yield b'{"events": [], "pad": "'
        for _ in range(3):
            yield b"x" * MIB
        yield b'"}'

    streamed = client.post(url, content=chunks(), headers={**ORIGIN, "Content-Type": "application/json"})
    assert (streamed.status_code, error_code(streamed)) == (413, "BODY_TOO_LARGE")
    just_under = b'{"events": [], "pad": "' + b"x" * (2 * MIB - 40) + b'"}'
    fits = client.post(url, content=just_under, headers={**ORIGIN, "Content-Type": "application/json"})
    assert fits.json() == {"accepted": 0, "rejected": [], "duplicates": 0}


def test_a_gzip_body_is_inflated_and_the_size_limit_holds_for_what_it_inflates_to(client, app, shop):
    url = f"/public/sites/{shop['siteKey']}/events/batch"
    gzipped = {**ORIGIN, "Content-Type": "application/json", "Content-Encoding": "gzip"}
    batch = orjson.dumps({"events": [ev("g1"), ev("g2")]})
    stored = client.post(url, content=gzip.compress(batch), headers=gzipped)
    assert stored.json() == {"accepted": 2, "rejected": [], "duplicates": 0}
    order_stored = client.post(
        f"/public/sites/{shop['siteKey']}/orders",
        content=gzip.compress(orjson.dumps(order("o-gz"))),
        headers=gzipped,
    )
    assert order_stored.status_code == 201, order_stored.text

    # 2 MiB and a bit of one letter: a few KiB gzipped, refused as what it would become.
    bomb = gzip.compress(b'{"events": [], "pad": "' + b"x" * (2 * MIB) + b'"}')
    assert len(bomb) < 16 * 1024
    too_big = client.post(url, content=bomb, headers=gzipped)
    assert (too_big.status_code, error_code(too_big)) == (413, "BODY_TOO_LARGE")
    not_gzip = client.post(url, content=batch, headers=gzipped)
    assert (not_gzip.status_code, error_code(not_gzip)) == (400, "MALFORMED_BODY")
    cut_short = client.post(url, content=gzip.compress(batch)[:-12], headers=gzipped)
    assert (cut_short.status_code, error_code(cut_short)) == (400, "MALFORMED_BODY")
    brotli = client.post(url, content=batch, headers={**gzipped, "Content-Encoding": "br"})
    assert (brotli.status_code, error_code(brotli)) == (400, "UNSUPPORTED_CONTENT_ENCODING")
    # Bytes after the stream would be dropped unread: refused.
    more = client.post(url, content=gzip.compress(batch) + b"garbage", headers=gzipped)
    assert (more.status_code, error_code(more)) == (400, "MALFORMED_BODY"), more.text
    # A body compressed in pieces (several gzip members, as gzip(1) reads them): every piece is read.
    body = orjson.dumps({"events": [ev("g3"), ev("g4")]})
    pieces = client.post(url, content=gzip.compress(body[:20]) + gzip.compress(body[20:]), headers=gzipped)
    assert pieces.json() == {"accepted": 2, "rejected": [], "duplicates": 0}, pieces.text
    app.state.ingest.flush()
    assert query(app, "SELECT event_id FROM events ORDER BY event_id") == [("g1",), ("g2",), ("g3",), ("g4",)]


def test_a_lone_surrogate_escape_is_read_as_the_replacement_character_not_a_broken_batch(client, app, shop):
    """JSON.stringify writes "\\ud83d" for a title cut inside an emoji: the whole batch was a 400."""
    body = (
        b'{"events": [{"name": "page_view", "eventId": "u1", "visitorId": "v", "sessionId": "s",'
        b' "metadata": {"title": "Mugs \\ud83d", "\\udc00k": "\\ud83d\\ude00"}},'
        b' {"name": "page_view", "eventId": "u2", "visitorId": "v", "sessionId": "s"}]}'
    )
    response = client.post(
        f"/public/sites/{shop['siteKey']}/events/batch",
        content=body,
        headers={**ORIGIN, "Content-Type": "application/json"},
    )
    assert response.json() == {"accepted": 2, "rejected": [], "duplicates": 0}, response.text
    app.state.ingest.flush()
    [(metadata,)] = query(app, "SELECT metadata FROM events WHERE event_id = 'u1'")
    assert orjson.loads(metadata) == {"title": "Mugs \ufffd", "\ufffdk": "\U0001f600"}


def test_an_id_holding_a_broken_character_is_refused_so_distinct_ids_never_merge(client, app, shop):
    """ "sur-\\ud800" and "sur-\\udbff" were both read as "sur-\ufffd": three events acknowledged, one stored,
    and the second order refused as a duplicate of the first."""
    url = f"/public/sites/{shop['siteKey']}/events/batch"
    body = (
        b'{"events": [{"name": "page_view", "eventId": "sur-\\ud800", "visitorId": "v", "sessionId": "s"},'
        b' {"name": "page_view", "eventId": "sur-\\udbff", "visitorId": "v", "sessionId": "s"},'
        b' {"name": "page_view", "eventId": "ok", "visitorId": "v\\ufffd", "sessionId": "s"},'
        b' {"name": "page_view", "eventId": "fine", "visitorId": "v", "sessionId": "s", "userId": "u\xef\xbf\xbd"},'
        b' {"name": "page_view", "eventId": "kept", "visitorId": "v", "sessionId": "s"}]}'
    )
    answer = client.post(url, content=body, headers={**ORIGIN, "Content-Type": "application/json"}).json()
    reason = "must not contain U+FFFD (a broken character, or a lone UTF-16 surrogate read as one)"
    assert answer == {"accepted": 1, "duplicates": 0, "rejected": [
        {"index": 0, "code": "INVALID_EVENT", "reason": f"eventId {reason}"},
        {"index": 1, "code": "INVALID_EVENT", "reason": f"eventId {reason}"},
        {"index": 2, "code": "INVALID_EVENT", "reason": f"visitorId {reason}"},
        {"index": 3, "code": "INVALID_EVENT", "reason": f"userId {reason}"},
    ]}  # fmt: skip
    fast = post_events(client, shop, [ev("whole", sessionId="s\ufffd")]).json()  # the one-call fast path
    assert fast["rejected"] == [{"index": 0, "code": "INVALID_EVENT", "reason": f"sessionId {reason}"}]
    for order_id in (b"ord-\\ud800", b"ord-\\udbff"):
        refused = client.post(
            f"/public/sites/{shop['siteKey']}/orders", headers={**ORIGIN, "Content-Type": "application/json"},
            content=orjson.dumps(order("X")).replace(b'"X"', b'"' + order_id + b'"'),
        )  # fmt: skip
        assert (refused.status_code, refused.json()["error"]["code"]) == (400, "INVALID_ORDER"), refused.text
        assert reason in refused.json()["error"]["message"]
    app.state.ingest.flush()
    assert query(app, "SELECT event_id FROM events") == [("kept",)]
    assert query(app, "SELECT count(*) FROM orders") == [(0,)]


@pytest.mark.parametrize("route", ["public", "track", "identify"])
def test_an_integer_past_64_bits_is_refused_by_name_never_stored_as_a_float(client, app, owner, shop, route):
    """orjson read 18446744073709551616 as 1.8446744073709552e+19: the private routes and identify
    stored it changed."""
    big = 18446744073709551616
    if route == "public":
        response = post_events(client, shop, [ev("i1", metadata={"n": big}), ev("i2")])
        assert response.json()["accepted"] == 1
        [rejected] = response.json()["rejected"]
    elif route == "track":
        response = owner.post(
            "/analytics/track/batch",
            json={"siteId": shop["id"], "events": [ev("i1", metadata={"n": big}), ev("i2")]},
        )
        assert response.json()["accepted"] == 1, response.text
        [rejected] = response.json()["rejected"]
    else:
        response = client.post(
            f"/public/sites/{shop['siteKey']}/identify",
            json={"visitorId": "v", "userId": "u", "metadata": {"n": big}},
            headers=ORIGIN,
        )
        assert response.status_code == 400, response.text
        rejected = response.json()["error"]
    assert "64 bits" in (rejected.get("reason") or rejected.get("message")), rejected
    app.state.ingest.flush()
    assert query(app, "SELECT count(*) FROM events WHERE metadata LIKE '%e+19%'") == [(0,)]


@pytest.mark.parametrize("route", ["public", "private"])
def test_a_time_sent_as_a_number_is_refused_not_read_as_epoch_seconds(client, app, owner, shop, route):
    """ISO 8601 text only: the private routes stored 1732000000 as 2024-11-19."""
    numeric = ev("n1", timestamp=1732000000)
    if route == "public":
        response = post_events(client, shop, [numeric, ev("n2")])
    else:
        response = owner.post(
            "/analytics/track/batch", json={"siteId": shop["id"], "events": [numeric, ev("n2")]}
        )
    assert response.status_code == 200, response.text
    assert [(r["index"], r["code"]) for r in response.json()["rejected"]] == [(0, "TIMESTAMP_INVALID")]
    refused = post_order(client, shop, order("o-num", timestamp=1732000000))
    assert refused.status_code == 400, refused.text
    app.state.ingest.flush()
    assert query(app, "SELECT event_id FROM events") == [("n2",)]


# --- orders ------------------------------------------------------------------------------------------


def test_an_order_is_stored_once_and_a_repeat_is_409(client, app, shop):
    first = post_order(client, shop, order(currency="sek"))
    assert first.status_code == 201, first.text
    assert first.json() == {"accepted": True, "orderId": "o-1", "currency": "SEK"}
    repeat = post_order(client, shop, order(total="1.00"))
    assert repeat.status_code == 409
    assert repeat.json()["error"]["code"] == "DUPLICATE_ORDER"
    second = post_order(client, shop, order("o-2"))
    assert second.json()["currency"] == "GBP"  # the site's
    app.state.ingest.flush()
    rows = query(app, "SELECT order_id, total, currency, item_count FROM orders ORDER BY order_id")
    assert rows == [("o-1", Decimal("39.980000"), "SEK", 2), ("o-2", Decimal("39.980000"), "GBP", 2)]


def test_order_ids_are_trimmed_and_refunds_say_so(client, app, shop):
    """ "o1 " and "o1" were stored as two orders; refundOf without isRefund was stored as a sale; a
    refund sent under its sale's orderId got a bare 409."""
    assert post_order(client, shop, order("o-t")).status_code == 201
    for spaced in (" o-t", "o-t "):
        assert post_order(client, shop, order(spaced)).status_code == 409
    refund = order("o-t", isRefund=True, total="-39.98")
    reused = post_order(client, shop, refund)
    assert reused.status_code == 409 and "refundOf naming it" in reused.json()["error"]["message"]
    unflagged = post_order(client, shop, order("r-1", refundOf="o-t"))
    assert (unflagged.status_code, error_code(unflagged)) == (400, "INVALID_ORDER")
    assert "isRefund true" in unflagged.json()["error"]["message"]
    as_text = post_order(client, shop, order("r-2", isRefund="yes", refundOf="o-t"))
    assert (as_text.status_code, error_code(as_text)) == (400, "INVALID_ORDER")
    assert post_order(client, shop, {**refund, "orderId": "r-3", "refundOf": " o-t "}).status_code == 201
    app.state.ingest.flush()
    assert query(app, "SELECT order_id, is_refund, refund_of FROM orders ORDER BY 1") == [
        ("o-t", False, None),
        ("r-3", True, "o-t"),
    ]


def test_consent_categories_on_an_event_are_json_booleans(client, app, shop):
    events = [ev("c-1", consent={"analytics": "yes"}), ev("c-2", consent={"analytics": 1}),
              ev("c-3", consent={"analytics": True})]  # fmt: skip
    response = post_events(client, shop, events)
    assert [r["index"] for r in response.json()["rejected"]] == [0, 1], response.text
    app.state.ingest.flush()
    assert query(app, "SELECT event_id, consent_analytics FROM events") == [("c-3", True)]


def test_a_repeated_order_is_409_after_a_restart_too(server, client, settings, shop):
    assert post_order(client, shop, order("o-before")).status_code == 201
    server.__exit__()  # a graceful stop; the in-process duplicate window goes with the process

    with LiveServer(create_app(settings)) as again, httpx.Client(base_url=f"{again.url}/api/v1") as restarted:
        repeat = post_order(restarted, shop, order("o-before", total="99.00"))
        assert (repeat.status_code, error_code(repeat)) == (409, "DUPLICATE_ORDER")
        assert post_order(restarted, shop, order("o-after")).status_code == 201


def test_the_window_is_rebuilt_only_from_orders_received_within_it(tmp_path):
    site = "11111111-1111-1111-1111-111111111111"
    ctx = Context(site_id=site, site_currency="EUR", received_at=datetime.now(UTC), channel="server")
    first = Ingest(data_dir=tmp_path, flush_interval_seconds=3600, order_window_seconds=3600)
    first.start()
    assert first.accept_orders_sync([order("o-1")], ctx).duplicates == 0
    first.flush()
    first.stop()
    again = Ingest(data_dir=tmp_path, flush_interval_seconds=3600, order_window_seconds=3600)
    again.start()
    assert again.accept_orders_sync([order("o-1")], ctx).duplicates == 1  # within the hour
    again.stop()
    for path in again.lake.files(ORDERS):
        os.utime(path, (time.time() - 3700, time.time() - 3700))  # written before the window
    later = Ingest(data_dir=tmp_path, flush_interval_seconds=3600, order_window_seconds=3600)
    later.start()
    try:
        assert later.accept_orders_sync([order("o-1")], ctx).duplicates == 0
    finally:
        later.stop()


def test_an_invalid_order_stores_nothing_and_does_not_claim_its_id(client, app, shop):
    no_product = post_order(client, shop, order(items=[{"quantity": 1, "price": "1"}]))
    assert (no_product.status_code, error_code(no_product)) == (400, "INVALID_ORDER")
    bad_currency = post_order(client, shop, order(currency="EURO"))
    assert (bad_currency.status_code, error_code(bad_currency)) == (400, "CURRENCY_NOT_ISO4217")
    too_precise = post_order(client, shop, order(total="1.0000001"))
    assert (too_precise.status_code, error_code(too_precise)) == (400, "AMOUNT_TOO_PRECISE")
    for huge in ({"total": "1E+1000000"}, {"tax": "-1E+1000000"}):
        overflow = post_order(client, shop, order(**huge))
        assert (overflow.status_code, error_code(overflow)) == (400, "AMOUNT_INVALID")
    assert post_order(client, shop, ["not", "an", "order"]).status_code == 400
    negative = post_order(client, shop, order(total="-39.98"))
    assert (negative.status_code, error_code(negative)) == (400, "INVALID_ORDER")
    assert "isRefund" in negative.json()["error"]["message"]
    good = {"productItemCode": "SKU-1", "quantity": 2, "price": "19.99"}
    for line in ({"quantity": -1}, {"price": "-5"}):
        taken_back = post_order(
            client, shop, order(items=[good, {**good, "productItemCode": "SKU-2", **line}])
        )
        assert (taken_back.status_code, error_code(taken_back)) == (400, "INVALID_ORDER")
        assert taken_back.json()["error"]["message"].startswith("items.1 is negative: a sale's lines need")
    assert post_order(client, shop, order()).status_code == 201
    refund = post_order(client, shop, order("o-1-r", total="-39.98", isRefund=True, refundOf="o-1",
                                            items=[{**good, "quantity": -2}]))  # fmt: skip
    assert refund.status_code == 201, refund.text
    app.state.ingest.flush()
    assert query(app, "SELECT order_id, is_refund FROM orders ORDER BY order_id") == [
        ("o-1", False),
        ("o-1-r", True),
    ]


def assert_throttled(response: httpx.Response, limit: int) -> None:
    assert response.status_code == 429, response.text
    assert error_code(response) == "RATE_LIMITED"
    assert response.headers["X-RateLimit-Limit"] == str(limit)
    assert response.headers["X-RateLimit-Remaining"] == "0"
    retry_after = int(response.headers["Retry-After"])
    assert 1 <= retry_after <= 60
    assert int(response.headers["X-RateLimit-Reset"]) == retry_after


@pytest.mark.parametrize("limits", [{"orders_per_visitor_per_minute": 1}])
def test_orders_have_their_own_stricter_throttle(client, app, shop):
    assert post_order(client, shop, order("t-1")).status_code == 201
    assert_throttled(post_order(client, shop, order("t-2")), 1)
    assert_throttled(post_order(client, shop, order("t-3")), 1)
    assert post_order(client, shop, order("t-4", visitorId="v-2")).status_code == 201
    assert post_events(client, shop, [ev()]).status_code == 200  # events are counted apart
    app.state.ingest.flush()
    assert query(app, "SELECT order_id FROM orders ORDER BY 1") == [("t-1",), ("t-4",)]


@pytest.mark.parametrize("limits", [{"visitor_batches_per_minute": 2, "orders_per_visitor_per_minute": 1}])
def test_the_visitor_throttle_counts_batches(client, app, shop):
    remaining = [post_events(client, shop, [ev(f"x{i}")]).headers["X-RateLimit-Remaining"] for i in range(2)]
    assert remaining == ["1", "0"]
    assert_throttled(post_events(client, shop, [ev("x2")]), 2)
    identify = client.post(
        f"/public/sites/{shop['siteKey']}/identify",
        json={"visitorId": "v-1", "userId": "u-1"},
        headers=ORIGIN,
    )
    assert_throttled(identify, 2)
    other = post_events(client, shop, [ev("y1", visitorId="v-2")])
    assert (other.status_code, other.headers["X-RateLimit-Remaining"]) == (200, "1")
    app.state.ingest.flush()
    assert query(app, "SELECT event_id FROM events ORDER BY 1") == [("x0",), ("x1",), ("y1",)]


@pytest.mark.parametrize("limits", [{"visitor_batches_per_minute": 2}])
def test_a_batch_counts_against_every_visitor_it_names(client, app, shop):
    for i in range(2):
        assert post_events(client, shop, [ev(f"x{i}")]).status_code == 200
    assert_throttled(post_events(client, shop, [ev("x2")]), 2)
    # v-1 is spent: naming it after another visitor does not get its events past the throttle.
    assert_throttled(post_events(client, shop, [ev("m1", visitorId="v-3"), ev("m2")]), 2)
    # v-3 was counted by that batch too.
    alone = post_events(client, shop, [ev("y1", visitorId="v-3")])
    assert (alone.status_code, alone.headers["X-RateLimit-Remaining"]) == (200, "0")
    # Without any visitor id, a batch counts against its sender's address.
    nameless = post_events(client, shop, [{"name": "page_view", "sessionId": "s-1"}])
    assert (nameless.status_code, nameless.headers["X-RateLimit-Remaining"]) == (200, "1")
    app.state.ingest.flush()
    assert query(app, "SELECT event_id FROM events ORDER BY 1") == [("x0",), ("x1",), ("y1",)]


@pytest.mark.parametrize("limits", [{"orders_per_visitor_per_minute": 5}])
def test_refused_orders_carry_the_rate_limit_headers(client, app, shop):
    assert post_order(client, shop, order("h-1")).headers["X-RateLimit-Remaining"] == "4"
    again = post_order(client, shop, order("h-1"))
    assert (again.status_code, error_code(again)) == (409, "DUPLICATE_ORDER")
    assert (again.headers["X-RateLimit-Limit"], again.headers["X-RateLimit-Remaining"]) == ("5", "3")
    bad = post_order(client, shop, order("h-2", currency="usdollar"))
    assert bad.status_code == 400
    assert bad.headers["X-RateLimit-Remaining"] == "2"


# --- identify and metrics ----------------------------------------------------------------------------


def test_identify_merges_once(client, app, shop):
    url = f"/public/sites/{shop['siteKey']}/identify"
    body = {"visitorId": "v-9", "userId": "u-9", "traits": {"plan": "gold"}}
    first = client.post(url, json=body, headers=ORIGIN)
    assert (first.status_code, first.json()) == (200, {"success": True, "merged": True})
    again = client.post(url, json=body, headers=ORIGIN)
    assert again.json() == {"success": True, "merged": False}
    # A second user on the same device merges nothing: the visitor still counts as its first user.
    other_user = client.post(url, json={**body, "userId": "u-10"}, headers=ORIGIN)
    assert other_user.json() == {"success": True, "merged": False}
    second_device = client.post(url, json={**body, "visitorId": "v-10"}, headers=ORIGIN)
    assert second_device.json() == {"success": True, "merged": True}
    app.state.ingest.flush()
    people = query(app, "SELECT visitor_id, user_id FROM visitor_users ORDER BY visitor_id")
    assert people == [("v-10", "u-9"), ("v-9", "u-9")]
    # Every analytics route reads people from this view: u-10's identify on v-9 counts for u-9 too.
    assert query(app, "SELECT DISTINCT person_id FROM events_people") == [("u-9",)]
    rows = query(app, "SELECT name, visitor_id, user_id, metadata FROM events ORDER BY user_id, visitor_id")
    assert rows == [
        ("identify", "v-9", "u-10", '{"traits":{"plan":"gold"}}'),
        ("identify", "v-10", "u-9", '{"traits":{"plan":"gold"}}'),
        ("identify", "v-9", "u-9", '{"traits":{"plan":"gold"}}'),
        ("identify", "v-9", "u-9", '{"traits":{"plan":"gold"}}'),
    ]
    # Without a sessionId each visitor's identify events keep to a session of its own.
    sessions = query(app, "SELECT DISTINCT visitor_id, session_id FROM events ORDER BY 1")
    assert sessions == [("v-10", "identify:v-10"), ("v-9", "identify:v-9")]


def test_identify_takes_the_sdks_metadata_as_the_identify_events_metadata(client, app, shop):
    """The spec's SDK call is identify(userId, metadata?): its metadata was refused (400) with the link."""
    url = f"/public/sites/{shop['siteKey']}/identify"
    answer = client.post(url, json={"visitorId": "v-1", "userId": "u-1", "metadata": {"email": "a@b.c"}},
                         headers=ORIGIN)  # fmt: skip
    assert (answer.status_code, answer.json()) == (200, {"success": True, "merged": True})
    both = {"visitorId": "v-2", "userId": "u-2", "metadata": {"plan": "gold"}, "traits": {"age": 40}}
    assert client.post(url, json=both, headers=ORIGIN).status_code == 200
    app.state.ingest.flush()
    assert query(app, "SELECT user_id, metadata FROM events ORDER BY 1") == [
        ("u-1", '{"email":"a@b.c"}'),
        ("u-2", '{"plan":"gold","traits":{"age":40}}'),
    ]
    assert query(app, "SELECT visitor_id, user_id FROM visitor_users ORDER BY 1") == [
        ("v-1", "u-1"),
        ("v-2", "u-2"),
    ]


def test_identify_leaves_out_fields_it_does_not_know_and_a_retry_with_its_event_id_is_stored_once(
    client, app, shop
):
    """Segment's identify sends anonymousId, timestamp and context: each was a 400 here, where events
    leave unknown fields out; and a retried identify was stored twice."""
    url = f"/public/sites/{shop['siteKey']}/identify"
    body = {"visitorId": "v-1", "userId": "u-1", "eventId": "id-1", "anonymousId": "v-1",
            "context": {"library": {"name": "analytics.js"}}, "timestamp": "2026-11-24T10:00:00Z"}  # fmt: skip
    first = client.post(url, json=body, headers=ORIGIN)
    assert (first.status_code, first.json()) == (200, {"success": True, "merged": True}), first.text
    retry = client.post(url, json=body, headers=ORIGIN)
    assert (retry.status_code, retry.json()) == (200, {"success": True, "merged": False})
    app.state.ingest.flush()
    assert query(app, "SELECT event_id, name, user_id FROM events") == [("id-1", "identify", "u-1")]


def test_identify_links_the_visitor_id_exactly_as_its_events_carry_it(client, app, shop):
    """identify trimmed " v-1 " to "v-1" while the visitor's events kept " v-1 ": the link missed them."""
    assert post_events(client, shop, [ev("p1", visitorId=" v-1 ")]).json()["accepted"] == 1
    url = f"/public/sites/{shop['siteKey']}/identify"
    assert client.post(url, json={"visitorId": " v-1 ", "userId": "u-1"}, headers=ORIGIN).status_code == 200
    app.state.ingest.flush()
    assert query(app, "SELECT name, visitor_id, person_id FROM events_people ORDER BY name") == [
        ("identify", " v-1 ", "u-1"),
        ("page_view", " v-1 ", "u-1"),
    ]


def test_identify_reads_its_body_like_the_other_ingestion_routes(client, shop):
    url = f"/public/sites/{shop['siteKey']}/identify"
    beacon = client.post(
        url,
        content=b'{"visitorId": "v-1", "userId": "u-1"}',
        headers={**ORIGIN, "Content-Type": "text/plain"},
    )
    assert (beacon.status_code, beacon.json()) == (200, {"success": True, "merged": True})
    form = client.post(url, data={"visitorId": "v-1", "userId": "u-1"}, headers=ORIGIN)
    assert (form.status_code, error_code(form)) == (400, "UNSUPPORTED_CONTENT_TYPE")
    malformed = client.post(url, content=b"{", headers={**ORIGIN, "Content-Type": "application/json"})
    assert (malformed.status_code, error_code(malformed)) == (400, "MALFORMED_JSON")
    typo = client.post(url, json={"visitorId": "v-1", "userID": "u-1"}, headers=ORIGIN)
    assert (typo.status_code, error_code(typo)) == (400, "VALIDATION_FAILED")
    huge = client.post(
        url, json={"visitorId": "v-1", "userId": "u-1", "traits": {"x": "y" * (2 * MIB)}}, headers=ORIGIN
    )
    assert (huge.status_code, error_code(huge)) == (413, "BODY_TOO_LARGE")


def test_metrics_are_accepted_and_queryable(client, app, shop):
    response = client.post(
        f"/public/sites/{shop['siteKey']}/metrics",
        json={
            "metrics": [
                {"name": "LCP", "value": 2.5, "unit": "s", "visitorId": "v-1", "tags": {"page": "home"}},
                {"name": "CLS", "value": "lots"},
                {"name": "queue_size", "value": 3},
            ]
        },
        headers={**ORIGIN, "X-Aisle-Client-Platform": "web"},
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["accepted"], body["duplicates"]) == (2, 0)
    assert [(r["index"], r["code"]) for r in body["rejected"]] == [(1, "INVALID_METRIC")]
    app.state.ingest.flush()
    rows = query(
        app, "SELECT name, value, unit, tags, client_platform, site_id FROM client_metrics ORDER BY name"
    )
    assert rows == [
        ("LCP", 2.5, "s", '{"page":"home"}', "web", shop["id"]),
        ("queue_size", 3.0, None, "{}", "web", shop["id"]),
    ]


# --- private tracking --------------------------------------------------------------------------------

HISTORIC = "2011-03-04T05:06:07Z"


def test_private_tracking_accepts_historical_data(client, app, owner, shop):
    one = owner.post("/analytics/track", json={"siteId": shop["id"], **ev("h1", timestamp=HISTORIC)})
    assert one.json() == {"accepted": 1, "rejected": [], "duplicates": 0}, one.text
    batch = owner.post(
        "/analytics/track/batch",
        json={"siteId": shop["id"], "events": [ev("h2", timestamp=HISTORIC), ev("h3", name="bogus")]},
    )
    assert batch.status_code == 200, batch.text
    assert batch.json()["accepted"] == 1
    assert [r["code"] for r in batch.json()["rejected"]] == ["UNKNOWN_EVENT_NAME"]
    placed = owner.post(
        "/analytics/track/order", json={"siteId": shop["id"], **order("h-o", timestamp=HISTORIC)}
    )
    assert placed.status_code == 201, placed.text
    assert placed.json() == {"accepted": True, "orderId": "h-o", "currency": "GBP"}
    public = post_events(client, shop, [ev("h4", timestamp=HISTORIC)])
    assert public.json()["rejected"][0]["code"] == "TIMESTAMP_TOO_OLD"
    app.state.ingest.flush()
    assert query(app, "SELECT event_id, channel, date::VARCHAR FROM events ORDER BY 1") == [
        ("h1", "server", "2011-03-04"),
        ("h2", "server", "2011-03-04"),
    ]
    assert query(app, "SELECT order_id, ts FROM orders") == [
        ("h-o", datetime(2011, 3, 4, 5, 6, 7, tzinfo=UTC))
    ]


def test_private_tracking_of_one_event_takes_it_flat_or_nested(owner, shop):
    nested = owner.post("/analytics/track", json={"siteId": shop["id"], "event": ev("n1")})
    assert nested.json() == {"accepted": 1, "rejected": [], "duplicates": 0}, nested.text
    not_an_event = owner.post("/analytics/track", json={"siteId": shop["id"], "event": 42})
    assert not_an_event.status_code == 200
    assert [r["code"] for r in not_an_event.json()["rejected"]] == ["EVENT_NOT_OBJECT"]


def test_private_tracking_needs_a_token_and_the_site_of_your_organisation(client, app, outsider, shop):
    bodies = {
        "/analytics/track": {"siteId": shop["id"], **ev("p1")},
        "/analytics/track/batch": {"siteId": shop["id"], "events": [ev("p2")]},
        "/analytics/track/order": {"siteId": shop["id"], **order("p-o")},
    }
    for path, body in bodies.items():
        anonymous = client.post(path, json=body)
        assert anonymous.status_code == 401, (path, anonymous.text)
        foreign = outsider.post(path, json=body)
        assert (foreign.status_code, error_code(foreign)) == (403, "SITE_ACCESS_DENIED"), path
        unknown = outsider.post(path, json={**body, "siteId": "11111111-1111-1111-1111-111111111111"})
        assert (unknown.status_code, error_code(unknown)) == (403, "SITE_ACCESS_DENIED"), path
        not_an_id = outsider.post(path, json={**body, "siteId": "no-such-site"})
        assert (not_an_id.status_code, error_code(not_an_id)) == (400, "INVALID_SITE_ID"), path
    app.state.ingest.flush()
    assert query(app, "SELECT count(*) FROM events")[0][0] == 0
    assert query(app, "SELECT count(*) FROM orders")[0][0] == 0


# --- OpenAPI -----------------------------------------------------------------------------------------


def test_openapi_documents_the_ingestion_bodies(client):
    schema = client.get("/openapi.json").json()
    components = schema["components"]["schemas"]
    assert {"EventBatch", "EventIn", "OrderIn", "TrackEventBatch"} <= set(components)
    assert components["EventBatch"]["properties"]["events"]["items"] == {
        "$ref": "#/components/schemas/EventIn"
    }
    assert {"name", "visitorId", "sessionId"} <= set(components["EventIn"]["required"])
    assert {"orderId", "items", "total"} <= set(components["OrderIn"]["required"])
    assert "siteId" in components["TrackEventBatch"]["properties"]

    def body_ref(path: str) -> str:
        request_body = schema["paths"][f"/api/v1{path}"]["post"]["requestBody"]
        return request_body["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]

    assert body_ref("/public/sites/{siteKey}/events/batch") == "EventBatch"
    assert body_ref("/public/sites/{siteKey}/orders") == "OrderIn"
    assert body_ref("/analytics/track/batch") == "TrackEventBatch"
    # sendBeacon's text/plain bodies are read as JSON, and said so.
    beacon = schema["paths"]["/api/v1/public/sites/{siteKey}/events/batch"]["post"]["requestBody"]["content"]
    assert beacon["text/plain"] == beacon["application/json"]
    for path in ("/public/sites/{siteKey}/orders", "/analytics/track/order"):
        assert (
            "DUPLICATE_ORDER" in schema["paths"][f"/api/v1{path}"]["post"]["responses"]["409"]["description"]
        )


# --- nothing answers 5xx -----------------------------------------------------------------------------


def json_containers(children: st.SearchStrategy) -> st.SearchStrategy:
    return st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=12), children, max_size=5)


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**64), max_value=2**64)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30),
    json_containers,
    max_leaves=20,
)
FIELDS = [
    "name", "timestamp", "eventId", "visitorId", "sessionId", "journeyId", "userId", "entityType", "entityId",
    "url", "referrer", "metadata", "consent", "currency", "value", "orderId", "items", "total", "tax",
]  # fmt: skip
EVENTISH = st.dictionaries(st.sampled_from(FIELDS), JSON, max_size=8).map(lambda d: {**ev(), **d}) | JSON
FUZZ = hypothesis_settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@FUZZ
@given(body=JSON, path=st.sampled_from(["events/batch", "orders", "metrics", "identify"]))
def test_no_json_body_gives_a_5xx(client, app, shop, body, path):
    response = client.post(f"/public/sites/{shop['siteKey']}/{path}", json=body, headers=ORIGIN)
    assert response.status_code < 500, response.text
    app.state.ingest.flush()  # whatever was accepted can be written to the lake


@FUZZ
@given(events=st.lists(EVENTISH, max_size=6), sent_at=JSON | st.datetimes().map(str))
def test_no_batch_of_events_gives_a_5xx(client, app, shop, events, sent_at):
    response = post_events(client, shop, events, sentAt=sent_at)
    assert response.status_code < 500, response.text
    if response.status_code == 200:
        body = response.json()
        assert body["accepted"] + len(body["rejected"]) == len(events)
    app.state.ingest.flush()


@FUZZ
@given(
    fields=st.dictionaries(st.sampled_from(FIELDS), JSON, max_size=6), path=st.sampled_from(["", "/order"])
)
def test_no_private_tracking_body_gives_a_5xx(app, owner, shop, fields, path):
    body = {**ev(), **order(), **fields, "siteId": shop["id"]}
    response = owner.post(f"/analytics/track{path}", json=body)
    assert response.status_code < 500, response.text
    app.state.ingest.flush()


METRIC_FIELDS = ["name", "value", "unit", "timestamp", "visitorId", "sessionId", "url", "tags"]
IDENTIFY_FIELDS = ["visitorId", "userId", "sessionId", "metadata", "traits"]


@st.composite
def shaped_bodies(draw) -> tuple[str, Any]:
    """Bodies close to valid, so that fuzzing reaches the validators behind the first shape check."""
    path = draw(st.sampled_from(["metrics", "orders", "identify"]))
    if path == "metrics":
        metric = st.dictionaries(st.sampled_from(METRIC_FIELDS), JSON, max_size=6).map(
            lambda d: {"name": "LCP", "value": 1.5, **d}
        )
        return path, {"metrics": draw(st.lists(metric | JSON, max_size=4)), "sentAt": draw(JSON)}
    if path == "orders":
        fields = draw(
            st.dictionaries(st.sampled_from(FIELDS + ["subtotal", "isRefund", "refundOf"]), JSON, max_size=5)
        )
        item = st.dictionaries(st.sampled_from(["productItemCode", "productId", "quantity", "price"]), JSON)
        items = draw(st.none() | st.lists(item, max_size=3))
        return path, {
            **order(draw(st.text(min_size=1, max_size=10))),
            **fields,
            **({"items": items} if items else {}),
        }
    fields = draw(st.dictionaries(st.sampled_from(IDENTIFY_FIELDS), JSON, max_size=4))
    return path, {"visitorId": "v-1", "userId": "u-1", **fields}


@FUZZ
@given(case=shaped_bodies())
def test_no_shaped_body_gives_a_5xx(client, app, shop, case):
    path, body = case
    response = client.post(f"/public/sites/{shop['siteKey']}/{path}", json=body, headers=ORIGIN)
    assert response.status_code < 500, response.text
    app.state.ingest.flush()


@pytest.mark.parametrize(
    "body",
    [
        b'{"events":[{"name":"page_view","visitorId":"v","sessionId":"s","metadata":{"a":'
        + b"[" * 15000
        + b"]" * 15000
        + b"}}]}",
        b'{"events":[{"name":"page_view","visitorId":"\xff\xfe","sessionId":"s"}]}',
    ],
    ids=["nested past the recursion limit", "invalid UTF-8"],
)
def test_unreadable_json_bodies_are_400_not_500(client, shop, body):
    response = client.post(
        f"/public/sites/{shop['siteKey']}/events/batch",
        content=body,
        headers={**ORIGIN, "Content-Type": "application/json"},
    )
    assert (response.status_code, error_code(response)) == (400, "MALFORMED_JSON")


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"[" * 10_000 + b"]" * 10_000, "it is nested too deeply"),
        (b'{"a":' * 10_000 + b"1" + b"}" * 10_000, "it is nested too deeply"),
        (b'{"name": "\xff"}', "it is not UTF-8 text"),
    ],
    ids=["a list 10,000 deep", "an object 10,000 deep", "invalid UTF-8"],
)
def test_a_body_no_decoder_can_read_is_answered_alike_by_ingestion_and_the_private_routes(
    client, owner, shop, body, reason
):
    json_body = {"Content-Type": "application/json"}
    answers = {
        "ingest": client.post(
            f"/public/sites/{shop['siteKey']}/events/batch", content=body, headers={**ORIGIN, **json_body}
        ),
        "private track": owner.post("/analytics/track", content=body, headers=json_body),
        # Bodies FastAPI parses (into a model) before the route runs.
        "login": client.post("/auth/login", content=body, headers=json_body),
        "create site": owner.post("/sites", content=body, headers=json_body),
    }
    expected = (400, "MALFORMED_JSON", f"Body is not valid JSON: {reason}")
    for route, answer in answers.items():
        error = answer.json()["error"]
        assert (answer.status_code, error["code"], error["message"]) == expected, (route, answer.text)


def test_deep_json_and_far_clock_skew_are_400_not_500(client, app, shop):
    deep: Any = []
    for _ in range(300):
        deep = [deep]
    nested = post_events(client, shop, [ev("d1", metadata={"deep": deep}), ev("d2")])
    assert nested.status_code == 200, nested.text
    assert nested.json()["accepted"] == 1
    assert [r["code"] for r in nested.json()["rejected"]] == ["INVALID_EVENT"]
    skewed = post_events(
        client, shop, [ev("d3", timestamp="9999-12-31T00:00:00Z")], sentAt="2000-01-01T00:00:00Z"
    )
    assert [r["code"] for r in skewed.json()["rejected"]] == ["TIMESTAMP_INVALID"]
    traits = client.post(
        f"/public/sites/{shop['siteKey']}/identify",
        json={"visitorId": "v", "userId": "u", "traits": {"deep": deep}},
        headers=ORIGIN,
    )
    assert (traits.status_code, error_code(traits)) == (400, "INVALID_EVENT")
    app.state.ingest.flush()
    assert query(app, "SELECT event_id FROM events") == [("d2",)]


def test_the_events_batch_is_served_by_the_hot_path_and_documented_by_fastapi(settings):
    app = create_app(settings)
    scope = {"type": "http", "method": "POST", "path": "/api/v1/public/sites/pk_1/events/batch"}
    assert app.hot_path.site_key(scope) == "pk_1"
    for path in ("/api/v1/public/sites/pk_1/events/batch/", "/api/v1/public/sites//events/batch",
                 "/api/v1/public/sites/a/b/events/batch", "/api/v1/public/sites/pk_1/orders"):  # fmt: skip
        assert app.hot_path.site_key({**scope, "path": path}) is None, path
    assert app.hot_path.site_key({**scope, "method": "GET"}) is None
    assert "post" in app.openapi()["paths"]["/api/v1/public/sites/{siteKey}/events/batch"]


def test_an_unexpected_failure_on_the_hot_path_is_a_500_in_the_envelope_and_stores_nothing(
    client, app, shop, monkeypatch
):
    async def broken(*_args):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(app.state.ingest, "accept_valid_events", broken)
    monkeypatch.setattr(app.state.ingest, "accept_prepared_events", broken)  # a batch worker's batch
    response = post_events(client, shop, [ev("x-1")])
    assert response.status_code == 500
    assert response.json() == {
        "error": {"code": "INTERNAL_ERROR", "message": "Internal server error", "details": None}
    }
    assert response.headers["x-request-id"]
    app.state.ingest.flush()
    assert query(app, "SELECT count(*) FROM events") == [(0,)]


def test_an_unexpected_failure_elsewhere_is_a_500_with_a_request_id_and_the_connection_kept(
    client, app, shop, monkeypatch, caplog
):
    async def broken(*_args):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(app.state.ingest, "store_new_order", broken)
    with caplog.at_level(logging.ERROR, logger="uvicorn.error"):
        response = post_order(client, shop, order("boom"))
        after = client.get(f"/public/sites/{shop['siteKey']}/tracking-config", headers=ORIGIN)
    assert (response.status_code, error_code(response)) == (500, "INTERNAL_ERROR")
    assert response.headers["x-request-id"]
    assert after.status_code == 200
    # Starlette's outermost handler re-raised to uvicorn, which dropped the keep-alive connection.
    assert not [r for r in caplog.records if "Exception in ASGI application" in r.getMessage()]


def test_batches_on_the_hot_path_are_counted_and_logged_under_the_route_template(client, server, shop):
    assert post_events(client, shop, [ev("m-1")]).status_code == 200
    text = httpx.get(f"{server.url}/metrics").text
    route = "/api/v1/public/sites/{siteKey}/events/batch"
    assert f'aisle_http_requests_total{{method="POST",route="{route}",status="200"}} 1.0' in text


def test_the_ingest_routes_document_their_bodies_and_every_error_they_answer(settings):
    spec = create_app(settings).openapi()
    paths, schemas = spec["paths"], spec["components"]["schemas"]
    for path in ("/events/batch", "/orders", "/metrics", "/identify"):
        answers = paths[f"/api/v1/public/sites/{{siteKey}}{path}"]["post"]["responses"]
        assert {"400", "404", "413", "429", "503"} <= set(answers), path
    assert "409" in paths["/api/v1/public/sites/{siteKey}/orders"]["post"]["responses"]
    for path in ("/track", "/track/batch", "/track/order"):
        assert {"400", "404", "413", "503"} <= set(paths[f"/api/v1/analytics{path}"]["post"]["responses"])
    assert schemas["MetricsBatch"]["properties"]["metrics"]["items"] == {
        "$ref": "#/components/schemas/MetricIn"
    }
    assert schemas["TrackOne"] == {
        "anyOf": [
            {"$ref": "#/components/schemas/TrackOneDoc"},
            {"$ref": "#/components/schemas/TrackNestedDoc"},
        ]
    }
    assert schemas["TrackNestedDoc"]["properties"]["event"] == {"$ref": "#/components/schemas/EventIn"}
    assert "duplicates" in schemas["BatchResult"]["properties"]["accepted"]["description"]
