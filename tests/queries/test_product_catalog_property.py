"""The catalog's reading of the lake against a plain-Python reference: however the sightings arrive (in
one read or many, late backfills included), each product holds the newest non-empty value of each
field (newest by event time; at one instant the later receipt, then the event or order id, then the
line's place in its order) and its first and last sighting."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.service import Ingest
from queries.product_catalog import sync_seen_products
from tests.factories import make_store_site
from tests.queries.test_product_catalog_sync import send
from warehouse.config_store import products
from warehouse.config_store.store import create_store_engine, migrate
from warehouse.engine import Engine

# Hundreds of generated shops against a reference: seconds to tens of seconds a test.
pytestmark = pytest.mark.slow

CODES = ["A", "B"]
NAMES = [None, "", "Lamp", "Lampe", "Lamp XL"]
PRICES = [None, "9.90", "12.50", "12.5", "30"]
PATHS = [None, "", "Kitchen", "Garden"]
PAGES = ["https://shop.example.com/a", "https://shop.example.com/b"]
IMAGES = [None, "https://cdn.example.com/1.jpg", "https://cdn.example.com/2.jpg"]
# Few instants, so sightings often share one.
CLOCKS = ["10:00:00", "10:00:00", "10:01:00", "11:00:00", "09:00:00"]

event = st.fixed_dictionaries(
    {
        "kind": st.just("event"),
        "name": st.sampled_from(["product_view", "add_to_cart"]),
        "code": st.sampled_from(CODES),
        "clock": st.sampled_from(CLOCKS),
        "product_name": st.sampled_from(NAMES),
        "price": st.sampled_from(PRICES),
        "category": st.sampled_from(PATHS),
        "page": st.sampled_from(PAGES),
        "image": st.sampled_from(IMAGES),
    }
)
line = st.fixed_dictionaries(
    {
        "code": st.sampled_from(CODES),
        "product_name": st.sampled_from(NAMES),
        "price": st.sampled_from(["9.90", "12.50", "30"]),
        "category": st.sampled_from(PATHS),
    }
)
order = st.fixed_dictionaries(
    {
        "kind": st.just("order"),
        "clock": st.sampled_from(CLOCKS),
        "currency": st.sampled_from(["EUR", "USD"]),
        "refund": st.sampled_from([False, False, True]),
        "lines": st.lists(line, min_size=1, max_size=3),
    }
)
# Reads: each batch arrives some minutes after the one before (a catalog read re-reads the last five
# minutes), and the catalog may or may not read after it.
batches = st.lists(
    st.tuples(
        st.lists(st.one_of(event, order), min_size=1, max_size=5), st.sampled_from([1, 3, 60]), st.booleans()
    ),
    min_size=1,
    max_size=4,
)


def wire(sighting: dict, ref: str) -> dict:
    at = f"2024-03-01T{sighting['clock']}Z"
    if sighting["kind"] == "event":
        metadata = {"productItemCode": sighting["code"], "url": sighting["page"]}
        for key, value in (("name", sighting["product_name"]), ("price", sighting["price"]),
                           ("categoryPath", sighting["category"]), ("image", sighting["image"])):  # fmt: skip
            if value is not None:
                metadata[key] = value
        return {"name": sighting["name"], "eventId": ref, "visitorId": "v", "sessionId": "s", "timestamp": at,
                "metadata": metadata}  # fmt: skip
    items = []
    for item in sighting["lines"]:
        quantity = -1 if sighting["refund"] else 1
        items.append({"productItemCode": item["code"], "quantity": quantity, "price": item["price"],
                      **({"name": item["product_name"]} if item["product_name"] is not None else {}),
                      **({"categoryPath": item["category"]} if item["category"] is not None else {})})  # fmt: skip
    total = sum(Decimal(i["price"]) for i in items)
    return {"orderId": ref, "visitorId": "v", "sessionId": "s", "timestamp": at, "currency": sighting["currency"],
            "total": str(-total if sighting["refund"] else total), "isRefund": sighting["refund"],
            "items": items}  # fmt: skip


def observations(sighting: dict, ref: str, received: datetime) -> list[dict]:
    """What one event or order says of each product, with the key that orders sightings."""
    ts = datetime.fromisoformat(f"2024-03-01T{sighting['clock']}+00:00")
    if sighting["kind"] == "event":
        return [{"code": sighting["code"], "key": (ts, received, ref, 0), "name": sighting["product_name"],
                 "price": (Decimal(sighting["price"]), "EUR") if sighting["price"] is not None else None,
                 "categories": sighting["category"], "url": sighting["page"], "image": sighting["image"]}]  # fmt: skip
    return [
        {"code": item["code"], "key": (ts, received, ref, place), "name": item["product_name"],
         "price": None if sighting["refund"] else (Decimal(item["price"]), sighting["currency"]),
         "categories": item["category"], "url": None, "image": None}
        for place, item in enumerate(sighting["lines"], start=1)
    ]  # fmt: skip


def newest(observed: list[dict], field: str):
    """The value of ``field`` in the last of ``observed`` (in key order) that has one."""
    values = [o[field] for o in observed if o[field]]
    return values[-1] if values else None


def reference(seen: list[dict]) -> dict[str, dict]:
    catalog = {}
    for code in sorted({o["code"] for o in seen}):
        mine = sorted((o for o in seen if o["code"] == code), key=lambda o: o["key"])
        price = newest(mine, "price")
        category = newest(mine, "categories")
        catalog[code] = {
            "name": newest(mine, "name"), "price": price[0] if price else None, "currency": price[1] if price else "EUR",
            "categories": [category] if category else [], "url": newest(mine, "url"),
            "image": newest(mine, "image"),
            "first_seen_at": mine[0]["key"][0], "last_seen_at": max(o["key"][0] for o in mine),
        }  # fmt: skip
    return catalog


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=batches)
def test_the_catalog_keeps_the_newest_value_of_each_field_however_sightings_arrive(tmp_path_factory, batches):
    root = tmp_path_factory.mktemp("catalog")
    ingest = Ingest(data_dir=root / "data", flush_interval_seconds=3600)
    engine = Engine(ingest.lake)
    store = create_store_engine(f"sqlite:///{root / 'store.db'}")
    migrate(store)
    try:
        with store.begin() as conn:
            site = make_store_site(conn)
        received = datetime.now(UTC) - timedelta(days=1)
        seen, number = [], 0
        for sightings, minutes_later, read in batches:
            received += timedelta(minutes=minutes_later)
            events, orders = [], []
            for sighting in sightings:
                number += 1
                # Ids whose text order differs from their arrival order.
                ref = f"{'e' if sighting['kind'] == 'event' else 'o'}{(number * 7) % 10}-{number}"
                (events if sighting["kind"] == "event" else orders).append(wire(sighting, ref))
                seen.extend(observations(sighting, ref, received))
            send(ingest, site, events, orders, received=received)
            if read:
                sync_seen_products(store, engine, site=site)
        sync_seen_products(store, engine, site=site)
        with store.connect() as conn:
            rows = {r["product_item_code"]: r for r in products.list(conn, site_id=site["id"]).rows}
        fields = ("name", "price", "currency", "categories", "url", "image", "first_seen_at", "last_seen_at")
        assert {code: {f: row[f] for f in fields} for code, row in rows.items()} == reference(seen)
    finally:
        engine.close()
        ingest.stop()
        store.dispose()
