"""Products seen in the lake reach the catalog: read forward by receipt time, merged idempotently."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from ingest.validation import Context
from queries.product_catalog import sync_seen_products
from tests.factories import make_store_site
from warehouse.config_store import products
from warehouse.config_store.store import create_store_engine, migrate


def send(ingest, site: dict, events: list[dict], orders: list[dict] = (), *, received: datetime) -> None:
    ctx = Context(site_id=site["id"], site_currency=site["currency"], received_at=received, channel="server",
                  historical=True)  # fmt: skip
    if events:
        assert ingest.accept_events_sync(events, ctx).rejected == []
    if orders:
        assert ingest.accept_orders_sync(list(orders), ctx).rejected == []
    ingest.flush()


def view(code: str, clock: str, **metadata) -> dict:
    return {"name": "product_view", "visitorId": "v", "sessionId": "s", "timestamp": f"2024-03-01T{clock}Z",
            "url": f"https://shop.example.com/p/{code}", "metadata": {"productItemCode": code, **metadata}}  # fmt: skip


@pytest.fixture
def catalog(lake, tmp_path):
    """(ingest, engine, store, site): a lake and a config store with one site."""
    ingest, engine = lake
    store = create_store_engine(f"sqlite:///{tmp_path / 'store.db'}")
    migrate(store)
    with store.begin() as conn:
        site = make_store_site(conn)
    yield ingest, engine, store, site
    store.dispose()


GIFT_WRAP = "8c0d4f39-0000-4000-8000-000000000009"


def test_each_read_takes_what_arrived_since_the_last(catalog):
    ingest, engine, store, site = catalog
    now = datetime.now(UTC)
    send(ingest, site, [view("P1", "10:00:00", name="Lamp", price="19.90", image="https://cdn.example.com/1.jpg")],
         received=now - timedelta(hours=2))  # fmt: skip
    assert sync_seen_products(store, engine, site=site) == 1
    assert sync_seen_products(store, engine, site=site) == 0
    order = {"orderId": "o1", "visitorId": "v", "sessionId": "s", "timestamp": "2024-03-01T11:00:00Z",
             "currency": "USD", "total": "42", "items": [{"productItemCode": "P1", "quantity": 2, "price": "21"},
                                                         {"productId": GIFT_WRAP, "quantity": 1, "price": "0",
                                                          "name": "Gift wrap"}]}  # fmt: skip
    send(ingest, site, [view("P2", "10:30:00")], [order], received=now)
    assert sync_seen_products(store, engine, site=site) == 1
    with store.connect() as conn:
        rows = {r["product_item_code"]: r for r in products.list(conn, site_id=site["id"]).rows}
        until = products.received_until(conn, site_id=site["id"])
    # The gift wrap line names no code: the catalog names products by code (a productId is derived from one).
    assert sorted(rows) == ["P1", "P2"]
    # The order is the newest sighting of P1: its unit price and currency; the name stays the event's.
    p1 = rows["P1"]
    assert (p1["name"], p1["price"], p1["currency"], p1["url"], p1["image"]) == (
        "Lamp", Decimal(21), "USD", "https://shop.example.com/p/P1", "https://cdn.example.com/1.jpg"
    )  # fmt: skip
    assert (p1["first_seen_at"], p1["last_seen_at"]) == (
        datetime(2024, 3, 1, 10, tzinfo=UTC), datetime(2024, 3, 1, 11, tzinfo=UTC)
    )  # fmt: skip
    assert (rows["P2"]["name"], rows["P2"]["price"], rows["P2"]["currency"]) == (None, None, "EUR")
    assert abs(until - now) < timedelta(milliseconds=1)


def test_a_product_only_ever_refunded_is_in_the_catalog_without_a_price(catalog):
    ingest, engine, store, site = catalog
    refund = {"orderId": "c1", "isRefund": True, "visitorId": "v", "sessionId": "s",
              "timestamp": "2024-03-01T12:00:00Z", "total": "-30",
              "items": [{"productItemCode": "P9", "quantity": -2, "price": "15", "name": "Mug",
                         "categoryPath": "Home > Kitchen"}]}  # fmt: skip
    send(ingest, site, [], [refund], received=datetime.now(UTC))
    assert sync_seen_products(store, engine, site=site) == 1
    with store.connect() as conn:
        (p9,) = products.list(conn, site_id=site["id"]).rows
    assert (p9["product_item_code"], p9["name"], p9["price"], p9["first_seen_at"]) == (
        "P9", "Mug", None, datetime(2024, 3, 1, 12, tzinfo=UTC)
    )  # fmt: skip


def test_a_backfill_read_with_newer_nameless_sightings_keeps_the_newest_name(catalog):
    """The catalog holds "Lamp" (seen at 10:00). One read then brings a live view of P1 without a name
    (12:00) and a backfilled order naming it "Old lamp" (09:00): the name seen last is still "Lamp"."""
    ingest, engine, store, site = catalog
    now = datetime.now(UTC)
    send(ingest, site, [view("P1", "10:00:00", name="Lamp")], received=now - timedelta(hours=2))
    send(ingest, site, [view("P2", "10:00:00")], received=now - timedelta(hours=1))  # read past "Lamp"
    sync_seen_products(store, engine, site=site)
    backfill = {"orderId": "o1", "visitorId": "v", "sessionId": "s", "timestamp": "2024-03-01T09:00:00Z",
                "total": "5", "items": [{"productItemCode": "P1", "quantity": 1, "price": "5", "name": "Old lamp",
                                         "categoryPath": "Lights"}]}  # fmt: skip
    send(ingest, site, [view("P1", "12:00:00")], [backfill], received=now)
    sync_seen_products(store, engine, site=site)
    with store.connect() as conn:
        p1 = next(r for r in products.list(conn, site_id=site["id"]).rows if r["product_item_code"] == "P1")
    # The order's price and category are the only ones seen: they fill the empty fields.
    assert (p1["name"], p1["price"], p1["categories"], p1["last_seen_at"]) == (
        "Lamp", Decimal(5), ["Lights"], datetime(2024, 3, 1, 12, tzinfo=UTC)
    )  # fmt: skip
