"""The demo traffic generator and `load_demo`: deterministic, valid for ingest, shaped like a shop."""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import duckdb
import orjson
import pytest

from aisle.demo import DEMO_TRAFFIC_SITES, load_demo
from aisle.demo_data import CATEGORY_TREE, generate_site_traffic, make_catalog
from ingest.normalise import Context, event_row, order_row
from ingest.service import Ingest
from warehouse.catalog import sites, users
from warehouse.catalog.store import create_store_engine, migrate

END = date(2024, 6, 3)
DAYS = 56
VISITORS = 1000
CURRENCIES = ("EUR", "USD", "JPY")


def traffic(currency: str, *, seed: int = 7, visitors: int = VISITORS) -> list[dict]:
    return list(generate_site_traffic(seed=seed, currency=currency, end=END, days=DAYS, visitors=visitors))


@pytest.fixture(scope="module")
def generated() -> dict[str, list[dict]]:
    return {currency: traffic(currency) for currency in CURRENCIES}


def events_of(items: list[dict]) -> list[dict]:
    return [event for item in items if item["kind"] == "events" for event in item["events"]]


def orders_of(items: list[dict]) -> list[dict]:
    return [item["order"] for item in items if item["kind"] == "order"]


def context(currency: str) -> Context:
    received = datetime(END.year, END.month, END.day, tzinfo=UTC) + timedelta(hours=1)
    return Context(
        site_id="site", site_currency=currency, received_at=received, channel="import", historical=True
    )


def parse(timestamp: str) -> datetime:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00"))


# --- determinism ---------------------------------------------------------------------------------------


def test_same_seed_and_arguments_give_byte_identical_output(generated):
    assert orjson.dumps(traffic("EUR")) == orjson.dumps(generated["EUR"])
    assert orjson.dumps(traffic("EUR", seed=8)) != orjson.dumps(generated["EUR"])


def test_the_catalog_is_deterministic_and_spans_the_category_tree():
    one = make_catalog(random.Random(3), products=60)
    assert one == make_catalog(random.Random(3), products=60)
    assert len({p.product_item_code for p in one}) == 60
    assert one[41].product_item_code == "SKU-00042"
    assert {p.category_path for p in one} == {leaf.path for leaf in CATEGORY_TREE}
    assert len({path.split(" > ")[0] for path in (p.category_path for p in one)}) == 4
    assert all(p.price > 0 and p.price.as_tuple().exponent == -2 for p in one)


def test_jpy_prices_have_no_decimals(generated):
    yen = make_catalog(random.Random(3), products=60, currency="JPY")
    euro = make_catalog(random.Random(3), products=60, currency="EUR")
    assert [p.product_item_code for p in yen] == [p.product_item_code for p in euro]
    assert all(p.price.as_tuple().exponent >= 0 for p in yen)
    assert all(y.price > e.price * 100 for y, e in zip(yen, euro, strict=True))

    jpy_orders = [o for items in generated.values() for o in orders_of(items) if o["currency"] == "JPY"]
    assert jpy_orders
    for order in jpy_orders:
        amounts = [order[k] for k in ("total", "subtotal", "tax", "shipping", "discount")]
        assert all("." not in amount for amount in amounts + [item["price"] for item in order["items"]])
    prices = [e["metadata"]["price"] for e in events_of(generated["JPY"]) if e["name"] == "product_view"]
    assert prices and all("." not in price for price in prices)


# --- valid for ingest ----------------------------------------------------------------------------------


@pytest.mark.parametrize("currency", CURRENCIES)
def test_every_event_and_order_passes_ingest_validation(generated, currency):
    ctx = context(currency)
    items = generated[currency]
    rows = [event_row(event, ctx) for event in events_of(items)]  # raises Rejected on any bad event
    assert len({row["event_id"] for row in rows}) == len(rows)
    orders = [order_row(order, ctx) for order in orders_of(items)]
    assert len({row["order_id"] for row in orders}) == len(orders)
    start = datetime(END.year, END.month, END.day, tzinfo=UTC) - timedelta(days=DAYS)
    low, high = int(start.timestamp() * 1e6), int(ctx.received_at.timestamp() * 1e6) - 3600 * 10**6
    assert all(low <= row["ts"] <= high for row in rows + orders)
    product_rows = [r for r in rows if r["name"] == "product_view"]
    assert all(r["product_item_code"].startswith("SKU-") for r in product_rows)
    assert all(" > " in r["category_path"] for r in rows if r["name"] == "category_view")


def test_items_come_in_session_order_with_each_order_after_its_session(generated):
    items = generated["EUR"]
    starts = [parse(item["events"][0]["timestamp"]) for item in items if item["kind"] == "events"]
    assert starts == sorted(starts)
    for before, item in zip(items, items[1:], strict=False):
        if item["kind"] == "order":
            assert before["kind"] == "events"
            purchase = [e for e in before["events"] if e["name"] == "purchase"]
            assert purchase[0]["entityId"] == item["order"]["orderId"]
            assert purchase[0]["sessionId"] == item["order"]["sessionId"]
            assert purchase[0]["value"] == item["order"]["total"]


# --- the shape of the traffic --------------------------------------------------------------------------


@pytest.mark.parametrize("currency", CURRENCIES)
def test_the_funnel_drops_off_at_every_step(generated, currency):
    names = Counter(event["name"] for event in events_of(generated[currency]))
    funnel = [names[n] for n in ("page_view", "product_view", "add_to_cart", "checkout_begin", "purchase")]
    assert all(a > b > 0 for a, b in zip(funnel, funnel[1:], strict=False)), funnel
    assert names["category_view"] > 0 and names["checkout_progress"] > 0
    assert names["purchase"] == len(orders_of(generated[currency]))
    assert names["search_query"] > 0 and names["search_results"] > 0 and names["search_zero_results"] > 0
    searches = [e for e in events_of(generated[currency]) if e["name"].startswith("search_")]
    assert all(e["metadata"]["query"] for e in searches)


def test_some_visitors_identify_and_carry_their_user_id_afterwards(generated):
    events = events_of(generated["USD"])
    by_visitor: dict[str, list[dict]] = defaultdict(list)
    for event in events:
        by_visitor[event["visitorId"]].append(event)
    identified = {v for v, evs in by_visitor.items() if any("userId" in e for e in evs)}
    assert 0.2 < len(identified) / len(by_visitor) < 0.4
    for visitor in identified:
        history = sorted(by_visitor[visitor], key=lambda e: (e["timestamp"], e["eventId"]))
        first = next(i for i, e in enumerate(history) if "userId" in e)
        assert history[first]["name"] == "identify"
        assert {e.get("userId") for e in history[first:]} == {history[first]["userId"]}
    orders = orders_of(generated["USD"])
    assert any("userId" in o for o in orders) and any("userId" not in o for o in orders)


def test_visitors_return_over_weeks_and_retention_decays(generated):
    sessions = [item["events"] for item in generated["EUR"] if item["kind"] == "events"]
    start = END - timedelta(days=DAYS)
    weeks: dict[str, set[int]] = defaultdict(set)
    for events in sessions:
        weeks[events[0]["visitorId"]].add((parse(events[0]["timestamp"]).date() - start).days // 7)
    assert len(weeks) == VISITORS
    assert len(sessions) > 1.5 * VISITORS
    assert sum(len(w) >= 3 for w in weeks.values()) > 0.03 * VISITORS
    # Of the visitors first seen in week 0, fewer come back in each later week.
    cohort = [w for w in weeks.values() if min(w) == 0]
    back = [sum(week in w for w in cohort) for week in range(1, 8)]
    assert len(cohort) > back[0] > back[3] > back[6]


def test_some_orders_are_in_another_currency_and_their_totals_add_up(generated):
    others = 0
    for currency, items in generated.items():
        orders = orders_of(items)
        assert len(orders) > 20
        others += sum(o["currency"] != currency for o in orders)
        assert {o["currency"] for o in orders} <= set(CURRENCIES)
        for order in orders:
            money = {
                k: Decimal(order.get(k, "0")) for k in ("total", "subtotal", "tax", "shipping", "discount")
            }
            assert money["total"] == money["subtotal"] + money["tax"] + money["shipping"] - money["discount"]
            lines = sum(Decimal(item["price"]) * item["quantity"] for item in order["items"])
            assert money["subtotal"] == lines
            assert all(
                item["productItemCode"].startswith("SKU-") and item["categoryPath"] for item in order["items"]
            )
            places = 0 if order["currency"] == "JPY" else 2
            assert all(-Decimal(v).as_tuple().exponent == places for v in money.values())
    # About 5 % of orders are paid in another of EUR, USD and JPY than the site's.
    total = sum(len(orders_of(items)) for items in generated.values())
    assert 0.01 * total < others < 0.12 * total


# --- load_demo ---------------------------------------------------------------------------------------------


def lake_counts(data_dir) -> dict[str, dict[str, int]]:
    counts = {}
    with duckdb.connect() as db:
        for table in ("events", "orders"):
            pattern = str(data_dir / "lake" / table / "*" / "*" / "*.parquet")
            rows = db.sql(
                f"select site_id, count(*) from read_parquet('{pattern}', hive_partitioning=true) group by 1"
            ).fetchall()
            counts[table] = dict(rows)
    return counts


@pytest.fixture
def demo_store(tmp_path):
    store = create_store_engine(f"sqlite:///{tmp_path / 'aisle.db'}")
    migrate(store)
    yield store
    store.dispose()


def test_load_demo_loads_traffic_once_per_site(tmp_path, demo_store):
    data_dir = tmp_path / "data"
    first = load_demo(demo_store, data_dir=data_dir, visitors=60, days=21, end=END)
    after_first = lake_counts(data_dir)
    second = load_demo(demo_store, data_dir=data_dir, visitors=60, days=21, end=END)
    assert lake_counts(data_dir) == after_first

    assert "loaded" not in second and "warnings" not in second
    assert {k: v for k, v in first.items() if k != "loaded"} == second
    assert [s["currency"] for s in first["sites"]] == ["EUR", "USD", "JPY"]
    assert [s["domain"] for s in first["sites"]] == [s.domain for s in DEMO_TRAFFIC_SITES]
    for site in first["sites"]:
        loaded = first["loaded"][site["name"]]
        assert loaded["eventsRejected"] == 0 and loaded["ordersRejected"] == 0
        assert after_first["events"][site["siteId"]] == loaded["eventsAccepted"] > 0
        assert after_first["orders"][site["siteId"]] == loaded["orders"] > 0
    assert first["siteId"] not in after_first["events"]

    with demo_store.connect() as conn:
        user = users.get_by_email(conn, email=first["email"])
        org_sites = sites.list_for_organization(conn, organization_id=user["organization_id"])
    assert len(org_sites) == 4
    assert all(s["is_verified"] for s in org_sites)
    assert {s["currency"] for s in org_sites} == {"GBP", "EUR", "USD", "JPY"}


def test_load_demo_leaves_the_traffic_sites_for_later_while_another_process_holds_the_data_dir(
    tmp_path, demo_store
):
    data_dir = tmp_path / "data"
    holder = Ingest(data_dir=data_dir)
    try:
        busy = load_demo(demo_store, data_dir=data_dir, visitors=20, days=7, end=END)
    finally:
        holder.stop()
    assert busy["sites"] == [] and "loaded" not in busy
    assert "aisle demo" in busy["warnings"][0]

    free = load_demo(demo_store, data_dir=data_dir, visitors=20, days=7, end=END)
    assert free["siteId"] == busy["siteId"]
    assert len(free["sites"]) == 3 and set(free["loaded"]) == {s.name for s in DEMO_TRAFFIC_SITES}
