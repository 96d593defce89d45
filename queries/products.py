"""Product analytics v2: one product's overview, dwell time and associations; top products per
currency; tracking status; and the catalog as answered by the routes.

Products are named by ``productId``, a uuid derived from the site and the ``productItemCode`` events
carry (the same code on the same site is always the same id, so events that arrive before the catalog
still join). A product on an order line without ``productItemCode`` is named by the line's
``productId``. Orders are the source of truth for sales and money: refunds apart, line revenue is
quantity times unit price (before order-level discounts; a line of quantity 0 bought nothing: no sale,
buyer or basket of its product), per currency, never converted or summed across currencies, formatted
with the currency's ISO-4217 minor units. People are the linked user when a visitor was ever
identified, else the visitor.

How it runs: ``productId`` is ``product_id_for(site, productItemCode)``; an order line naming only the
productId of a code is that code's product. A query for one product binds its code and its id (no code
for a product only code-less lines name: it has no events); queries over many products key them by id,
derived from codes in SQL (``product_id_of``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from functools import cache
from typing import Any, Literal

import pyarrow as pa
from sqlglot import exp

from aisle.wire import CamelModel
from ingest.event_names import EVENT_FAMILIES
from queries import library
from queries.adhoc.parse import parse_sql
from queries.money import MoneyTotal, format_amount, money_total
from queries.ranges import LocalDays
from queries.rates import rate
from warehouse.engine import Engine

Source = Literal["purchase", "cart"]
Mode = Literal["cart", "session", "all"]
TopSort = Literal["revenue", "units", "orders"]
PRODUCT_EVENTS = tuple(EVENT_FAMILIES["product"])
MAX_DWELL_SECONDS = 1800


class ProductRange(LocalDays):
    """Inclusive days of the site's time zone."""


class RangeOut(CamelModel):
    start_date: date
    end_date: date
    timezone: str


def _range_out(query: ProductRange) -> RangeOut:
    return RangeOut(start_date=query.start_date, end_date=query.end_date, timezone=query.timezone)


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(float(value), digits)


# --- the catalog ------------------------------------------------------------------------------------


class Product(CamelModel):
    product_id: str
    product_item_code: str | None
    name: str | None
    price: str | None
    currency: str
    categories: list[str]
    stock: int | None
    url: str | None
    image: str | None
    in_feed: bool
    seen_in_events: bool
    first_seen_at: datetime | None
    last_seen_at: datetime | None
    updated_at: datetime


def product_out(row: dict[str, Any]) -> Product:
    """A catalog row as answered (stored, or made from code-less order lines: ``products_of_lines``):
    the price formatted in the product's currency."""
    price = row["price"]
    return Product(
        product_id=row["product_id"],
        product_item_code=row["product_item_code"],
        name=row["name"],
        price=None if price is None else format_amount(price, row["currency"]),
        currency=row["currency"],
        categories=row["categories"] or [],
        stock=row["stock"],
        url=row["url"],
        image=row["image"],
        in_feed=row["in_feed"],
        seen_in_events=row["last_seen_at"] is not None,
        first_seen_at=row["first_seen_at"],
        last_seen_at=row["last_seen_at"],
        updated_at=row["updated_at"],
    )


class ProductRef(CamelModel):
    product_id: str
    product_item_code: str | None
    name: str | None


# --- overview ---------------------------------------------------------------------------------------


class ProductRevenue(CamelModel):
    currency: str
    revenue: str
    orders: int
    units: int


class ProductOverview(CamelModel):
    product: Product
    range: RangeOut
    views: int
    unique_viewers: int
    add_to_carts: int
    add_to_cart_people: int
    purchases: int
    units_sold: int
    buyers: int
    people: int
    view_to_cart_rate: float
    conversion_rate: float
    revenue_by_currency: list[ProductRevenue]
    revenue: MoneyTotal


def product_overview(engine: Engine, query: ProductRange, *, product: dict[str, Any]) -> ProductOverview:
    """Views (product_view events), unique viewers, add-to-carts and the people behind them, purchases
    (sales holding the product), units and buyers; `viewToCartRate` and `conversionRate` are the shares
    of viewers who added it to cart / bought it in the range; line revenue per currency. Its sales are
    the lines carrying its code and the lines without a code that name its productId."""
    params = {**query.params(), "code": product["product_item_code"], "product_id": product["product_id"]}
    counts = library.run(engine, "product_overview", {**params, "product_events": list(PRODUCT_EVENTS)})
    counts = counts.to_pylist()[0]
    revenue = library.run(engine, "product_revenue", params).to_pylist()
    return ProductOverview(
        product=product_out(product),
        range=_range_out(query),
        views=counts["views"],
        unique_viewers=counts["viewers"],
        add_to_carts=counts["add_to_carts"],
        add_to_cart_people=counts["carters"],
        purchases=counts["purchases"],
        units_sold=int(counts["units"]),
        buyers=counts["buyers"],
        people=counts["people"],
        view_to_cart_rate=rate(counts["viewers_who_carted"], counts["viewers"]),
        conversion_rate=rate(counts["viewers_who_bought"], counts["viewers"]),
        revenue_by_currency=[
            ProductRevenue(
                currency=r["currency"],
                revenue=format_amount(r["revenue"], r["currency"]),
                orders=r["orders"],
                units=int(r["units"]),
            )
            for r in revenue
        ],
        revenue=money_total(
            ((r["currency"], r["revenue"]) for r in revenue), empty_currency=product["currency"]
        ),
    )


# --- dwell time -------------------------------------------------------------------------------------


class DwellBucket(CamelModel):
    label: str
    min_seconds: int
    max_seconds: int | None
    events: int


class DwellDay(CamelModel):
    date: date
    events: int
    avg_seconds: float
    median_seconds: float


class ProductDwell(CamelModel):
    product: ProductRef
    range: RangeOut
    events: int
    measured: int
    without_duration: int
    out_of_range: int
    people: int
    total_seconds: float
    avg_seconds: float | None
    median_seconds: float | None
    p75_seconds: float | None
    p90_seconds: float | None
    max_seconds: float | None
    distribution: list[DwellBucket]
    daily: list[DwellDay]


_BUCKETS = (
    ("under_5", 0, 5),
    ("from_5", 5, 15),
    ("from_15", 15, 30),
    ("from_30", 30, 60),
    ("from_60", 60, 180),
    ("from_180", 180, None),
)


def _bucket_label(low: int, high: int | None) -> str:
    return f"{low}s+" if high is None else f"{low}-{high}s"


def product_dwell(engine: Engine, query: ProductRange, *, product: dict[str, Any]) -> ProductDwell:
    """Seconds spent on the product from its product_dwell_time events: measured durations between 0 and
    1800 s inclusive; events without a duration or outside that span are counted apart."""
    params = {**query.params(), "code": product["product_item_code"], "max_seconds": MAX_DWELL_SECONDS}
    row = library.run(engine, "product_dwell", params).to_pylist()[0]
    daily = library.run(engine, "product_dwell_daily", {**params, "timezone": query.timezone}).to_pylist()
    return ProductDwell(
        product=ProductRef(
            product_id=product["product_id"],
            product_item_code=product["product_item_code"],
            name=product["name"],
        ),
        range=_range_out(query),
        events=row["events"],
        measured=row["measured"],
        without_duration=row["without_duration"],
        out_of_range=row["out_of_range"],
        people=row["people"],
        total_seconds=_round(row["total_seconds"]) or 0.0,
        avg_seconds=_round(row["avg_seconds"]),
        median_seconds=_round(row["median_seconds"]),
        p75_seconds=_round(row["p75_seconds"]),
        p90_seconds=_round(row["p90_seconds"]),
        max_seconds=_round(row["max_seconds"]),
        distribution=[
            DwellBucket(label=_bucket_label(low, high), min_seconds=low, max_seconds=high, events=row[key])
            for key, low, high in _BUCKETS
        ],
        daily=[
            DwellDay(
                date=d["day"],
                events=d["measured"],
                # a day is listed for its measured durations, so it has an average and a median
                avg_seconds=round(float(d["avg_seconds"]), 3),
                median_seconds=round(float(d["median_seconds"]), 3),
            )
            for d in daily
        ],
    )


# --- associations -----------------------------------------------------------------------------------


class Association(CamelModel):
    product_id: str
    product_item_code: str | None
    name: str | None
    together: int
    baskets_with_product: int
    support: float
    confidence: float
    lift: float


class ProductAssociations(CamelModel):
    product: ProductRef
    source: Source
    mode: Mode
    range: RangeOut
    baskets: int
    product_baskets: int
    product_support: float
    related_products: int
    associations: list[Association]


@dataclass(frozen=True)
class BasketCounts:
    """What the SQL answers: N baskets, the baskets holding the product, and per other product (its id,
    its code or None when its lines name only the id, baskets holding both, baskets holding it)."""

    baskets: int
    product_baskets: int
    related_products: int
    pairs: list[tuple[str, str | None, int, int]]


# What a basket's rows share, per mode: the sale, the visitor's session, the person (the linked user,
# else the visitor). Carts of mode cart are events between checkouts: ``product_baskets_cart_cart.sql``.
_BASKET_OF = {"cart": ("order_id",), "session": ("visitor_id", "session_id"), "all": ("person_id",)}
# The lake tables through person resolution, which only mode all pays for.
_PEOPLE_IN = {"events": "events_people_in", "orders": "orders_people_in"}


def _keyed(table: Literal["events", "orders"], mode: Mode) -> exp.Select:
    """``SELECT hash(<what the basket's rows share>) AS basket, * FROM <table>``: the rows of ``table``
    with the 64-bit hash of their basket, read through ``<table>_people_in([$site_id])`` for mode all."""
    rows = exp.to_table(table)
    if mode == "all":
        sites = exp.Array(expressions=[exp.Placeholder(this="site_id")])
        rows = exp.Table(this=exp.Anonymous(this=_PEOPLE_IN[table], expressions=[sites]))
    key = exp.Anonymous(this="hash", expressions=[exp.column(name) for name in _BASKET_OF[mode]])
    return exp.select(key.as_("basket"), exp.Star()).from_(rows)


def _query(name: str) -> exp.Query:
    """A query of the library as a sqlglot tree, its ``$name`` parameters read as DuckDB reads them."""
    (query,) = parse_sql(library.sql(name), dialect="duckdb")
    if not isinstance(query, exp.Query):
        raise TypeError(f"queries/sql/{name}.sql is not a query")
    return query


def _defining(
    query: exp.Query, name: str, definition: exp.Query, *, materialized: bool | None = None
) -> exp.Query:
    """``query`` with the relation it reads as ``name`` defined as ``definition``: a CTE before its own."""
    cte = exp.CTE(
        this=definition, alias=exp.TableAlias(this=exp.to_identifier(name)), materialized=materialized
    )
    own = query.args.get("with_")
    query.set("with_", exp.With(expressions=[cte, *(own.expressions if own else [])]))
    return query


@cache
def association_sql(source: Source, mode: Mode) -> str:
    """The associations query for one kind of basket: ``product_associations.sql`` reading the basket
    lines, materialised once, of ``product_baskets_cart_cart.sql`` (carts between checkouts),
    ``product_baskets_cart.sql`` or ``product_baskets_purchase.sql``, those two reading the lake rows
    keyed by the mode's basket (``_keyed``)."""
    if source == "cart" and mode == "cart":
        baskets = _query("product_baskets_cart_cart")
    elif source == "cart":
        baskets = _defining(_query("product_baskets_cart"), "keyed_events", _keyed("events", mode))
    else:
        baskets = _defining(_query("product_baskets_purchase"), "keyed_orders", _keyed("orders", mode))
    counts = _defining(_query("product_associations"), "basket_lines", baskets, materialized=True)
    return counts.sql(dialect="duckdb")


def association_counts(
    engine: Engine,
    query: ProductRange,
    *,
    product: dict[str, Any],
    source: Source,
    mode: Mode,
    limit: int,
) -> BasketCounts:
    """Basket counts for one product: see ``association_sql``."""
    params = {**query.params(), "code": product["product_item_code"], "product_id": product["product_id"]}
    cursor = engine.cursor()
    try:
        table: pa.Table = cursor.sql(
            association_sql(source, mode), params={**params, "limit": limit}
        ).to_arrow_table()
    finally:
        cursor.close()
    rows = table.to_pylist()
    head = rows[0]
    pairs = [(r["product_id"], r["code"], r["together"], r["code_baskets"]) for r in rows if r["product_id"]]
    return BasketCounts(head["baskets"], head["product_baskets"], head["related_products"], pairs)


def association_rates(
    together: int, product_baskets: int, other_baskets: int, baskets: int
) -> tuple[float, float, float]:
    """(support, confidence, lift) of A → B: support = |A∧B| / N, confidence = |A∧B| / |A|,
    lift = confidence / (|B| / N) = |A∧B|·N / (|A|·|B|); all 0 when a denominator is 0."""
    support = together / baskets if baskets else 0.0
    confidence = together / product_baskets if product_baskets else 0.0
    lift = (
        together * baskets / (product_baskets * other_baskets) if product_baskets and other_baskets else 0.0
    )
    return round(support, 6), round(confidence, 6), round(lift, 6)


def product_associations(
    engine: Engine,
    query: ProductRange,
    *,
    product: dict[str, Any],
    source: Source,
    mode: Mode,
    limit: int,
    names: dict[str, str | None],
) -> ProductAssociations:
    """Market-basket figures of the product against each product that shares a basket with it, most
    frequent pairs first. ``names`` maps productIds to names (``product_names``; others have none); a
    product whose lines name only its productId has no code in the rows."""
    counts = association_counts(engine, query, product=product, source=source, mode=mode, limit=limit)
    rows = []
    for product_id, code, together, other in counts.pairs:
        support, confidence, lift = association_rates(together, counts.product_baskets, other, counts.baskets)
        rows.append(
            Association(
                product_id=product_id,
                product_item_code=code,
                name=names.get(product_id),
                together=together,
                baskets_with_product=other,
                support=support,
                confidence=confidence,
                lift=lift,
            )
        )
    return ProductAssociations(
        product=ProductRef(
            product_id=product["product_id"],
            product_item_code=product["product_item_code"],
            name=product["name"],
        ),
        source=source,
        mode=mode,
        range=_range_out(query),
        baskets=counts.baskets,
        product_baskets=counts.product_baskets,
        product_support=round(counts.product_baskets / counts.baskets, 6) if counts.baskets else 0.0,
        related_products=counts.related_products,
        associations=rows,
    )


# --- top products -----------------------------------------------------------------------------------


class TopProduct(CamelModel):
    rank: int
    product_id: str
    product_item_code: str | None
    name: str | None
    currency: str
    revenue: str
    orders: int
    units: int
    views: int
    add_to_carts: int


class TopProducts(CamelModel):
    range: RangeOut
    sort_by: TopSort
    currencies: list[str]
    mixed_currency: bool
    products: list[TopProduct]


def top_sales(
    engine: Engine, query: ProductRange, *, sort_by: TopSort, limit: int, currency: str | None
) -> list[dict[str, Any]]:
    """Raw rows of ``product_top.sql``: per currency, the best `limit` products by `sort_by`."""
    params = {**query.params(), "sort_by": sort_by, "limit": limit, "currency": currency}
    return library.run(engine, "product_top", params).to_pylist()


def top_products(
    engine: Engine,
    query: ProductRange,
    *,
    sort_by: TopSort,
    limit: int,
    currency: str | None,
    names: dict[str, str | None] | None = None,
    rows: list[dict[str, Any]] | None = None,
) -> TopProducts:
    """Best-selling products ranked within each currency (never across); each row carries its currency.
    A product whose lines name only its productId is credited to that id; its code is null unless its
    lines or views and add-to-carts in the range carry one. ``names`` maps productIds to names
    (``product_names``; others have none)."""
    rows = top_sales(engine, query, sort_by=sort_by, limit=limit, currency=currency) if rows is None else rows
    names = names or {}
    currencies = sorted({r["currency"] for r in rows})
    return TopProducts(
        range=_range_out(query),
        sort_by=sort_by,
        currencies=currencies,
        mixed_currency=len(currencies) > 1,
        products=[
            TopProduct(
                rank=r["rank"],
                product_id=r["product_id"],
                product_item_code=r["code"],
                name=names.get(r["product_id"]),
                currency=r["currency"],
                revenue=format_amount(r["revenue"], r["currency"]),
                orders=r["orders"],
                units=int(r["units"]),
                views=r["views"],
                add_to_carts=r["add_to_carts"],
            )
            for r in rows
        ],
    )


# --- tracking status --------------------------------------------------------------------------------


class TrackedEvent(CamelModel):
    name: str
    events: int
    products: int
    last_at: datetime | None
    with_name: int
    with_price: int
    with_category: int


class TrackingCheck(CamelModel):
    id: str
    ok: bool
    message: str


class TrackedOrders(CamelModel):
    orders: int
    lines: int
    products: int
    products_never_tracked: int


class CatalogCounts(CamelModel):
    products: int
    from_feed: int
    seen_only_in_events: int
    feed_products_seen: int


TrackingState = Literal["ok", "partial", "not_tracking"]


class TrackingStatus(CamelModel):
    status: TrackingState
    range: RangeOut
    product_module_enabled: bool | None
    events: list[TrackedEvent]
    last_product_event_at: datetime | None
    orders: TrackedOrders
    catalog: CatalogCounts
    checks: list[TrackingCheck]


def _checks(
    by_name: dict[str, TrackedEvent], orders: TrackedOrders, catalog: CatalogCounts
) -> list[TrackingCheck]:
    views = by_name["product_view"].events
    carts = by_name["add_to_cart"].events
    named = sum(e.with_name for e in by_name.values())
    total = sum(e.events for e in by_name.values())
    return [
        TrackingCheck(
            id="product_views",
            ok=views > 0,
            message=(
                f"{views} product_view events"
                if views
                else "No product_view in the range: send product_view with metadata.productItemCode on product pages "
                "(the value of their data-product-id attribute)"
            ),
        ),
        TrackingCheck(
            id="add_to_cart",
            ok=carts > 0,
            message=(
                f"{carts} add_to_cart events"
                if carts
                else "No add_to_cart in the range: send add_to_cart with metadata.productItemCode"
            ),
        ),
        TrackingCheck(
            id="dwell_time",
            ok=by_name["product_dwell_time"].events > 0,
            message=(
                f"{by_name['product_dwell_time'].events} product_dwell_time events"
                if by_name["product_dwell_time"].events
                else "No product_dwell_time in the range: dwell-time reports stay empty (metadata.dwellTimeSeconds)"
            ),
        ),
        TrackingCheck(
            id="product_names",
            ok=total > 0 and named == total,
            message=(
                f"{named} of {total} product events carry metadata.name" if total else "No product events"
            ),
        ),
        TrackingCheck(
            id="orders_match_tracking",
            ok=orders.products_never_tracked == 0,
            message=(
                f"{orders.products_never_tracked} of {orders.products} products sold were named by no product event"
                if orders.products
                else "No sales in the range"
            ),
        ),
        TrackingCheck(
            id="catalog_feed",
            ok=catalog.from_feed > 0,
            message=(
                f"{catalog.from_feed} products from feed imports"
                if catalog.from_feed
                else "No product feed imported: names, prices and images come only from events and orders"
            ),
        ),
    ]


def tracking_status(
    engine: Engine, query: ProductRange, *, catalog: CatalogCounts, module_enabled: bool | None
) -> TrackingStatus:
    """Per product event name the events, products, last time and metadata coverage in the range (an
    empty name or category is none); sales whose products no product event named; the catalog's
    make-up; and checks with how to fix each.
    `status`: `ok` with product_view and add_to_cart, `partial` with other product events only or one
    of them, `not_tracking` with none."""
    params = {**query.params(), "product_events": list(PRODUCT_EVENTS)}
    found = {r["name"]: r for r in library.run(engine, "product_tracking", params).to_pylist()}
    events = [
        TrackedEvent(
            name=name,
            events=found.get(name, {}).get("events", 0),
            products=found.get(name, {}).get("products", 0),
            last_at=found.get(name, {}).get("last_at"),
            with_name=found.get(name, {}).get("with_name", 0),
            with_price=found.get(name, {}).get("with_price", 0),
            with_category=found.get(name, {}).get("with_category", 0),
        )
        for name in PRODUCT_EVENTS
    ]
    by_name = {e.name: e for e in events}
    orders = TrackedOrders(**library.run(engine, "product_tracking_orders", params).to_pylist()[0])
    status: TrackingState
    if by_name["product_view"].events and by_name["add_to_cart"].events:
        status = "ok"
    elif any(e.events for e in events):
        status = "partial"
    else:
        status = "not_tracking"
    seen = [e.last_at for e in events if e.last_at is not None]
    return TrackingStatus(
        status=status,
        range=_range_out(query),
        product_module_enabled=module_enabled,
        events=events,
        last_product_event_at=max(seen) if seen else None,
        orders=orders,
        catalog=catalog,
        checks=_checks(by_name, orders, catalog),
    )
