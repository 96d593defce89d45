"""Product analytics by hand: an order line naming only a productId is that product, in every product
query; only product events count a product's people; an empty name or category is none."""

from __future__ import annotations

from datetime import date

from queries.products import (
    CatalogCounts,
    ProductRange,
    product_associations,
    product_overview,
    top_products,
    tracking_status,
)
from tests.queries.helpers import SITE, catalog_row, journeys_for, pid

DAY = ProductRange(site_id=SITE, start_date=date(2024, 5, 1), end_date=date(2024, 5, 1), currency="EUR")
LOOSE = "0a0b0c0d-0000-4000-8000-0000000000ff"  # a productId no code derives to
CATALOG = CatalogCounts(products=0, from_feed=0, seen_only_in_events=0, feed_products_seen=0)


def sale(order_id: str, clock: str, currency: str, items: list[dict], **extra) -> dict:
    return {"order": order_id, "at": f"2024-05-01T{clock}Z", "currency": currency, "items": items,
            "total": "-1" if extra.get("isRefund") else "1", **extra}  # fmt: skip


def line(quantity: int, price: str, *, code: str | None = None, product_id: str | None = None) -> dict:
    named = {"productItemCode": code} if code is not None else {"productId": product_id}
    return {**named, "quantity": quantity, "price": price}


# A: a code on o1, only its productId on o2, o4 and the refund o5. LOOSE: a productId no code names.
SHOP = {
    "v1": [
        {"event": "product_view", "at": "2024-05-01T09:00:00Z", "metadata": {"productItemCode": "A"}},
        sale("o1", "09:10:00", "EUR", [line(2, "10.00", code="A")]),
    ],
    "v2": [
        {"event": "add_to_cart", "at": "2024-05-01T09:05:00Z", "metadata": {"productItemCode": "A"}},
        sale("o2", "09:20:00", "EUR", [line(1, "10.00", product_id=pid("A"))]),
    ],
    "v3": [
        sale("o3", "09:30:00", "USD", [line(3, "5.00", product_id=LOOSE)]),
        sale(
            "o4",
            "09:40:00",
            "EUR",
            [
                line(1, "9.50", product_id=pid("A")),
                line(1, "4.00", code="B"),
                line(1, "5.00", product_id=LOOSE),
            ],
        ),  # fmt: skip
        sale("o5", "09:50:00", "EUR", [line(-1, "10.00", product_id=pid("A"))], isRefund=True, refundOf="o2"),
    ],
}


def test_a_line_naming_only_a_product_id_is_that_product_in_every_query(lake):
    ingest, engine = lake
    journeys_for(ingest, SHOP)

    overview = product_overview(engine, DAY, product=catalog_row("A"))
    assert (overview.purchases, overview.units_sold, overview.buyers, overview.people) == (3, 4, 3, 3)
    assert (overview.views, overview.unique_viewers, overview.add_to_carts, overview.add_to_cart_people) == (
        1,
        1,
        1,
        1,
    )
    assert (overview.view_to_cart_rate, overview.conversion_rate) == (0.0, 1.0)
    assert [r.model_dump() for r in overview.revenue_by_currency] == [
        {"currency": "EUR", "revenue": "39.50", "orders": 3, "units": 4}
    ]

    by_revenue = top_products(engine, DAY, sort_by="revenue", limit=10, currency=None)
    assert [(p.currency, p.rank, p.product_id, p.product_item_code, p.revenue, p.orders, p.units, p.views,
             p.add_to_carts) for p in by_revenue.products] == [
        ("EUR", 1, pid("A"), "A", "39.50", 3, 4, 1, 1),
        ("EUR", 2, LOOSE, None, "5.00", 1, 1, 0, 0),
        ("EUR", 3, pid("B"), "B", "4.00", 1, 1, 0, 0),
        ("USD", 1, LOOSE, None, "15.00", 1, 3, 0, 0),
    ]  # fmt: skip
    # Ties by code; a product known only by its productId comes after those with one.
    by_units = top_products(engine, DAY, sort_by="units", limit=10, currency="EUR")
    assert [p.product_id for p in by_units.products] == [pid("A"), pid("B"), LOOSE]

    orders = tracking_status(engine, DAY, catalog=CATALOG, module_enabled=None).orders
    assert (orders.orders, orders.lines, orders.products, orders.products_never_tracked) == (4, 6, 3, 2)

    # Baskets o1-o4: A in o1, o2 and o4; B in o4; LOOSE in o3 and o4.
    baskets = product_associations(engine, DAY, product=catalog_row("A"), source="purchase", mode="cart",
                                   limit=10, names={pid("B"): "Banana"})  # fmt: skip
    assert (baskets.baskets, baskets.product_baskets, baskets.related_products) == (4, 3, 2)
    assert [(a.product_id, a.product_item_code, a.name, a.together, a.baskets_with_product, a.support,
             a.confidence, a.lift) for a in baskets.associations] == [
        (pid("B"), "B", "Banana", 1, 1, 0.25, 0.333333, 1.333333),
        (LOOSE, None, None, 1, 2, 0.25, 0.333333, 0.666667),
    ]  # fmt: skip
    # From B: A is named by its code, which o1 carries, though o4 names it only by its productId.
    from_b = product_associations(engine, DAY, product=catalog_row("B"), source="purchase", mode="cart",
                                  limit=10, names={})  # fmt: skip
    assert [
        (a.product_id, a.product_item_code, a.together, a.baskets_with_product) for a in from_b.associations
    ] == [
        (LOOSE, None, 1, 2),
        (pid("A"), "A", 1, 3),
    ]  # fmt: skip


def test_only_product_events_count_a_products_people(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        "v1": [{"event": "product_view", "at": "2024-05-01T09:00:00Z", "metadata": {"productItemCode": "A"}}],
        "v2": [{"event": "page_view", "at": "2024-05-01T09:01:00Z", "metadata": {"productItemCode": "A"}}],
    })  # fmt: skip
    overview = product_overview(engine, DAY, product=catalog_row("A"))
    assert (overview.views, overview.people) == (1, 1)


def test_an_empty_name_or_category_is_none_in_the_tracking_status(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        "v1": [
            {"event": "product_view", "at": "2024-05-01T09:00:00Z",
             "metadata": {"productItemCode": "A", "name": "", "categoryPath": ""}},
            {"event": "product_view", "at": "2024-05-01T09:01:00Z",
             "metadata": {"productItemCode": "A", "name": "", "productName": "Apple",
                          "categoryPath": "Fruit"}},
        ],
    })  # fmt: skip
    views = next(e for e in tracking_status(engine, DAY, catalog=CATALOG, module_enabled=None).events
                 if e.name == "product_view")  # fmt: skip
    assert (views.events, views.with_name, views.with_category) == (2, 1, 1)


def test_a_line_of_quantity_zero_bought_nothing(lake):
    """o1 lists A with quantity 0 beside one B: A was not bought, in any product query."""
    ingest, engine = lake
    journeys_for(
        ingest,
        {"v1": [sale("o1", "09:00:00", "EUR", [line(0, "10.00", code="A"), line(1, "4.00", code="B")])]},
    )

    overview = product_overview(engine, DAY, product=catalog_row("A"))
    assert (overview.purchases, overview.units_sold, overview.buyers, overview.people) == (0, 0, 0, 0)
    assert overview.revenue_by_currency == []
    top = top_products(engine, DAY, sort_by="orders", limit=10, currency=None)
    assert [(p.product_item_code, p.orders, p.units) for p in top.products] == [("B", 1, 1)]
    orders = tracking_status(engine, DAY, catalog=CATALOG, module_enabled=None).orders
    assert (orders.orders, orders.lines, orders.products, orders.products_never_tracked) == (1, 1, 1, 1)
    baskets = product_associations(engine, DAY, product=catalog_row("B"), source="purchase", mode="cart",
                                   limit=10, names={})  # fmt: skip
    assert (baskets.baskets, baskets.product_baskets, baskets.related_products) == (1, 1, 0)
