"""Properties: product analytics (one product's overview and dwell time, top products per currency,
tracking status) over random small shops equal a plain-Python reading of their documented definitions
(the docstrings of queries/products.py, the OpenAPI descriptions of api/analytics/products/ and
docs/decisions.md), never of the SQL."""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ingest.service import Ingest
from queries.products import (
    PRODUCT_EVENTS,
    CatalogCounts,
    ProductRange,
    product_dwell,
    product_overview,
    top_products,
    tracking_status,
)
from tests.queries.helpers import SITE, catalog_row, journeys_for, pid
from warehouse.engine import Engine

# Hundreds of generated shops against a reference: seconds to tens of seconds a test.
pytestmark = pytest.mark.slow

TIMEZONE = "Asia/Kolkata"  # +05:30: local days are not UTC days
ZONE = ZoneInfo(TIMEZONE)
QUERY = ProductRange(
    site_id=SITE, start_date=date(2024, 3, 10), end_date=date(2024, 3, 11), timezone=TIMEZONE, currency="EUR"
)
RANGE_START = datetime(2024, 3, 10, tzinfo=ZONE)
RANGE_END = datetime(2024, 3, 12, tzinfo=ZONE)
# Instants on a 4-hour grid, so ties happen: slot 2 is the range's first instant, slot 14 the first
# instant after it; slots 0-1 and 14-16 are outside.
STEP = timedelta(hours=4)
ORIGIN = RANGE_START - 2 * STEP
SLOTS = st.integers(0, 16)
VISITORS = ["v0", "v1", "v2", "v3"]
MINOR_UNITS = {"EUR": 2, "JPY": 0}
MAX_DWELL_SECONDS = 1800


def at(slot: int) -> datetime:
    return (ORIGIN + slot * STEP).astimezone(UTC)


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


# --- what the shop sends -----------------------------------------------------------------------------

# Codes as sent; the lake trims them (" A " is A). E is only ever seen in events.
EVENT_CODES = ["A", "A", " A ", "B", "B", "C", "E"]
# A product no code names: order lines can still name it by its productId.
LOOSE = "0a0b0c0d-0000-4000-8000-0000000000ff"
# Order lines as sent, and the product each is (its id; the code it carries, if any).
LINE_KINDS: list[tuple[dict, str, str | None]] = [
    ({"productItemCode": "A"}, pid("A"), "A"),
    ({"productItemCode": " C "}, pid("C"), "C"),
    ({"productItemCode": "B", "productId": LOOSE}, pid("B"), "B"),  # the code names the line
    ({"productId": pid("A")}, pid("A"), None),  # only A's productId: A
    ({"productId": pid("B").upper()}, pid("B"), None),  # any case
    ({"productItemCode": "", "productId": pid("C")}, pid("C"), None),
    ({"productId": LOOSE}, LOOSE, None),
]
# Views, add-to-carts and dwell times weigh more; a page view may name a product too (no product event).
EVENT_NAMES = [*PRODUCT_EVENTS, "product_view", "product_view", "add_to_cart", "product_dwell_time",
               "product_dwell_time", "page_view"]  # fmt: skip

# Dwell durations: seconds on a quarter-second grid, milliseconds on a 250 ms grid; numbers, numbers in
# strings, or garbage. On that grid sums are exact in binary and interpolated quantiles have at most 3
# decimals or are binary fractions too, so the report's floats round to 3 decimals as the reference's
# exact figures do. Mostly under a minute, as people read product pages; now and then long, idle or
# negative.
QUARTERS = st.one_of(st.integers(0, 240), st.integers(0, 800), st.integers(-20, 8000))
SECONDS = st.one_of(QUARTERS.map(lambda q: q / 4), st.sampled_from([0, 1800, 1800.25, -0.25]))
MILLISECONDS = st.one_of(QUARTERS.map(lambda q: q * 250), st.sampled_from([0, 1_800_000, 1_800_250]))


def _written(value: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(value, value, value.map(str), st.just("soon"))


DWELL = st.dictionaries(
    st.sampled_from(["dwellTimeSeconds", "dwellSeconds", "durationSeconds", "dwellTimeMs", "durationMs"]),
    st.just(None),
    max_size=2,
).flatmap(
    lambda keys: st.fixed_dictionaries(
        {key: _written(MILLISECONDS if key.endswith("Ms") else SECONDS) for key in keys}
    )
)
DETAILS = st.fixed_dictionaries(
    {},
    optional={
        "name": st.sampled_from(["Apple", ""]),
        "productName": st.sampled_from(["Apfel", ""]),
        "price": st.sampled_from(["12.50", 7, "n/a"]),
        "categoryPath": st.sampled_from(["Home > Kitchen", ""]),
    },
)
event_strategy = st.fixed_dictionaries(
    {
        "visitor": st.sampled_from(VISITORS),
        "slot": SLOTS,
        "name": st.sampled_from(EVENT_NAMES),
        "code": st.sampled_from(EVENT_CODES),
        "details": DETAILS,
        "dwell": DWELL,
    }
)
line_strategy = st.tuples(st.integers(0, len(LINE_KINDS) - 1), st.integers(0, 3), st.integers(0, 3000))
order_strategy = st.fixed_dictionaries(
    {
        "visitor": st.sampled_from(VISITORS),
        "slot": SLOTS,
        "currency": st.sampled_from(sorted(MINOR_UNITS)),
        "refund": st.sampled_from([False, False, False, True]),
        "lines": st.lists(line_strategy, min_size=1, max_size=4),
    }
)
# Some visitors are linked to a user (v0 and v1 may be one person on two devices), before or after
# their events.
links_strategy = st.dictionaries(st.sampled_from(VISITORS), st.tuples(st.sampled_from(["u0", "u1"]), SLOTS))


def build_shop(events: list[dict], orders: list[dict], links: dict) -> dict:
    """The lake's steps per visitor, and the same facts as the reference reads them."""
    steps: dict[str, list[dict]] = defaultdict(list)
    for visitor, (user, slot) in links.items():
        steps[visitor].append({"event": "identify", "at": iso(at(slot)), "userId": user})
    facts = {"events": [], "orders": [], "person": {v: links[v][0] if v in links else v for v in VISITORS}}
    for e in events:
        metadata = {"productItemCode": e["code"], **e["details"]}
        if e["name"] == "product_dwell_time":
            metadata |= e["dwell"]
        steps[e["visitor"]].append({"event": e["name"], "at": iso(at(e["slot"])), "metadata": metadata})
        facts["events"].append({**e, "at": at(e["slot"]), "code": e["code"].strip(), "metadata": metadata})
    for n, o in enumerate(orders):
        exponent = MINOR_UNITS[o["currency"]]
        lines, items = [], []
        for kind, quantity, minor in o["lines"]:
            wire, product_id, code = LINE_KINDS[kind]
            quantity = -quantity if o["refund"] else quantity
            price = Decimal(minor).scaleb(-exponent)
            items.append({**wire, "quantity": quantity, "price": str(price)})
            lines.append({"product_id": product_id, "code": code, "quantity": quantity, "price": price})
        total = sum((line["quantity"] * line["price"] for line in lines), Decimal(0))
        if o["refund"]:
            total = -abs(total) or Decimal(-1)
        steps[o["visitor"]].append({"order": f"o{n}", "at": iso(at(o["slot"])), "currency": o["currency"],
                                    "total": str(total), "isRefund": o["refund"],
                                    "items": items})  # fmt: skip
        facts["orders"].append({**o, "order_id": f"o{n}", "at": at(o["slot"]), "lines": lines})
    facts["steps"] = dict(steps)
    return facts


# --- the reference -------------------------------------------------------------------------------------


def in_range(fact: dict) -> bool:
    return RANGE_START <= fact["at"] < RANGE_END


def product_events(shop: dict, product_id: str | None = None) -> list[dict]:
    """Product events in the range (of one product: the product whose id derives from its code)."""
    return [
        e for e in shop["events"]
        if in_range(e) and e["name"] in PRODUCT_EVENTS
        and (product_id is None or pid(e["code"]) == product_id)
    ]  # fmt: skip


def sales(shop: dict, currency: str | None = None) -> list[dict]:
    """Orders in the range that are not refunds (in one currency)."""
    return [
        o for o in shop["orders"]
        if in_range(o) and not o["refund"] and (currency is None or o["currency"] == currency)
    ]  # fmt: skip


def sale_lines(shop: dict, product_id: str | None = None, currency: str | None = None) -> list[tuple]:
    """The lines of sales in the range that bought something (a line of quantity 0 bought nothing)."""
    return [
        (o, line) for o in sales(shop, currency) for line in o["lines"]
        if line["quantity"] > 0 and (product_id is None or line["product_id"] == product_id)
    ]  # fmt: skip


def money(amount: Decimal, currency: str) -> str:
    return str(amount.quantize(Decimal(1).scaleb(-MINOR_UNITS[currency])))


def rate(part: int, whole: int) -> float:
    return round(part / whole, 6) if whole else 0.0


def reference_overview(shop: dict, product_id: str) -> dict:
    person = shop["person"]
    events = product_events(shop, product_id)
    viewers = {person[e["visitor"]] for e in events if e["name"] == "product_view"}
    carters = {person[e["visitor"]] for e in events if e["name"] == "add_to_cart"}
    lines = sale_lines(shop, product_id)
    buyers = {person[o["visitor"]] for o, _ in lines}
    per_currency: dict[str, dict] = {}
    for o, line in lines:
        row = per_currency.setdefault(o["currency"], {"revenue": Decimal(0), "orders": set(), "units": 0})
        row["revenue"] += line["quantity"] * line["price"]
        row["orders"].add(o["order_id"])
        row["units"] += line["quantity"]
    revenue = [
        {"currency": c, "revenue": money(r["revenue"], c), "orders": len(r["orders"]), "units": r["units"]}
        for c, r in sorted(per_currency.items())
    ]
    if len(revenue) == 1:
        card = {"amount": revenue[0]["revenue"], "currency": revenue[0]["currency"], "mixed": False}
    elif not revenue:
        card = {
            "amount": money(Decimal(0), "EUR"),
            "currency": "EUR",
            "mixed": False,
        }  # the product's currency
    else:
        card = {"amount": None, "currency": None, "mixed": True}
    return {
        "views": sum(1 for e in events if e["name"] == "product_view"),
        "unique_viewers": len(viewers),
        "add_to_carts": sum(1 for e in events if e["name"] == "add_to_cart"),
        "add_to_cart_people": len(carters),
        "purchases": len({o["order_id"] for o, _ in lines}),
        "units_sold": sum(line["quantity"] for _, line in lines),
        "buyers": len(buyers),
        "people": len({person[e["visitor"]] for e in events} | buyers),
        "view_to_cart_rate": rate(len(viewers & carters), len(viewers)),
        "conversion_rate": rate(len(viewers & buyers), len(viewers)),
        "revenue_by_currency": revenue,
        "revenue": card,
    }


def number(value: object) -> float | None:
    """A JSON number, or a string holding one; None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(Decimal(value))
        except InvalidOperation:
            return None
    return None


def dwell_seconds(metadata: dict) -> float | None:
    """The first of dwellTimeSeconds, dwellSeconds, durationSeconds (seconds), dwellTimeMs, durationMs
    (milliseconds) that holds a number."""
    for key, scale in (("dwellTimeSeconds", 1), ("dwellSeconds", 1), ("durationSeconds", 1),
                       ("dwellTimeMs", 1000), ("durationMs", 1000)):  # fmt: skip
        value = number(metadata.get(key))
        if value is not None:
            return value / scale
    return None


def quantile(values: list[float], q: float) -> Fraction:
    """The continuous quantile: linear interpolation between the closest ranks, at (n - 1)·q."""
    ordered = sorted(Fraction(v) for v in values)
    position = (len(ordered) - 1) * Fraction(q).limit_denominator(100)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (position - low) * (ordered[high] - ordered[low])


def three(value: Fraction | float | None) -> float | None:
    return None if value is None else round(float(value), 3)


def reference_dwell(shop: dict, product_id: str) -> dict:
    events = [e for e in product_events(shop, product_id) if e["name"] == "product_dwell_time"]
    seconds = [(e, dwell_seconds(e["metadata"])) for e in events]
    measured = [(e, s) for e, s in seconds if s is not None and 0 <= s <= MAX_DWELL_SECONDS]
    values = [s for _, s in measured]
    buckets = [(0, 5), (5, 15), (15, 30), (30, 60), (60, 180), (180, None)]
    by_day: dict[date, list[float]] = defaultdict(list)
    for e, s in measured:
        by_day[e["at"].astimezone(ZONE).date()].append(s)
    return {
        "events": len(events),
        "measured": len(measured),
        "without_duration": sum(1 for _, s in seconds if s is None),
        "out_of_range": sum(1 for _, s in seconds if s is not None and not 0 <= s <= MAX_DWELL_SECONDS),
        "people": len({shop["person"][e["visitor"]] for e, _ in measured}),
        "total_seconds": three(sum(Fraction(v) for v in values)),
        "avg_seconds": three(Fraction(sum(Fraction(v) for v in values), len(values))) if values else None,
        "median_seconds": three(quantile(values, 0.5)) if values else None,
        "p75_seconds": three(quantile(values, 0.75)) if values else None,
        "p90_seconds": three(quantile(values, 0.9)) if values else None,
        "max_seconds": three(max(values)) if values else None,
        "distribution": [
            sum(1 for v in values if low <= v and (high is None or v < high)) for low, high in buckets
        ],
        "daily": [
            (
                day,
                len(day_values),
                three(Fraction(sum(Fraction(v) for v in day_values), len(day_values))),
                three(quantile(day_values, 0.5)),
            )
            for day, day_values in sorted(by_day.items())
        ],  # fmt: skip
    }


def reference_top(shop: dict, sort_by: str, limit: int, currency: str | None) -> list[tuple]:
    """Per currency, the products of its sale lines ranked by `sort_by` (ties by code, products known
    only by their productId last, then by productId), at most `limit`; views and add-to-carts of the
    product in the range ride along, and its code (from its lines or those events) when one is known."""
    activity = [e for e in product_events(shop) if e["name"] in ("product_view", "add_to_cart")]
    codes = {pid(e["code"]): e["code"] for e in activity}
    rows: dict[tuple[str, str], dict] = {}
    for o, line in sale_lines(shop, currency=currency):
        if line["code"] is not None:
            codes[line["product_id"]] = line["code"]
        row = rows.setdefault(
            (o["currency"], line["product_id"]), {"revenue": Decimal(0), "orders": set(), "units": 0}
        )
        row["revenue"] += line["quantity"] * line["price"]
        row["orders"].add(o["order_id"])
        row["units"] += line["quantity"]
    out = []
    for c in sorted({c for c, _ in rows}):
        products = [(p, r) for (rc, p), r in rows.items() if rc == c]
        key = {
            "revenue": lambda r: r["revenue"],
            "units": lambda r: r["units"],
            "orders": lambda r: len(r["orders"]),
        }
        products.sort(
            key=lambda pr: (-key[sort_by](pr[1]), codes.get(pr[0]) is None, codes.get(pr[0]) or "", pr[0])
        )
        for rank, (p, r) in enumerate(products[:limit], start=1):
            views = sum(1 for e in activity if e["name"] == "product_view" and pid(e["code"]) == p)
            carts = sum(1 for e in activity if e["name"] == "add_to_cart" and pid(e["code"]) == p)
            out.append(
                (rank, p, codes.get(p), c, money(r["revenue"], c), len(r["orders"]), r["units"], views, carts)
            )
    return out


def carried(value: object) -> bool:
    """A name or category an event carries: a non-empty string (an empty one names nothing)."""
    return isinstance(value, str) and value != ""


def reference_tracking(shop: dict) -> dict:
    events = product_events(shop)
    per_name = []
    for name in PRODUCT_EVENTS:
        these = [e for e in events if e["name"] == name]
        per_name.append((
            name, len(these), len({e["code"] for e in these}), max((e["at"] for e in these), default=None),
            sum(1 for e in these
                if carried(e["metadata"].get("name")) or carried(e["metadata"].get("productName"))),
            sum(1 for e in these if number(e["metadata"].get("price")) is not None),
            sum(1 for e in these if carried(e["metadata"].get("categoryPath"))),
        ))  # fmt: skip
    lines = sale_lines(shop)
    sold = {line["product_id"] for _, line in lines}
    tracked = {pid(e["code"]) for e in events}
    counts = {name: n for name, n, *_ in per_name}
    if counts["product_view"] and counts["add_to_cart"]:
        status = "ok"
    elif events:
        status = "partial"
    else:
        status = "not_tracking"
    named = sum(row[4] for row in per_name)
    return {
        "status": status,
        "events": per_name,
        "last_product_event_at": max((e["at"] for e in events), default=None),
        "orders": (len(sales(shop)), len(lines), len(sold), len(sold - tracked)),
        "checks": {
            "product_views": counts["product_view"] > 0,
            "add_to_cart": counts["add_to_cart"] > 0,
            "dwell_time": counts["product_dwell_time"] > 0,
            "product_names": bool(events) and named == len(events),
            "orders_match_tracking": not sold - tracked,
            "catalog_feed": True,  # the catalog the test passes has a feed product
        },
    }


# --- the test ----------------------------------------------------------------------------------------


def _event(visitor: str, slot: int, event: str, code: str, dwell: dict | None = None, **details) -> dict:
    return {
        "visitor": visitor,
        "slot": slot,
        "name": event,
        "code": code,
        "details": details,
        "dwell": dwell or {},
    }


def _order(visitor: str, slot: int, currency: str, lines: list[tuple], refund: bool = False) -> dict:
    return {"visitor": visitor, "slot": slot, "currency": currency, "refund": refund, "lines": lines}


# One shop that has it all, tried first: viewers on two linked devices, a view at the range's first
# instant and one before it, every dwell key, out-of-range and missing durations, id-only lines,
# ties, a refund, a zero-quantity line, a sale after the range, two currencies.
RICH_SHOP = {
    "events": [
        _event("v0", 3, "product_view", "A", name="Apple", price="12.50", categoryPath="Home > Kitchen"),
        _event("v1", 3, "product_view", " A "),
        _event("v2", 4, "product_view", "A", name=""),
        _event("v3", 2, "product_view", "A"),
        _event("v3", 1, "product_view", "A"),
        _event("v0", 5, "add_to_cart", "A", productName="Apfel"),
        _event("v2", 13, "add_to_cart", "B"),
        _event("v0", 4, "product_dwell_time", "A", {"dwellTimeSeconds": 12.5}),
        _event("v1", 4, "product_dwell_time", "A", {"dwellTimeSeconds": "soon", "dwellTimeMs": 30250}),
        _event("v2", 8, "product_dwell_time", "A", {"durationSeconds": "45"}),
        _event("v2", 9, "product_dwell_time", "A", {"dwellSeconds": 1800.25}),
        _event("v3", 10, "product_dwell_time", "A"),
        _event("v3", 11, "product_dwell_time", "A", {"durationMs": 0}),
        _event("v0", 14, "product_dwell_time", "A", {"dwellTimeSeconds": 5}),
        _event("v3", 6, "page_view", "A"),
        _event("v1", 7, "wishlist", "C"),
        _event("v2", 12, "product_impression", "E", price="n/a"),
    ],
    "orders": [
        _order("v2", 5, "EUR", [(0, 2, 1000), (3, 1, 1000)]),
        _order("v0", 6, "EUR", [(3, 1, 999), (2, 1, 500)]),
        _order("v3", 7, "JPY", [(6, 3, 700), (1, 1, 700)]),
        _order("v1", 8, "EUR", [(3, 1, 1000)], refund=True),
        _order("v1", 15, "EUR", [(0, 5, 100)]),
        _order("v3", 9, "EUR", [(4, 0, 1500)]),
    ],
    "links": {"v0": ("u0", 0), "v1": ("u0", 16), "v2": ("u1", 9)},
    "codes": ["A", "B", "C", "E"],
    "sort_by": "units",
    "limit": 2,
}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(**RICH_SHOP)
@given(
    events=st.lists(event_strategy, min_size=6, max_size=30),
    orders=st.lists(order_strategy, max_size=8),
    links=links_strategy,
    codes=st.lists(st.sampled_from(["A", "B", "C", "E"]), min_size=1, max_size=2, unique=True),
    sort_by=st.sampled_from(["revenue", "units", "orders"]),
    limit=st.integers(1, 3),
)
def test_product_analytics_match_the_reference(
    tmp_path_factory, events, orders, links, codes, sort_by, limit
):
    shop = build_shop(events, orders, links)
    ingest = Ingest(data_dir=tmp_path_factory.mktemp("products") / "data", flush_interval_seconds=3600)
    engine = Engine(ingest.lake)
    try:
        if shop["steps"]:
            journeys_for(ingest, shop["steps"])
        for code in codes:
            got = product_overview(engine, QUERY, product=catalog_row(code))
            assert got.model_dump(exclude={"product", "range"}) == reference_overview(shop, pid(code)), code

            dwell = product_dwell(engine, QUERY, product=catalog_row(code))
            expected = reference_dwell(shop, pid(code))
            assert [b.events for b in dwell.distribution] == expected.pop("distribution"), code
            assert [(d.date, d.events, d.avg_seconds, d.median_seconds) for d in dwell.daily] == expected.pop(
                "daily"
            ), code
            assert dwell.model_dump(exclude={"product", "range", "distribution", "daily"}) == expected, code

        for currency in (None, "JPY"):
            top = top_products(engine, QUERY, sort_by=sort_by, limit=limit, currency=currency)
            rows = reference_top(shop, sort_by, limit, currency)
            assert [
                (p.rank, p.product_id, p.product_item_code, p.currency, p.revenue, p.orders, p.units, p.views,
                 p.add_to_carts)
                for p in top.products
            ] == rows, currency  # fmt: skip
            assert top.currencies == sorted({r[3] for r in rows})
            assert top.mixed_currency == (len(top.currencies) > 1)

        catalog = CatalogCounts(products=4, from_feed=1, seen_only_in_events=3, feed_products_seen=1)
        status = tracking_status(engine, QUERY, catalog=catalog, module_enabled=None)
        expected = reference_tracking(shop)
        assert status.status == expected["status"]
        assert [
            (e.name, e.events, e.products, e.last_at, e.with_name, e.with_price, e.with_category)
            for e in status.events
        ] == expected["events"]
        assert status.last_product_event_at == expected["last_product_event_at"]
        o = status.orders
        assert (o.orders, o.lines, o.products, o.products_never_tracked) == expected["orders"]
        assert {c.id: c.ok for c in status.checks} == expected["checks"]
        assert status.catalog == catalog
    finally:
        engine.close()
        ingest.stop()
