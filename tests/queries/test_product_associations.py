"""Associations: the basket counts and rates equal a plain-Python reading of the definition on random
orders (lines by code, by a code's productId alone, or by a productId no code derives to), carts and
checkouts, for every source and mode."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from fractions import Fraction

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.validation import Context
from queries.products import ProductRange, association_rates, product_associations
from tests.queries.helpers import imported_retail_invoices, is_retail_sale
from warehouse.config_store.product_identity import product_id_for

DAY = date(2024, 5, 1)
START = datetime(2024, 5, 1, 8, tzinfo=UTC)
CODES = ["A", "B", "C", "D", "E"]
LOOSE = "0a0b0c0d-0000-4000-8000-0000000000ff"  # a productId no code derives to
VISITORS = ["v0", "v1", "v2", "v3"]
SESSIONS = ["s0", "s1"]


def at(minute: int) -> str:
    return (START + timedelta(minutes=minute)).isoformat()


order_strategy = st.fixed_dictionaries(
    {
        "visitor": st.sampled_from(VISITORS),
        "session": st.sampled_from(SESSIONS),
        "minute": st.integers(0, 12),
        # (code, by_id): a line naming the code, or only its productId; LOOSE lines name only LOOSE.
        "lines": st.lists(st.tuples(st.sampled_from([*CODES, LOOSE]), st.booleans()), min_size=1, max_size=4),
        "refund": st.sampled_from([False, False, False, True]),
    }
)
event_strategy = st.fixed_dictionaries(
    {
        "visitor": st.sampled_from(VISITORS),
        "session": st.sampled_from(SESSIONS),
        "minute": st.integers(0, 12),
        # A code: an add_to_cart; None: a purchase event (naming no sale, or one of the visitor's sales).
        "code": st.sampled_from([*CODES, None]),
        "names_sale": st.booleans(),
    }
)


def product_of(site_id: str, name: str) -> str:
    return name if name == LOOSE else str(product_id_for(site_id, name))


def reference_baskets(
    site_id: str, orders: list[dict], events: list[dict], source: str, mode: str
) -> tuple[list[set[str]], dict[str, str]]:
    """The baskets as sets of productIds, and the codes the baskets' lines name, by productId."""
    baskets: dict[object, set[str]] = defaultdict(set)
    codes: dict[str, str] = {}
    sales = [(i, o) for i, o in enumerate(orders) if not o["refund"]]
    if source == "purchase":
        for i, o in sales:
            key = {"cart": i, "session": (o["visitor"], o["session"]), "all": o["visitor"]}[mode]
            baskets[key] |= {product_of(site_id, name) for name, _ in o["lines"]}
            codes |= {
                product_of(site_id, name): name for name, by_id in o["lines"] if name != LOOSE and not by_id
            }
        return list(baskets.values()), codes
    checkouts: dict[tuple[str, str], list[int]] = defaultdict(list)
    for _, o in sales:
        checkouts[(o["visitor"], o["session"])].append(o["minute"])
    for e in events:
        if e["code"] is None and not (e["names_sale"] and e["sale"] is not None):
            checkouts[(e["visitor"], e["session"])].append(e["minute"])
    for e in events:
        if e["code"] is None:
            continue
        session = (e["visitor"], e["session"])
        cart = sum(1 for minute in checkouts[session] if minute < e["minute"])
        key = {"cart": (*session, cart), "session": session, "all": e["visitor"]}[mode]
        baskets[key].add(product_of(site_id, e["code"]))
        codes[product_of(site_id, e["code"])] = e["code"]
    return list(baskets.values()), codes


def reference(
    baskets: list[set[str]], product: str, code_of: Callable[[str], str | None] = lambda p: p
) -> tuple[int, int, list[tuple]]:
    """Counts and rows (code, together, |B|, support, confidence, lift, product) for ``product`` over
    baskets of products; rows by together, then lift, then code (products without one last, then by
    product)."""
    n = len(baskets)
    with_product = [b for b in baskets if product in b]
    rows = []
    for other in {c for b in with_product for c in b} - {product}:
        together = sum(1 for b in with_product if other in b)
        other_baskets = sum(1 for b in baskets if other in b)
        support = round(together / n, 6)
        confidence = round(together / len(with_product), 6)
        lift = round(together * n / (len(with_product) * other_baskets), 6)
        code = code_of(other)
        order = (-together, -Fraction(together, other_baskets), code is None, code or "", other)
        rows.append((order, (code, together, other_baskets, support, confidence, lift, other)))
    return n, len(with_product), [row for _, row in sorted(rows)]


def named(site_id: str, name: str, by_id: bool) -> dict[str, str]:
    """How an order line names its product: by code, or by productId alone."""
    if by_id or name == LOOSE:
        return {"productId": product_of(site_id, name)}
    return {"productItemCode": name}


def load(ingest, site_id: str, orders: list[dict], events: list[dict]) -> None:
    ctx = Context(site_id=site_id, site_currency="EUR", received_at=datetime.now(UTC), channel="server",
                  historical=True)  # fmt: skip
    wire_orders = [
        {"orderId": f"o{i}", "visitorId": o["visitor"], "sessionId": o["session"], "timestamp": at(o["minute"]),
         "total": "-1" if o["refund"] else "1", "isRefund": o["refund"],
         "items": [{**named(site_id, name, by_id), "quantity": 1, "price": "1"} for name, by_id in o["lines"]]}
        for i, o in enumerate(orders)
    ]  # fmt: skip
    wire_events = []
    for e in events:
        if e["code"] is None:
            metadata = {"orderId": f"o{e['sale']}"} if e["names_sale"] and e["sale"] is not None else {}
            wire_events.append({"name": "purchase", "visitorId": e["visitor"], "sessionId": e["session"],
                                "timestamp": at(e["minute"]), "metadata": metadata})  # fmt: skip
        else:
            wire_events.append({"name": "add_to_cart", "visitorId": e["visitor"], "sessionId": e["session"],
                                "timestamp": at(e["minute"]), "metadata": {"productItemCode": e["code"]}})  # fmt: skip
    if wire_orders:
        assert ingest.accept_orders_sync(wire_orders, ctx).rejected == []
    if wire_events:
        assert ingest.accept_events_sync(wire_events, ctx).rejected == []
    ingest.flush()


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    orders=st.lists(order_strategy, max_size=8),
    events=st.lists(event_strategy, max_size=14),
    product=st.sampled_from(CODES[:3]),
)
def test_associations_match_the_reference(lake, orders, events, product):
    ingest, engine = lake
    site_id = str(uuid.uuid4())
    # A purchase event that names a sale names one of its own visitor's sales (as a storefront would).
    for e in events:
        own = [i for i, o in enumerate(orders) if o["visitor"] == e["visitor"] and not o["refund"]]
        e["sale"] = own[0] if own else None
    load(ingest, site_id, orders, events)
    query = ProductRange(site_id=site_id, start_date=DAY, end_date=DAY)
    row = {"product_id": str(product_id_for(site_id, product)), "product_item_code": product, "name": None}
    for source in ("purchase", "cart"):
        for mode in ("cart", "session", "all"):
            got = product_associations(
                engine, query, product=row, source=source, mode=mode, limit=100, names={}
            )
            baskets, codes = reference_baskets(site_id, orders, events, source, mode)
            n, with_product, rows = reference(baskets, product_of(site_id, product), codes.get)
            assert (got.baskets, got.product_baskets, got.related_products) == (n, with_product, len(rows)), (
                source, mode
            )  # fmt: skip
            assert [(a.product_item_code, a.together, a.baskets_with_product, a.support, a.confidence, a.lift,
                     a.product_id) for a in got.associations] == rows, (source, mode)  # fmt: skip


def test_rates_by_hand_and_with_empty_denominators():
    # 10 baskets, A in 4, B in 5, both in 2: support 0.2, confidence 0.5, lift 0.5 / 0.5 = 1.
    assert association_rates(2, 4, 5, 10) == (0.2, 0.5, 1.0)
    assert association_rates(3, 3, 3, 9) == (0.333333, 1.0, 3.0)
    assert association_rates(0, 0, 0, 0) == (0.0, 0.0, 0.0)


def test_associations_on_real_invoices_match_a_reading_of_the_file(lake):
    """The first 3,000 lines of UCI Online Retail through `aisle import --preset online-retail`: baskets
    are the sale invoices (`is_retail_sale`)."""
    ingest, engine = lake
    site_id, invoices = imported_retail_invoices(ingest)
    baskets = [
        {line["StockCode"].strip() for line in lines if int(line["Quantity"]) > 0}
        for invoice, lines in invoices.items()
        if is_retail_sale(invoice, lines)
    ]
    counts = defaultdict(int)
    for basket in baskets:
        for code in basket:
            counts[code] += 1
    product = max(sorted(counts), key=counts.get)
    query = ProductRange(site_id=site_id, start_date=date(2010, 11, 30), end_date=date(2011, 12, 31))
    row = {"product_id": str(product_id_for(site_id, product)), "product_item_code": product, "name": None}
    got = product_associations(
        engine, query, product=row, source="purchase", mode="cart", limit=100, names={}
    )
    n, with_product, rows = reference(baskets, product)
    assert (got.baskets, got.product_baskets, got.related_products) == (n, with_product, len(rows))
    assert n > 100 and with_product > 10
    assert [
        (a.product_item_code, a.together, a.baskets_with_product, a.support, a.confidence, a.lift)
        for a in got.associations
    ] == [row[:6] for row in rows[:100]]
